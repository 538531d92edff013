"""Attribute kernels and GPU memory operations to the NVTX push/pop ranges they were launched in.

A kernel usually runs on the GPU after the CPU has already popped the NVTX range it was launched
in, so a kernel's range is found through its *launch*: kernel -> CUDA runtime/driver call with the
same correlationId (and process) -> the push/pop ranges on that call's thread that were open when
the call started. Time overlap of the kernel itself with a range would attribute it to the wrong
range (or to none). GPU memcpy and memset operations are attributed by the same rule through
their own correlationId, in the same sweep.

Everything is vectorized: the enclosing ranges of every launch are found with one sorted sweep
per (thread, domain) range stack, never a loop over kernels x ranges.

Tie rule, in ns: a range encloses a launch at time t when start <= t < end (a range popped at the
very ns of the launch is already closed); a zero-length range encloses its own instant. A range's
own path is the ranges open right after it was pushed. The sweep orders events at one timestamp
so that every prefix is a valid push/pop stack: pops of older ranges, then pushes (outermost
first, each followed by its own query), then launch queries, then zero-length pops.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

_POP_OLDER, _PUSH, _LAUNCH, _POP_ZERO = 0, 1, 2, 3


def attribute_all(kernels: pd.DataFrame, memory_ops: pd.DataFrame,
                  nvtx: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Kernels and memory ops attributed in one sweep: both are found through their API call."""
    keys = ["global_tid", "launch_start_ns"]
    calls = pd.concat([kernels.loc[:, keys], memory_ops.loc[:, keys]], ignore_index=True).astype("Int64")
    calls, nvtx = attribute(calls.drop_duplicates().reset_index(drop=True), nvtx)
    found = ["nvtx_range", "nvtx_domain", "range_instance"]
    kernels = kernels.merge(calls.loc[:, keys + found], on=keys, how="left")
    memory_ops = memory_ops.astype({k: "Int64" for k in keys}).merge(calls.loc[:, keys + found], on=keys, how="left")
    return kernels, memory_ops, nvtx


