"""Per-NVTX-range statistics of attributed GPU work: counts, GPU busy time, idle gaps, CPU wall time.

One row per (range path, domain) that holds GPU work. GPU memcpy and memset operations count
towards a range's GPU time as kernels do: `x.copy_(y)` of two contiguous device tensors is a
cudaMemcpyAsync, not a kernel, and leaving it out would make a variant look faster than it is.

`gpu_time_ns` is the GPU busy time of the range: the union of the [start, end) intervals of
every kernel, memcpy and memset attributed to it, taken per call (push) of the range and summed
over its calls; divide by `occurrences` for the time per call. Work on one stream never
overlaps, so there it equals the sum of the durations. `kernel_time_ns`, `memcpy_time_ns` and
`memset_time_ns` are plain sums of durations of each kind (kernel-only time, as before memory ops
were counted, is `kernel_time_ns`). Gaps are idle GPU time between two operations of one call.
`range_wall_ns` is the CPU time between push and pop, summed over the calls that were popped.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from aisp_prof.parse.nsys_export import OPEN_END

RANGE_COLUMNS = (
    "nvtx_range", "nvtx_domain", "kernel_count", "kernel_time_ns", "memcpy_count", "memcpy_bytes",
    "memcpy_time_ns", "memset_count", "memset_bytes", "memset_time_ns", "gpu_time_ns",
    "first_start_ns", "last_end_ns", "span_ns", "gap_total_ns", "gap_max_ns", "range_wall_ns",
    "occurrences",
)
_KEYS = ["nvtx_range", "nvtx_domain"]
_OPERATIONS = ("kernel", "memcpy", "memset")


def range_table(kernels: pd.DataFrame, memory_ops: pd.DataFrame, nvtx: pd.DataFrame) -> pd.DataFrame:
    """Per (range path, domain): GPU time, its kernel/memcpy/memset parts, idle gaps, CPU wall time.

    `kernels` and `memory_ops` carry nvtx_range, nvtx_domain and range_instance (the push they
    were launched in) from `nsys_attribution`; `nvtx` is one row per push with its own path.
    """
    work = _attributed_work(kernels, memory_ops)
    if work.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in _KEYS else np.int64) for c in RANGE_COLUMNS})
    out = _gpu_totals(_with_busy_time_and_gaps(work))
    closed = nvtx.loc[nvtx["end"] != OPEN_END]
    wall = (closed["end"] - closed["start"]).groupby([closed["nvtx_range"], closed["nvtx_domain"]]).sum()
    pushes = nvtx.groupby(["nvtx_range", "nvtx_domain"]).size()
    out["range_wall_ns"] = wall.reindex(out.index).fillna(0).astype(np.int64)
    out["occurrences"] = pushes.reindex(out.index).fillna(0).astype(np.int64)
    return out.reset_index().loc[:, list(RANGE_COLUMNS)]


def _attributed_work(kernels: pd.DataFrame, memory_ops: pd.DataFrame) -> pd.DataFrame:
    """Kernels and memory ops inside some range, as one frame sorted by range and start."""
    cols = _KEYS + ["range_instance", "start_ns", "end_ns", "duration_ns"]
    k = kernels.loc[kernels["nvtx_range"] != "", cols].assign(operation="kernel", size_bytes=0)
    m = memory_ops.loc[memory_ops["nvtx_range"] != "", cols + ["operation", "size_bytes"]]
    work = pd.concat([k, m], ignore_index=True) if not m.empty else k
    if work.empty:
        return work
    work = work.astype({"start_ns": np.int64, "end_ns": np.int64, "duration_ns": np.int64})
    work["size_bytes"] = work["size_bytes"].fillna(0).astype(np.int64)
    return work.sort_values(_KEYS + ["start_ns", "end_ns"], kind="stable")


def _with_busy_time_and_gaps(work: pd.DataFrame) -> pd.DataFrame:
    """Add gap_ns (idle time before each operation) and busy_ns (its part not yet covered),
    both within one call of the range, and per-operation count/time/bytes columns to sum."""
    group = [work[c] for c in _KEYS + ["range_instance"]]   # busy time and gaps inside one call of the range
    busy_until = work.groupby(group)["end_ns"].cummax().groupby(group).shift()
    work["gap_ns"] = (work["start_ns"] - busy_until).clip(lower=0).fillna(0).astype(np.int64)
    # the part of each operation not already covered by an earlier one of the same call
    covered_from = np.maximum(work["start_ns"], busy_until.fillna(work["start_ns"]).astype(np.int64))
    work["busy_ns"] = (work["end_ns"] - covered_from).clip(lower=0).astype(np.int64)
    for op in _OPERATIONS:
        mine = work["operation"] == op
        work[f"{op}_count"] = mine.astype(np.int64)
        work[f"{op}_ns"] = work["duration_ns"].where(mine, 0)
        work[f"{op}_bytes"] = work["size_bytes"].where(mine, 0)
    return work


def _gpu_totals(work: pd.DataFrame) -> pd.DataFrame:
    """Sum the per-operation columns per (range path, domain), indexed by those two."""
    out = work.groupby(_KEYS, sort=True).agg(
        kernel_count=("kernel_count", "sum"),
        kernel_time_ns=("kernel_ns", "sum"),
        memcpy_count=("memcpy_count", "sum"),
        memcpy_bytes=("memcpy_bytes", "sum"),
        memcpy_time_ns=("memcpy_ns", "sum"),
        memset_count=("memset_count", "sum"),
        memset_bytes=("memset_bytes", "sum"),
        memset_time_ns=("memset_ns", "sum"),
        gpu_time_ns=("busy_ns", "sum"),
        first_start_ns=("start_ns", "min"),
        last_end_ns=("end_ns", "max"),
        gap_total_ns=("gap_ns", "sum"),
        gap_max_ns=("gap_ns", "max"),
    )
    out["span_ns"] = out["last_end_ns"] - out["first_start_ns"]
    return out
