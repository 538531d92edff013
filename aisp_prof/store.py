"""The run database (profiles/aisp.db, through sqlite-utils).

Tables: runs, kernels (one row per ncu-profiled launch, tidy columns), metrics (every raw ncu
metric in long form, so nothing measured is lost), timeline (one row per kernel nsys saw),
memory_ops (one row per GPU memcpy/memset nsys saw), ranges (per NVTX range), checks and
timings. A run is written in one transaction: if anything fails half-way, no row of it remains.

Schema changes only add: a table or column a newer parser writes is created on first insert
(`alter=True`), and rows stored before it read back with it missing (table) or NULL (column).
`ranges.gpu_time_ns` of runs stored before memory ops were parsed is kernel time only.
"""
from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from .errors import AispError, UnknownTargetError

log = logging.getLogger(__name__)

DEFAULT_DB = Path("profiles") / "aisp.db"


def db_path(explicit: str | os.PathLike | None = None) -> Path:
    """--db, else $AISP_PROF_DB, else profiles/aisp.db under the current folder."""
    return Path(explicit or os.environ.get("AISP_PROF_DB") or DEFAULT_DB)


def open_db(path: Path) -> sqlite_utils.Database:
    path.parent.mkdir(parents=True, exist_ok=True)
    return sqlite_utils.Database(path)


@dataclass
class RunData:
    """Everything one run stores: a row for `runs` and a frame per child table."""

    run: dict[str, Any]
    kernels: pd.DataFrame = field(default_factory=pd.DataFrame)
    metrics: pd.DataFrame = field(default_factory=pd.DataFrame)
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    memory_ops: pd.DataFrame = field(default_factory=pd.DataFrame)
    ranges: pd.DataFrame = field(default_factory=pd.DataFrame)
    checks: list[dict[str, Any]] = field(default_factory=list)
    timings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.run["run_id"]


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


_TABLES = ("kernels", "metrics", "timeline", "memory_ops", "ranges", "checks", "timings")


def write_run(path: Path, data: RunData) -> str:
    """Insert one run atomically; a run id already stored is an error, not an overwrite."""
    db = open_db(path)
    try:
        if "runs" in db.table_names() and db["runs"].count_where("run_id = ?", [data.run_id]):
            raise AispError(f"run {data.run_id} is already in {path}")
        with db.atomic():
            db["runs"].insert(data.run, pk="run_id", alter=True)
            frames = {"kernels": data.kernels, "metrics": data.metrics, "timeline": data.timeline,
                      "memory_ops": data.memory_ops, "ranges": data.ranges}
            for name, frame in frames.items():
                rows = _records(frame, data.run_id)
                if rows:
                    db[name].insert_all(rows, alter=True, batch_size=500)
            for name, rows in (("checks", data.checks), ("timings", data.timings)):
                if rows:
                    db[name].insert_all([{"run_id": data.run_id, **r} for r in rows], alter=True)
        for name in _TABLES:
            if name in db.table_names():
                db[name].create_index(["run_id"], if_not_exists=True)
    finally:
        db.close()
    return data.run_id


def list_runs(path: Path) -> list[dict[str, Any]]:
    db = open_db(path)
    try:
        if "runs" not in db.table_names():
            return []
        cols = ["run_id", "pair", "label", "source", "status", "created_at", "gpu_name"]
        have = set(db["runs"].columns_dict)
        sel = ", ".join(c if c in have else f"NULL AS {c}" for c in cols)
        return list(db.query(f"SELECT {sel} FROM runs ORDER BY created_at, run_id"))
    finally:
        db.close()


def resolve_run(path: Path, run: str) -> str:
    """A full run id, a unique prefix of one, 'latest', or a pair name (its latest run): what
    an engineer types after `aisp-prof run ch09.fused_l2norm` is the pair, not the run id."""
    listed = list_runs(path)
    runs = [r["run_id"] for r in listed]
    if not runs:
        raise UnknownTargetError(f"no runs in {path}; `aisp-prof run` or `aisp-prof import` first")
    if run == "latest":
        return runs[-1]
    if run in runs:
        return run
    of_pair = [r["run_id"] for r in listed if r.get("pair") == run]
    if of_pair:
        return of_pair[-1]
    matches = [r for r in runs if r.startswith(run)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UnknownTargetError(f"run {run!r} is ambiguous: {', '.join(matches[:5])}")
    import difflib

    close = difflib.get_close_matches(run, runs, n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `aisp-prof runs` lists them"
    raise UnknownTargetError(f"unknown run {run!r}{hint}")


def get_run(path: Path, run_id: str) -> dict[str, Any]:
    db = open_db(path)
    try:
        row = db["runs"].get(run_id)
    finally:
        db.close()
    return dict(row)


def read_table(path: Path, table: str, run_id: str) -> pd.DataFrame:
    """One run's rows of a child table, without the run_id column ('' tables -> empty frame)."""
    db = open_db(path)
    try:
        if table not in db.table_names():
            return pd.DataFrame()
        rows = list(db.query(f"SELECT * FROM [{table}] WHERE run_id = ?", [run_id]))
    finally:
        db.close()
    df = pd.DataFrame(rows)
    return df.drop(columns=["run_id"]) if "run_id" in df else df
