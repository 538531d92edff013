"""What kind of time a variant has, from its three times (collect.timing.samplers): the summary's fields.

  gpu_bound     the GPU's own time is what a caller waits for: latency and steady time stay near it;
  launch_bound  a call on an idle GPU costs well above its GPU time (the host's launches, a
                synchronize), but back to back the host keeps ahead of the GPU;
  host_bound    even back to back the GPU idles between calls: the host's work per call (Python,
                launches, copies it waits for) is longer than the GPU's. A variant that waits for
                the GPU inside its call (a synchronous copy) is host-bound by construction.

On the edge between the two, the host needs nearly as long to issue a call as the GPU to run it:
back to back, whichever is slower at the moment sets the pace, and the steady time jumps with the
host's jitter (`host_paced`; ch14.quantized_allreduce int8_overlap on 2x H200: 12 Triton launches
and 8 collectives a call, ~530 us to issue, ~637 us of GPU work, 600-1300 us back to back).

A speedup by GPU time says nothing of a host-bound variant's cost, and a speedup by steady time
says nothing of its GPU work: the summary shows all three, and the pair names the one its lesson is
about (`analyze.timing.speedup.timer_order`).
"""
from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from ...units import duration
from ..rule_input import Finding, RuleInput

HOST_BOUND_RATIO = 1.25      # steady / GPU time: the GPU idles a fifth of a back-to-back loop or more
# issue / steady time: a host at 75% of the pace reaches it with the +30% its calls jitter between median and
# p90 on an H200 machine (validity.HOST_FAR_RATIO's note). On 2x H200 (each call's slowest host), int8_overlap 0.94
# and int8 0.33 in a gate (tests/fixtures/gate/h200x2_*); on one H200 ch10.stream_concurrency's baseline (128
# launches a call) 0.98, ch09.fused_l2norm's variants 0.08-0.12
HOST_PACE_SHARE = 0.75
LAUNCH_BOUND_RATIO = 1.5     # latency / GPU time: an idle-GPU call costs half again its GPU time or more
GPU_BOUND, LAUNCH_BOUND, HOST_BOUND = "gpu_bound", "launch_bound", "host_bound"
_COLUMNS = ("latency_median_ns", "latency_wall_median_ns", "steady_median_ns", "steady_calls", "steady_issue_median_ns")


def time_class(gpu_ns: float | None, latency_ns: float | None, steady_ns: float | None,
               waits_for_gpu: bool = False) -> str | None:
    """gpu_bound, launch_bound or host_bound (None without a GPU time to compare with)."""
    if waits_for_gpu:
        return HOST_BOUND
    if not gpu_ns:
        return None
    if steady_ns and steady_ns > HOST_BOUND_RATIO * gpu_ns:
        return HOST_BOUND
    if latency_ns and latency_ns > LAUNCH_BOUND_RATIO * gpu_ns:
        return LAUNCH_BOUND
    return GPU_BOUND


def _value(row: Mapping[str, Any], key: str) -> Any:
    x = row.get(key)
    return None if x is None or (isinstance(x, float) and pd.isna(x)) else x


