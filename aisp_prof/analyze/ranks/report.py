"""What `aisp-prof ranks` and the report say of a multi-rank run, from its stored frames.

Per rank and variant (`ranks.rank_summary`): GPU busy, collective and compute time per call, how
much of the communication ran hidden behind compute, idle time, how much later the rank
finished. Per variant and operation (`collectives`, `bus_bandwidth`): the transfer time once
every rank had arrived, its bus bandwidth (nccl-tests' convention) and that bandwidth as a share
of the link's, when a calibration measured the link. Per variant (`stragglers`): which rank the
others waited for; (`wire`) its predicted wire bytes per rank per call against the measured transfer
time (`wire`). Pure: frames and run.json in, frames out.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import pandas as pd

from ...naming import hardware_key
from ..calibration import find_calibration
from .collectives import bus_bandwidth, collectives, stragglers
from .figures import rank_summary
from .wire import wire_sentences, wire_table


@dataclass(frozen=True, eq=False)
class RankReport:
    """The frames of a multi-rank run's analysis; `warnings` one line each."""

    ranks: pd.DataFrame              # which export was which rank: host, clock offset and residual
    per_rank: pd.DataFrame           # one row per (variant, rank): ranks.SUMMARY_COLUMNS
    bandwidth: pd.DataFrame          # one row per (variant, op): medians of the collectives
    stragglers: pd.DataFrame         # one row per (variant, rank): collectives.STRAGGLER_COLUMNS
    warnings: list[str] = field(default_factory=list)
    collectives: pd.DataFrame = field(default_factory=pd.DataFrame)   # one row per (collective, rank)
    wire: pd.DataFrame = field(default_factory=pd.DataFrame)          # one row per variant: wire.WIRE_COLUMNS

    def frames(self) -> dict[str, pd.DataFrame]:
        return {"ranks": self.ranks, "per_rank": self.per_rank, "bandwidth": self.bandwidth,
                "stragglers": self.stragglers, "wire": self.wire,
                "warnings": pd.DataFrame({"warning": self.warnings}, dtype=object)}


def link_busbw(calibrations: Sequence[Mapping[str, Any]], gpu_name: str | None,
               world_size: int) -> dict[str, float] | None:
    """The measured bus bandwidth per collective of `world_size` such GPUs' link (`aisp-prof
    calibrate --link`), from the calibrations at hand; None where none was measured."""
    found = find_calibration(calibrations, hardware_key(gpu_name, world_size))
    return (found[0].get("ceilings") or {}).get("link_busbw_gb_per_s") if found else None


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
    report = RankReport(ranks, rank_summary(timeline), table, stragglers(per_collective), warnings, per_collective)
    iterations = report.per_rank[report.per_rank["rank"] == 0].set_index("variant")["iterations"].to_dict()
    world = int(info.get("world_size") or 0) or int(per_collective["ranks"].max() or 0) if not per_collective.empty else 0
    return replace(report, wire=wire_table(table, iterations, transfer_per_call_ns(report), world))


def transfer_per_call_ns(report: RankReport) -> dict[str, float]:
    """Each variant's collective transfer time per call: its collectives' median transfer times,
    each times how many run per call (rank 0's iterations)."""
    iters = report.per_rank[report.per_rank["rank"] == 0].set_index("variant")["iterations"]
    bw = report.bandwidth
    out: dict[str, float] = {}
    for variant, rows in bw.groupby("variant", sort=False):
        n = float(iters.get(variant, 0) or 0)
        if n:
            out[str(variant)] = float((rows["collective_ns"] * rows["collectives"]).sum()) / n
    return out


def rank_sentences(report: RankReport, baseline: str = "baseline") -> list[str]:
    """The verdict's sentences of a multi-rank run: per optimization, its communication per call
    against the baseline's, how much of it ran hidden behind compute, and the bus bandwidth it
    reached (of the link's, when measured); the rank the others waited for, where one did."""
    per_call = transfer_per_call_ns(report)
    base = per_call.get(baseline)
    out = ["Bounds and stalls above are of the compute kernels alone: ncu leaves NCCL's kernels out (replaying a "
           "collective on one rank would wait forever), so a collective's time is in the sentences below."]
    rank0 = report.per_rank[report.per_rank["rank"] == 0].set_index("variant")
    for variant, t in per_call.items():
        if variant == baseline:
            continue
        rows = report.bandwidth[report.bandwidth["variant"] == variant]
        ops = " + ".join(rows["op"].astype(str))
        text = f"{variant}: collective transfer {t / 1e3:.1f} us per call ({ops})"
        if base:
            ratio = f"{base / t:.2f}x less" if base >= t else f"{t / base:.2f}x more"
            text += f" vs {base / 1e3:.1f} us for {baseline} ({ratio})"
        hidden = rank0["hidden_comm_pct"].get(variant) if "hidden_comm_pct" in rank0 else None
        if hidden is not None and hidden == hidden:
            text += f"; {hidden:.0f}% of rank 0's collective time ran beside compute"
        pct = rows["pct_of_link"].dropna()
        if not pct.empty:
            text += f"; {rows['busbw_gb_per_s'].median():.0f} GB/s bus bandwidth, {pct.median():.0f}% of the link's"
        out.append(text + ".")
    out += wire_sentences(report.wire, baseline) if not report.wire.empty else []
    late = report.per_rank.sort_values("finish_ns", ascending=False).head(1)
    if not late.empty and late["span_ns"].iloc[0] and late["finish_ns"].iloc[0] > 0.05 * late["span_ns"].iloc[0]:
        r = late.iloc[0]
        out.append(f"{r['variant']}: rank {int(r['rank'])} finished {r['finish_ns'] / 1e3:.1f} us after the first "
                   f"rank (median per call, {100 * r['finish_ns'] / r['span_ns']:.0f}% of its span): a straggler.")
    return out
