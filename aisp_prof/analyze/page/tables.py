"""The per-variant tables of a report page, from a run's frames: stall reasons, speed of light,
bytes per memory level, distinct kernels with their launch configuration, memory operations,
correctness. Pure functions of DataFrames, returning JSON-ready rows.
"""
from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ...parse.metrics.table import STALL_REASONS
from ...values import column_sum
from ..kernels.launch_shape import cluster_dim
from ..records import clean_value
from ..summary import check_result, top_stalls
from ..timeline.call import memory_op_name

_SOL_COLS = ("sol_sm_issue_pct", "sol_dram_pct", "sol_l2_pct", "sol_l1_pct", "tensor_pipe_active_pct",
             "achieved_occupancy_pct", "theoretical_occupancy_pct")
_BYTE_COLS = ("dram_read_bytes", "dram_write_bytes", "dram_bytes", "l2_bytes", "l1_bytes",
              "tma_load_bytes", "tma_store_bytes", "shared_wavefronts")
# every per-variant summary row carries these (None where not measured)

def _num(row: Any, col: str) -> float | None:
    v = clean_value(row.get(col)) if hasattr(row, "get") else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _weighted(df: pd.DataFrame, col: str, weight: str) -> float | None:
    if col not in df or df[col].isna().all():
        return None
    w = df[weight].astype(float) if weight in df else pd.Series(1.0, index=df.index)
    values = df[col].astype(float)
    mask = values.notna()
    total = float(w[mask].sum())
    return float((values[mask] * w[mask]).sum() / total) if total else None


