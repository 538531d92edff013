"""Per-rank figures of a multi-rank job: GPU busy time, NCCL time, compute time, how much of the
communication hid behind compute, idle gaps, and which rank finished late.

Input: a `timeline`, the `kernels` frames (KERNEL_COLUMNS of `parse_nsys_sqlite`) of every rank
of one job concatenated, with an int `rank` column and every timestamp on one clock
(`parse.nsys.job` aligns them). Per-rank totals over a whole capture would mix variants and the
warm-up, so every figure here is per (variant, rank), taken per iteration and summarised by the
median over iterations: one late first iteration (a rank that opened its capture later) does not
move it.

Which kernels belong where is read off the NVTX path the parser attributed to each launch:

* variant (`variant_of`): the tool's child wraps every call in `aisp/<pair>/<variant>`, so the
  variant is the path's third component; a foreign program's variant is its outermost range.
  NCCL's own ranges (domain "NCCL": ncclAllReduce, ncclAlltoAll, ...) nest inside the program's and
  are no variant: a kernel inside NCCL's range alone is outside the program's ranges. Kernels
  outside every range (the child's warm-up calls) get None: left out of every per-variant figure,
  counted in `rank_summary(...).attrs["unranged_kernels"]`.
* iteration (`iterations`): the index of the occurrence of the variant's range on that rank. An
  occurrence is a maximal run of consecutive launches (in CPU launch order, on that rank) of one
  variant: the child launches the variants in turn in every iteration (push, launch, pop,
  synchronize), so with two or more variants captured each run is one push of
  `aisp/<pair>/<variant>`. This needs nothing beyond the timeline (no second read of the NVTX
  tables, no clock offsets for them). Its limit: a capture of one variant alone, with nothing
  launched between its calls, is one run, so one "iteration" holding every call.
* collective (`is_collective`, `collective_op`): NCCL kernels by name prefix; the operation from
  NCCL's own range name when the path ends in one (it tells AlltoAll, whose kernel is the generic
  SendRecv), else from the kernel name.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

NCCL_KERNEL_PREFIXES = ("ncclDevKernel_", "ncclKernel_")   # NCCL >= 2.19, older NCCL
# the word after the prefix (ncclDevKernel_AllReduce_Sum_f32_RING_LL -> AllReduce) -> operation
KERNEL_OPS = {
    "AllReduce": "AllReduce", "ReduceScatter": "ReduceScatter", "AllGather": "AllGather",
    "Broadcast": "Broadcast", "Reduce": "Reduce", "SendRecv": "SendRecv", "Send": "SendRecv",
    "Recv": "SendRecv",
}
# NCCL's own NVTX range names -> operation; torch's all_to_all_single runs as ncclAlltoAll, whose
# kernel is ncclDevKernel_SendRecv: only the range tells it from point-to-point traffic
RANGE_OPS = {
    "ncclAllReduce": "AllReduce", "ncclReduceScatter": "ReduceScatter", "ncclAllGather": "AllGather",
    "ncclBroadcast": "Broadcast", "ncclReduce": "Reduce", "ncclAlltoAll": "AlltoAll",
    "ncclSend": "SendRecv", "ncclRecv": "SendRecv", "ncclGather": "Gather", "ncclScatter": "Scatter",
}
LIBRARY_DOMAINS = {"NCCL": "nccl"}     # NVTX domain -> prefix of its range names: not the program's
TOOL_ROOT = "aisp"                       # the tool's paths: aisp/<pair>/<variant>[/...]
TIMELINE_COLUMNS = ("rank", "short_name", "start_ns", "end_ns", "launch_start_ns", "nvtx_range")
SUMMARY_COLUMNS = (
    "variant", "rank", "iterations", "kernel_count", "gpu_busy_ns", "collective_ns", "compute_ns",
    "overlap_ns", "hidden_comm_pct", "span_ns", "idle_ns", "finish_ns",
)


def is_collective(short_name: pd.Series) -> pd.Series:
    """True for NCCL's kernels: what the communication figures count as collective time."""
    return short_name.fillna("").astype(str).str.startswith(NCCL_KERNEL_PREFIXES)