def attribute(calls: pd.DataFrame, nvtx: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Give each API call (global_tid, launch_start_ns) the range path open on its thread when it
    started, and each range (one row of `nvtx` per push) its own full path."""
    launches = (
        calls.loc[:, ["global_tid", "launch_start_ns"]].dropna().drop_duplicates()
        .astype(np.int64).reset_index(drop=True)
    )
    launch_q = launch_queries(launches["global_tid"], launches["launch_start_ns"])
    push_q = _push_queries(nvtx, first_id=len(launch_q))
    paths = paths_at(nvtx, pd.concat([launch_q, push_q], ignore_index=True)).set_index("query_id")
    found = paths.reindex(launch_q["query_id"])
    launches[["nvtx_range", "nvtx_domain"]] = found[["nvtx_range", "nvtx_domain"]].fillna("").to_numpy()
    # which push of the innermost range: gaps are measured within one call, not between calls
    launches["range_instance"] = found["range_instance"].to_numpy()
    calls = calls.merge(
        launches.astype({"global_tid": "Int64", "launch_start_ns": "Int64"}),
        on=["global_tid", "launch_start_ns"], how="left",
    )
    calls[["nvtx_range", "nvtx_domain"]] = calls[["nvtx_range", "nvtx_domain"]].fillna("")
    nvtx = nvtx.copy()
    nvtx[["nvtx_range", "nvtx_domain"]] = paths.reindex(push_q["query_id"])[["nvtx_range", "nvtx_domain"]].fillna("").to_numpy()
    return calls, nvtx


def launch_queries(global_tid: pd.Series, t: pd.Series) -> pd.DataFrame:
    """Sweep queries "which ranges were open on thread global_tid at time t" (a CUDA API call)."""
    n = len(global_tid)
    return pd.DataFrame({
        "query_id": np.arange(n, dtype=np.int64),
        "global_tid": np.asarray(global_tid, dtype=np.int64),
        "time": np.asarray(t, dtype=np.int64),
        "rank": _LAUNCH, "tie": np.int64(0), "order": np.int64(0),
    })


def _push_queries(nvtx: pd.DataFrame, first_id: int) -> pd.DataFrame:
    """One query per range, sorted right behind its own push so that it sees itself and its parents."""
    return pd.DataFrame({
        "query_id": first_id + np.arange(len(nvtx), dtype=np.int64),
        "global_tid": nvtx["global_tid"].to_numpy(dtype=np.int64),
        "time": nvtx["start"].to_numpy(dtype=np.int64),
        "rank": _PUSH,
        "tie": -nvtx["end"].to_numpy(dtype=np.int64),
        "order": 2 * nvtx["range_id"].to_numpy(dtype=np.int64) + 1,
    })


def paths_at(nvtx: pd.DataFrame, queries: pd.DataFrame) -> pd.DataFrame:
    """Per query: "/".join of the enclosing range names, outermost first, and the innermost's domain."""
    hits = _containing(nvtx, queries)
    if hits.empty:
        return pd.DataFrame({"query_id": pd.Series(dtype=np.int64), "nvtx_range": pd.Series(dtype=str),
                             "nvtx_domain": pd.Series(dtype=str), "range_instance": pd.Series(dtype=float)})
    hits = hits.merge(nvtx.loc[:, ["range_id", "start", "end", "name", "domain"]], on="range_id")
    hits = hits.assign(neg_end=-hits["end"]).sort_values(["query_id", "start", "neg_end", "range_id"])
    hits["level"] = hits.groupby("query_id").cumcount()
    wide = hits.pivot(index="query_id", columns="level", values="name")
    path = wide[0].astype(str)
    for level in wide.columns[1:]:
        part = wide[level]
        path = path.where(part.isna(), path + "/" + part.fillna(""))
    innermost = hits.groupby("query_id")["domain"].last().reindex(path.index)
    instance = hits.groupby("query_id")["range_id"].last().reindex(path.index)
    out = pd.DataFrame({"nvtx_range": path, "nvtx_domain": innermost, "range_instance": instance.astype(float)})
    return out.rename_axis("query_id").reset_index()


def _containing(nvtx: pd.DataFrame, queries: pd.DataFrame) -> pd.DataFrame:
    """(query_id, range_id) for every range open at each query, by one sweep per range stack.

    Push/pop ranges of one (thread, domain) nest properly, so at any point of the time-ordered
    event stream the range open at depth d is the last one pushed at depth d. A running depth
    plus a forward fill per depth level finds every enclosing range without comparing each
    query with each range.
    """
    keys = ["global_tid", "domain_id"]
    if nvtx.empty or queries.empty:
        return pd.DataFrame({"query_id": pd.Series(dtype=np.int64), "range_id": pd.Series(dtype=np.int64)})
    start, end, rid = (nvtx[c].to_numpy(dtype=np.int64) for c in ("start", "end", "range_id"))
    base = nvtx.loc[:, keys].reset_index(drop=True)
    pushes = base.assign(time=start, rank=_PUSH, tie=-end, order=2 * rid, delta=1, range_id=rid)
    pops = base.assign(time=end, rank=np.where(end > start, _POP_OLDER, _POP_ZERO), tie=0, order=0,
                       delta=-1, range_id=-1)
    stacks = nvtx.loc[:, keys].drop_duplicates()
    probes = queries.merge(stacks, on="global_tid").assign(delta=0, range_id=-1)   # one per stack
    events = pd.concat([pushes, pops, probes], ignore_index=True)
    events = events.sort_values(keys + ["time", "rank", "tie", "order"], kind="stable").reset_index(drop=True)
    events["depth"] = events.groupby(keys)["delta"].cumsum()
    is_push = events["delta"] == 1
    max_depth = int(events.loc[is_push, "depth"].max())
    pushed_at = pd.DataFrame(
        {d: events["range_id"].where(is_push & (events["depth"] == d)) for d in range(1, max_depth + 1)}
    )
    open_at = pushed_at.groupby([events[k] for k in keys]).ffill()
    is_probe = events["query_id"].notna()
    depth = events.loc[is_probe, "depth"].to_numpy()
    query_id = events.loc[is_probe, "query_id"].to_numpy()
    parts = [
        pd.DataFrame({"query_id": query_id[depth >= d], "range_id": open_at.loc[is_probe, d].to_numpy()[depth >= d]})
        for d in range(1, max_depth + 1)
    ]
    return pd.concat(parts, ignore_index=True).dropna().astype(np.int64)
