"""A digest of what the store holds for a run, table by table: row count and a hash of every
non-null value with its column name (a column that is NULL throughout does not count, so a
table created with more columns up front digests the same). Issue 17 changes how rows are written and read, never what they are: the digest of
the shipped samples, stored by the code before that work, is the golden the test compares with.

    python tests/stored_digest.py > tests/fixtures/stored_tables_digest.json   # regenerate (say why)

`metrics` is the long form of every raw ncu metric (launch_id, metric, unit, value). It was a
table of one value per row until issue 17 stored the metrics as `metric_columns`/`metric_rows`;
its digest is now taken of the long form the store reads back (`Reader.long_metrics`), line for
line as of the table (the same columns, run_id first, NULL for NaN), so the golden made of the
old table proves the new tables hold the same values. `metric_columns` and `metric_rows` are
digested as tables (a blob as its hex digits).
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

TABLES = ("runs", "kernels", "metrics", "timeline", "memory_ops", "ranges", "checks", "timings", "samples", "verdicts",
          "metric_columns", "metric_rows")
LONG_METRICS = ("run_id", "launch_id", "metric", "unit", "value")      # the old table's columns
# paths of the checkout that imported the run; the content key of what the import read (issue 31: an
# identity, not a parsed value, added after the golden was made)
VOLATILE = {"runs": {"run_dir", "info_json", "content_sha256"}}


def _cell(v: Any) -> str:
    if isinstance(v, bytes):
        return v.hex()
    return repr(float(v)) if isinstance(v, float) else json.dumps(v)


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", [table]).fetchone() is not None


def _lines_digest(lines: list[str]) -> dict[str, Any]:
    lines = sorted(lines)
    return {"rows": len(lines), "sha256": hashlib.sha256("\n".join(lines).encode()).hexdigest()}


def long_metrics_digest(conn: sqlite3.Connection, db: Path, run_id: str) -> dict[str, Any] | None:
    """The digest of a run's `metrics` in long form: of the table where the run was stored so,
    else of the long form read back from metric_columns/metric_rows (None: no metrics table of
    either kind in the database)."""
    if _has_table(conn, "metrics") and conn.execute("SELECT 1 FROM metrics WHERE run_id = ?", [run_id]).fetchone():
        return table_digest(conn, "metrics", run_id)
    if not _has_table(conn, "metric_columns"):
        return table_digest(conn, "metrics", run_id)
    from aisp_prof.store.db import Reader

    with Reader(db) as store:
        frame = store.long_metrics(run_id)
    if frame.empty:
        return _lines_digest([])
    columns = [[run_id] * len(frame), frame["launch_id"].tolist(), frame["metric"].tolist(), frame["unit"].tolist(),
               [None if v != v else v for v in frame["value"].tolist()]]
    return _lines_digest(["\x1f".join(f"{c}={_cell(v)}" for c, v in zip(LONG_METRICS, row) if v is not None)
                          for row in zip(*columns)])


def table_digest(conn: sqlite3.Connection, table: str, run_id: str) -> dict[str, Any] | None:
    """{rows, columns, sha256} of one run's rows of `table` (None if the table does not exist)."""
    if not _has_table(conn, table):
        return None
    cur = conn.execute(f"SELECT * FROM [{table}] WHERE run_id = ?", [run_id])
    columns = [d[0] for d in cur.description]
    keep = [i for i, c in enumerate(columns) if c not in VOLATILE.get(table, set())]
    return _lines_digest(["\x1f".join(f"{columns[i]}={_cell(row[i])}" for i in keep if row[i] is not None) for row in cur])


def digest(db: Path, run_ids: list[str]) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        return {rid: {t: long_metrics_digest(conn, db, rid) if t == "metrics" else table_digest(conn, t, rid)
                      for t in TABLES} for rid in run_ids}
    finally:
        conn.close()


def shipped_folders() -> list[Path]:
    """The sample runs the golden was made of (profiles/samples and samples_h100), in the order they
    are imported (a column's place, and so a table's hash, follows the order the runs arrived in)."""
    from aisp_prof.paths import data_root

    return sorted(p for d in ("samples", "samples_h100") for p in (data_root() / "profiles" / d).iterdir()
                  if (p / "run.json").exists())


def shipped_digest(tmp: Path) -> dict[str, Any]:
    """Import every shipped sample (H200 and H100) into a fresh database and digest it."""
    from aisp_prof.store.ingest import store_path

    db = tmp / "digest.db"
    run_ids = [store_path(db, p) for p in shipped_folders()]
    return digest(db, run_ids)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        json.dump(shipped_digest(Path(tmp)), sys.stdout, indent=1, sort_keys=True)
        print()