def time_fields(timing: Mapping[str, Any] | None, nsys_gpu_ns: float | None = None, held: bool = True) -> dict[str, Any]:
    """A variant's summary fields from its `timings` row: `cuda_event_median_ns` (its CUDA-event
    GPU time, or older runs' one event timer), and where the run took the three kinds
    `gpu_events_median_ns`, `latency_median_ns`, `latency_wall_median_ns` (host clock),
    `steady_median_ns`, `steady_calls`, `steady_issue_median_ns`, `waits_for_gpu`, `time_class` and
    `class_gpu_ns`, the GPU time the class was judged against (nsys GPU time where
    the events could not time the GPU alone, and where `held` is False: the ranks of a job time their gpu
    samples unheld, so a host-paced call's host time is in them: ch14.quantized_allreduce int8_overlap on
    2x H200, 1.105 ms by those events, 685.7 us by nsys, 907.8 us back to back in
    profiles/samples_h200x2_ch14's 2026-11-29 run)."""
    if not timing:
        return {}
    out: dict[str, Any] = {}
    median = _value(timing, "median_ns")
    if median is not None:
        out["cuda_event_median_ns"] = float(median)
    if _value(timing, "design") is None:
        return out
    waits = bool(_value(timing, "waits_for_gpu"))
    out["gpu_events_median_ns"] = float(median) if median is not None else None
    out.update({col: _value(timing, col) for col in _COLUMNS})
    out["waits_for_gpu"] = waits
    gpu = (out["gpu_events_median_ns"] if held else None) or nsys_gpu_ns or out["gpu_events_median_ns"]
    out["time_class"] = time_class(gpu, out["latency_median_ns"], out["steady_median_ns"], waits)
    out["class_gpu_ns"] = gpu           # the GPU time the class was judged against, for the rules' words
    return out


def host_share(inp: RuleInput) -> list[Finding]:
    """Rule `host_bound` of a run timed in kinds: how much of a call is the host's, from the
    variant's own times (older runs: `verdict_rules.host_bound`, CUDA events against nsys)."""
    out = []
    for r in inp.summary:
        v, cls = r["variant"], r.get("time_class")
        gpu = r.get("class_gpu_ns") or r.get("gpu_events_median_ns") or r.get("gpu_time_ns")
        steady, latency = r.get("steady_median_ns"), r.get("latency_median_ns")
        if cls == HOST_BOUND and steady and gpu:
            why = "it waits for the GPU inside each call (a synchronous copy or a .item())" if r.get("waits_for_gpu") \
                else "the host's work per call (Python, launches) is longer than the GPU's"
            out.append(Finding("host_bound", "warning", f"{v}: back to back a call takes {duration(steady)}, the GPU "
                               f"works {duration(gpu)} of it: {why}; a GPU-time speedup leaves the rest out, the "
                               "steady and latency figures include it", v))
        elif cls == LAUNCH_BOUND and latency and gpu:
            out.append(Finding("host_bound", "info", f"{v}: one call on an idle GPU takes {duration(latency)}, "
                               f"{duration(gpu)} of it on the GPU: launching and synchronizing cost the rest; back to "
                               f"back the host keeps ahead ({duration(steady)} per call)", v))
    return out


def pace_share(issue_ns: float | None, steady_ns: float | None) -> float | None:
    """The host's time to issue one call over a back-to-back call's time (None where either is unknown)."""
    return issue_ns / steady_ns if issue_ns and steady_ns else None


def host_sets_pace(issue_ns: float | None, steady_ns: float | None) -> bool:
    """Whether the host's issue time is HOST_PACE_SHARE of the back-to-back time or more."""
    share = pace_share(issue_ns, steady_ns)
    return share is not None and share >= HOST_PACE_SHARE


def pace_text(issue_ns: float, steady_ns: float) -> str:
    """What a host-paced variant's numbers say, in words."""
    return (f"the host takes {duration(issue_ns)} to issue one call, {pace_share(issue_ns, steady_ns):.0%} of its "
            f"{duration(steady_ns)} back to back: the host sets the pace, so its steady time follows the host's jitter")


def host_paced(inp: RuleInput) -> list[Finding]:
    """Rule `host_paced`: a variant not already host-bound whose host issue time is HOST_PACE_SHARE of
    its steady time or more. Its back-to-back time is whichever of host and GPU is slower at the moment,
    so processes and rounds disagree (two modes) though the code did not change."""
    out = []
    for r in inp.summary:
        issue, steady = r.get("steady_issue_median_ns"), r.get("steady_median_ns")
        if r.get("time_class") != HOST_BOUND and host_sets_pace(issue, steady):
            out.append(Finding("host_paced", "warning", f"{r['variant']}: {pace_text(issue, steady)}; fewer launches "
                               "per call (a CUDA graph, fused kernels) would take the host off the pace", r["variant"]))
    return out
