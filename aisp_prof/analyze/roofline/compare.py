"""The roofline's checks and arrows: counted FLOPs against the pair's formula (`FlopCheck`) and
baseline -> optimized aggregates with the one primary speedup (`Comparison`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from ..kernels.ncu_command import ncu_iterations
from .run_input import RunInput
from .points import Point, analytic_for, json_ready
from ..timing.speedup import TIMER_LABELS, TIMERS, speedup, timer_order

FLOP_MISMATCH = 0.10        # |counted / analytic - 1| above this is flagged (issue 3)


@dataclass
class FlopCheck:
    """Hardware-counted FLOPs of a variant's call beside the pair's analytic FLOPs."""

    run_id: str
    variant: str
    nvtx_range: str
    counted_flops: float
    analytic_flops: float | None
    ratio: float | None
    flagged: bool
    counted_flops_by_precision: dict[str, float]
    iterations: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {k: json_ready(v) for k, v in asdict(self).items()}


@dataclass
class Comparison:
    """Baseline -> optimized, as the chart's arrow: both aggregates and the speedup, the one primary
    speedup of `analyze.timing.speedup` (the summary's and history's number); `speedup_by_timer` holds the
    secondary figures, each under its timer's name."""

    baseline: Point
    optimized: Point
    speedup: float | None
    timer: str | None = "ncu_duration"
    speedup_by_timer: dict[str, float | None] = field(default_factory=dict)
    time_ns: float | None = None              # the optimized variant's time by `timer`
    baseline_time_ns: float | None = None     # the baseline's: speedup = baseline_time_ns / time_ns

    @property
    def time_source(self) -> str:
        return TIMER_LABELS.get(self.timer or "", "no timer")

    @property
    def secondary(self) -> dict[str, float]:
        """{timer label: speedup} by the timers other than the primary one, where both variants have it."""
        return {TIMER_LABELS[t]: x for t, x in self.speedup_by_timer.items() if x is not None and t != self.timer}

    def to_dict(self) -> dict[str, Any]:
        b, o = self.baseline, self.optimized
        return {"baseline": {"run_id": b.run_id, "nvtx_range": b.nvtx_range, "variant": b.variant},
                "optimized": {"run_id": o.run_id, "nvtx_range": o.nvtx_range, "variant": o.variant},
                "speedup": json_ready(self.speedup), "time_source": self.time_source,
                "speedup_timer": self.timer, "speedup_time_ns": json_ready(self.time_ns),
                "speedup_baseline_time_ns": json_ready(self.baseline_time_ns),
                "speedup_by_timer": {k: json_ready(v) for k, v in self.speedup_by_timer.items()},
                **{f"{k}_change": _ratio(getattr(o, k), getattr(b, k))
                   for k in ("ai_dram_flop_per_byte", "ai_l2_flop_per_byte", "ai_l1_flop_per_byte", "flops_per_s",
                             "dram_bytes")}}


def _compare(b: Point, o: Point, b_times: Mapping[str, float | None] | None,
             o_times: Mapping[str, float | None] | None, timers: Sequence[str] = TIMERS) -> Comparison:
    """The arrow b -> o with the primary speedup of the two variants' times (`analyze.timing.speedup`);
    the aggregates' ncu durations where the run handed in no times."""
    if b_times is None or o_times is None:
        b_times, o_times = {"ncu_duration": b.duration_ns}, {"ncu_duration": o.duration_ns}
    s = speedup(b_times, o_times, timers)
    return Comparison(b, o, s.value, s.timer, s.by_timer, s.time_ns, s.baseline_time_ns)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def flop_checks(run: RunInput, points: Sequence[Point]) -> list[FlopCheck]:
    """Counted vs analytic FLOPs per variant (per call); flagged above FLOP_MISMATCH."""
    iterations = ncu_iterations(run.info)
    out = []
    for p in points:
        if not p.is_aggregate or p.run_id != run.run_id:
            continue
        analytic = analytic_for(run.info, p.variant)
        a = analytic.get("flops") if analytic else None
        counted = p.flops_counted / iterations
        ratio = counted / a if a else None
        flagged = bool(ratio is not None and abs(ratio - 1.0) > FLOP_MISMATCH) or bool(a == 0 and counted > 0)
        out.append(FlopCheck(run.run_id, p.variant, p.nvtx_range, counted, float(a) if a is not None else None,
                             ratio, flagged, {k: v / iterations for k, v in p.flops_by_precision.items() if v},
                             iterations))
    return out


def comparisons_for(runs: Sequence[RunInput], points: Sequence[Point]) -> list[Comparison]:
    """Within a run: baseline -> every other variant. Across runs: run 0's variant -> the same
    variant of each later run (or its only variant -> their only variant), timed as run 0's pair
    declares (`timer_order`), as its own arrows are: a steady-timer pair stays on steady."""
    aggs: dict[str, dict[str, Point]] = {}
    for p in points:
        if p.is_aggregate:
            aggs.setdefault(p.run_id, {})[p.variant] = p
    out = []
    for run in runs:
        va = aggs.get(run.run_id, {})
        if "baseline" in va:
            out += [_compare(va["baseline"], p, run.times.get("baseline"), run.times.get(v), timer_order(run.info))
                    for v, p in va.items() if v != "baseline"]
    first = aggs.get(runs[0].run_id, {}) if runs else {}
    for run in runs[1:]:
        later = aggs.get(run.run_id, {})
        common = [v for v in first if v in later]
        if not common and len(first) == 1 and len(later) == 1:
            pairs = [(next(iter(first.values())), next(iter(later.values())))]
        else:
            pairs = [(first[v], later[v]) for v in common]
        first_times, timers = runs[0].times, timer_order(runs[0].info)
        out += [_compare(b, o, first_times.get(b.variant), run.times.get(o.variant), timers) for b, o in pairs]
    return out
