"""A pair's stored runs over time: when, on what, how fast each variant was, and what the gate
said of it (`bench run`'s verdict and the interval of its time relative to the baseline)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .db import Database

VERDICT_COLUMNS = ("verdict", "cause", "time_change", "ratio_change", "ratio_change_low", "ratio_change_high")


def pair_history(db: Path, pair: str) -> list[dict[str, Any]]:
    """One row per (run, variant), oldest first, with CUDA-event medians where the run timed."""
    with Database(db) as conn:
        if not conn.has("runs"):
            return []
        timing_cols = conn.columns("timings")
        pick = ", ".join(f"t.{c}" if c in timing_cols else f"NULL AS {c}"
                         for c in ("variant", "median_ns", "rel_spread"))
        join = "LEFT JOIN timings t ON t.run_id = r.run_id " if timing_cols else ""
        verdict_cols = conn.columns("verdicts")
        judged = ", ".join(f"v.{c}" if c in verdict_cols and timing_cols else f"NULL AS {c}" for c in VERDICT_COLUMNS)
        if timing_cols and verdict_cols:
            join += "LEFT JOIN verdicts v ON v.run_id = r.run_id AND v.variant = t.variant "
        rows = conn.query(f"SELECT r.run_id, r.created_at, r.gpu_name, r.status, r.label, r.git_sha, {pick}, {judged} "
                          f"FROM runs r {join}WHERE r.pair = ? ORDER BY r.created_at, r.run_id", [pair])
    base = {r["run_id"]: r["median_ns"] for r in rows if r["variant"] == "baseline" and r["median_ns"]}
    for r in rows:
        b = base.get(r["run_id"])
        r["speedup_vs_baseline"] = b / r["median_ns"] if b and r["median_ns"] else None
    return rows
