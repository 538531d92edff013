"""A pair's stored runs over time: when, on what, how fast each variant was, and what the gate
said of it (`bench run`'s verdict and the interval of its time relative to the baseline), and the
role each variant plays (a reference's speedup is no claim of the pair's). Beside each run, what a
trend needs to be read: the digest of the code it measured and the median SM clock of its timed calls
(ch09.cublaslt_gemm read 2.82x then 2.52x on the H200: the second run was timed at the power cap's
1710 MHz, the first names no digest and kept no clock)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Collection

from ..naming import SHARED_COMPILE_CACHE
from ..pairs.declared import with_declarations
from ..pairs.roles import roles_of
from .db import Reader

VERDICT_COLUMNS = ("verdict", "cause", "time_change", "ratio_change", "ratio_change_low", "ratio_change_high")


# timings column -> history's name: each spread by the timer it is of (the speedup's is `speedup_rel_spread`)
TIMING_COLUMNS = {"variant": "variant", "median_ns": "cuda_event_median_ns", "rel_spread": "cuda_event_rel_spread",
                  "latency_rel_spread": "latency_rel_spread", "steady_rel_spread": "steady_rel_spread"}


def pair_history(db: Path, pair: str) -> list[dict[str, Any]]:
    """One row per (run, variant), oldest first, with the CUDA-event median and each timer's spread
    where the run timed. The speedup and its own time are no business of the store:
    `api.RunDatabase.history` adds the summary's (`analyze.timing.speedup.add_history_speedups`)."""
    with Reader(db) as conn:
        if not conn.has("runs"):
            return []
        timing_cols = conn.columns("timings")
        pick = ", ".join(f"t.{c} AS {name}" if c in timing_cols else f"NULL AS {name}"
                         for c, name in TIMING_COLUMNS.items())
        join = "LEFT JOIN timings t ON t.run_id = r.run_id " if timing_cols else ""
        verdict_cols = conn.columns("verdicts")
        judged = ", ".join(f"v.{c}" if c in verdict_cols and timing_cols else f"NULL AS {c}" for c in VERDICT_COLUMNS)
        if timing_cols and verdict_cols:
            join += "LEFT JOIN verdicts v ON v.run_id = r.run_id AND v.variant = t.variant "
        rows = conn.query(f"SELECT r.run_id, r.created_at, r.gpu_name, r.status, r.label, r.git_sha, r.info_json, "
                          f"{pick}, {judged} "
                          f"FROM runs r {join}WHERE r.pair = ? ORDER BY r.created_at, r.run_id", [pair])
        clocks = _clock_medians(conn, pair)
    roles: dict[str, dict[str, str]] = {}
    for r in rows:
        info = json.loads(r.pop("info_json") or "{}")
        source = info.get("source") or {}
        r["code_sha256"] = source.get("code_sha256") or source.get("sha256")
        r["sm_clock_median_mhz"] = clocks.get(r["run_id"])
        if r["run_id"] not in roles:
            declared = with_declarations(info)
            roles[r["run_id"]] = roles_of(declared, declared.get("variants") or [])
        r["role"] = roles[r["run_id"]].get(r["variant"]) if r["variant"] else None
        if r["variant"] and r["role"] is None:
            r["role"] = "baseline" if r["variant"] == "baseline" else "optimization"
    return rows


def _clock_medians(conn: Reader, pair: str) -> dict[str, float]:
    """Each run's median SM clock (MHz) over its timed calls, reference kernels left out; runs that
    kept no clock readings are absent."""
    if "sm_clock_mhz" not in conn.columns("samples"):
        return {}
    clocks: dict[str, list[float]] = {}
    for r in conn.query("SELECT s.run_id, s.sm_clock_mhz FROM samples s JOIN runs r ON r.run_id = s.run_id "
                        "WHERE r.pair = ? AND s.sm_clock_mhz IS NOT NULL AND s.variant NOT LIKE 'ref:%'", [pair]):
        clocks.setdefault(r["run_id"], []).append(float(r["sm_clock_mhz"]))
    return {run_id: statistics.median(values) for run_id, values in clocks.items()}


def gate_seconds(db: Path, key: str, compile_cache: str | Collection[str] = SHARED_COMPILE_CACHE) -> dict[str, float]:
    """Each pair's seconds in its latest stored gate run (`bench run`, label bench:*) on a GPU of
    hardware key `key` (naming.hardware_key), from run.json's wall_s.total: what a new gate's
    progress estimates its time left from. Only runs whose compile cache was of the new gate's kind
    (`compile_cache`: one of naming's, or several): a recording's (each process compiling afresh,
    several processes) take far longer than a gate, a gate's with a kept cache far less
    (ch14.regional_triton 51 s against 97)."""
    from ..naming import hardware_key

    kinds = {compile_cache} if isinstance(compile_cache, str) else set(compile_cache)

    if not Path(db).is_file():            # a first gate: nothing stored yet
        return {}
    with Reader(db) as conn:
        if not conn.has("runs"):
            return {}
        rows = conn.query("SELECT pair, gpu_name, info_json FROM runs WHERE label LIKE 'bench:%' AND status = 'ok' "
                          "ORDER BY created_at, run_id")
    seconds: dict[str, float] = {}
    for r in rows:
        info = json.loads(r["info_json"] or "{}")
        wall = (info.get("wall_s") or {}).get("total")
        if hardware_key(r["gpu_name"]) == key and wall and \
                info.get("compile_cache", SHARED_COMPILE_CACHE) in kinds:
            seconds[r["pair"]] = float(wall)
    return seconds
