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

from typing import NamedTuple

import numpy as np
import pandas as pd

_POP_OLDER, _PUSH, _LAUNCH, _POP_ZERO = 0, 1, 2, 3
_TEXT = pd.Series([""]).dtype          # the dtype pandas gives text (str in pandas 3), as a merge gave it


class Attributed(NamedTuple):
    """`attribute_all`'s answer: the GPU work frames with their innermost range, the ranges with
    their own path and depth, and every range open at each API call (for every-level totals)."""
    kernels: pd.DataFrame
    memory_ops: pd.DataFrame
    graphs: pd.DataFrame
    nvtx: pd.DataFrame
    open_ranges: pd.DataFrame     # global_tid, launch_start_ns, range_pos: one row per (call, open range)


def attribute_all(kernels: pd.DataFrame, memory_ops: pd.DataFrame, nvtx: pd.DataFrame,
                  graphs: pd.DataFrame | None = None) -> Attributed:
    """Kernels, memory ops and whole-graph launches attributed in one sweep: all are found
    through their API call. A row without a call (no runtime row matched it) is in no range."""
    keys = ["global_tid", "launch_start_ns"]
    graphs = graphs if graphs is not None else pd.DataFrame({k: pd.Series(dtype="Int64") for k in keys})
    frames = [kernels, memory_ops.astype({k: "Int64" for k in keys}), graphs.astype({k: "Int64" for k in keys})]
    launches, launch_of = _distinct_launches([f.loc[:, keys] for f in frames])
    found, nvtx, open_ranges = attribute_launches(launches, nvtx, every_level=True)
    done, first = [], 0
    for frame in frames:
        at = launch_of[first:first + len(frame)]
        first += len(frame)
        columns = {c: _take(found[c].to_numpy(), at, "") for c in ("nvtx_range", "nvtx_domain")}
        done.append(frame.reset_index(drop=True).assign(
            **{c: pd.Series(v, dtype=_TEXT) for c, v in columns.items()},
            range_instance=_take(found["range_instance"].to_numpy(), at, np.nan)))
    return Attributed(*done, nvtx, open_ranges)


def _distinct_launches(keys: list[pd.DataFrame]) -> tuple[pd.DataFrame, np.ndarray]:
    """The distinct API calls (global_tid, launch_start_ns, int64) of these frames' rows, in
    order of first appearance, and each row's call (-1 where either key is missing), the rows
    of the frames taken one after the other."""
    tid, start = (pd.concat([k[c] for k in keys], ignore_index=True).astype("Int64")
                  for c in ("global_tid", "launch_start_ns"))
    valid = (tid.notna() & start.notna()).to_numpy()
    tid, start = tid.to_numpy(dtype=np.int64, na_value=0), start.to_numpy(dtype=np.int64, na_value=0)
    tid_codes, _ = pd.factorize(tid[valid])
    start_codes, _ = pd.factorize(start[valid])
    codes = pd.factorize(tid_codes * np.int64(start_codes.max(initial=0) + 1) + start_codes)[0]
    firsts = np.unique(codes, return_index=True)[1]           # each call's first row, by call
    launch_of = np.full(len(valid), -1, np.int64)
    launch_of[valid] = codes
    launches = pd.DataFrame({"global_tid": tid[valid][firsts], "launch_start_ns": start[valid][firsts]})
    return launches, launch_of


def _take(values: np.ndarray, at: np.ndarray, missing: object) -> np.ndarray:
    """values[at], `missing` where at is -1."""
    out = values[np.maximum(at, 0)] if len(values) else np.full(len(at), missing, dtype=values.dtype)
    if (at < 0).any():
        out = out.astype(object if isinstance(missing, str) else np.float64)
        out[at < 0] = missing
    return out


