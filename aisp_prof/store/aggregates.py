"""Per-run sums written at import, in SQL, beside the rows they sum: what a query of a 1M-kernel
run needs without reading its timeline (issue 33).

`timeline_calls`: per variant, the nsys calls (range instances) with kernels, the kernels, and
the least and most summed kernel time of one call (`analyze.rule_input.call_spread`, all a
summary's verdict reads of the timeline); and one row with variant NULL for the whole run (its
timeline kernels), written for every run, so a run without it is a run stored before it. Such a
run still answers: `call_spread` computes the same rows with the same SQL on read (1.2 s at 1M
kernels instead of ~0 s). The per-range sums were already written at import (`ranges`,
`range_levels`).
"""
from __future__ import annotations

import sqlite3

import pandas as pd

CALLS_TABLE = "timeline_calls"
CALLS_COLUMNS = ("variant", "calls", "kernels", "call_kernel_min_ns", "call_kernel_max_ns")
_PER_VARIANT = """
    SELECT variant, COUNT(*), SUM(n), MIN(t), MAX(t) FROM (
        SELECT variant, COUNT(*) AS n, SUM(duration_ns) AS t FROM timeline
        WHERE run_id = ? AND variant IS NOT NULL AND range_instance IS NOT NULL
        GROUP BY variant, range_instance)
    GROUP BY variant ORDER BY variant"""


def _has(conn: sqlite3.Connection, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table]).fetchone() is not None


def _has_calls(conn: sqlite3.Connection) -> bool:
    """A timeline with the columns calls are told by (a frame of other columns has none)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(timeline)")}
    return {"variant", "range_instance", "duration_ns"} <= have


def write_aggregates(conn: sqlite3.Connection, run_id: str) -> None:
    """The run's `timeline_calls` rows, from its timeline rows just written (same transaction)."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS [{CALLS_TABLE}] (run_id TEXT, variant TEXT, calls INTEGER, "
                 "kernels INTEGER, call_kernel_min_ns INTEGER, call_kernel_max_ns INTEGER)")
    conn.execute(f"CREATE INDEX IF NOT EXISTS [idx_{CALLS_TABLE}_run_id] ON [{CALLS_TABLE}] (run_id)")
    if _has(conn, "timeline"):
        if _has_calls(conn):
            conn.execute(f"INSERT INTO [{CALLS_TABLE}] SELECT ?, * FROM ({_PER_VARIANT})", [run_id, run_id])
        total = conn.execute("SELECT COUNT(*) FROM timeline WHERE run_id = ?", [run_id]).fetchone()[0]
    else:
        total = 0
    conn.execute(f"INSERT INTO [{CALLS_TABLE}] (run_id, kernels) VALUES (?, ?)", [run_id, total])


def call_spread(conn: sqlite3.Connection, run_id: str) -> pd.DataFrame:
    """`analyze.rule_input.call_spread` of the run's timeline: the stored rows, or for a run stored
    before they were written, the same SQL over its timeline."""
    rows = None
    if _has(conn, CALLS_TABLE):
        rows = conn.execute(f"SELECT {', '.join(CALLS_COLUMNS)} FROM [{CALLS_TABLE}] WHERE run_id = ? "
                            "ORDER BY variant", [run_id]).fetchall()
    if not rows:                                  # stored before issue 33: computed on read
        rows = conn.execute(_PER_VARIANT, [run_id]).fetchall() if _has_calls(conn) else []
    rows = [r for r in rows if r[0] is not None]
    return pd.DataFrame(rows, columns=list(CALLS_COLUMNS)).drop(columns="kernels")
