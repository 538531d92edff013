"""A pair's stored runs over time: when, on what, how fast each variant was."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .db import Database


def pair_history(db: Path, pair: str) -> list[dict[str, Any]]:
    """One row per (run, variant), oldest first, with CUDA-event medians where the run timed."""
    with Database(db) as conn:
        if not conn.has("runs"):
            return []
        timing_cols = conn.columns("timings")
        pick = ", ".join(f"t.{c}" if c in timing_cols else f"NULL AS {c}"
                         for c in ("variant", "median_ns", "rel_spread"))
        join = "LEFT JOIN timings t ON t.run_id = r.run_id " if timing_cols else ""
        rows = conn.query(f"SELECT r.run_id, r.created_at, r.gpu_name, r.status, r.label, r.git_sha, {pick} "
                          f"FROM runs r {join}WHERE r.pair = ? ORDER BY r.created_at, r.run_id", [pair])
    base = {r["run_id"]: r["median_ns"] for r in rows if r["variant"] == "baseline" and r["median_ns"]}
    for r in rows:
        b = base.get(r["run_id"])
        r["speedup_vs_baseline"] = b / r["median_ns"] if b and r["median_ns"] else None
    return rows
