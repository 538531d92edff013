"""Per-variant summary of a run: did the optimization work, is it correct, and why.

Time comes from nsys (real launches, no replay, per call); bytes, FLOPs and stall reasons come
from ncu (one replayed launch of each kernel); correctness from the check child. Each figure
keeps its source in its name so nobody mixes a replayed ncu duration with a timeline time.

`gpu_time_ns` is per call of the variant's NVTX range. From nsys it is the GPU busy time of
everything the call issued: kernels, memcpys and memsets (union of their intervals, so work
overlapping on two streams is not counted twice); `kernel_time_ns` is the kernels' share alone,
and `memcpy_*` / `memset_*` say how many copies and sets a call issued, their bytes and time.
Without an nsys timeline it falls back to the sum of ncu's replayed kernel durations, which has
no memory ops (`gpu_time_source` tells which). Runs stored before memory ops were parsed have
kernel-only `gpu_time_ns` and no `memcpy_*` / `memset_*` fields.

Launch churn, from the same nsys ranges: `kernels_per_call`, `mean_kernel_duration_ns` (kernel
time over kernel count: short kernels mean launch-bound work), `gap_per_call_ns` (GPU idle
between the operations of one call, summed, per call) and `gap_max_ns` (the largest such gap).
Compile cost and torch.compile's graphs, breaks and recompiles come from the run's `compiles`
rows (`analyze.code.compiled`); `compile_break_even_calls` is how many calls repay the first call's
extra wall time from the time each call saves against the baseline.

The timer's three kinds (collect.timing.samplers) come from the check child and any further timing
processes: `cuda_event_median_ns` / `gpu_events_median_ns` (GPU time per call, CUDA events, calls
queued ahead), `latency_median_ns` (one call on an idle GPU), `steady_median_ns` (back to back),
and `time_class` (gpu_bound, launch_bound, host_bound: `analyze.timing.time_kinds`).

Correctness from the check: `check_result` is 'passed', 'failed' or 'skipped' (the backend has no
kernel at the run's sizes: not run, so neither), and `correct` True, False or None (skipped, or no
check stored); a skipped variant's speedup is no claim (`verdict.headline`).

`speedup_vs_baseline` is the one primary speedup (`analyze.timing.speedup`: by the time the pair's lesson
is about, GPU time by CUDA events unless it declares otherwise), `speedup_timer` names its timer
and `speedup_by_timer` holds every timer's ratio, the secondary figures under their timer's name.

`derived_from_rates` (only where it applies) lists the counter columns that the export held as
rates or sectors only (`ncu --set full`): FLOP counters are rate x elapsed cycles, not counts
(`parse.metrics.rate_counts`); L2/L1 bytes are sectors x 32 B, exact (`parse.metrics.sector_bytes`).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from ..pairs.roles import roles_of
from ..parse.metrics.table import STALL_REASONS
from ..parse.metrics.rate_counts import DERIVED_COLUMN
from ..values import column_sum
from .code.compiled import break_even_calls, variant_compiles
from .kernels.flops import add_flops_and_bytes
from .verdict.headline import add_role_fields
from .timing.speedup import run_speedups, timer_order
from .timing.time_kinds import time_fields

NOT_STALLS = {"selected"}   # a warp being issued is not a stall


def top_stalls(kernels: pd.DataFrame, n: int = 3) -> list[dict[str, float]]:
    """Stall reasons by warp-cycles per issued instruction, weighted over the kernels' instructions."""
    cols = [f"stall_{r}" for r in STALL_REASONS if f"stall_{r}" in kernels and r not in NOT_STALLS]
    if not cols or kernels.empty:
        return []
    weights = kernels["inst_executed"].astype(float) if "inst_executed" in kernels else pd.Series(1.0, index=kernels.index)
    total = weights.sum()
    if not total:
        return []
    avg = {c[len("stall_"):]: float((kernels[c].astype(float).fillna(0) * weights).sum() / total) for c in cols}
    ranked = sorted(avg.items(), key=lambda kv: kv[1], reverse=True)[:n]
    return [{"reason": r, "cycles_per_inst": v} for r, v in ranked if v > 0]


# ranges column -> summary key (per call)
_PER_CALL = {"kernel_time_ns": "kernel_time_ns", "memcpy_count": "memcpy_per_call",
             "memcpy_bytes": "memcpy_bytes_per_call", "memcpy_time_ns": "memcpy_time_ns",
             "memset_count": "memset_per_call", "memset_bytes": "memset_bytes_per_call",
             "memset_time_ns": "memset_time_ns"}


def _memory_ops_per_call(ranges: pd.DataFrame, occurrences: float) -> dict[str, float]:
    """Kernel time and memcpy/memset counts, bytes and time per call; absent for older runs' rows."""
    out = {}
    for column, key in _PER_CALL.items():
        total = column_sum(ranges, column)
        if total is not None:
            out[key] = total / occurrences
    return out


def _ordered_variants(info: dict[str, Any], *frames: pd.DataFrame) -> list[str]:
    order = list(info.get("variants") or [])
    for f in frames:
        if "variant" in f:
            order += [v for v in f["variant"].dropna().unique() if v and v not in order]
    return order


