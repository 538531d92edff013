"""Each variant's kinds of time side by side (analyze.timing.time_kinds): what a call costs the GPU, a
caller on an idle GPU, and a loop of calls, with the profilers' figures beside them, the bound
they imply, and which of them the headline uses; "host issue" is the host's time to issue one call
(beside steady: where it is most of the steady time, the host sets the pace). The summary's speedup column is one of these
ratios; this table is where a reader sees what the others say before trusting it.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..naming import TIMER_LABELS
from ..units import duration
from .table import render

TIMES_FIT = dict(drop=("ncu", "nsys GPU", "host issue", "bound by"), wrap=("headline uses",))
BOUND = {"gpu_bound": "GPU", "launch_bound": "launches", "host_bound": "host"}


def times_table(rows: Sequence[Mapping[str, Any]], width: int | None = None) -> str | None:
    """One line per variant, or None for a run timed before the three kinds (issue 28)."""
    if not any(r.get("time_class") or r.get("latency_median_ns") for r in rows):
        return None
    headers = ["variant", "bound by", "GPU (events)", "latency", "steady", "host issue", "nsys GPU", "ncu",
               "headline uses"]
    body = []
    for r in rows:
        nsys = r.get("gpu_time_ns") if r.get("gpu_time_source") == "nsys" else None
        gpu = duration(r.get("gpu_events_median_ns")) if not r.get("waits_for_gpu") else "waits for it"
        body.append([r["variant"], BOUND.get(r.get("time_class") or "", "-"), gpu,
                     duration(r.get("latency_median_ns")), duration(r.get("steady_median_ns")),
                     duration(r.get("steady_issue_median_ns")), duration(nsys),
                     duration(r.get("ncu_duration_ns")), TIMER_LABELS.get(r.get("speedup_timer") or "", "-")])
    return render(headers, body, width, **TIMES_FIT)
