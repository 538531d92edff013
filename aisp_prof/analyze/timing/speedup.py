"""One speedup per comparison (issues 16 and 28): which time a speedup uses, in one place.

A variant has several times, and they answer different questions (collect.timing.samplers measures them):

- `gpu_events`: GPU time per call, CUDA events around calls queued ahead of the GPU (no host in
  between, L2 flushed), in the check child and the bench's timing processes;
- `latency`: one call on an idle GPU, host launches included (the book's harness times this way);
- `steady`: per call, back to back: the GPU's pace where it keeps up, the host's where it cannot;
- `nsys_gpu_time`: GPU busy time per call of the variant's NVTX range on the nsys timeline
  (kernels, memcpys and memsets, the union of their intervals): the summary's `gpu_time_ns`;
- `ncu_duration`: ncu's `gpu__time_duration` summed over the variant's replayed kernels;
- `cuda_events`: the one CUDA-event timer of runs before issue 28 (calls queued in blocks behind
  other variants and reference kernels: a host-bound variant's time depended on its position).

The primary speedup of a variant is baseline time / variant time, both by the SAME timer: the first
of `timer_order` that both have. By default that is `gpu_events`, the quantity of a GPU kernel's
lesson, measured the same way by `aisp-prof run` and by the gate (`bench run`), so the two agree;
then nsys, the legacy events, ncu. A pair whose lesson is the host's cost (a round trip through
the CPU, launch overhead, torch.compile's guards) declares `timer="latency"` or `"steady"` and its
speedups include the host; a run of several ranks puts `steady` first (a collective's kernel
spins while it waits for the other ranks, so GPU time counts waiting). The other timers' ratios are
secondary figures, always shown with their timer's name (`speedup_by_timer`). Every place that
prints a speedup (summary, headline, roofline arrow, history, report page) takes it from here; the
validity rules (`analyze.verdict.validity`) decide whether it may be a headline at all.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ...naming import HOST_TIMERS, TIMER_KINDS, TIMER_LABELS
from ...naming import SPEEDUP_TIMERS as TIMERS
from ..timeline.variant_ranges import variant_ranges

Times = Mapping[str, "float | None"]


@dataclass(frozen=True)
class Speedup:
    """baseline time / variant time by `timer`, and every timer's ratio (None where one lacks it)."""

    value: float | None
    timer: str | None
    by_timer: dict[str, float | None] = field(default_factory=dict)
    time_ns: float | None = None              # the variant's time per call by `timer`
    baseline_time_ns: float | None = None     # the baseline's, by the same timer: value = baseline / time

    @property
    def label(self) -> str:
        return TIMER_LABELS.get(self.timer or "", "no timer")

    def fields(self) -> dict[str, Any]:
        """The summary's fields: `speedup_vs_baseline`, `speedup_timer`, `speedup_by_timer`, and the
        two times it is the ratio of (`speedup_time_ns`, `speedup_baseline_time_ns`): whatever
        shows a speedup shows these beside it, never another timer's times (issue 31)."""
        return {"speedup_vs_baseline": self.value, "speedup_timer": self.timer,
                "speedup_by_timer": dict(self.by_timer), "speedup_time_ns": self.time_ns,
                "speedup_baseline_time_ns": self.baseline_time_ns}


def _ratio(b: float | None, v: float | None) -> float | None:
    return b / v if b and v else None


# a multi-rank run's order: a collective's kernel spins while it waits for the other ranks, and on
# a second stream it runs beside the variant's own kernels, so GPU busy time counts waiting (and a
# pipelined variant's waiting most); back-to-back calls time what the training loop waits for
# (older runs: the CUDA events around each call)
MULTI_RANK_TIMERS = ("steady", "cuda_events", "latency", "gpu_events", "nsys_gpu_time", "ncu_duration")


