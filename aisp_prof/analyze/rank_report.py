"""What `aisp-prof ranks` and the report say of a multi-rank run, from its stored frames.

Per rank and variant (`ranks.rank_summary`): GPU busy, collective and compute time per call, how
much of the communication ran hidden behind compute, idle time, how much later the rank
finished. Per variant and operation (`collectives`, `bus_bandwidth`): the transfer time once
every rank had arrived, its bus bandwidth (nccl-tests' convention) and that bandwidth as a share
of the link's, when a calibration measured the link. Per variant (`stragglers`): which rank the
others waited for. Pure: frames and run.json in, frames out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd

from .collectives import bus_bandwidth, collectives, stragglers
from .ranks import rank_summary


@dataclass(frozen=True, eq=False)
class RankReport:
    """The frames of a multi-rank run's analysis; `warnings` one line each."""

    ranks: pd.DataFrame              # which export was which rank: host, clock offset and residual
    per_rank: pd.DataFrame           # one row per (variant, rank): ranks.SUMMARY_COLUMNS
    bandwidth: pd.DataFrame          # one row per (variant, op): medians of the collectives
    stragglers: pd.DataFrame         # one row per (variant, rank): collectives.STRAGGLER_COLUMNS
    warnings: list[str] = field(default_factory=list)

    def frames(self) -> dict[str, pd.DataFrame]:
        return {"ranks": self.ranks, "per_rank": self.per_rank, "bandwidth": self.bandwidth,
                "stragglers": self.stragglers, "warnings": pd.DataFrame({"warning": self.warnings}, dtype=object)}


def rank_report(timeline: pd.DataFrame, ranks: pd.DataFrame, info: Mapping[str, Any],
                link_busbw_gb_per_s: Mapping[str, float] | None = None) -> RankReport:
    """The analysis of one multi-rank run. `info` is its run.json (world_size, and the pair's
    declared message sizes under analytic.collective_bytes); `link_busbw_gb_per_s` the link's
    measured bus bandwidth per operation (`aisp-prof calibrate --link`), if any."""
    if timeline.empty or "rank" not in timeline:
        raise ValueError("no multi-rank timeline: the run has no rank column (one process, or no nsys export)")
    per_collective = collectives(timeline)
    sizes = (info.get("analytic") or {}).get("collective_bytes")
    bw = bus_bandwidth(per_collective, sizes, int(info.get("world_size") or 0) or None)
    ranged = bw[bw["variant"].notna()]
    table = (ranged.groupby(["variant", "op"], sort=False)
             .agg(collectives=("collective", "size"), collective_ns=("collective_ns", "median"),
                  message_bytes=("message_bytes", "first"), algbw_gb_per_s=("algbw_gb_per_s", "median"),
                  busbw_gb_per_s=("busbw_gb_per_s", "median"), note=("note", "first"))
             .reset_index())
    link = dict(link_busbw_gb_per_s or {})
    table["link_busbw_gb_per_s"] = table["op"].map(link).astype(float)
    table["pct_of_link"] = 100.0 * table["busbw_gb_per_s"] / table["link_busbw_gb_per_s"]
    warnings = list(per_collective.attrs.get("warnings", [])) + list(info.get("rank_warnings") or [])
    return RankReport(ranks, rank_summary(timeline), table, stragglers(per_collective), warnings)
