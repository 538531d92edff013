"""One representative iteration of each variant of a multi-rank run, as lanes: per rank and
CUDA stream, its kernels and memory ops on the job's shared clock. The report's rank timeline
draws this (`render.rank_timeline`).

Why one iteration, the same index on every rank: the ranks run a collective together, so the
picture that explains a wait or a straggler is the same call seen from every rank at once. The
iteration is the one whose span (first start on any rank to last end on any rank) is the median
over the iterations every rank has: iterations differ (on the 2x H100 sample, int8_overlap's
last took 1.36 ms, the others 0.77-0.88 ms), and a fixed first or last one may be the outlier.

Why lanes per stream within a rank: an overlapping variant (int8_overlap) runs NCCL on a second
stream beside the Triton kernels of the first; on one row the boxes would hide each other, on
two the overlap shows as boxes stacked in time.

Iterations are `ranks.iterations` (runs of consecutive launches of one variant on one rank)
over the kernels and memory ops together, so the memcpy a call issues before its all-reduce
falls in the same iteration as that all-reduce. A collective box carries `wait_ns` from
`collectives.collectives`: the part of its kernel spent waiting for the last rank to arrive.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .figures import collective_op, covered_ns, is_collective, iterations, variant_of
from ..timeline.call import memory_op_name

LANE_COLUMNS = ("rank", "short_name", "kind", "op", "stream_id", "start_ns", "end_ns", "launch_start_ns",
                "nvtx_range", "nvtx_domain")


def _operations(timeline: pd.DataFrame, memory_ops: pd.DataFrame | None) -> pd.DataFrame:
    """Kernels and memory ops of every rank in one frame: `kind` compute, collective, memcpy or
    memset; `op` the collective's operation; `variant` and `iteration` as `ranks` counts them."""
    kernels = timeline.assign(kind=np.where(is_collective(timeline["short_name"]), "collective", "compute"),
                              op=collective_op(timeline["short_name"], timeline["nvtx_range"]))
    parts = [kernels]
    if memory_ops is not None and not memory_ops.empty and "rank" in memory_ops:
        names = [memory_op_name(o, k, s) for o, k, s in
                 zip(memory_ops["operation"], memory_ops.get("copy_kind", pd.Series(None, index=memory_ops.index)),
                     memory_ops.get("size_bytes", pd.Series(None, index=memory_ops.index)))]
        parts.append(memory_ops.assign(short_name=names, kind=memory_ops["operation"], op=None))
    ops = pd.concat([p.reindex(columns=list(LANE_COLUMNS)) for p in parts], ignore_index=True)
    ops["launch_start_ns"] = pd.to_numeric(ops["launch_start_ns"], errors="coerce")
    ops["variant"] = variant_of(ops["nvtx_range"], ops["nvtx_domain"])
    ops["iteration"] = iterations(ops)
    return ops[ops["iteration"].notna()].astype({"iteration": np.int64, "start_ns": np.int64, "end_ns": np.int64})