def collective_op(short_name: pd.Series, nvtx_range: pd.Series | None = None) -> pd.Series:
    """The collective operation of each NCCL kernel (None for other kernels): NCCL's own range
    name at the end of `nvtx_range` when there is one (RANGE_OPS), else the kernel name
    (KERNEL_OPS); a kernel NCCL names otherwise is "other"."""
    word = short_name.fillna("").astype(str).str.extract(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)", expand=False)
    op = word.map(KERNEL_OPS).fillna("other").where(word.notna())
    if nvtx_range is not None:
        innermost = nvtx_range.fillna("").astype(str).str.rsplit("/", n=1).str[-1]
        op = innermost.map(RANGE_OPS).where(op.notna()).fillna(op)
    return op.astype(object).where(op.notna(), None)


def variant_of(nvtx_range: pd.Series, nvtx_domain: pd.Series | None = None) -> pd.Series:
    """The variant of each kernel from its NVTX path: the third component of the tool's
    `aisp/<pair>/<variant>`, else the outermost range of a foreign program; None outside the
    program's ranges. Trailing NCCL ranges are NCCL's, not the program's: they are dropped when the
    kernel's (innermost) domain is a library's, or always when no domain is given."""
    path = nvtx_range.fillna("").astype(str)
    prefixes = "|".join(LIBRARY_DOMAINS.values())
    stripped = path.str.replace(rf"(?:^|/)(?:{prefixes})[^/]*$", "", regex=True)
    if nvtx_domain is not None:
        library = nvtx_domain.fillna("").astype(str).isin(list(LIBRARY_DOMAINS))
        stripped = stripped.where(library, path)
    parts = stripped.str.split("/")
    tool = (parts.str[0] == TOOL_ROOT) & (parts.str.len() >= 3)
    variant = parts.str[2].where(tool, parts.str[0])
    return variant.where(stripped != "", None).astype(object)


def _require(timeline: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in timeline]
    if missing:
        raise ValueError(f"timeline lacks {missing}: expected the kernels of every rank with a `rank` column "
                         "(parse.nsys.job)")


def iterations(timeline: pd.DataFrame) -> pd.Series:
    """Each kernel's iteration of its variant on its rank (0, 1, ...; NA outside the program's
    ranges): the index of the run of consecutive launches of that variant it belongs to (module
    docstring). Launch order, not GPU order: the CPU issues one call's kernels together, while
    the GPU may run them on several streams."""
    _require(timeline, TIMELINE_COLUMNS)
    variant = variant_of(timeline["nvtx_range"], timeline.get("nvtx_domain"))
    frame = pd.DataFrame({
        "rank": timeline["rank"].to_numpy(),
        "variant": variant.fillna("\0none").to_numpy(),
        "launch": pd.to_numeric(timeline["launch_start_ns"]).fillna(timeline["start_ns"]).to_numpy(),
        "start": timeline["start_ns"].to_numpy(),
    }, index=timeline.index).sort_values(["rank", "launch", "start"], kind="stable")
    previous = frame.groupby("rank", sort=False)["variant"].shift()
    frame["run"] = (frame["variant"] != previous).cumsum()
    ranged = frame["variant"] != "\0none"
    runs = frame.loc[ranged].groupby(["rank", "variant"], sort=False)["run"].rank(method="dense") - 1
    return runs.astype("Int64").reindex(timeline.index).rename("iteration")


def labelled(timeline: pd.DataFrame) -> pd.DataFrame:
    """The timeline with `variant`, `iteration`, `collective` (bool) and `op` columns: what every
    per-rank and per-collective figure groups by."""
    out = timeline.copy()
    out["variant"] = variant_of(timeline["nvtx_range"], timeline.get("nvtx_domain"))
    out["iteration"] = iterations(timeline)
    out["collective"] = is_collective(timeline["short_name"])
    out["op"] = collective_op(timeline["short_name"], timeline["nvtx_range"])
    return out


# ------------------------------------------------------------------------------------ intervals


