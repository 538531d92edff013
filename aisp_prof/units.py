"""How quantities are written for people: 1.23 TB/s, 254.1 us. Every stage that names a
quantity in text (analysis labels such as 'memcpy DtoD 537 MB', tables, charts) uses these."""
from __future__ import annotations

_SCALES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """1.23e12, 'B/s' -> '1.23 TB/s'; None -> '-'."""
    if value is None:
        return "-"
    for scale, prefix in _SCALES:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}".rstrip()


def duration(ns: float | None) -> str:
    if ns is None:
        return "-"
    if ns >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"
