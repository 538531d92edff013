"""What compiling cost each variant, and what the compiler did: a pure function of the run's
`compiles` rows (`collect.code.dynamo.compile_row`: one per variant and phase of a process).

Phases: "check" (per trial: the factory, the first call, which compiles, autotunes and fills
caches, and a second call), "timing_warmup" and "timed" (the interleaved timing's untimed and
timed calls), "warm_process" (the first call in a later timing process, where Dynamo traces
again but Inductor's and Triton's on-disk caches are warm), "fresh_process" (the same in a process
with empty caches of its own: not a warm first call). A frame compiled in the timed phase
means some timed samples include compilation: a validity warning.
"""
from __future__ import annotations

import json
import statistics
from typing import Any

import pandas as pd

from ...values import finite_float

COUNTS = ("frames_compiled", "graphs", "graph_breaks", "recompiles")


def _list(v: Any) -> list[Any]:
    """A stored reason list (JSON text in the database, a list straight from a run folder)."""
    if isinstance(v, list):
        return v
    if isinstance(v, str) and v:
        try:
            out = json.loads(v)
        except json.JSONDecodeError:
            return []
        return out if isinstance(out, list) else []
    return []


def _sum(rows: pd.DataFrame, col: str) -> int:
    return int(sum(finite_float(v) or 0 for v in rows[col])) if col in rows else 0


