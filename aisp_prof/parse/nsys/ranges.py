"""Per-NVTX-range statistics of attributed GPU work: counts, GPU busy time, idle gaps, CPU wall time.

Two tables of the same statistics:

* `range_table`: one row per (innermost range path, domain) that holds GPU work, every thread
  together; a kernel counts in the innermost range open at its launch only. The pair summary
  reads it (a variant's range `aisp/<pair>/<variant>` is innermost there).
* `level_table`: every level, as Nsight Systems' own `nvtx_kern_sum` reports: one row per
  (process, thread, domain, range path), and a range's work includes its children's (a kernel
  launched in step0/forward/layer1 counts in step0, step0/forward and step0/forward/layer1).
  The thread is part of a range's identity: `forward` on two threads is two rows. `depth` is 1
  for a range with no other range open around it on its thread.

 GPU memcpy and memset operations count
towards a range's GPU time as kernels do: `x.copy_(y)` of two contiguous device tensors is a
cudaMemcpyAsync, not a kernel, and leaving it out would make a variant look faster than it is.

`gpu_time_ns` is the GPU busy time of the range: the union of the [start, end) intervals of
every kernel, memcpy and memset attributed to it, taken per call (push) of the range and summed
over its calls; divide by `occurrences` for the time per call. Work on one stream never
overlaps, so there it equals the sum of the durations. `kernel_time_ns`, `memcpy_time_ns` and
`memset_time_ns` are plain sums of durations of each kind (kernel-only time, as before memory ops
were counted, is `kernel_time_ns`). Gaps are idle GPU time between two operations of one call.
`range_wall_ns` is the CPU time between push and pop, summed over the calls that were popped.

Whole-graph launches (nsys's default `--cuda-graph-trace=graph`, `nsys_export.read_graph_launches`)
are GPU work of their range like kernels: `graph_launch_count` and `graph_time_ns` (each launch's
GPU start to end), counted in `gpu_time_ns` and the gaps. Both are null where the export has no
whole-graph records (no graph, or graphs traced per node, whose kernels are then counted as kernels).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from aisp_prof.parse.nsys.tables import ID_BITS, OPEN_END

RANGE_COLUMNS = (
    "nvtx_range", "nvtx_domain", "kernel_count", "kernel_time_ns", "memcpy_count", "memcpy_bytes",
    "memcpy_time_ns", "memset_count", "memset_bytes", "memset_time_ns", "gpu_time_ns",
    "first_start_ns", "last_end_ns", "span_ns", "gap_total_ns", "gap_max_ns", "range_wall_ns",
    "occurrences", "graph_launch_count", "graph_time_ns",
)
LEVEL_COLUMNS = ("process_id", "thread_id", "nvtx_domain", "nvtx_range", "depth", "name") + tuple(
    c for c in RANGE_COLUMNS if c not in ("nvtx_range", "nvtx_domain"))
RANGE_KEYS = ["nvtx_range", "nvtx_domain"]           # a range_table row's identity (range_fold folds by it too)
LEVEL_KEYS = ["process_id", "thread_id", "nvtx_domain", "nvtx_range", "depth", "name"]   # a level_table row's identity
_GRAPH_COLUMNS = ("graph_launch_count", "graph_time_ns")


def range_table(kernels: pd.DataFrame, memory_ops: pd.DataFrame, nvtx: pd.DataFrame,
                graphs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (innermost range path, domain): GPU time, its kernel/memcpy/memset/graph parts, idle
    gaps, CPU wall time.

    `kernels`, `memory_ops` and `graphs` (whole-graph launches) carry nvtx_range, nvtx_domain and
    range_instance (the push they were launched in) from `attribution`; `nvtx` is one row
    per push with its own path.
    """
    work = attributed_work(kernels, memory_ops, graphs)
    if work.empty:
        return empty_frame(RANGE_COLUMNS, RANGE_KEYS)
    calls = call_totals(work, call_ids(work, RANGE_KEYS + ["range_instance"]))
    keys = work[RANGE_KEYS].iloc[calls.index.to_numpy()].reset_index(drop=True)       # each call's range
    out = sum_calls(pd.concat([keys, calls.reset_index(drop=True)], axis=1), RANGE_KEYS)
    wall = np.where(nvtx["end"].to_numpy() != OPEN_END, (nvtx["end"] - nvtx["start"]).to_numpy(), 0)   # popped ranges'
    per_path = nvtx.assign(range_wall_ns=wall).groupby(RANGE_KEYS).agg(
        range_wall_ns=("range_wall_ns", "sum"), occurrences=("range_wall_ns", "size"))
    out["range_wall_ns"] = per_path["range_wall_ns"].reindex(out.index).fillna(0).astype(np.int64)
    out["occurrences"] = per_path["occurrences"].reindex(out.index).fillna(0).astype(np.int64)
    return with_graph_columns(out.reset_index(), graphs).loc[:, list(RANGE_COLUMNS)]


