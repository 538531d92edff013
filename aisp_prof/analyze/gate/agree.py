"""Gate = run (issue 28, item 3): does a stored `aisp-prof run` say what the gate's evidence says?

For each optimized variant of a run, two ratios of variant time / baseline time are set side by side:
  - the run's headline: its speedup by its timer (analyze.timing.speedup), with the 95% interval of
    its own samples where the run sampled that timer (`samples`; a timer it did not sample, nsys
    GPU time or ncu duration, states no noise and is taken as a point);
  - the gate's: `time_vs_baseline` of the pair's recorded sessions (expectations.summarize), of the
    kind of time the gate judges (`gate_kind`), with its A/A margin `margin.ratio`: how far the
    same code moved between recorded processes.
The verdict is the gate's own rule (verdict.decide) applied to the run's ratio interval:
AGREE when it reaches into expected x [1 - margin, 1 + margin] (the gate would say SAME or
AMBIGUOUS); DIFFER when the whole interval lies beyond it (the gate would say FASTER or SLOWER);
NO-EVIDENCE when the card's expectations hold no ratio for the variant.

A DIFFER carries the likely reasons the data shows (`reasons`): the run measured other code than
the recorded sessions (source digests), another timer than the gate's (and what the run says by
the gate's timer, where it has it), other problem sizes, validity warnings on the run's variant or
baseline, evidence of the legacy format-2 timer, whose times depended on a variant's position, or
evidence from one machine while the run is from another (the gate's own `rules.one_machine`: a
host-side time moves with the host; a GPU time within MACHINE_SPREAD_GPU is what machines do).
A timer difference explains nothing where the run, by the gate's own timer, differs as well: that
is said as a note, not a reason. A DIFFER without any reason is unexplained: `bench agree` fails on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

from ...naming import TIMER_KINDS, TIMER_LABELS
from ..timing.intervals import Interval, paired_groups, ratio_interval
from . import expectations as exp
from .rules import MACHINE_SPREAD_GPU
from .verdict import FASTER, SLOWER, decide

AGREE, DIFFER, NO_EVIDENCE = "AGREE", "DIFFER", "NO-EVIDENCE"
# the timer whose ratio the gate's evidence of each kind holds ("legacy": format 2's one CUDA-event timer)
GATE_TIMERS = {"gpu": "gpu_events", "latency": "latency", "steady": "steady", "legacy": "cuda_events"}
# run findings that say a variant's time may not be what the headline takes it for
DOUBT_RULES = ("bimodal", "drifted", "below_floor", "timers_disagree", "host_bound")


@dataclass
class Evidence:
    """One pair's recorded entry on one card, as `agreements` reads it."""

    path: str                                  # the expectations file
    entry: Mapping[str, Any] | None            # its entry of the pair (None: not recorded)
    format: int | None = None

    @property
    def kind(self) -> str:
        sessions = (self.entry or {}).get("sessions") or [{}]
        return sessions[-1].get("kind") or "legacy"

    @property
    def dates(self) -> list[str]:
        return [str(s.get("date") or "")[:10] for s in (self.entry or {}).get("sessions") or []]