def _break_reasons(rows: pd.DataFrame) -> list[dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for v in rows.get("graph_break_reasons", []):
        for r in _list(v):
            entry = merged.setdefault(r.get("reason"), {"reason": r.get("reason"), "count": 0, "detail": r.get("detail")})
            entry["count"] += int(r.get("count") or 0)
    return sorted(merged.values(), key=lambda r: -r["count"])


def _recompile_reasons(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """{frame, reason, count}: the same guard failing on several calls counts once per event."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for v in rows.get("recompile_reasons", []):
        for r in _list(v):
            key = (str(r.get("frame")), str(r.get("reason")))
            merged.setdefault(key, {"frame": key[0], "reason": key[1], "count": 0})["count"] += 1
    return list(merged.values())


def variant_compiles(compiles: pd.DataFrame, variant: str) -> dict[str, Any]:
    """One variant's compile cost and Dynamo events (an empty dict where the run has none).

    first_call_ns: the factory plus the first call of the check's first trial, on the wall
    (synchronized): what a user waits for before the first result. steady_call_wall_ns: the
    check's second call (fastest trial), the same closure once compiled. compile_overhead_ns:
    the difference. warm_process_first_call_ns: the first call in a later process (median over
    processes), with on-disk caches warm. graphs, graph_breaks, recompiles, frames_compiled and
    their reasons: the check's process, all its phases. timed_phase_compiles: frames compiled
    inside the timed phase of any process (should be 0).
    """
    if compiles is None or compiles.empty or "variant" not in compiles:
        return {}
    rows = compiles[compiles["variant"] == variant]
    if rows.empty:
        return {}
    phase = rows["phase"].astype(str) if "phase" in rows else pd.Series("", index=rows.index)
    process = pd.to_numeric(rows.get("process", pd.Series(0, index=rows.index)), errors="coerce").fillna(0)
    first_process = rows[process == 0]
    check = rows[(phase == "check") & (process == 0)]
    out: dict[str, Any] = {"first_call_ns": None, "steady_call_wall_ns": None, "compile_overhead_ns": None,
                           "warm_process_first_call_ns": None}
    if not check.empty:
        trials = check.assign(_t=pd.to_numeric(check.get("trial"), errors="coerce")).sort_values("_t", kind="stable")
        first = trials.iloc[0]
        factory, call = finite_float(first.get("factory_wall_ns")), finite_float(first.get("first_call_wall_ns"))
        if call is not None:
            out["first_call_ns"] = (factory or 0.0) + call
        seconds = [s for s in (finite_float(x) for x in check.get("second_call_wall_ns", [])) if s is not None]
        if seconds:
            out["steady_call_wall_ns"] = min(seconds)
        if out["first_call_ns"] is not None and out["steady_call_wall_ns"] is not None:
            out["compile_overhead_ns"] = out["first_call_ns"] - out["steady_call_wall_ns"]
    warm = [w for w in (finite_float(x) for x in rows.loc[phase == "warm_process"].get("first_call_wall_ns", []))
            if w is not None]
    if warm:
        out["warm_process_first_call_ns"] = statistics.median(warm)
    for col in COUNTS:
        out[col] = _sum(first_process, col)
    out["dynamo_compile_time_ns"] = float(sum(finite_float(v) or 0 for v in first_process.get("dynamo_compile_time_ns", [])))
    out["graph_break_reasons"] = _break_reasons(first_process)
    out["recompile_reasons"] = _recompile_reasons(first_process)
    timed = rows[phase == "timed"]
    out["timed_phase_compiles"] = _sum(timed, "frames_compiled") if not timed.empty else None
    out["timed_phase_reasons"] = _recompile_reasons(timed) + [{"frame": None, "reason": r["reason"], "count": r["count"]}
                                                              for r in _break_reasons(timed)]
    warmup = rows[phase == "timing_warmup"]
    out["timing_warmup_compiles"] = _sum(warmup, "frames_compiled") if not warmup.empty else None
    out["compiled"] = out["frames_compiled"] > 0
    return out


def break_even_calls(overhead_ns: float | None, baseline_ns: float | None, variant_ns: float | None) -> float | None:
    """Calls after which compiling has paid for itself: the first call's extra wall time over the
    time each later call saves against the baseline (None where the variant saves nothing)."""
    if overhead_ns is None or not baseline_ns or not variant_ns or baseline_ns <= variant_ns:
        return None
    return max(0.0, overhead_ns) / (baseline_ns - variant_ns)


def _binaries_kept(kept: str, info: dict[str, Any]) -> str:
    """The binaries_kept message, with how many Triton kernels the run found in the store where it counted them."""
    generated = info.get("generated") or {}
    found, compiled = generated.get("from_store"), generated.get("compiled_here")
    if found == 0 and compiled:
        return (f"Triton binaries {kept} (0 of {compiled} Triton kernels found there): every kernel of this run was "
                "compiled in it (ptxas), so a compiled variant's first call holds that as on a fresh machine")
    counted = f" ({found} of {found + compiled} Triton kernels found there)" if found and compiled is not None else ""
    return (f"Triton binaries {kept}{counted}: a compiled variant's first call leaves out Triton's compile (ptxas, "
            "the launcher's gcc) of each kernel an earlier run had compiled; a fresh machine's costs more "
            "(every lowering and autotune choice was still made in this run)")


def compile_warnings(summary: list[dict[str, Any]], info: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """Validity warnings from the compile columns of a summary (`summarize` rows), and from the run's
    `info` (run.json): Triton binaries kept between runs (`bench run`, collect.code.binary_store)."""
    out = []
    kept = (info or {}).get("triton_binaries")
    if kept and any(s.get("compiled") for s in summary):
        out.append({"severity": "info", "code": "binaries_kept", "message": _binaries_kept(kept, info or {})})
    for s in summary:
        n = s.get("timed_phase_compiles")
        if n:
            reasons = "; ".join(r["reason"] for r in (s.get("timed_phase_reasons") or [])[:3]) or "reason not recorded"
            out.append({"severity": "warning", "code": "recompile_timed", "message":
                        f"{s['variant']}: torch.compile compiled {n} frame(s) during the timed phase ({reasons}); "
                        "some timed samples include compilation, so its time is not the steady state"})
        warm = s.get("timing_warmup_compiles")
        if warm:
            out.append({"severity": "info", "code": "recompile_warmup", "message":
                        f"{s['variant']}: torch.compile compiled {warm} frame(s) in the timing warm-up after the "
                        "check (new input sets or closures failed a guard); each new one costs a compile"})
    return out
