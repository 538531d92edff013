"""Frames and values made JSON-ready: what `--json`, the report's data files and templates take."""
from __future__ import annotations

from typing import Any

import pandas as pd

from ..values import clean_value  # noqa: F401 (imported from here by analysis and the API)


def frame_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame as a list of dicts of plain Python values (NaN -> None)."""
    if df is None or df.empty:
        return []
    return [{k: clean_value(v) for k, v in r.items()} for r in df.to_dict("records")]