def merge_intervals(intervals: pd.DataFrame, keys: Sequence[str] = ()) -> pd.DataFrame:
    """The union of [start_ns, end_ns) intervals per `keys`, as disjoint intervals sorted by start.

    Vectorised: sort by start; an interval opens a new block when it starts after every earlier
    interval of its key has ended (the running maximum of their ends); a block is one merged
    interval, from its first start to its largest end."""
    keys = list(keys)
    df = intervals.loc[:, keys + ["start_ns", "end_ns"]].astype({"start_ns": np.int64, "end_ns": np.int64})
    df = df.sort_values(keys + ["start_ns"], kind="stable")
    by = [df[k] for k in keys] or [np.zeros(len(df), dtype=np.int64)]
    reach = df.groupby(by, sort=False)["end_ns"].cummax().groupby(by, sort=False).shift()
    block = (reach.isna() | (df["start_ns"] > reach)).cumsum().to_numpy()
    out = df.groupby(block, sort=True).agg({**{k: "first" for k in keys}, "start_ns": "min", "end_ns": "max"})
    return out.reset_index(drop=True)


def covered_ns(intervals: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """Length of the union of the intervals per `keys`: busy time that counts overlapping
    kernels (several streams) once."""
    merged = merge_intervals(intervals, keys)
    return (merged["end_ns"] - merged["start_ns"]).groupby([merged[k] for k in keys]).sum()


def overlap_ns(a: pd.DataFrame, b: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """Length of the intersection of the union of `a` with the union of `b`, per `keys` (0 where
    either is empty): |A and B| = |A| + |B| - |A or B|, three unions instead of pairwise tests."""
    both = covered_ns(pd.concat([a, b], ignore_index=True), keys)
    out = covered_ns(a, keys).reindex(both.index, fill_value=0) + covered_ns(b, keys).reindex(both.index, fill_value=0)
    return (out - both).astype(np.int64)


# ------------------------------------------------------------------------------------- summary


def _per_iteration(kernels: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, rank, iteration): busy, collective, compute and overlap time, span,
    last end, and how much later than the first rank to finish this rank ended."""
    keys = ["variant", "rank", "iteration"]
    coll, comp = kernels[kernels["collective"]], kernels[~kernels["collective"]]
    g = kernels.groupby(keys)
    out = pd.DataFrame({"kernel_count": g.size(), "first_start_ns": g["start_ns"].min(),
                        "last_end_ns": g["end_ns"].max(), "gpu_busy_ns": covered_ns(kernels, keys)})
    out["collective_ns"] = covered_ns(coll, keys).reindex(out.index, fill_value=0) if len(coll) else 0
    out["compute_ns"] = covered_ns(comp, keys).reindex(out.index, fill_value=0) if len(comp) else 0
    out["overlap_ns"] = out["collective_ns"] + out["compute_ns"] - out["gpu_busy_ns"]   # |C|+|K|-|C or K|
    out["hidden_comm_pct"] = 100 * out["overlap_ns"] / out["collective_ns"].where(out["collective_ns"] > 0)
    out["span_ns"] = out["last_end_ns"] - out["first_start_ns"]
    out["idle_ns"] = out["span_ns"] - out["gpu_busy_ns"]
    first_done = out.groupby(level=["variant", "iteration"])["last_end_ns"].transform("min")
    out["finish_ns"] = out["last_end_ns"] - first_done
    return out.reset_index()


def rank_summary(timeline: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, rank), SUMMARY_COLUMNS: `iterations`, then the median over the
    iterations of each per-iteration figure. gpu_busy_ns: union of all kernels; collective_ns:
    union of NCCL kernels; compute_ns: union of the others; overlap_ns: their intersection;
    hidden_comm_pct: 100 overlap/collective (NaN without a collective); span_ns: first start to
    last end; idle_ns: span - busy; finish_ns: this rank's last end after the first rank's.

    Kernels outside the program's ranges are left out; `attrs["unranged_kernels"]` holds their
    count per rank (`{rank: count}`)."""
    kernels = labelled(timeline)
    outside = kernels["iteration"].isna()
    unranged = {int(r): int(n) for r, n in kernels.loc[outside].groupby("rank").size().items()}
    kernels = kernels.loc[~outside].astype({"iteration": np.int64})
    if kernels.empty:
        out = pd.DataFrame({c: pd.Series(dtype=object) for c in SUMMARY_COLUMNS})
    else:
        per = _per_iteration(kernels)
        g = per.groupby(["variant", "rank"], sort=True)
        out = g[list(SUMMARY_COLUMNS[3:])].median()
        out.insert(0, "iterations", g.size())
        out = out.reset_index().loc[:, list(SUMMARY_COLUMNS)]
    out.attrs["unranged_kernels"] = unranged
    return out