def representative_iteration(ops: pd.DataFrame) -> int | None:
    """The iteration (present on every rank) whose span over all ranks is the median; ties to
    the earlier one. `ops`: one variant's operations with `rank` and `iteration`."""
    ranks = ops["rank"].nunique()
    g = ops.groupby("iteration")
    spans = pd.DataFrame({"ranks": g["rank"].nunique(), "span": g["end_ns"].max() - g["start_ns"].min()})
    spans = spans[spans["ranks"] == ranks].reset_index().sort_values(["span", "iteration"], kind="stable")
    if spans.empty:
        return None
    return int(spans["iteration"].iloc[(len(spans) - 1) // 2])


def _waits(collectives: pd.DataFrame | None) -> dict[tuple[int, int], int]:
    """(rank, kernel start) -> ns that collective kernel waited for the last rank to arrive."""
    if collectives is None or collectives.empty:
        return {}
    return {(int(r), int(s)): int(w) for r, s, w in
            zip(collectives["rank"], collectives["start_ns"], collectives["wait_ns"])}


def _box(row: Any, t0: int, waits: dict[tuple[int, int], int]) -> dict[str, Any]:
    start, end = int(row.start_ns), int(row.end_ns)
    box = {"name": str(row.short_name), "kind": str(row.kind), "op": row.op if isinstance(row.op, str) else None,
           "start_ns": start - t0, "end_ns": end - t0, "duration_ns": end - start}
    if row.kind == "collective":
        box["wait_ns"] = min(waits.get((int(row.rank), start), 0), end - start)
    return box


def _rank_row(rank: int, ops: pd.DataFrame, t0: int) -> dict[str, Any]:
    """One rank's figures of the iteration: when it started and ended (after the first rank's
    first start), its busy time (any operation), collective time, the part of that which ran
    beside compute kernels, and its idle time."""
    keys = ["rank"]
    coll = ops[ops["kind"] == "collective"]
    comp = ops[ops["kind"] == "compute"]
    busy = int(covered_ns(ops, keys).sum())
    coll_ns = int(covered_ns(coll, keys).sum()) if len(coll) else 0
    comp_ns = int(covered_ns(comp, keys).sum()) if len(comp) else 0
    both = int(covered_ns(pd.concat([coll, comp]), keys).sum()) if len(coll) and len(comp) else coll_ns + comp_ns
    start, end = int(ops["start_ns"].min()) - t0, int(ops["end_ns"].max()) - t0
    return {"rank": rank, "streams": sorted(int(s) for s in ops["stream_id"].dropna().unique()),
            "kernels": int(ops["kind"].isin(["compute", "collective"]).sum()), "collectives": len(coll),
            "memory_ops": int(ops["kind"].isin(["memcpy", "memset"]).sum()),
            "start_ns": start, "end_ns": end, "busy_ns": busy, "collective_ns": coll_ns,
            "hidden_ns": coll_ns + comp_ns - both,
            "hidden_comm_pct": 100.0 * (coll_ns + comp_ns - both) / coll_ns if coll_ns else None,
            "idle_ns": end - start - busy, "gaps": _gaps(ops, t0)}


def _gaps(ops: pd.DataFrame, t0: int) -> list[dict[str, int]]:
    """The rank's idle stretches between its first start and last end (no operation on any stream)."""
    spans = ops.loc[:, ["start_ns", "end_ns"]].sort_values("start_ns").to_numpy()
    out, reach = [], int(spans[0][1])
    for start, end in spans[1:]:
        if start > reach:
            out.append({"start_ns": reach - t0, "end_ns": int(start) - t0})
        reach = max(reach, int(end))
    return out


def _variant_lanes(ops: pd.DataFrame, iteration: int, waits: dict[tuple[int, int], int]) -> dict[str, Any]:
    call = ops[ops["iteration"] == iteration].sort_values(["rank", "start_ns", "end_ns"], kind="stable")
    t0 = int(call["start_ns"].min())
    lanes, ranks = [], []
    for rank, mine in call.groupby("rank", sort=True):
        ranks.append(_rank_row(int(rank), mine, t0))
        streams = mine["stream_id"].fillna(-1).astype(np.int64)
        for stream, on in mine.groupby(streams, sort=True):
            lanes.append({"rank": int(rank), "stream_id": None if stream < 0 else int(stream),
                          "ops": [_box(r, t0, waits) for r in on.itertuples(index=False)]})
    last = max(r["end_ns"] for r in ranks)
    return {"iteration": iteration, "iterations": int(ops["iteration"].nunique()), "span_ns": last,
            "finish_spread_ns": last - min(r["end_ns"] for r in ranks), "ranks": ranks, "lanes": lanes}


def rank_lanes(timeline: pd.DataFrame, memory_ops: pd.DataFrame | None, variants: Sequence[str],
               collectives: pd.DataFrame | None = None) -> dict[str, dict[str, Any]]:
    """variant -> its representative iteration (module docstring) as plain data: `iteration`,
    `span_ns` (first start on any rank to last end on any rank), `finish_spread_ns` (last rank's
    end after the first's), `ranks` (per rank: streams, counts, start/end, busy, collective,
    hidden, idle, gaps) and `lanes` (per rank and stream, in order: its boxes with name, kind,
    op, start/end relative to the iteration's first start, and a collective's `wait_ns`).
    Variants in `variants` order; those with no iteration on every rank are left out."""
    if timeline.empty or "rank" not in timeline:
        return {}
    ops = _operations(timeline, memory_ops)
    waits = _waits(collectives)
    out: dict[str, dict[str, Any]] = {}
    for v in variants:
        mine = ops[ops["variant"] == v]
        if mine.empty:
            continue
        it = representative_iteration(mine)
        if it is not None:
            out[v] = _variant_lanes(mine, it, waits)
    return out
