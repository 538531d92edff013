"""sqlite3 rows into pandas frames, column by column, under `pd.DataFrame.from_records`.

`from_records` checks every row's length and converts every cell through a generic object path:
2.5 s of a 1M-kernel nsys import for 18 integer columns. Here each column is gathered on its own
and numpy converts it in one C loop when its values are all integers or floats (every numeric
column of an nsys export, and of the run database); the integer columns of a chunk go through
numpy together, in one pass. Any other column (NULLs among values, a mix of types) goes through
`from_records` alone, so every column gets exactly the dtype and values `from_records` would
give it (a column NULL throughout stays an object column of None, a column of text
throughout gets the text dtype from_records gives text, as there).
"""
from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import infer_dtype

_NUMERIC = (np.dtype(np.int64), np.dtype(np.float64))
_TEXT_DTYPE = pd.DataFrame.from_records([("",)], columns=["s"])["s"].dtype    # what from_records makes of text


def frame_of_rows(rows: Sequence[tuple[Any, ...]], columns: Sequence[str]) -> pd.DataFrame:
    """`pd.DataFrame.from_records(rows, columns=columns)`, the same frame, built faster."""
    columns = list(columns)
    if not rows or len(set(columns)) != len(columns):
        return pd.DataFrame.from_records(rows, columns=columns)
    data = _int_block(rows, columns)
    for i, name in enumerate(columns):
        if name not in data:
            data[name] = _column([r[i] for r in rows], name)
    return pd.DataFrame(data, columns=columns)


def _int_block(rows: Sequence[tuple[Any, ...]], columns: list[str]) -> dict[str, np.ndarray]:
    """The columns whose first value is an int, converted together in one numpy pass when every
    one of their values is an int (numpy infers int64 only then); else none of them."""
    ints = [i for i, v in enumerate(rows[0]) if type(v) is int]
    if len(ints) < 2:
        return {}
    block = np.array(list(map(itemgetter(*ints), rows)))
    if block.dtype != np.int64:
        return {}
    block = np.ascontiguousarray(block.T)
    return {columns[i]: block[j] for j, i in enumerate(ints)}


def _column(values: list[Any], name: str) -> Any:
    """One column: numpy's own int64/float64 inference for plain numbers, None throughout as an
    object column, text throughout as from_records' text dtype (each as from_records makes it),
    else from_records' own conversion."""
    if values[0] is None and values.count(None) == len(values):
        return np.array(values, dtype=object)
    if type(values[0]) is str:
        arr = np.array(values, dtype=object)
        if infer_dtype(arr, skipna=False) == "string":                # text throughout
            return arr if _TEXT_DTYPE == object else pd.array(arr, dtype=_TEXT_DTYPE)
    if type(values[0]) in (int, float):
        arr = np.array(values)        # all int -> int64, int and float -> float64, as from_records
        if arr.dtype in _NUMERIC:
            return arr
    return pd.DataFrame.from_records([(v,) for v in values], columns=[name])[name]


def query_frames(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = (),
                 chunk_rows: int = 50_000) -> Iterator[pd.DataFrame]:
    """A query's rows as frames of at most `chunk_rows` (none when it has no rows); sqlite3
    errors propagate unchanged."""
    cur = conn.execute(sql, params)
    columns = [d[0] for d in cur.description]
    while rows := cur.fetchmany(chunk_rows):
        yield frame_of_rows(rows, columns)


def query_frame(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = (),
                chunk_rows: int = 50_000) -> pd.DataFrame:
    """A query's rows as one frame, read a chunk at a time (a million rows as Python tuples at
    once would cost ~600 MB; 50k-row chunks leave less freed memory behind than 200k-row ones,
    at the same speed); an empty frame with the query's columns when there are none."""
    cur = conn.execute(sql, params)
    columns = [d[0] for d in cur.description]
    chunks = []
    while rows := cur.fetchmany(chunk_rows):
        chunks.append(frame_of_rows(rows, columns))
    if not chunks:
        return pd.DataFrame(columns=columns)
    return chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)


def integer_frame(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame | None:
    """A query's rows as int64 columns when every value is an integer (then the frame
    `query_frame` gives), read 2-3x faster: one comma-joined text per column (SQLite's
    group_concat over the query, whose rows it visits in the query's own order), parsed by
    numpy. None when it has no rows, or a value is not an integer (a NULL, a REAL, text: the
    column's text then does not parse to one int per row), for the caller to read otherwise.

    Text that spells an integer would parse as one: meant for columns of INTEGER affinity (and
    rowids), where SQLite never keeps such text."""
    columns = [d[0] for d in conn.execute(f"SELECT * FROM ({sql}) LIMIT 0", params).description]
    joined = ", ".join(f'group_concat("{c}")' for c in columns)
    rows, *texts = conn.execute(f"SELECT count(*), {joined} FROM ({sql})", params).fetchone()
    if not rows:
        return None
    data = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # numpy warns, then stops, at text it cannot parse
        for name in columns:
            text = texts.pop(0)               # each text let go once parsed (tens of MB at 1M rows)
            try:
                values = np.fromstring(text, dtype=np.int64, sep=",")
            except (ValueError, TypeError, DeprecationWarning):
                return None
            if len(values) != rows:           # a NULL is left out of group_concat; '' parses to nothing
                return None
            data[name] = values
    return pd.DataFrame(data, columns=columns)