@dataclass
class Agreement:
    """A variant's run ratio against the gate's: both as speedups (baseline / variant)."""

    pair: str
    variant: str
    card: str
    run_id: str
    run_date: str
    run_speedup: float | None
    run_timer: str | None
    run_interval: Interval | None = None       # speedup interval (None: the timer was not sampled)
    gate_speedup: float | None = None
    gate_timer: str | None = None
    gate_margin: float | None = None           # relative A/A margin of the ratio
    gate_dates: list[str] = field(default_factory=list)
    evidence: str = ""
    verdict: str = NO_EVIDENCE
    reasons: list[str] = field(default_factory=list)       # likely causes of a DIFFER (or why NO-EVIDENCE)
    notes: list[str] = field(default_factory=list)         # facts that do not explain it (same timer, differs too)
    tags: list[str] = field(default_factory=list)          # the reasons' short names (TAGS)

    @property
    def explained(self) -> bool:
        return self.verdict != DIFFER or bool(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        iv = self.run_interval
        return {"pair": self.pair, "variant": self.variant, "card": self.card, "run_id": self.run_id,
                "run_date": self.run_date, "run_speedup": self.run_speedup, "run_timer": self.run_timer,
                "run_speedup_low": iv.low if iv else None, "run_speedup_high": iv.high if iv else None,
                "gate_speedup": self.gate_speedup, "gate_timer": self.gate_timer, "gate_margin": self.gate_margin,
                "gate_speedup_low": band_edge(self.gate_speedup, self.gate_margin, 1),
                "gate_speedup_high": band_edge(self.gate_speedup, self.gate_margin, -1),
                "gate_band_note": band_note(self.gate_margin),
                "gate_dates": self.gate_dates, "evidence": self.evidence, "verdict": self.verdict,
                "explained": self.explained, "reasons": list(self.reasons), "tags": list(self.tags),
                "notes": list(self.notes)}


def band_edge(speedup: float | None, margin: float | None, sign: int) -> float | None:
    """An edge of the gate's speedup band, its time ratio x (1 + sign x margin) as a speedup: the low
    edge (sign 1) always exists; the high one (sign -1) is None where the margin reaches 100% (the
    time ratio's band reaches 0, so no speedup is too high: `band_note`); both None without a recorded ratio."""
    if speedup is None or margin is None or 1 + sign * margin <= 0:
        return None
    return speedup / (1 + sign * margin)


def band_note(margin: float | None) -> str | None:
    """Why the band has no high edge (None where it has one, or there is no band): ch10.flash_attention's
    cudnn on the H100 recorded a 274% margin, whose high edge read -4.34x before."""
    if margin is None or margin < 1:
        return None
    return (f"no upper speedup bound: the A/A margin {margin:.0%} reaches 100%, so the gate's time ratio "
            "may fall to 0 (the recorded processes disagree that much)")


def sampled_ratio(samples: pd.DataFrame, variant: str, timer: str | None) -> Interval | None:
    """variant time / baseline time by `timer` from the run's samples, with its 95% interval (the
    gate's bootstrap); None where the run did not sample that timer."""
    if samples is None or samples.empty or timer is None:
        return None
    if "kind" in samples and samples["kind"].notna().any():
        if timer not in TIMER_KINDS:
            return None
        rows = exp.of_kind(samples, TIMER_KINDS[timer])
    elif timer == "cuda_events":               # a run before issue 28: every sample is the one event timer
        rows = exp.of_kind(samples.drop(columns="kind", errors="ignore"), "legacy")   # a kind column all empty
    else:
        return None
    num, den = paired_groups(rows, variant, "baseline")
    return ratio_interval(num, den) if num and den else None


def _as_speedup(ratio: Interval) -> Interval:
    return Interval(1 / ratio.value, 1 / ratio.high, 1 / ratio.low)


def _judge(ratio: Interval, expected: float, margin: float) -> str:
    return DIFFER if decide(ratio.scaled(expected), margin) in (FASTER, SLOWER) else AGREE


def run_ratio(row: Mapping[str, Any], samples: pd.DataFrame, timer: str | None) -> Interval | None:
    """The run's time ratio by `timer`: its samples' interval, else the summary's point value."""
    sampled = sampled_ratio(samples, str(row["variant"]), timer)
    if sampled is not None:
        return sampled
    speedup = (row.get("speedup_by_timer") or {}).get(timer) if timer else None
    return Interval(1 / speedup, 1 / speedup, 1 / speedup) if speedup else None


@dataclass
class RunView:
    """What `agreements` needs of a stored run (api.run.Run gives it: `bench.agree.run_view`)."""

    run_id: str
    pair: str
    card: str
    date: str
    info: Mapping[str, Any]
    summary: Sequence[Mapping[str, Any]]       # per variant: speedup_vs_baseline, speedup_timer, speedup_by_timer
    samples: pd.DataFrame
    findings: Sequence[Mapping[str, Any]] = ()


def agreements(run: RunView, evidence: Evidence) -> list[Agreement]:
    """Every optimized variant of `run` against the pair's recorded evidence on its card."""
    variants = (evidence.entry or {}).get("summary", {}).get("variants", {})
    out = []
    for row in run.summary:
        v = str(row["variant"])
        if v == "baseline" or v.startswith("ref:"):
            continue
        a = Agreement(run.pair, v, run.card, run.run_id, run.date[:10], row.get("speedup_vs_baseline"),
                      row.get("speedup_timer"), evidence=evidence.path, gate_dates=evidence.dates)
        ratio = run_ratio(row, run.samples, a.run_timer)
        a.run_interval = _as_speedup(ratio) if ratio is not None and ratio.low != ratio.high else None
        recorded = variants.get(v) or {}
        expected, margin = recorded.get("time_vs_baseline"), (recorded.get("margin") or {}).get("ratio")
        if not expected or margin is None or ratio is None:
            a.tags, a.reasons = ["none"], [_no_evidence(evidence, v, ratio is None)]
        else:
            a.gate_speedup, a.gate_margin, a.gate_timer = 1 / expected, margin, GATE_TIMERS.get(evidence.kind)
            a.verdict = _judge(ratio, expected, margin)
            found = reasons(a, run, evidence, row) if a.verdict == DIFFER else []
            a.tags, a.reasons = [t for t, _ in found], [r for _, r in found]
        out.append(a)
    return out


def _no_evidence(evidence: Evidence, variant: str, no_run_ratio: bool) -> str:
    if no_run_ratio:
        return "the run has no speedup of this variant"
    if evidence.entry is None:
        return f"{evidence.path} holds no evidence of this pair" if evidence.format else f"no {evidence.path}"
    return f"{evidence.path} holds no ratio of {variant} (not recorded, or a comparison's baseline only)"


def reasons(a: Agreement, run: RunView, evidence: Evidence, row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Why the run's ratio and the gate's may differ, as far as the data shows (the module
    docstring): (tag, sentence) pairs, the tag for a table's cell (`TAGS`)."""
    out = []
    by_gate = run_ratio(row, run.samples, a.gate_timer)      # the run's ratio by the gate's own timer
    source = run.info.get("source") or {}
    if not (source.get("sha256") or source.get("code_sha256")):
        out.append(("code?", "other code, maybe: the run names no source digest"))
    elif other := exp.other_code(evidence.entry, source.get("sha256"), source.get("code_sha256")):
        said = other.split(": record it again")[0].replace("the evidence was recorded from ", "")
        out.append(("code", said.replace(", now ", ", the run ")))        # "now": the run's digest here
    if a.run_timer != a.gate_timer:
        said, same = _timer_reason(a, by_gate)
        if same == DIFFER:
            a.notes.append(said)
        else:
            out.append(("timer" if same else "timer?", said))
    if (evidence.entry or {}).get("sizes") and run.info.get("sizes") and \
            dict(evidence.entry["sizes"]) != dict(run.info["sizes"]):
        out.append(("sizes", f"other sizes: run {_sizes(run.info['sizes'])}, "
                             f"evidence {_sizes(evidence.entry['sizes'])}"))
    flagged = [f for f in run.findings if f.get("severity") == "warning" and f.get("rule") in DOUBT_RULES
               and f.get("variant") in (a.variant, "baseline")]
    if flagged:
        out.append(("warn:" + "+".join(sorted({str(f["rule"]) for f in flagged})), "validity warnings on the run: "
                    + ", ".join(sorted({f"{f['rule']} ({f['variant']})" for f in flagged}))))
    if evidence.kind == "legacy":
        out.append(("fmt2", "format-2 evidence: one CUDA-event timer whose times depended on a variant's position"))
    out += _other_machine(a, run, evidence, by_gate)
    out += clock_moved(a.variant, run.samples, evidence)
    return out


def clock_moved(variant: str, samples: pd.DataFrame, evidence: Evidence) -> list[tuple[str, str]]:
    """The gate's clock rule (`verdict._same_cause`) on the run's samples of the gate's kind of time: the
    variant's or the baseline's median time moved past its recorded margin while its cycles (time x SM
    clock) did not move past theirs the same way, so the SM clock moved, not the code; a ratio moves
    when one side follows the clock and the other does not. A power-capped H200 run of ch09.cublaslt_gemm
    (SM 1590-1890 MHz at ~690 of 700 W, against 1980 MHz and ~270 W recorded): cuBLASLt fp16 +12.7% by
    time and -2.4% by cycles, its mma.sync baseline +1.3%, so 2.52x against the recorded 2.81x."""
    recorded = (evidence.entry or {}).get("summary", {}).get("variants", {})
    if samples is None or samples.empty or "sm_clock_mhz" not in samples or "kind" not in samples \
            or not samples["kind"].notna().any():
        return []
    rows = exp.of_kind(samples, evidence.kind)
    clock = pd.to_numeric(rows["sm_clock_mhz"], errors="coerce")
    moved = []
    for v in (variant, "baseline"):
        rec, mine = recorded.get(v) or {}, rows["variant"] == v
        ev_t, ev_c, margin = rec.get("median_ns"), rec.get("median_cycles"), rec.get("margin") or {}
        if not ev_t or not ev_c or not (mine & clock.notna()).any():
            continue
        t = float(rows.loc[mine, "time_ns"].median()) / ev_t - 1
        c = float((rows.loc[mine, "time_ns"] * clock[mine] / 1e3).median()) / ev_c - 1
        if abs(t) > margin.get("time", 0) and not (abs(c) > margin.get("cycles", 0) and c * t > 0):
            moved.append(f"{v} time {t:+.1%} but cycles {c:+.1%}")
    if not moved:
        return []
    return [("clock", "the SM clock moved, not the code (the gate's rule): " + "; ".join(moved) +
             f"; the run's SM clock median {clock.median():.0f} MHz{_recorded_clock(evidence)}")]


def _recorded_clock(evidence: Evidence) -> str:
    """' against 1980 MHz (power 266 W) recorded' from the newest session's clocks, '' without them."""
    clocks = (((evidence.entry or {}).get("sessions") or [{}])[-1]).get("clocks") or {}
    sm, power = clocks.get("sm_clock_mhz_min_median_max"), clocks.get("power_w_min_median_max")
    if not sm:
        return ""
    return f" against {sm[1]:.0f} MHz" + (f" (power {power[1]:.0f} W)" if power else "") + " recorded"


def _other_machine(a: Agreement, run: RunView, evidence: Evidence, ratio: Interval | None) -> list[tuple[str, str]]:
    """The evidence is from one machine and the run from another: what the gate's `one_machine`
    rule would make of the difference (AMBIGUOUS, not a regression), as a reason; [] otherwise.
    `ratio`: the run's ratio by the gate's timer."""
    boot = run.info.get("boot_id")
    sessions = (evidence.entry or {}).get("sessions") or []
    if not boot or exp.machines(evidence.entry) != 1 or boot in {s.get("boot_id") for s in sessions}:
        return []
    if evidence.kind in exp.HOST_KINDS and run.info.get("world_size", 1) in (1, None):
        return [("host", f"a host-side ({evidence.kind}) time, evidence from one machine and the run from another: "
                         "host times move with the host (the gate says AMBIGUOUS)")]
    expected = (1 / a.gate_speedup) if a.gate_speedup else None
    if ratio is not None and expected and decide(ratio.scaled(expected), MACHINE_SPREAD_GPU) not in (FASTER, SLOWER):
        return [("machine", f"within the {MACHINE_SPREAD_GPU:.0%} by which machines ran unchanged code apart; "
                            "evidence from one machine, the run from another (the gate says AMBIGUOUS)")]
    return []


# what a table's tags stand for (`reasons`)
TAGS = {"code": "the run and the evidence measured other code (source digests differ)",
        "code?": "the run names no source digest", "timer": "other timers; by the gate's timer the run agrees",
        "timer?": "other timers; the run lacks the gate's", "sizes": "other problem sizes",
        "warn": "validity warnings on the run (rules)", "fmt2": "format-2 evidence (legacy position-dependent timer)",
        "host": "a host-side time; evidence from one machine, the run from another",
        "machine": "within what machines do; evidence from one machine, the run from another",
        "clock": "the SM clock moved (time moved, cycles did not), as the gate reads it"}


def _timer_reason(a: Agreement, same: Interval | None) -> tuple[str, str | None]:
    """The timers differ: what the run says by the gate's timer (`same`), and that comparison's
    verdict (None where the run has no such time). A DIFFER there too means the timer does not
    explain it."""
    said = (f"other timers: run {TIMER_LABELS.get(a.run_timer or '', 'none')}, "
            f"gate {TIMER_LABELS.get(a.gate_timer or '')}")
    if same is None:
        return said + " (the run has no such time)", None
    verdict = _judge(same, 1 / a.gate_speedup, a.gate_margin)
    outcome = "it differs too" if verdict == DIFFER else "it agrees"
    return said + f"; by the gate's timer the run says {1 / same.value:.3g}x: {outcome}", verdict


def _sizes(sizes: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(sizes.items()))