def timer_order(info: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Which timer a run's speedups use first: the one its pair declares (run.json's `timer`), else
    `MULTI_RANK_TIMERS` for a run of several ranks (world_size), else `TIMERS`. A declared host
    timer (latency, steady) falls back on the other one, then on the legacy CUDA events (which
    counted some host time), before any GPU-only timer: a run that lacks it keeps its meaning."""
    info = info or {}
    order = MULTI_RANK_TIMERS if int(info.get("world_size") or 1) > 1 else TIMERS
    first = info.get("timer")
    if first in HOST_TIMERS:
        lead = (first, *(t for t in HOST_TIMERS if t != first), "cuda_events")
        return (*lead, *(t for t in order if t not in lead))
    return (first, *(t for t in order if t != first)) if first in TIMERS else order


def headline_kind(info: Mapping[str, Any] | None) -> str:
    """The kind of samples (collect.timing.samplers) a run's headline timer summarizes: what the gate
    records and judges, so that `bench run` and `aisp-prof run` speak of the same time."""
    return next((TIMER_KINDS[t] for t in timer_order(info) if t in TIMER_KINDS), "gpu")


def speedup(baseline: Times, variant: Times, timers: Sequence[str] = TIMERS) -> Speedup:
    """The primary speedup of `variant` over `baseline` (both {timer: ns per call}), by the first
    of `timers` that both have."""
    by = {t: _ratio(baseline.get(t), variant.get(t)) for t in TIMERS}
    timer = next((t for t in timers if by[t] is not None), None)
    if timer is None:
        return Speedup(None, None, by)
    return Speedup(by[timer], timer, by, variant.get(timer), baseline.get(timer))


def _frame_of(frame: pd.DataFrame, variant: str) -> pd.DataFrame:
    return frame[frame["variant"] == variant] if "variant" in frame else frame.iloc[0:0]


def variant_times(variant: str, kernels: pd.DataFrame, ranges: pd.DataFrame,
                  timings: pd.DataFrame) -> dict[str, float | None]:
    """{timer: ns per call} of one variant of a run, from its stored frames (as the summary reads them)."""
    r, k = _frame_of(ranges, variant), _frame_of(kernels, variant)
    out: dict[str, float | None] = dict.fromkeys(TIMERS)
    if not r.empty and "gpu_time_ns" in r:
        occ = float(r["occurrences"].sum()) or 1.0
        out["nsys_gpu_time"] = float(r["gpu_time_ns"].sum()) / occ
    t = _frame_of(timings, variant)
    if not t.empty:
        row = t.iloc[0]
        kinds = "design" in t and pd.notna(row["design"])       # the three kinds (issue 28), else legacy
        for timer, col in (("gpu_events" if kinds else "cuda_events", "median_ns"),
                           ("latency", "latency_median_ns"), ("steady", "steady_median_ns")):
            if col in t and pd.notna(row[col]):
                out[timer] = float(row[col])
    if not k.empty and "duration_ns" in k and k["duration_ns"].notna().any():
        out["ncu_duration"] = float(k["duration_ns"].astype(float).sum())
    return out


def _variants(*frames: pd.DataFrame) -> list[str]:
    return sorted({str(v) for f in frames if "variant" in f for v in f["variant"].dropna().unique()})


def run_times(variants: Sequence[str] | None, kernels: pd.DataFrame, ranges: pd.DataFrame,
              timings: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """{variant: {timer: ns per call}} of a run (every variant the frames name, without `variants`)."""
    names = _variants(kernels, ranges, timings) if variants is None else variants
    return {v: variant_times(v, kernels, ranges, timings) for v in names}


def run_speedups(variants: list[str], kernels: pd.DataFrame, ranges: pd.DataFrame,
                 timings: pd.DataFrame, timers: Sequence[str] = TIMERS) -> dict[str, Speedup]:
    """{variant: its Speedup over the run's baseline}; empty where the run has no baseline. What
    the summary, the roofline's arrows and `history` all print."""
    times = run_times(sorted({*variants, "baseline"}), kernels, ranges, timings)
    if not any(times["baseline"].values()):
        return {}
    return {v: speedup(times["baseline"], times[v], timers) for v in variants}


# a timer -> history's column of its samples' spread (store.history); nsys and ncu times have none
SPREAD_COLUMNS = {"gpu_events": "cuda_event_rel_spread", "cuda_events": "cuda_event_rel_spread",
                  "latency": "latency_rel_spread", "steady": "steady_rel_spread"}


def add_history_speedups(rows: list[dict[str, Any]], read: Callable[[str], Any]) -> None:
    """Fill `history`'s rows (one per run and variant) with the summary's speedup fields, and
    `speedup_rel_spread`, the spread of the speedup's own timer (beside `speedup_time_ns`, its
    time: never another timer's); `read(run_id)` gives the run's kernels, ranges and timings (a RunData)."""
    cache: dict[str, dict[str, Speedup]] = {}
    for r in rows:
        rid = r["run_id"]
        if rid not in cache:
            data = read(rid)
            names = [str(x["variant"]) for x in rows if x["run_id"] == rid and x["variant"]]
            ranges = variant_ranges(data.ranges, data.range_levels, data.run.get("pair"))
            cache[rid] = run_speedups(names, data.kernels, ranges, data.timings, timer_order(data.info))
        s = cache[rid].get(r["variant"]) if r["variant"] else None
        r.update(s.fields() if s else dict.fromkeys(Speedup(None, None).fields()))
        r["speedup_rel_spread"] = r.get(SPREAD_COLUMNS.get(r["speedup_timer"] or "", ""))
