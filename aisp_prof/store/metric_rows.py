"""Every raw ncu metric of a run in two tables: a row per metric column, a row per launch.

The long `metrics` table (one value per row) held 455 rows per launch: 4.6M rows, 577 MB and
14 s of writing for a 10k-launch import, and `roofline` scanned 1.6M of them for ~40 device
attributes. Now:

    metric_columns  run_id, position, metric, unit, value, slot
        one row per metric column of the export, in column order. A column whose value is the
        same on every launch (device attributes, launch settings: 332 of 461 in the shipped
        samples) keeps it in `value` and has no `slot`; a column no launch has a value for has
        neither; every other column has a `slot` in the launch rows.
    metric_rows     run_id, launch_id, values_f64le, nan_slots_i32le
        one row per launch, in launch order: `values_f64le` holds the launch's value of each slot
        as little-endian float64, NaN where the launch has none; `nan_slots_i32le` (almost always
        NULL) lists, as little-endian int32, the slots whose value is present but is NaN itself.

The long form reads back value for value (`LaunchMetrics.long()`; tests/unit/test_metric_rows.py),
with what SQLite did to the values of the long table done here too: -0.0 is stored as 0.0 (a
REAL column stored it as the integer 0), a NaN value reads back as NULL/NaN.
"""
from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from ..model.launch_metrics import LaunchMetrics

COLUMNS_TABLE, ROWS_TABLE = "metric_columns", "metric_rows"
TABLES = (COLUMNS_TABLE, ROWS_TABLE)
_SCHEMA = {
    COLUMNS_TABLE: "[run_id] TEXT, [position] INTEGER, [metric] TEXT, [unit] TEXT, [value] FLOAT, [slot] INTEGER",
    ROWS_TABLE: "[run_id] TEXT, [launch_id] INTEGER, [values_f64le] BLOB, [nan_slots_i32le] BLOB",
}


def write_metrics(conn: sqlite3.Connection, metrics: LaunchMetrics, run_id: str) -> int:
    """Store a run's metrics (inside the caller's transaction); the number of launch rows."""
    n, m = metrics.values.shape
    if not n or not m:
        return 0
    for table, columns in _SCHEMA.items():
        conn.execute(f"CREATE TABLE IF NOT EXISTS [{table}] ({columns})")
    mask = metrics.mask()
    values = np.where(mask, metrics.values, np.nan) + 0.0          # -0.0 -> 0.0, absent -> NaN
    same = mask.all(axis=0) & (values == values[0]).all(axis=0)     # NaN is never equal: stays per launch
    never = ~mask.any(axis=0)
    slots = np.flatnonzero(~(same | never))
    slot_of = {int(j): s for s, j in enumerate(slots)}
    conn.executemany(
        f"INSERT INTO [{COLUMNS_TABLE}] VALUES (?, ?, ?, ?, ?, ?)",
        [(run_id, j, metrics.metrics[j], metrics.units[j], float(values[0, j]) if same[j] else None, slot_of.get(j))
         for j in range(m)])
    block = np.ascontiguousarray(values[:, slots], dtype="<f8")
    nan_cells = mask[:, slots] & np.isnan(block)
    nan_rows = set(np.flatnonzero(nan_cells.any(axis=1)).tolist())
    conn.executemany(
        f"INSERT INTO [{ROWS_TABLE}] VALUES (?, ?, ?, ?)",
        ((run_id, lid, block[i].tobytes(),
          np.flatnonzero(nan_cells[i]).astype("<i4").tobytes() if i in nan_rows else None)
         for i, lid in enumerate(metrics.launch_ids.tolist())))
    return n


def read_metrics(conn: sqlite3.Connection, run_id: str) -> LaunchMetrics | None:
    """A run's metrics as stored by `write_metrics`; None if the run has none in these tables."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not set(TABLES) <= tables:
        return None
    cols = conn.execute(f"SELECT position, metric, unit, value, slot FROM [{COLUMNS_TABLE}] WHERE run_id = ? "
                        "ORDER BY position", [run_id]).fetchall()
    if not cols:
        return None
    rows = conn.execute(f"SELECT launch_id, values_f64le, nan_slots_i32le FROM [{ROWS_TABLE}] WHERE run_id = ? "
                        "ORDER BY rowid", [run_id]).fetchall()
    n, m = len(rows), len(cols)
    slotted = sorted((slot, j) for j, (_, _, _, _, slot) in enumerate(cols) if slot is not None)
    slot_cols = np.array([j for _, j in slotted], dtype=np.int64)
    values = np.empty((n, m))
    if len(slot_cols):
        values[:, slot_cols] = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f8").reshape(n, len(slot_cols))
    for j, (_, _, _, value, slot) in enumerate(cols):
        if slot is None:
            values[:, j] = np.nan if value is None else value
    present = _present(values, rows, slot_cols)
    return LaunchMetrics(np.array([r[0] for r in rows], dtype=np.int64), tuple(c[1] for c in cols),
                         tuple(c[2] for c in cols), values, present)


def _present(values: np.ndarray, rows: list[Any], slot_cols: np.ndarray) -> np.ndarray | None:
    """Where a launch has a value, when some value present is NaN (else None: wherever not NaN)."""
    if not any(r[2] for r in rows):
        return None
    present = ~np.isnan(values)
    for i, r in enumerate(rows):
        if r[2]:
            present[i, slot_cols[np.frombuffer(r[2], dtype="<i4")]] = True
    return present
