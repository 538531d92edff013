"""Read-side of the database: the records `kernels`, `ranges` and `summary` print."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


from .analyze.flops import add_flops_and_bytes
from .analyze.summary import summarize
from .store import get_run, read_table, resolve_run

KERNEL_FIELDS = ("launch_id", "nvtx_range", "variant", "kernel", "duration_ns", "dram_bytes",
                 "l2_bytes", "l1_bytes", "grid_dim", "block_dim", "registers_per_thread")


def clean_value(v: Any) -> Any:
    """numpy scalars to Python, NaN to None: what JSON and templates can take."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    return v


def kernel_records(db: Path, run: str, variant: str | None = None) -> list[dict[str, Any]]:
    """Per launch: the fields above plus `flops` {fp64, fp32, fp16, tensor} and `flops_total`.

    From ncu when the run has counters; an nsys-only run gives its timeline kernels with
    durations and null bytes/FLOPs (nothing is made up for what was not measured).
    """
    run_id = resolve_run(db, run)
    kernels = read_table(db, "kernels", run_id)
    if kernels.empty:
        kernels = read_table(db, "timeline", run_id).rename(
            columns={"correlation_id": "launch_id", "grid": "grid_dim", "block": "block_dim"})
    if kernels.empty:
        return []
    if variant:
        kernels = kernels[kernels["variant"] == variant]
    kernels = add_flops_and_bytes(kernels)
    out = []
    for _, row in kernels.iterrows():
        rec = {f: clean_value(row.get(f)) for f in KERNEL_FIELDS}
        rec["flops"] = {p: clean_value(row.get(f"flops_{p}")) for p in ("fp64", "fp32", "fp16", "tensor")}
        rec["flops_total"] = clean_value(row.get("flops_total"))
        out.append(rec)
    return out


def range_records(db: Path, run: str) -> list[dict[str, Any]]:
    """Per NVTX range: `range`, `kernel_count`, `memcpy_*`/`memset_*` (count, bytes, time),
    `gpu_time_ns` (busy time of kernels and memory ops, summed over calls), gaps, occurrences."""
    run_id = resolve_run(db, run)
    ranges = read_table(db, "ranges", run_id)
    if ranges.empty:
        return []
    ranges = ranges.rename(columns={"nvtx_range": "range"})
    return [{k: clean_value(v) for k, v in r.items()} for r in ranges.to_dict("records")]


def run_summary(db: Path, run: str) -> dict[str, Any]:
    run_id = resolve_run(db, run)
    row = get_run(db, run_id)
    info = json.loads(row.pop("info_json") or "{}")
    frames = {t: read_table(db, t, run_id) for t in ("kernels", "ranges", "checks", "timings")}
    summary = summarize(info, frames["kernels"], frames["ranges"], frames["checks"], frames["timings"])
    summary = [{k: clean_value(v) for k, v in s.items()} for s in summary]
    return {"run": row, "summary": summary, "info": info}



