"""A frame's rows into a run table, under sqlite-utils: plain sqlite3, the repeated columns bound once.

sqlite3 binds every cell from Python, ~90 ns a cell whatever SQLite does with it: 2.2 of the
3.3 s that executemany took for a 1M-kernel timeline (24 columns). Most of those columns
repeat: kernel names, launch configurations, API names, ranges and variants are a few dozen
distinct combinations behind a million launches. So each distinct combination of the repeated
columns is bound once, into a temp table; each row binds only its code and its own columns
(ids, times) into a temp stage table, a chunk at a time; and SQLite copies the chunk, joined
with its combinations, into the run table in row order.

The stored values are the ones binding each cell would store: every value is converted to
Python the same way (`python_columns`), the temp tables' columns have no type (SQLite converts
nothing there), and the run table's column affinity applies on the copy as on a bound value.
Only columns whose equal values are the same value are grouped (integers, booleans, text):
floats stay per row (0.0 and -0.0 are equal but are not the same value), and so do object
columns that mix types (1 and 1.0 and True are equal).

Rows whose bulkiest columns stay in an attached export (`export_rows.ExportRows`: a 1M-kernel
timeline) go the same way, the copy also joining each row's row in the export by rowid, for the
columns SQLite takes from there.
"""
from __future__ import annotations

import sqlite3
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from pandas.api.types import infer_dtype

from ..export_rows import ExportColumns, ExportRows

SAMPLE_ROWS = 10_000      # rows looked at to tell a repeated column from a per-row one
REPEATED = 8              # a column repeats if its sample has at most 1/REPEATED distinct values
_COMBOS, _STAGE = "temp.aisp_bulk_combos", "temp.aisp_bulk_stage"


def python_columns(df: pd.DataFrame) -> list[list[Any]]:
    """Each column as plain Python values (numpy scalars unboxed, NaN/NA as None), column by
    column: one vectorized conversion per column instead of one Python call per cell."""
    return [df[name].astype(object).where(df[name].notna(), None).tolist() for name in df.columns]


def insert_frame(conn: sqlite3.Connection, table: str, df: pd.DataFrame, run_id: str, chunk_rows: int) -> None:
    """Append the frame's rows, each with run_id, to `table` (which has all their columns), in
    frame order, inside the caller's transaction."""
    repeated = _repeated_columns(df)
    if repeated:
        _staged(conn, table, df, run_id, chunk_rows, repeated, list(df.columns))
        return
    names = ", ".join(f"[{c}]" for c in ["run_id", *map(str, df.columns)])
    sql = f"INSERT INTO [{table}] ({names}) VALUES ({', '.join('?' * (len(df.columns) + 1))})"
    for first in range(0, len(df), chunk_rows):
        chunk = df.iloc[first:first + chunk_rows]
        conn.executemany(sql, zip([run_id] * len(chunk), *python_columns(chunk)))


def insert_export_rows(conn: sqlite3.Connection, table: str, rows: ExportRows, schema: str, run_id: str,
                       chunk_rows: int) -> None:
    """Append `rows` (`export_rows`) to `table` as `insert_frame` appends a frame: the frame's
    columns bound as there, the export's (attached as `schema`) copied by SQLite from the row
    the key names, every row in frame order."""
    key = rows.source.key
    repeated = [c for c in _repeated_columns(rows.frame) if c != key]      # the key is never grouped
    _staged(conn, table, rows.frame, run_id, chunk_rows, repeated, rows.columns, _Attached(rows.source, schema))


class _Attached(NamedTuple):
    """Columns of an export attached to the connection as `schema`."""
    source: ExportColumns
    schema: str


def _staged(conn: sqlite3.Connection, table: str, df: pd.DataFrame, run_id: str, chunk_rows: int,
            repeated: list[Any], stored: list[Any], export: _Attached | None = None) -> None:
    """The frame's combinations of `repeated` bound once, its other columns a chunk at a time
    into a stage table, and each chunk copied into `table` (columns `stored`) joined with its
    combinations, and with its rows in the `export` for that export's columns."""
    own = [c for c in df.columns if c not in repeated]
    exported = export.source.expressions(export.schema) if export is not None else {}
    joins = [f"CROSS JOIN {_COMBOS} AS c ON c.id = s.code"] if repeated else []
    if export is not None:
        joins.append(export.source.from_clause(export.schema, f"s.c{own.index(export.source.key)}"))
    codes, firsts = _combination_codes(df, repeated)
    if repeated:
        conn.execute(f"CREATE TABLE {_COMBOS} (id INTEGER PRIMARY KEY, {', '.join(f'c{i}' for i in range(len(repeated)))})")
    conn.execute(f"CREATE TABLE {_STAGE} (code{''.join(f', c{i}' for i in range(len(own)))})")
    try:
        if repeated:
            conn.executemany(f"INSERT INTO {_COMBOS} VALUES ({', '.join('?' * (len(repeated) + 1))})",
                             zip(range(len(firsts)), *python_columns(df.iloc[firsts][repeated])))
        picks = [exported[c] if c in exported else f"c.c{repeated.index(c)}" if c in repeated else f"s.c{own.index(c)}"
                 for c in stored]
        names = ", ".join(f"[{c}]" for c in ["run_id", *stored])
        copy = (f"INSERT INTO [{table}] ({names}) SELECT ?, {', '.join(picks)} FROM {_STAGE} AS s "
                f"{' '.join(joins)} ORDER BY s.rowid")
        stage = f"INSERT INTO {_STAGE} VALUES ({', '.join('?' * (len(own) + 1))})"
        for first in range(0, len(df), chunk_rows):
            chunk = df.iloc[first:first + chunk_rows][own]
            conn.executemany(stage, zip(codes[first:first + chunk_rows].tolist(), *python_columns(chunk)))
            conn.execute(copy, [run_id])
            conn.execute(f"DELETE FROM {_STAGE}")
    finally:                    # IF EXISTS: a full disk rolls the whole transaction back, temp tables too
        conn.execute(f"DROP TABLE IF EXISTS {_STAGE}")
        conn.execute(f"DROP TABLE IF EXISTS {_COMBOS}")


def _repeated_columns(df: pd.DataFrame) -> list[Any]:
    """Columns of integers, booleans or text whose first SAMPLE_ROWS rows repeat values."""
    sample = df.iloc[:SAMPLE_ROWS]
    limit = len(sample) // REPEATED
    out = []
    for name in df.columns:
        col = sample[name]
        if col.dtype.kind == "f" or (col.dtype == object and infer_dtype(col, skipna=True) not in ("string", "empty")):
            continue
        if limit and col.nunique(dropna=False) <= limit:
            out.append(name)
    return out


def _combination_codes(df: pd.DataFrame, columns: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """A code per row for its combination of `columns` (0, 1, ... in order of first appearance)
    and the row where each combination first appears. The columns' codes are combined as one
    mixed-radix key, renumbered only when the next radix could overflow it."""
    key, size = np.zeros(len(df), dtype=np.int64), 1
    for name in columns:
        col_codes, uniques = pd.factorize(df[name], use_na_sentinel=False)
        if size * len(uniques) >= 2 ** 62:
            key = pd.factorize(key)[0]
            size = int(key.max()) + 1
        key = key * len(uniques) + col_codes
        size *= len(uniques)
    codes = pd.factorize(key)[0]
    return codes, np.unique(codes, return_index=True)[1]
