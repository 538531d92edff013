"""The run database (profiles/aisp.db, through sqlite-utils): write a run, read runs back.

Tables: runs, kernels (one row per ncu-profiled launch, tidy columns), metrics (every raw ncu
metric in long form, so nothing measured is lost), timeline (one row per kernel nsys saw),
memory_ops (one row per GPU memcpy/memset nsys saw), ranges (per NVTX range), checks and
timings, and ceilings (measured calibrations, see `calibrations`). A run is written in one
transaction: if anything fails half-way, no row of it remains.

Reading goes through `Database`, one open connection for a sequence of reads, so a report page
costs one open, not one per table.

Schema changes only add: a table or column a newer parser writes is created on first insert
(`alter=True`), and rows stored before it read back with it missing (table) or NULL (column).
`ranges.gpu_time_ns` of runs stored before memory ops were parsed is kernel time only.
"""
from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from ..errors import AispError
from .run_data import TABLES, RunData

log = logging.getLogger(__name__)

DEFAULT_DB = Path("profiles") / "aisp.db"
RUN_COLUMNS = ("run_id", "pair", "label", "source", "status", "created_at", "gpu_name")
DEVICE_METRICS = "device__attribute_%"


def db_path(explicit: str | os.PathLike | None = None) -> Path:
    """--db, else $AISP_PROF_DB, else profiles/aisp.db under the current folder."""
    return Path(explicit or os.environ.get("AISP_PROF_DB") or DEFAULT_DB)


def open_db(path: Path) -> sqlite_utils.Database:
    path.parent.mkdir(parents=True, exist_ok=True)
    return sqlite_utils.Database(path)


def _records(df: pd.DataFrame, run_id: str) -> list[dict[str, Any]]:
    if df is None or df.empty:
        return []
    out = df.copy()
    out.insert(0, "run_id", run_id)
    rows = out.astype(object).where(out.notna(), None).to_dict("records")
    return [{k: _plain(v) for k, v in r.items()} for r in rows]


def _plain(v: Any) -> Any:
    if hasattr(v, "item"):          # numpy scalars -> python
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def write_run(path: Path, data: RunData) -> str:
    """Insert one run atomically; a run id already stored is an error, not an overwrite."""
    db = open_db(path)
    try:
        if "runs" in db.table_names() and db["runs"].count_where("run_id = ?", [data.run_id]):
            raise AispError(f"run {data.run_id} is already in {path}")
        with db.atomic():
            db["runs"].insert(data.run, pk="run_id", alter=True)
            for name in TABLES:
                rows = _records(getattr(data, name), data.run_id)
                if rows:
                    db[name].insert_all(rows, alter=True, batch_size=500)
        for name in TABLES:
            if name in db.table_names():
                db[name].create_index(["run_id"], if_not_exists=True)
    finally:
        db.close()
    return data.run_id


class Database:
    """One open connection to the run database for a sequence of reads (a context manager)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._db = open_db(self.path)
        self._tables = set(self._db.table_names())

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def has(self, table: str) -> bool:
        return table in self._tables

    def columns(self, table: str) -> set[str]:
        return set(self._db[table].columns_dict) if self.has(table) else set()

    def query(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self._db.query(sql, list(params))]

    def list_runs(self) -> list[dict[str, Any]]:
        """Every stored run's RUN_COLUMNS, oldest first."""
        if not self.has("runs"):
            return []
        have = self.columns("runs")
        sel = ", ".join(c if c in have else f"NULL AS {c}" for c in RUN_COLUMNS)
        return self.query(f"SELECT {sel} FROM runs ORDER BY created_at, run_id")

    def run_row(self, run_id: str) -> dict[str, Any]:
        return dict(self._db["runs"].get(run_id))

    def table(self, table: str, run_id: str, where: str = "", params: tuple[Any, ...] = ()) -> pd.DataFrame:
        """One run's rows of a child table, without the run_id column (missing table: empty)."""
        if not self.has(table):
            return pd.DataFrame()
        rows = self.query(f"SELECT * FROM [{table}] WHERE run_id = ?{where}", [run_id, *params])
        df = pd.DataFrame(rows)
        return df.drop(columns=["run_id"]) if "run_id" in df else df

    def read_run(self, run_id: str, all_metrics: bool = False) -> RunData:
        """A stored run as RunData. Of the long `metrics` table only the device attributes are
        read unless `all_metrics` (the rest is kept for exports, not needed by analysis)."""
        data = RunData(run=self.run_row(run_id))
        for name in TABLES:
            if name == "metrics" and not all_metrics:
                frame = self.table(name, run_id, " AND metric LIKE ?", (DEVICE_METRICS,))
            else:
                frame = self.table(name, run_id)
            setattr(data, name, frame)
        return data


def list_runs(path: Path) -> list[dict[str, Any]]:
    """The stored runs, oldest first (one open)."""
    with Database(path) as db:
        return db.list_runs()


def read_run(path: Path, run_id: str, all_metrics: bool = False) -> RunData:
    """One stored run (one open)."""
    with Database(path) as db:
        return db.read_run(run_id, all_metrics)


def read_table(path: Path, table: str, run_id: str) -> pd.DataFrame:
    """One run's rows of one child table (one open)."""
    with Database(path) as db:
        return db.table(table, run_id)
