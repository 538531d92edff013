"""The numbers of one metric column of an ncu CSV, a column at a time instead of a cell at a time.

The rule is per cell (`ncu_units.number_text` then `scale_value`): a cell is a number if it
matches ncu's number syntax (thousands separators allowed), else the launch has no value. Applied
cell by cell it cost 3 of the 17 s of parsing a 10k-launch export (4.6M cells). Here a column
whose every cell is a plain ASCII number is checked and converted whole, with the same result:

* a column holding one value throughout (in the shipped samples 332 of 461 columns: the device
  attributes, launch settings) converts that value once;
* syntax: the rule's regular expression only looks at which characters are digits, so it is run
  once per distinct *shape* of the column's cells (every digit written as 0): a column of 10k
  counter values has a handful of shapes;
* value: thousands separators dropped, numpy parses each text as Python's float() does (correctly
  rounded); a scaled unit (exponent e != 0, e.g. us -> ns) appends "e<e>" to each text, which is
  exactly Decimal(text).scaleb(e) as long as the text has at most 28 digits (Decimal's precision)
  and no exponent of its own. Anything else (a blank, "n/a", text, a cell with spaces) takes the
  per-cell rule, with each distinct cell converted once.
"""
from __future__ import annotations

import re

import numpy as np

from ..metrics.units import NUMBER_TEXT, number_text, scale_value

_SHAPE = bytes.maketrans(b"123456789", b"000000000")
_NUMBER_BYTES = re.compile(NUMBER_TEXT.pattern.encode("ascii"))      # ASCII digits only, as the text is ASCII
DECIMAL_DIGITS = 28                    # decimal's default precision: scaleb is exact up to this many digits


def fast_values(cells: tuple[str, ...] | list[str], exp: int) -> np.ndarray | None:
    """float64 values of a column whose every cell is a number, each `scale_value(number_text(cell),
    exp)`; None when any cell is not (then the caller takes the per-cell rule)."""
    first = cells[0]
    sample = cells[:: max(1, len(cells) // 16)]           # most columns that vary show it here, cheaply
    if sample.count(first) == len(sample) and cells.count(first) == len(cells):   # one value throughout
        text = number_text(first)
        return None if text is None else np.full(len(cells), scale_value(text, exp))
    joined = "\n".join(cells)
    if not joined.isascii():
        return None
    raw = joined.encode("ascii")
    if raw.count(b"\n") != len(cells) - 1:               # a cell holding a line break
        return None
    shapes = set(raw.translate(_SHAPE).split(b"\n"))
    if not all(_NUMBER_BYTES.fullmatch(s) for s in shapes):
        return None
    if b"," in raw:
        raw = raw.replace(b",", b"")
    if exp:
        if b"e" in raw or b"E" in raw or max(map(len, shapes)) > DECIMAL_DIGITS:
            return None
        suffix = b"e%d" % exp
        raw = raw.replace(b"\n", suffix + b"\n") + suffix
    return np.array(raw.split(b"\n"), dtype=np.float64)


def cell_values(cells: tuple[str, ...] | list[str], exp: int) -> tuple[np.ndarray, list[int]]:
    """The per-cell rule for a whole column: float64 values (NaN where a cell is not a number) and
    the indexes of those cells. Each distinct cell is converted once."""
    seen: dict[str, float | None] = {}
    out = np.full(len(cells), np.nan)
    missing = []
    for i, cell in enumerate(cells):
        if cell in seen:
            value = seen[cell]
        else:
            text = number_text(cell)
            value = seen[cell] = scale_value(text, exp) if text is not None else None
        if value is None:
            missing.append(i)
        else:
            out[i] = value
    return out, missing
