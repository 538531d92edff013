"""One representative nsys call of each variant, as plain data: its kernels, memcpys and
memsets relative to the call's start, each with the idle gap before it, and the call's busy
time (the summary's GPU time of one call). The report's timeline strip draws this.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from ...units import si


def _first_call(rows: pd.DataFrame, instance: Any) -> pd.DataFrame:
    return rows[rows["range_instance"] == instance] if "range_instance" in rows else rows.iloc[0:0]


def representative_call(timeline: pd.DataFrame, ranges: pd.DataFrame, variant: str,
                        memory_ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """The GPU work of the first call of `variant`'s NVTX range, in start order: kernels (the
    timeline's rows, `operation` "kernel") and the memcpys/memsets of the same call.

    With a `range_instance` column (the push each operation was issued under) that is the first
    instance with any work; without one, the first kernels_per_call kernels of the variant
    (kernel_count / occurrences from the ranges table) and no memory ops, which cannot then be
    assigned to a call. `memory_ops` None or empty (runs stored before they were kept): kernels only.
    """
    parts = []
    for frame, op in ((timeline, "kernel"), (memory_ops, None)):
        if frame is None or frame.empty or "variant" not in frame:
            continue
        rows = frame[frame["variant"] == variant]
        parts.append(rows.assign(operation=op) if op else rows)
    if not parts:
        return timeline.iloc[0:0]
    work = pd.concat(parts, ignore_index=True).sort_values(["start_ns", "end_ns"], kind="stable")
    if work.empty:
        return work
    if "range_instance" in work and work["range_instance"].notna().any():
        return _first_call(work, work["range_instance"].dropna().iloc[0]).reset_index(drop=True)
    kernels = work[work["operation"] == "kernel"]
    r = ranges[ranges["variant"] == variant] if "variant" in ranges else ranges.iloc[0:0]
    if not r.empty and float(r["occurrences"].sum()):
        n = max(1, round(float(r["kernel_count"].sum()) / float(r["occurrences"].sum())))
        return kernels.head(n).reset_index(drop=True)
    return kernels.reset_index(drop=True)


def memory_op_name(operation: str, copy_kind: Any, size_bytes: Any) -> str:
    """'memcpy DtoD 537 MB', 'memset 4 B': what the strip and its legend call one memory op."""
    kind = f" {copy_kind}" if operation == "memcpy" and isinstance(copy_kind, str) and copy_kind else ""
    size = f" {si(float(size_bytes), 'B')}" if pd.notna(size_bytes) else ""
    return f"{operation}{kind}{size}"


def strip_rows(call: pd.DataFrame) -> dict[str, Any]:
    """The operations of one call relative to its first start, each with the idle gap before it.

    `kernels` and `memory_ops` list them apart (every entry has `gap_before_ns`, the idle time
    since all earlier work of the call ended); `busy_ns` is the union of their intervals (the
    summary's GPU time of one call), `kernel_time_ns` the kernels' durations alone.
    """
    empty = {"kernels": [], "memory_ops": [], "span_ns": 0, "busy_ns": 0, "kernel_time_ns": 0,
             "gap_total_ns": 0, "gap_max_ns": 0, **{f"{op}_{what}": 0 for op in ("memcpy", "memset")
                                                    for what in ("count", "bytes", "time_ns")}}
    if call.empty:
        return empty
    if "operation" not in call:
        call = call.assign(operation="kernel")
    call = call.sort_values(["start_ns", "end_ns"], kind="stable")
    t0 = int(call["start_ns"].min())
    out = {**empty, "kernels": [], "memory_ops": []}
    busy_until, busy, gaps = None, 0, []
    for _, k in call.iterrows():
        start, end = int(k["start_ns"]), int(k["end_ns"])
        gap = max(0, start - busy_until) if busy_until is not None else 0
        busy += max(0, end - max(start, busy_until if busy_until is not None else start))
        gaps.append(gap)
        busy_until = end if busy_until is None else max(busy_until, end)
        entry = {"start_ns": start - t0, "end_ns": end - t0, "duration_ns": end - start, "gap_before_ns": gap}
        op = str(k.get("operation") or "kernel")
        if op == "kernel":
            name = k.get("short_name") or k.get("kernel") or "?"
            out["kernels"].append({"name": str(name), "kernel": str(k.get("kernel") or name), **entry})
            out["kernel_time_ns"] += end - start
        else:
            size = k.get("size_bytes")
            kind = k.get("copy_kind")
            out["memory_ops"].append({"name": memory_op_name(op, kind, size), "operation": op,
                                      "copy_kind": kind if isinstance(kind, str) else None,
                                      "size_bytes": int(size) if pd.notna(size) else None, **entry})
            if op in ("memcpy", "memset"):
                out[f"{op}_count"] += 1
                out[f"{op}_bytes"] += int(size) if pd.notna(size) else 0
                out[f"{op}_time_ns"] += end - start
    out.update(span_ns=int(call["end_ns"].max()) - t0, busy_ns=busy, gap_total_ns=int(sum(gaps)),
               gap_max_ns=int(max(gaps)))
    return out
