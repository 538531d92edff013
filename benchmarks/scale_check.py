"""The exact-scaling check: what aisp-prof reports for an export of k copies (`scale_exports`)
must be exactly k times what it reports for the original.

A timing of an export the tool misreads would be a timing of the wrong work (ranges lost, kernels
attributed twice, launches merged), so the harness refuses to time an export whose check fails.
Pure functions of the tool's own JSON output (`ranges --json`, `kernels --json`); each returns
the list of problems, empty when the scaling is exact.

Exact means exact: counts, bytes and nanoseconds compared as integers, and the floats of ncu
(bytes, FLOPs, durations in base units) summed as `fractions.Fraction`, so a sum over k copies
is compared with k x the original's sum without any rounding.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

# per-range columns that add up over the calls of a range: k copies give k times the original
ADDITIVE_RANGE_COLUMNS = (
    "kernel_count", "kernel_time_ns", "memcpy_count", "memcpy_bytes", "memcpy_time_ns", "memset_count",
    "memset_bytes", "memset_time_ns", "gpu_time_ns", "gap_total_ns", "range_wall_ns", "occurrences",
)
# per-launch ncu values summed per variant (dram_bytes is dram_read_bytes + dram_write_bytes)
SUMMED_LAUNCH_FIELDS = ("duration_ns", "dram_bytes", "l2_bytes", "l1_bytes", "flops_total")

Records = list[dict[str, Any]]


def _by_range(rows: Records) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["nvtx_range"], r.get("nvtx_domain") or ""): r for r in rows}


def check_ranges(original: Records, scaled: Records, copies: int, shift_ns: int) -> list[str]:
    """`ranges --json` of the scaled export against the original's: same ranges; additive columns
    exactly `copies` x; the largest gap unchanged; the first start unchanged (copy 0 is the
    original) and the last end moved by (copies - 1) x shift_ns."""
    want, got = _by_range(original), _by_range(scaled)
    problems = [f"range {k[0]!r} missing after scaling" for k in want.keys() - got.keys()]
    problems += [f"range {k[0]!r} appeared after scaling" for k in got.keys() - want.keys()]
    if not want:
        problems.append("the original export has no NVTX range with GPU work: nothing to check")
    for key in sorted(want.keys() & got.keys()):
        w, g = want[key], got[key]
        for col in ADDITIVE_RANGE_COLUMNS:
            if col in w and g.get(col) != copies * w[col]:
                problems.append(f"{key[0]}: {col} {g.get(col)} != {copies} x {w[col]}")
        expected = {"gap_max_ns": w.get("gap_max_ns"), "first_start_ns": w.get("first_start_ns"),
                    "last_end_ns": None if w.get("last_end_ns") is None else w["last_end_ns"] + (copies - 1) * shift_ns}
        for col, value in expected.items():
            if col in w and g.get(col) != value:
                problems.append(f"{key[0]}: {col} {g.get(col)} != {value}")
    return problems


def _launch_sums(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per variant: launch count and, per summed field, (exact sum, count of nulls)."""
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"launches": 0, **{f: Fraction(0) for f in SUMMED_LAUNCH_FIELDS},
                                                          **{f"{f}_null": 0 for f in SUMMED_LAUNCH_FIELDS}})
    for r in rows:
        s = out[r.get("variant") or ""]
        s["launches"] += 1
        for f in SUMMED_LAUNCH_FIELDS:
            if r.get(f) is None:
                s[f"{f}_null"] += 1
            else:
                s[f] += Fraction(r[f])
    return dict(out)


def check_launches(original: Records, scaled: Records, copies: int) -> list[str]:
    """`kernels --json` of the scaled ncu CSV against the original's: `copies` x the launches,
    launch ids unique, and per variant the launch count and the exact sums of durations, bytes
    and FLOPs `copies` x the original's."""
    problems = []
    if len(scaled) != copies * len(original):
        problems.append(f"{len(scaled)} launches, expected {copies} x {len(original)}")
    ids = [r.get("launch_id") for r in scaled]
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} repeated launch ids")
    want, got = _launch_sums(original), _launch_sums(scaled)
    if want.keys() != got.keys():
        problems.append(f"variants {sorted(got)} != {sorted(want)}")
    for variant in sorted(want.keys() & got.keys()):
        for col, value in want[variant].items():
            if got[variant][col] != copies * value:
                problems.append(f"variant {variant!r}: {col} {float(got[variant][col])!r} != {copies} x {float(value)!r}")
    return problems


