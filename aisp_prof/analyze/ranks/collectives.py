"""One row per rank of each collective of a multi-rank job: who arrived last, how long the others
waited for it, how long the transfer itself took, and the bandwidth it reached.

Every rank launches the same collectives in the same order (NCCL requires it), so the k-th NCCL
kernel of each rank, per variant in GPU start order, is one collective (`collectives`). Kernels
outside the program's ranges (the child's warm-up) form their own group, variant None: the
warm-up is where a rank that opened its capture late shows.

A NCCL kernel starts when its rank reaches the collective and ends when the exchange is done, so
the first rank to arrive spins until the last one does: its duration holds the wait. Hence two
times: `wait_ns` (last arrival minus this rank's start) and `collective_ns` (the smallest end over
ranks minus the last arrival: what the transfer took once all had arrived), the `t` of the
bandwidths, as nccl-tests times a collective after a barrier.

Bandwidths (`bus_bandwidth`) follow nccl-tests' doc/PERFORMANCE.md (and its src/*.cu `GetBw`):
algbw = S / t; busbw = algbw x a factor of the operation and the rank count n (BUSBW_FACTORS),
the number comparable with the link's peak. S is the size nccl-tests defines per operation:
AllReduce, Broadcast, Reduce: the buffer; ReduceScatter: the whole input (recvcount x n x type
size); AllGather: the whole output (sendcount x n x type size); AlltoAll: each rank's whole send
buffer (count x n x type size); SendRecv: what one rank sends. nsys 2025.3 exports no NCCL NVTX
payload (the message size is in the schema, not in the rows), so S comes from the caller.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
import pandas as pd

from .figures import labelled

COLLECTIVE_COLUMNS = (
    "variant", "collective", "iteration", "op", "rank", "short_name", "stream_id", "start_ns", "end_ns",
    "duration_ns", "wait_ns", "ranks", "arrival_spread_ns", "last_rank", "collective_ns",
)
STRAGGLER_COLUMNS = ("variant", "rank", "collectives", "times_last", "wait_caused_ns", "waited_ns", "finding")
BANDWIDTH_COLUMNS = (
    "variant", "collective", "iteration", "op", "ranks", "collective_ns", "message_bytes",
    "busbw_factor", "algbw_gb_per_s", "busbw_gb_per_s", "note",
)
BUSBW_FACTORS: Mapping[str, Callable[[int], float]] = {
    "AllReduce": lambda n: 2 * (n - 1) / n,
    "ReduceScatter": lambda n: (n - 1) / n,
    "AllGather": lambda n: (n - 1) / n,
    "AlltoAll": lambda n: (n - 1) / n,
    "Broadcast": lambda n: 1.0,
    "Reduce": lambda n: 1.0,
    "SendRecv": lambda n: 1.0,
}
_NONE = "\0none"     # group key of kernels outside the program's ranges (groupby drops None keys)


def _matched(nccl: pd.DataFrame, warnings: list[str]) -> pd.DataFrame:
    """Number each rank's NCCL kernels per variant in start order and keep the collectives every
    rank has, with the same operation everywhere; what is dropped is said in `warnings`."""
    nccl = nccl.sort_values(["rank", "start_ns"], kind="stable").reset_index(drop=True)
    nccl["collective"] = nccl.groupby(["key", "rank"]).cumcount()
    all_ranks = sorted(nccl["rank"].unique())
    kept = []
    for key, group in nccl.groupby("key", sort=True):
        name = "outside the ranges" if key == _NONE else f"variant {key}"
        counts = group.groupby("rank").size().reindex(all_ranks, fill_value=0)
        common = int(counts.min())
        if counts.nunique() > 1:
            warnings.append(f"{name}: the ranks launched {dict(counts.items())} NCCL kernels; "
                            f"matched the first {common} of each")
        group = group[group["collective"] < common]
        ops = group.groupby("collective")["op"].nunique()
        if (ops > 1).any():
            first_bad = int(ops[ops > 1].index[0])
            warnings.append(f"{name}: collective {first_bad} is not the same operation on every rank; "
                            f"matched the first {first_bad} only")
            group = group[group["collective"] < first_bad]
        kept.append(group)
    return pd.concat(kept) if kept else nccl.iloc[0:0]


def collectives(timeline: pd.DataFrame) -> pd.DataFrame:
    """One row per (collective, rank), COLLECTIVE_COLUMNS: the k-th NCCL kernel of each rank per
    variant (in start order) is collective k of that variant. Per row: its kernel's start, end and
    duration_ns, wait_ns (last rank's start minus its own); per collective (repeated on each
    rank's row): ranks, arrival_spread_ns (last start - first start), last_rank (whose kernel
    started last: everyone else's waited for it) and collective_ns (min over ranks of end - last
    start: the transfer once all had arrived).

    Ranks that launched different numbers of NCCL kernels (a rank's capture cut short) are
    matched over the common prefix only; `attrs["warnings"]` (a list of one-line strings, empty
    when all matched) says what was left out."""
    kernels = labelled(timeline)
    nccl = kernels.loc[kernels["collective"]].copy()
    nccl["key"] = nccl["variant"].fillna(_NONE)
    warnings: list[str] = []
    m = _matched(nccl, warnings)
    g = m.groupby(["key", "collective"])["start_ns"]
    last_start = g.transform("max")
    m["duration_ns"] = m["end_ns"] - m["start_ns"]
    m["wait_ns"] = last_start - m["start_ns"]
    m["ranks"] = g.transform("size")
    m["arrival_spread_ns"] = last_start - g.transform("min")
    latest = m.loc[m.groupby(["key", "collective"])["start_ns"].idxmax(), ["key", "collective", "rank"]]
    m = m.merge(latest.rename(columns={"rank": "last_rank"}), on=["key", "collective"], how="left")
    m["collective_ns"] = (m["end_ns"] - (m["start_ns"] + m["wait_ns"])).groupby(
        [m["key"], m["collective"]]).transform("min")
    m = m.sort_values(["key", "collective", "rank"], kind="stable").reset_index(drop=True)
    out = m.loc[:, list(COLLECTIVE_COLUMNS)]
    out.attrs["warnings"] = warnings
    return out


def _finding(rows: pd.DataFrame, per_collective: pd.DataFrame) -> str:
    """One factual line per variant: who arrived last most often, its worst delay, the median
    arrival spread."""
    if per_collective.empty:
        return "no collective"
    top = rows.sort_values(["times_last", "wait_caused_ns"], ascending=False).iloc[0]
    mine = per_collective[per_collective["last_rank"] == top["rank"]]
    worst = mine.loc[mine["others_wait_ns"].idxmax()]
    where = "the first" if int(worst["collective"]) == 0 else f"collective {int(worst['collective'])}"
    ops = ", ".join(sorted(per_collective["op"].dropna().unique()))
    return (f"rank {int(top['rank'])} arrived last at {int(top['times_last'])} of {len(per_collective)} "
            f"collectives ({ops}), {worst['others_wait_ns'] / 1e6:.3g} ms late at {where}; median arrival "
            f"spread {per_collective['arrival_spread_ns'].median() / 1e6:.3g} ms")


def stragglers(collectives: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, rank), STRAGGLER_COLUMNS: collectives, times_last (how often this
    rank's kernel started last), wait_caused_ns (summed over the collectives where it was last:
    the median wait of the other ranks), waited_ns (its own waiting, summed), and the variant's
    one-line `finding` on each of its rows. Variant None: the kernels outside the ranges."""
    c = collectives.assign(key=collectives["variant"].fillna(_NONE))
    others = c[c["rank"] != c["last_rank"]].groupby(["key", "collective"])["wait_ns"].median()
    per = c.drop_duplicates(["key", "collective"]).set_index(["key", "collective"])
    per = per.assign(others_wait_ns=others.reindex(per.index).fillna(0)).reset_index()
    caused = per.groupby(["key", "last_rank"])["others_wait_ns"].sum()
    times = per.groupby(["key", "last_rank"]).size()
    g = c.groupby(["key", "rank"], sort=True)
    out = pd.DataFrame({"collectives": g.size(), "waited_ns": g["wait_ns"].sum()})
    out["times_last"] = times.rename_axis(["key", "rank"]).reindex(out.index, fill_value=0)
    out["wait_caused_ns"] = caused.rename_axis(["key", "rank"]).reindex(out.index, fill_value=0)
    out = out.reset_index()
    findings = {key: _finding(rows, per[per["key"] == key]) for key, rows in out.groupby("key")}
    out["finding"] = out["key"].map(findings)
    out["variant"] = out["key"].where(out["key"] != _NONE, None)
    return out.loc[:, list(STRAGGLER_COLUMNS)]


def bus_bandwidth(collectives: pd.DataFrame, message_bytes: Mapping[str, int] | None = None,
                  world_size: int | None = None) -> pd.DataFrame:
    """One row per collective, BANDWIDTH_COLUMNS: algbw and busbw in GB/s (1e9 B/s, as
    nccl-tests) over t = collective_ns, the transfer after every rank arrived; a kernel's own
    duration would count the wait for the late rank as slow links.

    `message_bytes` maps an operation ("AllReduce") or "variant/operation" ("int8/AllGather",
    looked up first) to S in bytes as nccl-tests defines it (module docstring); the pair
    declares it. Without one a row's bandwidths are NaN and its `note` says why. `world_size`
    (n of the factors) defaults to the ranks that took part."""
    sizes = dict(message_bytes or {})
    per = collectives.drop_duplicates(["variant", "collective"]).reset_index(drop=True)
    out = per.loc[:, ["variant", "collective", "iteration", "op", "ranks", "collective_ns"]].copy()
    keys = out["variant"].fillna("").astype(str) + "/" + out["op"].astype(str)
    out["message_bytes"] = keys.map(sizes).fillna(out["op"].map(sizes)).astype(float)
    n = pd.Series(world_size if world_size else out["ranks"], index=out.index).astype(int)
    out["busbw_factor"] = [BUSBW_FACTORS[o](k) if o in BUSBW_FACTORS else np.nan for o, k in zip(out["op"], n)]
    t = out["collective_ns"].where(out["collective_ns"] > 0).astype(float)
    out["algbw_gb_per_s"] = out["message_bytes"] / t            # bytes per ns = GB/s
    out["busbw_gb_per_s"] = out["algbw_gb_per_s"] * out["busbw_factor"]
    note = pd.Series("", index=out.index)
    note[out["busbw_factor"].isna()] = "no nccl-tests bus bandwidth factor for this operation"
    note[t.isna()] = "no transfer time: a rank ended before the last one started (clocks not aligned?)"
    note[out["message_bytes"].isna()] = ("message size unknown: the export has no NCCL payload; pass "
                                         "message_bytes={op: bytes}")
    out["note"] = note
    return out.loc[:, list(BANDWIDTH_COLUMNS)]
