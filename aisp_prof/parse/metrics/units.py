"""Nsight Compute units to one base unit per dimension, by table: byte, ns, hz, .../second.

Without `--print-units base` ncu scales each column to a "readable" unit (us, Mbyte, Ghz,
Tbyte/s, ...), and `ncu_report` writes long spellings (usecond, Mbyte/second), so both parsers
(`parse.ncu.csv_page`, `parse.ncu.rep`) convert every value here to get the same frames from either export.

Every scale ncu uses is a power of ten (1 Kbyte = 1000 byte: the fixture's dram__bytes_read.sum
of 134.229248 Mbyte is dram__sectors_read.sum 4,194,664 x 32 byte), so the table holds decimal
exponents and the conversion is exact (Decimal.scaleb). Spellings: ncu 2025.x CSV (us, Mbyte,
Ghz, Gbyte/s, sector/ns) and the long forms of older ncu and of ncu_report (usecond, nsecond,
Mbyte/second, cycle/nsecond).
"""
from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache

# a unit on its own (or the numerator of "a/b") -> (base unit, power of ten to multiply by)
_SCALED_UNITS: dict[str, tuple[str, int]] = {
    "byte": ("byte", 0), "Kbyte": ("byte", 3), "Mbyte": ("byte", 6), "Gbyte": ("byte", 9),
    "Tbyte": ("byte", 12), "Pbyte": ("byte", 15),
    "hz": ("hz", 0), "Khz": ("hz", 3), "Mhz": ("hz", 6), "Ghz": ("hz", 9),
    # a duration: nanoseconds, ncu's base for time
    "ps": ("ns", -3), "psecond": ("ns", -3), "ns": ("ns", 0), "nsecond": ("ns", 0),
    "us": ("ns", 3), "usecond": ("ns", 3), "ms": ("ns", 6), "msecond": ("ns", 6),
    "s": ("ns", 9), "second": ("ns", 9),
}
# time below a "/": rates are per second. value per <unit> = value * 10**exp per second
_PER_TIME: dict[str, int] = {
    "ns": 9, "nsecond": 9, "us": 6, "usecond": 6, "ms": 3, "msecond": 3, "s": 0, "second": 0,
}
# converted spellings with one canonical name (ncu's base export writes clock rates as hz)
_BASE_ALIASES: dict[str, str] = {"cycle/second": "hz"}


@lru_cache(maxsize=None)
def base_unit(unit: str) -> tuple[str, int]:
    """(base unit, power of ten) for an ncu unit: value_in_base = value * 10**exp.

    Units not in the table (%, inst, sector, cycle, warp, ...) are already base and pass
    through unchanged; a scaled unit ncu never printed so far would pass through too, which is
    why `ncu_csv.build_parse` checks the dimension of metric-table columns.
    """
    unit = unit.strip()
    if not unit:
        return "", 0
    numerator, *denominators = unit.split("/")
    base, exp = _SCALED_UNITS.get(numerator, (numerator, 0))
    parts = [base]
    for den in denominators:
        if den in _PER_TIME:
            parts.append("second")
            exp += _PER_TIME[den]
        else:
            den_base, den_exp = _SCALED_UNITS.get(den, (den, 0))
            parts.append(den_base)
            exp -= den_exp
    joined = "/".join(parts)
    return _BASE_ALIASES.get(joined, joined), exp


def scale_value(number: str | int | float, exp: int) -> float:
    """`number * 10**exp` as float, exact in decimal (so 63.424 us is 63424.0 ns, not ...001)."""
    if exp == 0:
        return float(number)
    text = number if isinstance(number, str) else repr(number)
    return float(Decimal(text).scaleb(exp))


NUMBER_TEXT = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][+-]?\d+)?")


def number_text(cell: str) -> str | None:
    """The cell without thousands separators if it is a number ("3,197,443,659.60"), else None."""
    text = cell.strip()
    return text.replace(",", "") if NUMBER_TEXT.fullmatch(text) else None
