"""A verdict, not a threshold: FASTER, SLOWER, SAME or AMBIGUOUS for every variant of a pair.

Each metric is an interval of observed / expected (expected: the recorded sessions' median):
  - time: the variant's median time;
  - cycles: its median time x SM clock (a compute-bound kernel's cycles do not follow the clock);
  - ratio: its time relative to the baseline's, measured side by side in the same processes.
Against the A/A margin d of that metric (analyze.gate.expectations): SLOWER when the whole interval lies
above 1 + d, FASTER below 1 - d, SAME inside [1 - d, 1 + d], AMBIGUOUS when it straddles an edge.

A variant is SLOWER (a code regression, which fails the gate) when its cycles are SLOWER and its
time or its ratio is SLOWER too, unless its time relative to a reference kernel (a device copy,
a cuBLAS GEMM, timed in the same processes) is SAME: the reference moved as far, the machine did. The
pair's declared reference variants (`library`: cuBLAS, torch's softmax, eager PyTorch; pairs.roles), where
the gate's caller passes them (GPU time, the pair's code that of the evidence: bench.runner), are such
references too while they moved as machines do: their whole interval slower, by at most
MACHINE_SPREAD_GPU; then they do not fail the gate either (`judge_one`). A larger move is judged as any
variant's: their inputs and wrappers are the pair's. On an H200 lease whose big GEMMs ran slower at a higher
clock (2026-11-29, no code change), ch10.matmul_wgmma_pipelined's cublas read SLOWER +2.7% and its pipelined
+3.9%: +1.2% relative to cuBLAS, the machine. Time SLOWER with cycles SAME is the SM clock moving (reported,
not failed); cycles moving with time SAME is a memory-bound kernel
running at another clock. AMBIGUOUS means sample more; FASTER needs cycles and time (or ratio).
A verdict that rests on the ratio alone (the variant's own time does not agree) needs a baseline whose
own time held: where the baseline's time moved the other way past its margin, the ratio measured the
baseline, and the verdict is AMBIGUOUS (`_ratio_alone`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Collection, Mapping

import pandas as pd

from ..timing.intervals import Interval, groups, median_interval, paired_groups, ratio_interval, with_cycles
from ..timing.time_kinds import host_sets_pace, pace_text

FASTER, SLOWER, SAME, AMBIGUOUS = "FASTER", "SLOWER", "SAME", "AMBIGUOUS"
# How far H200 machines ran unchanged code apart (GPU time): a change within it may be the machine's
MACHINE_SPREAD_GPU = 0.05
NEW, MISSING = "NEW", "MISSING"
REF_PREFIX = "ref:"


@dataclass
class MetricVerdict:
    """One metric of one variant: observed/expected as an interval, the margin, the verdict."""

    metric: str                   # time | cycles | ratio
    change: Interval              # observed / expected (1.0 = unchanged)
    observed: float
    expected: float
    margin: float
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "change": self.change.to_dict()}


@dataclass
class VariantVerdict:
    """A variant's verdict, why, and the metrics it rests on."""

    pair: str
    variant: str
    verdict: str
    cause: str = ""
    metrics: list[MetricVerdict] = field(default_factory=list)
    settled: bool = False         # AMBIGUOUS by a rule, its metrics each decided: more samples won't decide it
    library: bool = False         # the pair's declared reference variant: a library's code, a machine reference

    @property
    def is_reference(self) -> bool:
        return self.variant.startswith(REF_PREFIX)

    @property
    def fails(self) -> bool:
        return self.verdict in (SLOWER, MISSING) and not self.is_reference and not self.library

    def metric(self, name: str) -> MetricVerdict | None:
        return next((m for m in self.metrics if m.metric == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair, "variant": self.variant, "verdict": self.verdict, "cause": self.cause,
                "reference": self.is_reference, **({"library": True} if self.library else {}),
                "metrics": [m.to_dict() for m in self.metrics]}


def decide(change: Interval, margin: float) -> str:
    """The interval of observed/expected against [1 - margin, 1 + margin]."""
    if change.low > 1 + margin:
        return SLOWER
    if change.high < 1 - margin:
        return FASTER
    if change.low >= 1 - margin and change.high <= 1 + margin:
        return SAME
    return AMBIGUOUS


def _metric(name: str, observed: Interval, expected: float | None, margin: float | None) -> MetricVerdict | None:
    if expected is None or margin is None or not expected:
        return None
    change = observed.scaled(expected)
    return MetricVerdict(name, change, observed.value, expected, margin, decide(change, margin))


def measure(samples: pd.DataFrame, variant: str, summary: Mapping[str, Any]) -> list[MetricVerdict]:
    """The variant's time, cycles and (optimized variants) ratio metrics against the summary; none
    where no sample of it is left to measure (every one throttled: `unmeasured`)."""
    margins = summary.get("margin") or {}
    times = groups(samples, variant)
    if not times:
        return []
    out = [_metric("time", median_interval(times), summary.get("median_ns"), margins.get("time"))]
    cycles = groups(samples, variant, "cycles")
    if cycles:
        out.append(_metric("cycles", median_interval(cycles), summary.get("median_cycles"), margins.get("cycles")))
    if summary.get("time_vs_baseline") is not None:
        num, den = paired_groups(samples, variant, "baseline")
        if num:
            out.append(_metric("ratio", ratio_interval(num, den), summary["time_vs_baseline"], margins.get("ratio")))
    return [m for m in out if m is not None]


def unmeasured(pair: str, variant: str, samples: pd.DataFrame) -> VariantVerdict | None:
    """AMBIGUOUS where none of the variant's samples may be judged (None where some may): every one
    throttled (intervals.with_cycles), so no interval exists to compare: never a crash, never SAME. A
    process whose clock holds decides, and the gate's chase asks for one as for any AMBIGUOUS."""
    if groups(samples, variant):
        return None
    rows = samples[samples["variant"] == variant]
    if "throttled" in rows and len(rows) and rows["throttled"].astype(bool).all():
        why = (f"every sample throttled ({len(rows)} under 75% of the maximum SM clock, with a thermal or hardware "
               "slowdown): nothing to judge; a timing process whose clock holds decides")
    else:
        why = "no timed sample of it: nothing to judge"
    return VariantVerdict(pair, variant, AMBIGUOUS, why)


def _pct(x: float) -> str:
    return f"{(x - 1) * 100:+.1f}%"


def classify(pair: str, variant: str, metrics: list[MetricVerdict], references: list["VariantVerdict"],
             baseline_time: MetricVerdict | None = None) -> VariantVerdict:
    """The rule of the module docstring, with the cause in words (`baseline_time`: the baseline's own
    time metric in the same samples, which a verdict resting on the ratio alone needs)."""
    by = {m.metric: m for m in metrics}
    t, c, r = (by[k].verdict if k in by else None for k in ("time", "cycles", "ratio"))
    c_eff = c if c is not None else t              # no clock readings: cycles unknown, time decides
    slowish = {SLOWER, AMBIGUOUS}
    regressed = c_eff == SLOWER and SLOWER in (t, r)
    if regressed or (c_eff in slowish and ({t, r} & slowish)):
        moved = next((ref for ref in references if _moved_with(ref, by.get("time"))), None)
        if moved is not None:
            ref_change = moved.metric("time").change.value
            return VariantVerdict(pair, variant, SAME, f"moved with the machine: {moved.variant} "
                                  f"{_pct(ref_change)} here too ({_pct(by['time'].change.value / ref_change)} "
                                  "relative to it)", metrics)
    alone = _ratio_alone(SLOWER if regressed else FASTER, by, baseline_time)
    if alone and (regressed or (c_eff == FASTER and FASTER in (t, r))):
        return VariantVerdict(pair, variant, AMBIGUOUS, alone, metrics, settled=True)
    if regressed:
        what = "time" if t == SLOWER else "time relative to the baseline"
        return VariantVerdict(pair, variant, SLOWER, f"{what} {_pct(by['ratio' if t != SLOWER else 'time'].change.value)} "
                              f"and cycles {_pct(by['cycles'].change.value) if 'cycles' in by else 'unknown'}", metrics)
    if c_eff == FASTER and FASTER in (t, r):
        return VariantVerdict(pair, variant, FASTER, "", metrics)
    if c_eff in slowish and ({t, r} & slowish):
        return VariantVerdict(pair, variant, AMBIGUOUS, "an interval straddles the margin: more samples would decide",
                              metrics)
    return VariantVerdict(pair, variant, SAME, _same_cause(by), metrics)


def _ratio_alone(direction: str, by: Mapping[str, MetricVerdict], baseline_time: MetricVerdict | None) -> str:
    """Why a `direction` verdict resting on the ratio alone is not this variant's: its own time is not
    `direction`, and the baseline's own time moved the opposite way past its margin ("" otherwise).
    On an H200 whose power cap held the SM clock at ~1.7 instead of ~1.87 GHz for a few minutes,
    ch10.warp_specialization's GEMM baseline ran +6-7% (the reference GEMM as far) and its
    warp-specialized variants +1-4%: their ratio fell 3.5-5% and read FASTER, with no code change
    (tests/fixtures/gate/README.md); kernels answer a clock change unevenly."""
    t, r = by.get("time"), by.get("ratio")
    opposite = FASTER if direction == SLOWER else SLOWER
    if r is None or r.verdict != direction or baseline_time is None or baseline_time.verdict != opposite \
            or (t is not None and t.verdict == direction):
        return ""
    own = f"its own time {_pct(t.change.value)}" if t is not None else "its own time unknown"
    return (f"{direction.lower()} only relative to the baseline (ratio {_pct(r.change.value)}), whose own time moved "
            f"{_pct(baseline_time.change.value)} past its margin ({own}): the baseline moved, not this variant; "
            "a machine whose SM clock or power moved runs kernels unevenly, another session decides")


def _moved_with(ref: VariantVerdict, time_metric: MetricVerdict | None) -> bool:
    """The variant's time, measured relative to a reference kernel timed in the same processes,
    did not move: the reference moved as far, so the machine did (a card with another power
    behaviour runs every GEMM ~2% slower, as two H200 leases showed)."""
    ref_time = ref.metric("time")
    if ref_time is None or time_metric is None or ref_time.change.value <= 1:
        return False
    return decide(time_metric.change.scaled(ref_time.change.value), time_metric.margin) in (SAME, FASTER)


# A time margin wider than this guards nothing a user cares about: the recorded processes of the
# same code disagreed that much (ch10.flash_attention cudnn on an H100: 55.2, 54.8 and 130.4 us,
# a 272% margin), so SAME only says "not slower than the slowest process". Said, not failed.
UNGUARDED_MARGIN = 0.25
UNGUARDED = "unguarded:"


def _same_cause(by: Mapping[str, MetricVerdict]) -> str:
    t, c = by.get("time"), by.get("cycles")
    if t and t.margin > UNGUARDED_MARGIN:
        return (f"{UNGUARDED} the recorded processes of this code disagree by up to {t.margin * 100:.0f}%, so only a "
                "larger change would show; find why they differ (a bimodal library choice?) and record again")
    if t and c and t.verdict == SLOWER and c.verdict != SLOWER:
        return f"time {_pct(t.change.value)} but cycles {_pct(c.change.value)}: the SM clock moved, not the code"
    if t and c and c.verdict in (SLOWER, FASTER) and t.verdict == SAME:
        return f"cycles {_pct(c.change.value)} with the same time: another SM clock, a memory-bound kernel"
    return ""


def _paced(verdict: VariantVerdict, rows: pd.DataFrame) -> VariantVerdict:
    """An unguarded verdict whose samples show the host setting the pace (`time_kinds.host_paced`)
    says so, in place of the guess at a cause. Not for a variant that waits for the GPU inside its call:
    its issue time holds that wait (ch14.graph_break_control_flow's baseline)."""
    if not verdict.cause.startswith(UNGUARDED) or "issue_ns" not in rows or rows["issue_ns"].isna().all():
        return verdict
    if "waits_for_gpu" in rows and rows["waits_for_gpu"].fillna(False).astype(bool).any():
        return verdict
    issue, steady = float(rows["issue_ns"].median()), float(rows["time_ns"].median())
    if not host_sets_pace(issue, steady):
        return verdict
    return replace(verdict, cause=f"{verdict.cause.split(';')[0]}: in this run {pace_text(issue, steady)}")


def judge_one(pair: str, variant: str, metrics: list[MetricVerdict], before: list[VariantVerdict],
              base_time: MetricVerdict | None = None, library: bool = False) -> VariantVerdict:
    """One variant's verdict, given those judged `before` it: the reference kernels and the library
    variants that moved as machines do are its machine references (`classify`). A library variant
    (`library`) whose time moved as machines do (`_machine_sized`) is such a reference and never fails;
    one that moved further is judged as any variant (its inputs and wrapper are the pair's)."""
    if variant.startswith(REF_PREFIX):
        return VariantVerdict(pair, variant, metrics[0].verdict if metrics else NEW, "reference kernel", metrics)
    verdict = classify(pair, variant, metrics, [x for x in before if x.is_reference or x.library], base_time)
    if not library or not _machine_sized(verdict.metric("time")):
        return verdict
    said = (f"the pair's reference (a library) moved {_pct(verdict.metric('time').change.value)}, as machines do "
            f"(at most {MACHINE_SPREAD_GPU:.0%}): a machine reference here, not a failure")
    return replace(verdict, library=True, cause="; ".join(c for c in (
        said if verdict.verdict != SAME else "", verdict.cause) if c))


def _machine_sized(time_metric: MetricVerdict | None) -> bool:
    """A measured slowdown no larger than machines show: the whole interval above 1 and below 1 + spread."""
    return time_metric is not None and 1 < time_metric.change.low and time_metric.change.high <= 1 + MACHINE_SPREAD_GPU


def judge(pair: str, samples: pd.DataFrame, entry: Mapping[str, Any] | None,
          sm_clock_max_mhz: float | None = None, outdated: str = "",
          library: Collection[str] = ()) -> list[VariantVerdict]:
    """Every variant (references first, then the pair's `library` variants: its declared references) of
    this run's samples against the pair's recorded entry (`outdated`: why the expectations file could not
    be read, said instead of 'no expectation')."""
    df = with_cycles(samples, sm_clock_max_mhz)
    recorded = ((entry or {}).get("summary") or {}).get("variants", {})
    present = list(dict.fromkeys(df["variant"]))
    order = sorted(present, key=lambda v: (not v.startswith(REF_PREFIX), v not in library))
    base = measure(df, "baseline", recorded["baseline"]) if "baseline" in present and "baseline" in recorded else []
    base_time = next((m for m in base if m.metric == "time"), None)
    out: list[VariantVerdict] = []
    for v in order:
        if v not in recorded:
            out.append(VariantVerdict(pair, v, NEW, outdated or "no recorded expectation on this GPU"))
            continue
        if (none := unmeasured(pair, v, df)) is not None:
            out.append(none)
            continue
        verdict = judge_one(pair, v, measure(df, v, recorded[v]), out, base_time, v in library)
        out.append(_paced(verdict, df[df["variant"] == v]))
    out += [VariantVerdict(pair, v, MISSING, "recorded but not measured now") for v in recorded
            if v not in present and not v.startswith(REF_PREFIX)]
    return out