# ------------------------------------------------------------------ the independent SQL reference

# SQLite alone, none of aisp-prof's code: each kernel's runtime call (correlation id, same process),
# every NVTX push/pop range open on the call's thread when the call started (half-open [start, end)),
# found through an R*Tree of the ranges' spans (CROSS JOIN: each call looks up its ranges) (float32 boxes, widened by SQLite when rounded, so
# each candidate is then checked exactly); a kernel counts in every enclosing range, the path of a
# level being the names of the ranges around it, outermost first (as nsys's nvtx_kern_sum).
SQL_REFERENCE = """
CREATE TEMP TABLE ref_calls AS
    SELECT k.rowid AS kid, k."end" - k.start AS dur, r.globalTid AS tid, r.start AS t
    FROM x.CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN x.CUPTI_ACTIVITY_KIND_RUNTIME AS r
      ON r.correlationId = k.correlationId AND r.globalTid / 16777216 = k.globalPid / 16777216;
CREATE TEMP TABLE ref_ranges (nid INTEGER PRIMARY KEY, tid, s, e, name);
INSERT INTO ref_ranges
    SELECT n.rowid AS nid, n.globalTid AS tid, n.start AS s, n."end" AS e, COALESCE(n.text, st.value) AS name
    FROM x.NVTX_EVENTS AS n LEFT JOIN x.StringIds AS st ON st.id = n.textId
    WHERE n.eventType = 59 AND n."end" IS NOT NULL;
CREATE VIRTUAL TABLE temp.ref_boxes USING rtree(nid, lo, hi);
INSERT INTO temp.ref_boxes SELECT nid, s, e FROM ref_ranges;
CREATE TEMP TABLE ref_hits AS
    SELECT c.kid, c.dur, c.tid, n.nid, n.s, n.e, n.name
    FROM ref_calls AS c CROSS JOIN temp.ref_boxes AS b ON b.lo <= c.t AND b.hi >= c.t
    CROSS JOIN ref_ranges AS n ON n.nid = b.nid AND n.tid = c.tid AND n.s <= c.t AND c.t < n.e;
"""
SQL_REFERENCE_TOTALS = """
SELECT tid % 16777216, path, COUNT(*), SUM(dur) FROM (
    SELECT tid, dur, group_concat(name, '/') OVER w AS path FROM ref_hits
    WINDOW w AS (PARTITION BY kid ORDER BY s, e DESC, nid ROWS UNBOUNDED PRECEDING))
GROUP BY 1, 2
"""


def sql_range_totals(export: Any) -> dict[tuple[int, str], tuple[int, int]]:
    """Per (thread id, NVTX path): kernels launched inside the range and their summed duration, by
    SQLite alone from the nsys export at `export` (attached read-only)."""
    import sqlite3
    from pathlib import Path

    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("ATTACH DATABASE ? AS x", (f"{Path(export).resolve().as_uri()}?mode=ro",))
        conn.executescript(SQL_REFERENCE)
        return {(tid, path): (n, t) for tid, path, n, t in conn.execute(SQL_REFERENCE_TOTALS)}
    finally:
        conn.close()


def check_against_sql(reference: dict[tuple[int, str], tuple[int, int]], ranges: Records) -> list[str]:
    """`ranges --json` (every level of every thread) against `sql_range_totals`: each range with
    kernels has exactly the reference's kernel count and kernel time, and no range is missing."""
    got = {(r["thread_id"], r["nvtx_range"]): (r["kernel_count"], r["kernel_time_ns"]) for r in ranges
           if r.get("kernel_count")}
    problems = [f"range {k[1]!r} (thread {k[0]}): the tool says {got.get(k)}, SQL {v}"
                for k, v in sorted(reference.items()) if got.get(k) != v]
    problems += [f"range {k[1]!r} (thread {k[0]}): not in the SQL reference" for k in sorted(got.keys() - reference.keys())]
    if not reference:
        problems.append("the SQL reference found no kernel inside an NVTX range: nothing to check")
    return problems
