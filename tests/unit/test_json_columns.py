"""cli.json_columns: a frame's records encoded a column at a time are, character for character,
json.dumps(record, indent=2) of the records `kernel_records` builds, one level deeper."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aisp_prof.api import KERNEL_RECORD_LAYOUT, kernel_records
from aisp_prof.cli.common import _json_default, record_texts

LAYOUT = [("i", "i"), ("f", "f"), ("s", "s"), ("nested", [("b", "b"), ("o", "o"), ("pct%", "s_na")]),
          ("missing", "nope"), ("empty", [])]


def _expected(frame: pd.DataFrame, layout) -> list[str]:
    from aisp_prof.analyze.records import frame_records

    recs = [{k: rec.get(c) if isinstance(c, str) else {kk: rec.get(cc) for kk, cc in c} for k, c in layout}
            for rec in frame_records(frame)]
    return [json.dumps(r, indent=2, default=_json_default).replace("\n", "\n  ") for r in recs]


def _frame(n: int) -> pd.DataFrame:
    pick = np.arange(n) % 4
    return pd.DataFrame({
        "i": np.arange(n, dtype=np.int64) - 2,
        "f": np.array([1.5, np.nan, np.inf, -0.0])[pick],
        "s": np.array(['a"b', "ünï\n", "%s", "k" * 200], dtype=object)[pick],
        "b": pick == 1,
        "o": pd.Series(np.array([np.int64(3), None, 2.5, np.float64(np.nan)], dtype=object)[pick]),
        "s_na": pd.Series(np.array(["x", None, "y", "z"], dtype=object)[pick], dtype="str"),
    })


@pytest.mark.parametrize("n", [1, 4, 9])
def test_column_encoding_is_json_dumps(n):
    frame = _frame(n)
    assert record_texts(frame, LAYOUT) == _expected(frame, LAYOUT)


def test_a_list_value_falls_back_to_json_dumps():
    frame = _frame(4).assign(o=pd.Series([[1, 2], None, {"a": 1}, 3], dtype=object))
    assert record_texts(frame, LAYOUT) == _expected(frame, LAYOUT)


def test_kernel_layout_is_kernel_records():
    frame = pd.DataFrame({"launch_id": [1, 2], "kernel": ["k", "k"], "duration_ns": [10, 20],
                          "flops_fp32": [np.nan, 4.0], "grid_dim": ["(1, 1, 1)", "(2, 1, 1)"]})
    texts = record_texts(frame, KERNEL_RECORD_LAYOUT)
    assert texts == [json.dumps(r, indent=2, default=_json_default).replace("\n", "\n  ")
                     for r in kernel_records(frame)]
    assert record_texts(frame.iloc[:0], KERNEL_RECORD_LAYOUT) == []
