"""A pair's stored runs over time: when, on what, how fast each variant was."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .store import open_db


def pair_history(db: Path, pair: str) -> list[dict[str, Any]]:
    """One row per (run, variant), oldest first, with CUDA-event medians where the run timed."""
    conn = open_db(db)
    try:
        if "runs" not in conn.table_names():
            return []
        timing_cols = set(conn["timings"].columns_dict) if "timings" in conn.table_names() else set()
        pick = ", ".join(f"t.{c}" if c in timing_cols else f"NULL AS {c}"
                         for c in ("variant", "median_ns", "rel_spread"))
        join = "LEFT JOIN timings t ON t.run_id = r.run_id " if timing_cols else ""
        sql = (f"SELECT r.run_id, r.created_at, r.gpu_name, r.status, r.label, r.git_sha, {pick} "
               f"FROM runs r {join}WHERE r.pair = ? ORDER BY r.created_at, r.run_id")
        rows = [dict(r) for r in conn.query(sql, [pair])]
    finally:
        conn.close()
    base = {r["run_id"]: r["median_ns"] for r in rows if r["variant"] == "baseline" and r["median_ns"]}
    for r in rows:
        b = base.get(r["run_id"])
        r["speedup_vs_baseline"] = b / r["median_ns"] if b and r["median_ns"] else None
    return rows
