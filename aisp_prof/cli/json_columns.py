"""The `--json` text of a frame's records, encoded a column at a time.

`json.dumps(record, indent=2)` runs the standard library's pure-Python encoder (its C encoder
only serves indent=None), a few Python calls per value: with building each record as a dict,
most of the 48 s `kernels --json` took on 1M kernels. The records of one frame share their keys,
so here each column is encoded once, with C-level conversions where its dtype allows (int and
float repr, json's own string escaper once per distinct string), and each record's text is one
%-format of its row's encoded values.

The text is exactly what `json.dumps(record, indent=2, default=default)` gives for the record
that `frame_records` makes of the row (numpy values unboxed, NaN as null), indented one level
more: columns of any other dtype, or holding missing text, are encoded value by value with the
encoder's own rules, and a value the encoder would expand (a list or a dict) sends the frame
back to json.dumps.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any, Union

import numpy as np
import pandas as pd
from pandas.api.types import infer_dtype

from ..analyze.records import frame_records

# (key, column) or (key, [(key, column), ...]): a record's fields, a nested one as a dict
Layout = Sequence[tuple[str, Union[str, Sequence[tuple[str, str]]]]]
_INDENT = "  "
_INF = float("inf")


class _Expands(Exception):
    """A value json.dumps would write over several lines (a list or a dict)."""


def record_texts(frame: pd.DataFrame, layout: Layout, default: Callable[[Any], Any], compact: bool = False) -> list[str]:
    """Per row of `frame`, json.dumps of its record (`layout`) with indent=2, indented one level;
    `compact`: json.dumps' one-line form (NDJSON)."""
    if frame.empty:
        return []
    columns = [c for _, c in _flat(layout)]
    try:
        encoded = [_encode_column(frame[c], default) if c in frame else ["null"] * len(frame) for c in columns]
    except _Expands:
        if compact:
            return [json.dumps(r, default=default) for r in _records(frame, layout)]
        return [json.dumps(r, indent=2, default=default).replace("\n", "\n" + _INDENT)
                for r in _records(frame, layout)]
    return list(map(_template(layout, compact).__mod__, zip(*encoded)))


def _flat(layout: Layout) -> list[tuple[str, str]]:
    return [pair for key, c in layout for pair in ([(key, c)] if isinstance(c, str) else c)]


def _records(frame: pd.DataFrame, layout: Layout) -> list[dict[str, Any]]:
    """The records themselves, as the callers built them before (for the fallback)."""
    out = []
    for rec in frame_records(frame):
        out.append({key: rec.get(c) if isinstance(c, str) else {k: rec.get(n) for k, n in c}
                    for key, c in layout})
    return out


def _template(layout: Layout, compact: bool = False) -> str:
    """'{\\n    "key": %s, ...\\n  }': json.dumps' indent=2 layout, one level deeper; `compact`:
    '{"key": %s, ...}', json.dumps' one-line layout."""
    def block(pairs: Sequence[tuple[str, Any]], depth: int) -> str:
        if not pairs:
            return "{}"
        if compact:
            return "{" + ", ".join(encode_basestring_ascii(k).replace("%", "%%") + ": "
                                   + ("%s" if isinstance(c, str) else block(c, depth)) for k, c in pairs) + "}"
        pad = "\n" + _INDENT * (depth + 1)
        lines = [pad + encode_basestring_ascii(k).replace("%", "%%") + ": "
                 + ("%s" if isinstance(c, str) else block(c, depth + 1)) for k, c in pairs]
        return "{" + ",".join(lines) + "\n" + _INDENT * depth + "}"
    return block(layout, 1)


def _encode_column(col: pd.Series, default: Callable[[Any], Any]) -> list[str]:
    """A column's values as JSON text, as frame_records + json.dumps would write each."""
    dtype = col.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "iu":
        return list(map(int.__repr__, col.to_numpy().tolist()))
    if isinstance(dtype, np.dtype) and dtype.kind == "f":
        values = col.to_numpy()
        nan = np.isnan(values)                                 # NaN -> None -> null
        if nan.all():
            return ["null"] * len(values)
        out = np.array(list(map(float.__repr__, values.tolist())), dtype=object)
        out[nan] = "null"
        out[values == _INF], out[values == -_INF] = "Infinity", "-Infinity"     # as json writes them
        return out.tolist()
    if isinstance(dtype, np.dtype) and dtype.kind == "b":
        return ["true" if v else "false" for v in col.to_numpy().tolist()]
    if (dtype == object or isinstance(dtype, pd.StringDtype)) and not col.isna().any() \
            and infer_dtype(col, skipna=False) == "string":
        codes, uniques = pd.factorize(col)
        texts = np.array([encode_basestring_ascii(str(u)) for u in uniques], dtype=object)
        return texts[codes].tolist()
    return [_encode_value(rec[col.name], default) for rec in frame_records(col.to_frame())]


def _encode_value(v: Any, default: Callable[[Any], Any]) -> str:
    """One value as json's encoder writes it (str, None, bool, int, float, else default(v))."""
    if isinstance(v, str):
        return encode_basestring_ascii(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, float):
        if v != v:
            return "NaN"
        return "Infinity" if v == _INF else "-Infinity" if v == -_INF else float.__repr__(v)
    if isinstance(v, (list, tuple, dict)):
        raise _Expands
    return _encode_value(default(v), default)
