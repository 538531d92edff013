"""Frames and values made JSON-ready: what `--json`, the report's data files and templates take."""
from __future__ import annotations

from typing import Any

import pandas as pd


def clean_value(v: Any) -> Any:
    """numpy scalars to Python, NaN to None."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    return v


def frame_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame as a list of dicts of plain Python values (NaN -> None)."""
    if df is None or df.empty:
        return []
    return [{k: clean_value(v) for k, v in r.items()} for r in df.to_dict("records")]