def attribute(calls: pd.DataFrame, nvtx: pd.DataFrame, every_level: bool = False) -> tuple[pd.DataFrame, ...]:
    """Give each API call (global_tid, launch_start_ns) the range path open on its thread when it
    started, and each range (one row of `nvtx` per push) its own full path and its depth (1: no
    range open around it on its thread). With `every_level`, also every range open at each call
    (global_tid, launch_start_ns, range_pos: the range's row position in `nvtx`)."""
    launches = (
        calls.loc[:, ["global_tid", "launch_start_ns"]].dropna().drop_duplicates()
        .astype(np.int64).reset_index(drop=True)
    )
    found, nvtx, open_ranges = attribute_launches(launches, nvtx, every_level)
    calls = calls.merge(
        pd.concat([launches, found], axis=1).astype({"global_tid": "Int64", "launch_start_ns": "Int64"}),
        on=["global_tid", "launch_start_ns"], how="left",
    )
    calls[["nvtx_range", "nvtx_domain"]] = calls[["nvtx_range", "nvtx_domain"]].fillna("")
    return (calls, nvtx, open_ranges) if every_level else (calls, nvtx)


def attribute_launches(launches: pd.DataFrame, nvtx: pd.DataFrame,
                        every_level: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """`attribute` of distinct calls (int64 keys): per call (row for row) its nvtx_range,
    nvtx_domain ("" outside every range) and range_instance (NaN there); the ranges with their
    own path and depth; with `every_level` the ranges open at each call (else None)."""
    launch_q = launch_queries(launches["global_tid"], launches["launch_start_ns"])
    push_q = _push_queries(nvtx, first_id=len(launch_q))
    launch_ids, push_ids = (q["query_id"].to_numpy().copy() for q in (launch_q, push_q))   # no view
    queries = pd.concat([launch_q, push_q], ignore_index=True)
    del launch_q, push_q                        # only the concatenated queries are needed now
    walk = _walk(nvtx, queries)
    del queries
    paths = _paths(nvtx, walk).set_index("query_id")
    at_launch = paths.reindex(launch_ids)
    found = pd.DataFrame(at_launch[["nvtx_range", "nvtx_domain"]].fillna("").to_numpy(),
                         columns=["nvtx_range", "nvtx_domain"])
    # which push of the innermost range: gaps are measured within one call, not between calls
    found["range_instance"] = at_launch["range_instance"].to_numpy()
    nvtx = nvtx.copy()
    nvtx[["nvtx_range", "nvtx_domain"]] = paths.reindex(push_ids)[["nvtx_range", "nvtx_domain"]].fillna("").to_numpy()
    enclosing = _enclosing(walk)
    # a push query sees itself and every range around it (one that saw none counts as depth 1)
    seen = np.bincount(enclosing["query_id"].to_numpy(dtype=np.int64), minlength=len(launches) + len(nvtx))
    nvtx["depth"] = np.maximum(seen[push_ids], 1).astype(np.int64)
    if not every_level:
        return found, nvtx, None
    opened = enclosing.loc[enclosing["query_id"] < len(launches)]
    qid = opened["query_id"].to_numpy(dtype=np.int64)
    open_ranges = pd.DataFrame({
        "global_tid": launches["global_tid"].to_numpy(dtype=np.int64)[qid],
        "launch_start_ns": launches["launch_start_ns"].to_numpy(dtype=np.int64)[qid],
        "range_pos": opened["range_pos"].to_numpy(dtype=np.int64),
    })
    return found, nvtx, open_ranges


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
    """Per query: "/".join of the enclosing range names, outermost first, and the innermost's domain.

    Each range's own path is built once, parent first; a query inside ranges of one stack takes the
    path of its innermost range. Only a query inside ranges of several stacks (NVTX domains of one
    thread) has its ranges merged by start time."""
    return _paths(nvtx, _walk(nvtx, queries))


def _paths(nvtx: pd.DataFrame, walk: "_Walk | None") -> pd.DataFrame:
    """`paths_at` of a sweep already made."""
    if walk is None or walk.hits.empty:
        return pd.DataFrame({"query_id": pd.Series(dtype=np.int64), "nvtx_range": pd.Series(dtype=str),
                             "nvtx_domain": pd.Series(dtype=str), "range_instance": pd.Series(dtype=float)})
    hits = walk.hits
    several = hits["query_id"].duplicated(keep=False).to_numpy()
    one = hits.loc[~several]
    at = one["range_pos"].to_numpy()
    single = pd.DataFrame({
        "query_id": one["query_id"].to_numpy(), "nvtx_range": _range_paths(nvtx, walk)[at],
        "nvtx_domain": nvtx["domain"].to_numpy(dtype=object)[at],
        "range_instance": nvtx["range_id"].to_numpy(dtype=np.int64)[at].astype(float),
    })
    merged = _merged_paths(nvtx, walk, hits.loc[several])
    out = pd.concat([single, merged], ignore_index=True) if len(merged) else single
    return out.sort_values("query_id", kind="stable").reset_index(drop=True)


class _Walk(NamedTuple):
    """The sweep's findings: per (query, stack) the innermost open range (row position in nvtx),
    and per range its parent's row position (-1 at the top) and its depth in its stack."""
    hits: pd.DataFrame
    parent: np.ndarray
    depth: np.ndarray


def _walk(nvtx: pd.DataFrame, queries: pd.DataFrame) -> _Walk | None:
    """One sorted sweep per (thread, domain) range stack.

    Push/pop ranges of one stack nest properly, so at any point of the time-ordered event stream
    the range open at depth d is the last one pushed at depth d: a query at depth d finds its
    innermost range, and a push at depth d its parent at d - 1, by one sort and a running maximum.
    """
    keys = ["global_tid", "domain_id"]
    if nvtx.empty or queries.empty:
        return None
    stacks = nvtx.loc[:, keys].drop_duplicates().reset_index(drop=True)
    stacks["stack"] = np.arange(len(stacks), dtype=np.int64)
    range_stack = nvtx.loc[:, keys].merge(stacks, on=keys, how="left")["stack"].to_numpy(dtype=np.int64)
    probes = queries.merge(stacks, on="global_tid")                  # one per stack of the query's thread
    n = len(nvtx)
    ref, stack_sorted, depth = _sorted_events(nvtx, range_stack, probes)
    probe_query = probes["query_id"].to_numpy(dtype=np.int64)
    del probes
    small = np.int32 if len(ref) < 2 ** 31 else np.int64     # positions, stacks, depths: half the memory
    push_at, probe_at = np.flatnonzero(ref < n).astype(small), np.flatnonzero(ref >= 2 * n).astype(small)
    found = _last_pushed(
        stack=np.concatenate([stack_sorted[push_at], stack_sorted[push_at], stack_sorted[probe_at]]),
        level=np.concatenate([depth[push_at], depth[push_at] - 1, depth[probe_at]]),
        position=np.concatenate([push_at, push_at, probe_at]),
        value=np.concatenate([ref[push_at].astype(small), np.full(len(push_at) + len(probe_at), -1, small)]),
    )
    del stack_sorted
    k = len(push_at)
    parent, range_depth = np.full(n, -1, np.int64), np.zeros(n, np.int64)
    parent[ref[push_at]], range_depth[ref[push_at]] = found[k:2 * k], depth[push_at]
    innermost = found[2 * k:]
    inside = innermost >= 0
    query_id = probe_query[ref[probe_at] - 2 * n]
    hits = pd.DataFrame({"query_id": query_id[inside], "range_pos": innermost[inside]})
    return _Walk(hits, parent, range_depth)


def _sorted_events(nvtx: pd.DataFrame, range_stack: np.ndarray,
                   probes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sweep's events in sweep order: the order itself (an event's index: < n the push of
    range row i, < 2n its pop, else probe i - 2n), each sorted event's stack and the depth after
    it (stacks and depths as int32). The sort keys are let go as soon as the order is known (at
    1M launches each is 27 MB)."""
    n, m = len(nvtx), len(probes)
    start, end, rid = (nvtx[c].to_numpy(dtype=np.int64) for c in ("start", "end", "range_id"))
    ev_stack = np.concatenate([range_stack, range_stack, probes["stack"].to_numpy(dtype=np.int64)]).astype(np.int32)
    ev_time = np.concatenate([start, end, probes["time"].to_numpy(dtype=np.int64)])
    ev_rank = np.concatenate([np.full(n, _PUSH), np.where(end > start, _POP_OLDER, _POP_ZERO),
                              probes["rank"].to_numpy(dtype=np.int64)])
    ev_tie = np.concatenate([-end, np.zeros(n, np.int64), probes["tie"].to_numpy(dtype=np.int64)])
    ev_order = np.concatenate([2 * rid, np.zeros(n, np.int64), probes["order"].to_numpy(dtype=np.int64)])
    sort = np.lexsort((ev_order, ev_tie, ev_rank, ev_time, ev_stack))          # stable, stack first
    del ev_time, ev_rank, ev_tie, ev_order
    stack_sorted = ev_stack[sort]
    del ev_stack
    ev_delta = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64), np.zeros(m, np.int64)])
    return sort, stack_sorted, _running_depth(stack_sorted, ev_delta[sort]).astype(np.int32)


def _running_depth(stack: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Open ranges after each event of the sorted stream, counted within each stack."""
    total = np.cumsum(delta)
    first = np.flatnonzero(np.r_[True, stack[1:] != stack[:-1]])
    before = (total - delta)[first]
    return total - np.repeat(before, np.diff(np.r_[first, len(stack)]))


def _last_pushed(stack: np.ndarray, level: np.ndarray, position: np.ndarray, value: np.ndarray) -> np.ndarray:
    """For each lookup (value -1), the value of the last source (value >= 0) at the same stack and
    level before it in the sweep; -1 when there is none. Sources come back as -1 too."""
    order = np.lexsort((position, level, stack))
    src = value[order] >= 0
    stack, level = stack[order], level[order]
    group = np.cumsum(np.r_[True, (stack[1:] != stack[:-1]) | (level[1:] != level[:-1])])
    del stack, level
    last = np.maximum.accumulate(np.where(src, np.arange(len(order)), -1))
    ok = (~src) & (last >= 0)
    ok[ok] = group[last[ok]] == group[ok]
    out = np.full(len(order), -1, np.int64)
    out[order[ok]] = value[order][last[ok]]
    return out


def _range_paths(nvtx: pd.DataFrame, walk: _Walk) -> np.ndarray:
    """Every range's own path, "/".join of its names from the top of its stack: parents first."""
    names = nvtx["name"].to_numpy(dtype=object)
    paths = names.copy()
    order = np.argsort(walk.depth, kind="stable")
    depths = walk.depth[order]
    for first, stop in zip(*_runs(depths)):
        level = order[first:stop]
        if depths[first] > 1:
            paths[level] = paths[walk.parent[level]] + "/" + names[level]
    return paths


def _runs(sorted_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and stop indices of the runs of equal values in a sorted array."""
    first = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    return first, np.r_[first[1:], len(sorted_values)]


def _enclosing(walk: "_Walk | None") -> pd.DataFrame:
    """Every range open at each query (query_id, range_pos): its innermost range in each stack of
    its thread, and their parents up to the top of each stack."""
    if walk is None or walk.hits.empty:
        return pd.DataFrame({"query_id": pd.Series(dtype=np.int64), "range_pos": pd.Series(dtype=np.int64)})
    frontier = walk.hits.loc[:, ["query_id", "range_pos"]]
    chains = [frontier]
    while len(frontier := frontier.assign(range_pos=walk.parent[frontier["range_pos"].to_numpy()])
                             .loc[lambda f: f["range_pos"] >= 0]):
        chains.append(frontier)
    return pd.concat(chains, ignore_index=True)


def _merged_paths(nvtx: pd.DataFrame, walk: _Walk, hits: pd.DataFrame) -> pd.DataFrame:
    """Paths of queries inside ranges of several stacks: every enclosing range, sorted by start."""
    if hits.empty:
        return pd.DataFrame()
    chains, frontier = [hits], hits
    while len(frontier := frontier.assign(range_pos=walk.parent[frontier["range_pos"].to_numpy()])
                             .loc[lambda f: f["range_pos"] >= 0]):
        chains.append(frontier)
    every = pd.concat(chains, ignore_index=True)
    ranges = nvtx.loc[:, ["range_id", "start", "end", "name", "domain"]].reset_index(drop=True)
    every = pd.concat([every["query_id"].reset_index(drop=True),
                       ranges.iloc[every["range_pos"].to_numpy()].reset_index(drop=True)], axis=1)
    every = every.assign(neg_end=-every["end"]).sort_values(["query_id", "start", "neg_end", "range_id"])
    last = every.groupby("query_id").tail(1).set_index("query_id")
    joined = every.groupby("query_id", sort=True)["name"].agg("/".join)
    return pd.DataFrame({"query_id": joined.index.to_numpy(), "nvtx_range": joined.to_numpy(),
                         "nvtx_domain": last["domain"].reindex(joined.index).to_numpy(),
                         "range_instance": last["range_id"].reindex(joined.index).to_numpy().astype(float)})