def level_table(kernels: pd.DataFrame, memory_ops: pd.DataFrame, nvtx: pd.DataFrame, open_ranges: pd.DataFrame,
                graphs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every level of every thread's ranges, a range's work including its children's (LEVEL_COLUMNS).

    `open_ranges` holds every range open at each API call (global_tid, launch_start_ns,
    range_pos: the range's row in `nvtx`), from `nsys_attribution.attribute(every_level=True)`;
    `nvtx` carries each push's own path and depth. Each push is one call of its range: busy time
    and gaps are taken per push, then summed per (process, thread, domain, path)."""
    keys = ["global_tid", "launch_start_ns"]
    frames = [f for f in (kernels, memory_ops, graphs) if f is not None and len(f)]
    if not frames or open_ranges.empty:
        return empty_frame(LEVEL_COLUMNS, ["nvtx_domain", "nvtx_range", "name"])
    items = pd.concat([work_items(f) for f in frames], ignore_index=True).dropna(subset=keys)
    items = items.astype({k: np.int64 for k in keys}).merge(open_ranges, on=keys)
    if items.empty:
        return empty_frame(LEVEL_COLUMNS, ["nvtx_domain", "nvtx_range", "name"])
    items = items.sort_values(["range_pos", "start_ns", "end_ns"], kind="stable")
    per_push = call_totals(items, items["range_pos"].to_numpy())       # one row per push (call) with work
    pushed = items["range_pos"].to_numpy()[per_push.index.to_numpy()]
    del items
    ranges = level_keys(nvtx)
    level = ranges.groupby(LEVEL_KEYS, sort=True).ngroup().to_numpy()    # each push's level row, in sorted order
    out = sum_calls(per_push.reset_index(drop=True).assign(level=level[pushed]), ["level"])
    wall = np.zeros(level.max() + 1, np.int64)
    closed = nvtx["end"].to_numpy() != OPEN_END
    np.add.at(wall, level[closed], (ranges["end"] - ranges["start"]).to_numpy()[closed])
    out["range_wall_ns"] = wall[out.index.to_numpy()]
    out["occurrences"] = np.bincount(level)[out.index.to_numpy()]
    first = np.unique(level, return_index=True)[1]                       # a push of each level row, by row
    keys = ranges.iloc[first[out.index.to_numpy()]][LEVEL_KEYS].reset_index(drop=True)
    out = with_graph_columns(pd.concat([keys, out.reset_index(drop=True)], axis=1), graphs)
    return out.sort_values(["process_id", "thread_id", "nvtx_domain", "nvtx_range"], kind="stable").loc[
        :, list(LEVEL_COLUMNS)].reset_index(drop=True)


def level_keys(nvtx: pd.DataFrame) -> pd.DataFrame:
    """Per push: process id, thread id, domain, own path, depth, own name, start, end."""
    tid = nvtx["global_tid"].to_numpy(dtype=np.int64)
    return pd.DataFrame({
        "process_id": (tid >> ID_BITS) & ((1 << ID_BITS) - 1), "thread_id": tid & ((1 << ID_BITS) - 1),
        "nvtx_domain": nvtx["nvtx_domain"].to_numpy(dtype=object),
        "nvtx_range": nvtx["nvtx_range"].to_numpy(dtype=object),
        "depth": nvtx["depth"].to_numpy(dtype=np.int64), "name": nvtx["name"].to_numpy(dtype=object),
        "start": nvtx["start"].to_numpy(dtype=np.int64), "end": nvtx["end"].to_numpy(dtype=np.int64),
    })


def work_items(frame: pd.DataFrame) -> pd.DataFrame:
    """A kernel, memory-op or graph frame as operations: launch key, GPU interval, kind, bytes."""
    operation = frame["operation"] if "operation" in frame else ("graph" if "graph_exec_id" in frame else "kernel")
    size = frame["size_bytes"] if "size_bytes" in frame else 0
    return pd.DataFrame({
        "global_tid": frame["global_tid"], "launch_start_ns": frame["launch_start_ns"],
        "start_ns": frame["start_ns"].astype(np.int64), "end_ns": frame["end_ns"].astype(np.int64),
        "duration_ns": frame["duration_ns"].astype(np.int64), "operation": operation,
        "size_bytes": pd.Series(size, index=frame.index).fillna(0).astype(np.int64),
    })


def with_graph_columns(out: pd.DataFrame, graphs: pd.DataFrame | None) -> pd.DataFrame:
    """Null graph columns where the export has no whole-graph records (see the module's doc)."""
    if graphs is None or graphs.empty:
        for col in _GRAPH_COLUMNS:
            out[col] = np.nan
    return out


def empty_frame(columns: tuple[str, ...], text: list[str]) -> pd.DataFrame:
    """A table with no rows: `columns`, those in `text` of object dtype, the rest int64."""
    return pd.DataFrame({c: pd.Series(dtype=object if c in text else np.int64) for c in columns})


def attributed_work(kernels: pd.DataFrame, memory_ops: pd.DataFrame, graphs: pd.DataFrame | None) -> pd.DataFrame:
    """Kernels, memory ops and graph launches inside some range, as one frame sorted by range,
    push (range_instance), start and end."""
    cols = RANGE_KEYS + ["range_instance", "start_ns", "end_ns", "duration_ns"]
    k = kernels.loc[kernels["nvtx_range"] != "", cols].assign(operation="kernel", size_bytes=0)
    m = memory_ops.loc[memory_ops["nvtx_range"] != "", cols + ["operation", "size_bytes"]]
    g = (graphs.loc[graphs["nvtx_range"] != "", cols].assign(operation="graph", size_bytes=0)
         if graphs is not None and len(graphs) else m.iloc[0:0])
    parts = [f for f in (k, m, g) if not f.empty]
    work = pd.concat(parts, ignore_index=True) if len(parts) > 1 else (parts[0] if parts else k)
    if work.empty:
        return work
    work = work.astype({"start_ns": np.int64, "end_ns": np.int64, "duration_ns": np.int64})
    work["size_bytes"] = work["size_bytes"].fillna(0).astype(np.int64)
    return work.sort_values(RANGE_KEYS + ["range_instance", "start_ns", "end_ns"], kind="stable")


def call_ids(work: pd.DataFrame, call: list[str]) -> np.ndarray:
    """Each row's call (push) of its range: equal for rows equal in the columns `call`, rows
    sorted by them. A row whose `call` holds a missing value is a call of its own, as the
    groupby that took calls before left such a row alone."""
    keys = work[call]
    change = np.zeros(len(work), bool)
    change[0] = True
    missing = keys.isna().any(axis=1).to_numpy()
    for c in call:
        values = keys[c].to_numpy()
        change[1:] |= values[1:] != values[:-1]
    change |= missing | np.r_[False, missing[:-1]]
    return np.cumsum(change)


def call_totals(work: pd.DataFrame, call: np.ndarray,
                 carried: tuple[np.ndarray, np.ndarray] | None = None) -> pd.DataFrame:
    """Per call (push) of a range: counts, times and bytes of each kind of operation, GPU busy
    time, first start, last end, idle gaps (total, longest); indexed by the call's first row
    position. `work`'s rows of a call are contiguous, by start then end; `call` is each row's
    call, the same for those rows only.

    Within a call an operation's busy time is its part not covered by an earlier one (so their
    sum is the union of the intervals) and its gap the idle time since the latest earlier end;
    both as pandas took them (the latest earlier end a float, NaN for a call's first), value
    for value.

    `carried` (a trace read in windows, `range_fold`): per row, the latest end of its call's
    operations in earlier windows and whether it had any; the call then goes on from there as
    if those operations came first here, and `busy_until_ns` (the latest end so far) is added."""
    first = np.flatnonzero(np.r_[True, call[1:] != call[:-1]])
    start, end, duration, size = (work[c].to_numpy(dtype=np.int64) for c in ("start_ns", "end_ns", "duration_ns",
                                                                             "size_bytes"))
    until = pd.Series(end).groupby(call).cummax().to_numpy(dtype=np.int64)      # busy until, after each operation
    if carried is not None:
        until = np.where(carried[1], np.maximum(until, carried[0]), until)
    before = np.r_[np.nan, until[:-1].astype(np.float64)]
    before[first] = np.nan if carried is None else np.where(carried[1][first], carried[0][first], np.nan)
    unknown = np.isnan(before)
    gap = start.astype(np.float64) - before
    gap = np.where(unknown, 0, np.maximum(gap, 0)).astype(np.int64)
    covered_from = np.maximum(start, np.where(unknown, start.astype(np.float64), before).astype(np.int64))
    busy = np.maximum(end - covered_from, 0)
    operation = work["operation"].to_numpy(dtype=object)
    totals = {}
    for op, count, time_ns, bytes_ in _TOTALS:
        mine = operation == op
        totals[count] = np.add.reduceat(mine.astype(np.int64), first)
        totals[time_ns] = np.add.reduceat(np.where(mine, duration, 0), first)
        if bytes_:
            totals[bytes_] = np.add.reduceat(np.where(mine, size, 0), first)
    totals.update(gpu_time_ns=np.add.reduceat(busy, first), first_start_ns=np.minimum.reduceat(start, first),
                  last_end_ns=np.maximum.reduceat(end, first), gap_total_ns=np.add.reduceat(gap, first),
                  gap_max_ns=np.maximum.reduceat(gap, first))
    if carried is not None:
        totals["busy_until_ns"] = np.maximum.reduceat(until, first)
    return pd.DataFrame(totals, index=first)


# operation -> its count, time and bytes columns (graph launches and kernels move no bytes)
_TOTALS = (("kernel", "kernel_count", "kernel_time_ns", None), ("memcpy", "memcpy_count", "memcpy_time_ns", "memcpy_bytes"),
           ("memset", "memset_count", "memset_time_ns", "memset_bytes"),
           ("graph", "graph_launch_count", "graph_time_ns", None))


def sum_calls(calls: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per `keys` (sorted), the calls' totals together: sums, first start, last end, longest gap, span."""
    out = calls.groupby(keys, sort=True).agg(
        **{c: (c, "sum") for c in SUM_COLUMNS}, first_start_ns=("first_start_ns", "min"),
        last_end_ns=("last_end_ns", "max"), gap_max_ns=("gap_max_ns", "max"))
    out["span_ns"] = out["last_end_ns"] - out["first_start_ns"]
    return out


# The statistics a range's calls add up (range_fold sums them over windows too)
SUM_COLUMNS = ("kernel_count", "kernel_time_ns", "memcpy_count", "memcpy_bytes", "memcpy_time_ns", "memset_count",
               "memset_bytes", "memset_time_ns", "graph_launch_count", "graph_time_ns", "gpu_time_ns", "gap_total_ns")