def _launch_churn(ranges: pd.DataFrame, occurrences: float) -> dict[str, float]:
    """Mean kernel duration, idle gaps per call and the largest gap (where the ranges have them)."""
    out = {}
    kernels, kernel_ns = column_sum(ranges, "kernel_count"), column_sum(ranges, "kernel_time_ns")
    if kernels and kernel_ns is not None:
        out["mean_kernel_duration_ns"] = kernel_ns / kernels
    gaps = column_sum(ranges, "gap_total_ns")
    if gaps is not None:
        out["gap_per_call_ns"] = gaps / occurrences
    if "gap_max_ns" in ranges and ranges["gap_max_ns"].notna().any():
        out["gap_max_ns"] = float(ranges["gap_max_ns"].astype(float).max())
    return out


def derived_columns(kernels: pd.DataFrame) -> list[str]:
    """The tidy counter columns some of these launches have only as derived from rates or sectors
    (`parse.metrics.rate_counts`, `parse.metrics.sector_bytes`), sorted; empty where every count was counted."""
    if DERIVED_COLUMN not in kernels:
        return []
    labels = kernels[DERIVED_COLUMN].dropna().unique()
    return sorted({c for text in labels for c in str(text).split(",") if c})


def check_result(checks: pd.DataFrame) -> str:
    """'failed' where a trial (or rank) of the variant's check failed, else 'skipped' where one was
    skipped (no kernel at these sizes: not run, so neither right nor wrong), else 'passed'."""
    passed = checks["passed"].fillna(0).astype(bool)
    skipped = (checks["skipped"] if "skipped" in checks else pd.Series(0, index=checks.index)).fillna(0).astype(bool)
    return "failed" if (~passed & ~skipped).any() else "skipped" if skipped.any() else "passed"


def summarize(info: dict[str, Any], kernels: pd.DataFrame, ranges: pd.DataFrame,
              checks: pd.DataFrame, timings: pd.DataFrame,
              compiles: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """One dict per variant, baseline first, each with its `role` (pairs.roles) and its speed as a
    percentage of the fastest reference's (`pct_of_reference`, None without one)."""
    kernels = add_flops_and_bytes(kernels) if not kernels.empty else kernels
    rows = []
    for v in _ordered_variants(info, kernels, ranges):
        k = kernels[kernels["variant"] == v] if "variant" in kernels else kernels.iloc[0:0]
        r = ranges[ranges["variant"] == v] if "variant" in ranges else ranges.iloc[0:0]
        row: dict[str, Any] = {"variant": v}
        if not r.empty:
            occ = float(r["occurrences"].sum()) or 1.0
            row["kernels_per_call"] = float(r["kernel_count"].sum()) / occ
            row["gpu_time_ns"] = float(r["gpu_time_ns"].sum()) / occ
            row["gpu_time_source"] = "nsys"
            row.update(_memory_ops_per_call(r, occ))
            row.update(_launch_churn(r, occ))
        elif not k.empty:
            row["kernels_per_call"] = float(len(k))
            row["gpu_time_ns"] = column_sum(k, "duration_ns")
            row["gpu_time_source"] = "ncu"
        if not timings.empty and v in set(timings["variant"]):
            timing = timings.loc[timings["variant"] == v].iloc[0].to_dict()
            row.update(time_fields(timing, row.get("gpu_time_ns") if row.get("gpu_time_source") == "nsys" else None,
                                   held=int(info.get("world_size") or 1) == 1))
        if not checks.empty and v in set(checks["variant"]):
            c = checks[checks["variant"] == v]
            row["check_result"] = check_result(c)
            row["correct"] = {"passed": True, "failed": False}.get(row["check_result"])
            row["rel_err_vs_reference"] = float(c["rel_err_vs_reference"].astype(float).max())
        ncu_ns = column_sum(k, "duration_ns")
        row["ncu_duration_ns"] = ncu_ns
        for col in ("dram_bytes", "l2_bytes", "l1_bytes", "flops_total", "flops_fp32", "flops_fp64",
                    "flops_fp16", "flops_tensor"):
            row[col] = column_sum(k, col)
        if ncu_ns:
            if row["dram_bytes"] is not None:
                row["dram_bytes_per_s"] = row["dram_bytes"] / ncu_ns * 1e9
            if row["flops_total"] is not None:
                row["flops_per_s"] = row["flops_total"] / ncu_ns * 1e9
        derived = derived_columns(k)
        if derived:                   # the key only where it applies: other summaries stay as they were
            row["derived_from_rates"] = derived
        row["top_stalls"] = top_stalls(k)
        row.update(variant_compiles(compiles, v))
        rows.append(row)
    if any(r["variant"] == "baseline" for r in rows):
        speedups = run_speedups([r["variant"] for r in rows], kernels, ranges, timings, timer_order(info))
        for row in rows:
            if row["variant"] in speedups:
                row.update(speedups[row["variant"]].fields())
    _add_break_even(rows)
    add_role_fields(rows, roles_of(info, [r["variant"] for r in rows]), info.get("book"))
    return rows


def _add_break_even(rows: list[dict[str, Any]]) -> None:
    """compile_break_even_calls of each variant that compiled, against the baseline's steady time
    per call (back to back where timed so, else CUDA events, else nsys GPU time). Where the baseline compiled too,
    only the variant's extra first-call time has to be repaid."""
    base = next((r for r in rows if r["variant"] == "baseline"), None)
    for row in rows:
        if row is base or not row.get("compiled") or base is None:
            continue
        key = next((k for k in ("steady_median_ns", "cuda_event_median_ns") if row.get(k) and base.get(k)),
                   "gpu_time_ns")
        overhead = row.get("compile_overhead_ns")
        if overhead is not None and base.get("compiled") and base.get("compile_overhead_ns") is not None:
            overhead -= base["compile_overhead_ns"]
        row["compile_break_even_calls"] = break_even_calls(overhead, base.get(key), row.get(key))
