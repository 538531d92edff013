"""How quantities are written for people: 1.23 TB/s, 254.1 us. Every stage that names a
quantity in text (analysis labels such as 'memcpy DtoD 537 MB', tables, charts) uses these."""
from __future__ import annotations

import math

_SCALES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """1.23e12, 'B/s' -> '1.23 TB/s'; None -> '-'."""
    if value is None:
        return "-"
    for scale, prefix in _SCALES:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}".rstrip()


def three_digits(value: float) -> str:
    """3 significant digits, trailing zeros kept (1.90, 84.8, 949): a column of them reads alike."""
    if value <= 0 or not math.isfinite(value):
        return str(value)
    decimals = max(0, 2 - math.floor(math.log10(value)))
    return f"{value:.{decimals}f}"


def duration_3(ns: float) -> str:
    """A time in ns as ns, us, ms or s with 3 significant digits (949 us, 3.48 ms)."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{three_digits(ns / scale)} {unit}"
    return f"{three_digits(ns)} ns"


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