def stall_rows(kernels: pd.DataFrame, variants: list[str]) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per variant: {reason: warp cycles stalled per issued instruction} (instruction-weighted
    over the variant's kernels, 'selected' apart), and the 'selected' value on its own."""
    stalls, selected = {}, {}
    if kernels.empty or "variant" not in kernels:
        return stalls, selected
    for v in variants:
        k = kernels[kernels["variant"] == v]
        if k.empty:
            continue
        rows = top_stalls(k, n=len(STALL_REASONS))
        if rows:
            stalls[v] = {r["reason"]: r["cycles_per_inst"] for r in rows}
            sel = _weighted(k, "stall_selected", "inst_executed")
            if sel is not None:
                selected[v] = sel
    return stalls, selected


_ANON = re.compile(r"<unnamed>|\(anonymous namespace\)")


def short_kernel_name(name: str) -> str:
    """'void at::native::f<float, 4>(float*, int)' -> 'at::native::f': no return type, template
    arguments or parameters (the exact name stays in the kernel table)."""
    text = str(name).strip()
    if text.startswith("void "):
        text = text[5:]
    anon = _ANON.findall(text)
    text = _ANON.sub("\x00", text)
    cut = min((i for i in (text.find("<"), text.find("(")) if i > 0), default=len(text))
    text = text[:cut]
    for a in anon:
        text = text.replace("\x00", a, 1)
    return text.replace("\x00", "") or str(name)


def sol_rows(kernels: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    """Speed of light per kernel, then a duration-weighted row per variant."""
    out = []
    if kernels.empty:
        return out
    for v in variants:
        k = kernels[kernels["variant"] == v]
        for i, (_, row) in enumerate(k.iterrows(), 1):
            out.append({"variant": v, "kernel": str(row.get("kernel")), "total": False, "index": i,
                        "short_name": short_kernel_name(str(row.get("kernel"))),
                        "duration_ns": _num(row, "duration_ns"), **{c: _num(row, c) for c in _SOL_COLS}})
        if len(k) > 1:
            out.append({"variant": v, "kernel": f"all {len(k)} kernels (weighted by duration)", "total": True,
                        "index": None, "short_name": f"all {len(k)} kernels (weighted by duration)",
                        "duration_ns": column_sum(k, "duration_ns"),
                        **{c: _weighted(k, c, "duration_ns") for c in _SOL_COLS}})
    return out


def memory_rows(kernels: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    out = []
    if kernels.empty:
        return out
    for v in variants:
        k = kernels[kernels["variant"] == v]
        if not k.empty:
            out.append({"variant": v, **{c: column_sum(k, c) for c in _BYTE_COLS}})
    return out


def kernel_rows(kernels: pd.DataFrame, timeline: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    """Distinct kernels per variant with their launch configuration; ncu when measured, else nsys."""
    if not kernels.empty:
        df, source = kernels.copy(), "ncu"
    elif not timeline.empty:
        df, source = timeline.rename(columns={"grid": "grid_dim", "block": "block_dim"}), "nsys"
    else:
        return []
    df["cluster_dim"] = cluster_dim(df)
    keys = ["variant", "kernel", "grid_dim", "block_dim", "cluster_dim", "registers_per_thread", "static_shared_bytes",
            "dynamic_shared_bytes"]
    for c in keys:
        if c not in df:
            df[c] = None
    df = df[df["variant"].isin(variants)].copy()        # kernels outside the pair's ranges: inputs, warm-up
    df["variant"] = df["variant"].astype(str)
    if "_launches" in df:      # grouped by launch shape in SQL (store.aggregates.page_timeline): weighted
        how = {"launches": ("_launches", "sum"), "first": ("_first", "min"), "_durations": ("_durations", "sum")}
    else:
        df["_order"] = range(len(df))
        how = {"launches": ("_order", "size"), "first": ("_order", "min"), "duration_mean_ns": ("duration_ns", "mean")}
    grouped = df.fillna({c: "" for c in keys}).groupby(keys, sort=False, dropna=False).agg(
        duration_total_ns=("duration_ns", "sum"), **how).reset_index().sort_values("first")
    if "_durations" in grouped:
        grouped["duration_mean_ns"] = grouped["duration_total_ns"] / grouped["_durations"].replace(0, float("nan"))
    rank = {v: i for i, v in enumerate(variants)}
    rows = []
    for _, r in grouped.iterrows():
        shared = [x for x in (r["static_shared_bytes"], r["dynamic_shared_bytes"]) if x not in ("", None)]
        rows.append({
            "variant": r["variant"], "kernel": str(r["kernel"]), "grid_dim": r["grid_dim"] or None,
            "block_dim": r["block_dim"] or None, "cluster_dim": r["cluster_dim"] or None,
            "registers_per_thread": clean_value(r["registers_per_thread"]) or None,
            "static_shared_bytes": clean_value(r["static_shared_bytes"]) if r["static_shared_bytes"] != "" else None,
            "dynamic_shared_bytes": clean_value(r["dynamic_shared_bytes"]) if r["dynamic_shared_bytes"] != "" else None,
            "shared_bytes": float(sum(float(x) for x in shared)) if shared else None,
            "launches": int(r["launches"]), "duration_mean_ns": clean_value(r["duration_mean_ns"]),
            "duration_total_ns": clean_value(r["duration_total_ns"]), "source": source,
        })
    rows.sort(key=lambda r: rank.get(r["variant"], len(rank)))
    return rows


def memory_op_rows(memory_ops: pd.DataFrame, ranges: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    """GPU memcpys and memsets per variant, grouped by operation, copy kind and size (nsys; not
    kernels, so ncu has nothing on them): how many per call, mean duration and throughput."""
    if memory_ops.empty or "variant" not in memory_ops:
        return []
    df = memory_ops[memory_ops["variant"].isin(variants)].copy()
    if df.empty:
        return []
    df["copy_kind"] = df["copy_kind"].where(df["copy_kind"].notna(), "") if "copy_kind" in df else ""
    df["_order"] = range(len(df))
    grouped = df.groupby(["variant", "operation", "copy_kind", "size_bytes"], sort=False, dropna=False).agg(
        count=("_order", "size"), first=("_order", "min"), duration_mean_ns=("duration_ns", "mean"),
        duration_total_ns=("duration_ns", "sum")).reset_index().sort_values("first")
    calls = {}
    if "variant" in ranges and "occurrences" in ranges:
        calls = {v: float(r["occurrences"].sum()) for v, r in ranges.groupby("variant")}
    rank = {v: i for i, v in enumerate(variants)}
    rows = []
    for _, r in grouped.iterrows():
        size = clean_value(r["size_bytes"])
        mean = clean_value(r["duration_mean_ns"])
        n_calls = calls.get(r["variant"]) or None
        rows.append({
            "variant": r["variant"], "operation": r["operation"], "copy_kind": r["copy_kind"] or None,
            "name": memory_op_name(r["operation"], r["copy_kind"] or None, size), "size_bytes": size,
            "count": int(r["count"]), "per_call": int(r["count"]) / n_calls if n_calls else None,
            "duration_mean_ns": mean, "duration_total_ns": clean_value(r["duration_total_ns"]),
            "bytes_per_s": size / mean * 1e9 if size and mean else None,
        })
    rows.sort(key=lambda r: rank.get(r["variant"], len(rank)))
    return rows


def correctness(checks: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    out = []
    if checks.empty or "variant" not in checks:
        return out
    for v in variants:
        c = checks[checks["variant"] == v]
        if c.empty:
            continue

        def worst(col: str) -> float | None:
            return float(c[col].astype(float).max()) if col in c and c[col].notna().any() else None

        failed = c[~c["passed"].astype(bool)] if "passed" in c else c.iloc[0:0]
        result = check_result(c) if "passed" in c else "passed"
        out.append({"variant": v, "trials": int(len(c)), "passed": {"passed": True, "failed": False}.get(result),
                    "skipped": result == "skipped",
                    "rel_err_vs_reference": worst("rel_err_vs_reference"),
                    "rel_err_vs_baseline": worst("rel_err_vs_baseline"),
                    "max_abs_diff_vs_baseline": worst("max_abs_diff_vs_baseline"),
                    "unwritten_elements": worst("unwritten_elements"),
                    "message": str((failed if not failed.empty else c)["message"].iloc[0]) if "message" in c else ""})
    return out
