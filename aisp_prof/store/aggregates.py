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
from typing import Any

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


_PARTS = "aisp_call_parts"            # temp: per (variant, call) sums of a timeline written in parts
_PER_VARIANT_OF_PARTS = f"""
    SELECT variant, COUNT(*), SUM(n), MIN(t), MAX(t) FROM (
        SELECT variant, SUM(n) AS n, SUM(t) AS t FROM temp.{_PARTS} GROUP BY variant, range_instance)
    GROUP BY variant ORDER BY variant"""


def fold_calls(conn: sqlite3.Connection, run_id: str, after_rowid: int) -> None:
    """Per (variant, call) the kernels and kernel time of the run's timeline rows after
    `after_rowid` (a window of a long timeline, just written), set aside for `write_aggregates`,
    which adds up a call's parts (its kernels can be in two windows): the same sums as over the
    whole timeline at once, reckoned while the next window is parsed instead of after the last
    (0.66 s at 1M kernels)."""
    if not _has_calls(conn):
        return
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {_PARTS} (variant, range_instance, n, t)")
    conn.execute(f"INSERT INTO temp.{_PARTS} SELECT variant, range_instance, COUNT(*), SUM(duration_ns) FROM timeline "
                 "WHERE run_id = ? AND rowid > ? AND variant IS NOT NULL AND range_instance IS NOT NULL "
                 "GROUP BY variant, range_instance", [run_id, after_rowid])


def write_aggregates(conn: sqlite3.Connection, run_id: str) -> None:
    """The run's `timeline_calls` rows, from its timeline rows just written (same transaction),
    or from their parts where `fold_calls` set them aside."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS [{CALLS_TABLE}] (run_id TEXT, variant TEXT, calls INTEGER, "
                 "kernels INTEGER, call_kernel_min_ns INTEGER, call_kernel_max_ns INTEGER)")
    conn.execute(f"CREATE INDEX IF NOT EXISTS [idx_{CALLS_TABLE}_run_id] ON [{CALLS_TABLE}] (run_id)")
    parts = conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = ?", [_PARTS]).fetchone() is not None
    if _has(conn, "timeline"):
        if parts:
            conn.execute(f"INSERT INTO [{CALLS_TABLE}] SELECT ?, * FROM ({_PER_VARIANT_OF_PARTS})", [run_id])
        elif _has_calls(conn):
            conn.execute(f"INSERT INTO [{CALLS_TABLE}] SELECT ?, * FROM ({_PER_VARIANT})", [run_id, run_id])
        total = conn.execute("SELECT COUNT(*) FROM timeline WHERE run_id = ?", [run_id]).fetchone()[0]
    else:
        total = 0
    conn.execute(f"INSERT INTO [{CALLS_TABLE}] (run_id, kernels) VALUES (?, ?)", [run_id, total])
    conn.execute(f"DROP TABLE IF EXISTS temp.{_PARTS}")


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


# what a report page reads of a one-rank timeline (`analyze.page.contents.PageTimeline`): the kernels grouped by
# launch shape (kernel_rows re-groups these; short_name rides along for the generated-code match), and the
# rows of each variant's first call (the strip), instead of every row
_SHAPE = ("variant", "kernel", "short_name", "grid", "block", "registers_per_thread", "static_shared_bytes",
          "dynamic_shared_bytes")
_NEEDS = {"variant", "kernel", "duration_ns", "start_ns", "end_ns", "range_instance"}


def page_timeline(conn: sqlite3.Connection, run_id: str, memory_first: dict[str, Any]
                  ) -> tuple[pd.DataFrame, pd.DataFrame, int] | None:
    """(the timeline grouped by launch shape with `_launches`, `_durations` and `_first` (rowid),
    the rows of every call that can be a variant's first, the row count); None where the timeline
    lacks the columns (read it whole). `memory_first`: per variant, the range instance of its first
    memory op, a candidate too (a call's memcpy can start before its first kernel)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(timeline)")}
    if not _NEEDS <= have:
        return None
    shape = ", ".join(f"[{c}]" for c in _SHAPE if c in have)
    groups = pd.read_sql_query(
        f"SELECT {shape}, COUNT(*) AS _launches, COUNT(duration_ns) AS _durations, MIN(rowid) AS _first, "
        "SUM(duration_ns) AS duration_ns, MIN(CASE WHEN range_instance IS NOT NULL THEN start_ns END) AS _call_start "
        f"FROM timeline WHERE run_id = ? GROUP BY {shape}", conn, params=[run_id])
    starts = groups.dropna(subset=["variant", "_call_start"]).groupby("variant")["_call_start"].min()
    first = conn.execute(      # the calls of the first call start (several where two start at once)
        "SELECT variant, range_instance FROM timeline WHERE run_id = ? AND range_instance IS NOT NULL AND ("
        + (" OR ".join(["(variant = ? AND start_ns = ?)"] * len(starts)) or "0") + ")",
        [run_id, *[x for v, st in starts.items() for x in (v, int(st))]]).fetchall()
    pick = {(v, i) for v, i in first} | {(v, float(i)) for v, i in memory_first.items() if i is not None}
    with_call = {v for v, _ in pick}
    bare = [v for v in groups["variant"].dropna().unique() if v and v not in with_call]   # no call told: all its rows
    where = " OR ".join(["(variant = ? AND range_instance = ?)"] * len(pick) + ["variant = ?"] * len(bare)) or "0"
    params = [x for p in sorted(pick, key=str) for x in p] + bare
    calls = pd.read_sql_query(f"SELECT * FROM timeline WHERE run_id = ? AND ({where}) ORDER BY rowid", conn,
                              params=[run_id, *params]).drop(columns="run_id")
    return groups.drop(columns="_call_start"), calls, int(groups["_launches"].sum()) if not groups.empty else 0
