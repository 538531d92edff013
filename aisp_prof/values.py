"""Plain values from what pandas and numpy hand back, written once for every stage: a numpy
scalar as its Python value, NaN as None, a number or None, the sum of a column that may be
missing or empty."""
from __future__ import annotations

import math
from typing import Any

import pandas as pd


def to_python(v: Any) -> Any:
    """A numpy scalar as its Python value (anything else as it is)."""
    return v.item() if hasattr(v, "item") else v


def clean_value(v: Any) -> Any:
    """numpy scalars to Python, NaN to None."""
    v = to_python(v)
    return None if isinstance(v, float) and v != v else v


def json_ready(v: Any) -> Any:
    """A value json.dumps writes as is: numpy scalars unwrapped, NaN and inf as None (nested dicts too)."""
    if isinstance(v, dict):
        return {k: json_ready(x) for k, x in v.items()}
    v = to_python(v)
    return None if isinstance(v, float) and not math.isfinite(v) else v


def finite_float(v: Any) -> float | None:
    """`v` as a float; None for what is no number (None, text, NaN, inf)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def series_sum(values: pd.Series) -> float | None:
    """The sum of a column's values; None when none is known (all NaN, or no rows)."""
    s = values.astype(float)
    return float(s.sum()) if s.notna().any() else None


def column_sum(df: pd.DataFrame, col: str) -> float | None:
    """`series_sum` of `df[col]`; None without the column."""
    return series_sum(df[col]) if col in df else None
