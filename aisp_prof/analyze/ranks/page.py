"""What a report page shows of a multi-rank run (issue 15), as JSON-ready data: the rank
analysis of `report` as records, the straggler findings and verdict sentences, and one
representative iteration per variant as lanes per rank (`lanes`).

Pure, like `report_page.page_data` that calls it: the run and the calibrations the page
builder already read go in, plain data comes out. A run of one rank gets None (its page has no
Ranks section and keeps the one-call timeline strip).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...naming import hardware_key
from ...model.run_data import RunData
from .lanes import rank_lanes
from .report import link_busbw, rank_report, rank_sentences
from ..records import frame_records

IDENTITY_COLUMNS = ("rank", "hostname", "local_rank", "world_size", "clock_offset_ns", "clock_residual_ns",
                    "matched_collectives", "rank_source")


def is_multi_rank(run: RunData) -> bool:
    """A run of several ranks with a timeline to analyse."""
    return not run.ranks.empty and not run.timeline.empty and "rank" in run.timeline


def _order(records: list[dict[str, Any]], variants: Sequence[str]) -> list[dict[str, Any]]:
    """The page's variant order (then any other), ranks ascending; rows of no variant last."""
    at = {v: i for i, v in enumerate(variants)}
    return sorted(records, key=lambda r: (r.get("variant") is None, at.get(r.get("variant"), len(at)),
                                          r.get("rank") or 0))


def _findings(stragglers: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One straggler finding per variant (the frame repeats it on each rank's row); the kernels
    outside the variants' ranges (warm-up) are not a finding about the pair."""
    out: dict[str, str] = {}
    for r in stragglers:
        if r.get("variant") and r.get("finding"):
            out.setdefault(r["variant"], r["finding"])
    return [{"variant": v, "finding": f} for v, f in out.items()]


def rank_page(run: RunData, variants: Sequence[str],
              calibrations: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any] | None:
    """The page's `ranks` entry of a multi-rank run (None for one rank): `world_size`; `ranks`
    (which export was which rank: host, clock offset and residual); `per_rank` (per variant and
    rank: ranks.SUMMARY_COLUMNS); `bandwidth` (per variant and operation: transfer time, message,
    algbw and busbw in GB/s, the link's measured busbw and `pct_of_link` when a link calibration
    for `link_key` = hardware_key(gpu_name, world size) is among `calibrations`); `link_calibrated`;
    `stragglers` (per variant and rank) and `findings` (one sentence per variant); `wire` (per variant:
    predicted wire bytes per rank per call against the measured transfer, ranks.wire); `sentences`
    (the verdict's, as `aisp-prof summary` says them); `warnings`; `lanes` (rank_lanes)."""
    if not is_multi_rank(run):
        return None
    world = len(run.ranks)
    link = link_busbw(calibrations, run.gpu_name, world)
    report = rank_report(run.timeline, run.ranks, run.info, link)
    stragglers = _order(frame_records(report.stragglers), variants)
    identity = report.ranks.reindex(columns=[c for c in IDENTITY_COLUMNS if c in report.ranks])
    return {
        "world_size": world, "link_key": hardware_key(run.gpu_name, world), "link_calibrated": bool(link),
        "ranks": sorted(frame_records(identity), key=lambda r: r["rank"]),
        "per_rank": _order(frame_records(report.per_rank), variants),
        "bandwidth": _order(frame_records(report.bandwidth), variants),
        "stragglers": stragglers, "findings": _findings(stragglers), "wire": frame_records(report.wire),
        "sentences": rank_sentences(report), "warnings": list(report.warnings),
        "lanes": rank_lanes(run.timeline, run.memory_ops, variants, report.collectives),
    }
