"""Verdict rules: what the measured numbers of one run mean, each rule a pure function of the run's
stored frames and its summary, returning zero or more `Finding`s built from those numbers.

  host_bound       how much of a call is the host's: from the variant's own kinds of time where the
                   run has them (`time_kinds.host_share`); in older runs, CUDA events timing a call
                   longer than nsys saw the GPU busy (the gap is the host launching).
  host_paced       the host's time to issue one call is most of a back-to-back call: the steady
                   time follows the host's jitter (`time_kinds.host_paced`).
  timers_disagree  the speedup by CUDA events, nsys GPU time and ncu's replayed duration differ
                   by more than the timers' spread: the claim rests on one timer.
  mechanisms       the pair's declared `expect` (pairs.roles.Mechanism) against what moved.
  low_clock        the timed calls ran well below the card's maximum SM clock (the power cap):
                   the ratios are of another clock (`analyze.verdict.clock`).
  bimodal, drifted, below_floor
                   whether a time may be published at all (`analyze.verdict.validity`): those, and
                   timers_disagree on a GPU-bound variant, withhold the headline.

A rule stays silent when what it looks for is within noise, and says "not measured" (severity
info) where the run lacks a field, never raises on an old run.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import pandas as pd

from ...naming import TIMER_LABELS
from ...pairs.roles import OPTIMIZATION, expectations_of
from ...units import duration, si
from ..rule_input import Finding, RuleInput
from ..timing.time_kinds import host_paced, host_share
from .clock import low_clock
from .validity import below_floor, bimodal, drifted

# The three timers run in separate processes (check, nsys, ncu) at clocks a few percent apart even
# on a quiet machine (the H200 and H100 samples: 1-3% between timers on single-kernel GEMMs), so a
# difference under these shares says nothing, whatever the within-process spread.
HOST_GAP_MIN_SHARE = 0.05        # host_bound: the gap is at least 5% of the CUDA-event time
HOST_GAP_WARNING_SHARE = 0.20    # ... and a warning from 20%
TIMER_FLOOR = 0.05               # timers_disagree: speedups at least 5% apart beyond their spread
MECHANISM_NOISE = 0.02           # a counter that moved under 2% did not move
# A launch from Python (torch op, ctypes call) costs ~5-20 us of host time; a gap of more than 30 us
# per launch is not launching (ch10.warp_specialized_cluster_pipeline's baseline: 153 us on one
# launch, nsys alone faster than ncu and CUDA events), so host_bound leaves it to timers_disagree.
MAX_HOST_NS_PER_LAUNCH = 30_000.0


# ------------------------------------------------------------------------------ noise of each timer


def event_noise_ns(timings: pd.DataFrame, variant: str) -> float | None:
    """Half the p10-p90 range of the variant's CUDA-event times (older runs: half of min-max)."""
    if timings.empty or "variant" not in timings or variant not in set(timings["variant"]):
        return None
    t = timings[timings["variant"] == variant].iloc[0]
    for lo, hi in (("p10_ns", "p90_ns"), ("min_ns", "max_ns")):
        if lo in t and hi in t and pd.notna(t[lo]) and pd.notna(t[hi]):
            return (float(t[hi]) - float(t[lo])) / 2
    return None


def nsys_noise_ns(spread: pd.DataFrame, variant: str) -> float | None:
    """Half the range of the variant's kernel time per call over the nsys calls (None: one call or
    none); `spread` is `rule_input.call_spread` of the timeline."""
    row = spread[spread["variant"] == variant] if "variant" in spread else spread.iloc[0:0]
    if row.empty or int(row["calls"].iloc[0]) < 2:
        return None
    return float(row["call_kernel_max_ns"].iloc[0] - row["call_kernel_min_ns"].iloc[0]) / 2


def _rel(noise: float | None, value: float | None) -> float:
    return noise / value if noise and value else 0.0


# ------------------------------------------------------------------------------ the rules


def host_bound(inp: RuleInput) -> list[Finding]:
    """CUDA-event time per call above nsys GPU busy time per call by more than both timers' noise."""
    out = []
    for r in inp.summary:
        ev, gpu, v = r.get("cuda_event_median_ns"), r.get("gpu_time_ns"), r["variant"]
        if not ev or not gpu or r.get("gpu_time_source") != "nsys" or r.get("time_class"):
            continue                  # a run timed in kinds says it from its own times (time_kinds.host_share)
        gap = ev - gpu
        noise = (event_noise_ns(inp.timings, v) or 0.0) + (nsys_noise_ns(inp.spread(), v) or 0.0)
        if gap <= noise or gap < HOST_GAP_MIN_SHARE * ev:
            continue
        kernels, idle = r.get("kernels_per_call") or 0, r.get("gap_per_call_ns")
        if gap > max(kernels, 1) * MAX_HOST_NS_PER_LAUNCH:
            continue          # more than launching can cost: another clock or code path (timers_disagree)
        inside = (f" (nsys saw the GPU idle {duration(idle)} per call between its {kernels:g} launches)"
                  if idle and kernels > 1 else "")
        cure = ("a CUDA graph (one launch for the whole call) or fewer launches (fusion) would remove it"
                if kernels > 1 else "batching more work into each launch, or a CUDA graph over many calls, "
                "would amortize it")
        out.append(Finding(
            "host_bound", "warning" if gap >= HOST_GAP_WARNING_SHARE * ev else "info",
            f"{v}: {duration(ev)} per call by CUDA events but the GPU is busy {duration(gpu)} of it (nsys): "
            f"{duration(gap)} ({gap / ev:.0%}) is launch overhead{inside}, beyond the timers' noise "
            f"(±{duration(noise)}); {cure}. Speedups by GPU time leave it out.", v))
    return out


def _speedups(inp: RuleInput, base: Mapping[str, Any], r: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """timer -> (speedup, its relative noise) for the timers both rows have."""
    v, b = r["variant"], base["variant"]
    out = {}
    for name, key, noise in (("nsys GPU time", "gpu_time_ns", lambda x: nsys_noise_ns(inp.spread(), x)),
                             ("CUDA events", "cuda_event_median_ns", lambda x: event_noise_ns(inp.timings, x)),
                             ("ncu duration", "ncu_duration_ns", lambda x: None)):
        tb, tv = base.get(key), r.get(key)
        if name == "nsys GPU time" and r.get("gpu_time_source") != "nsys":
            continue
        if tb and tv:
            out[name] = (tb / tv, _rel(noise(b), tb) + _rel(noise(v), tv))
    return out


def timers_disagree(inp: RuleInput) -> list[Finding]:
    """The headline timer's speedup (the row's `speedup_timer`, `analyze.timing.speedup`) against the others:
    a warning when no other timer bears it out within their spread plus TIMER_FLOOR, a note when
    one disagrees but another agrees."""
    base, out = inp.baseline(), []
    if base is None:
        return out
    for r in inp.claims():
        s = _speedups(inp, base, r)
        if len(s) < 2:
            continue
        primary = TIMER_LABELS.get(str(r.get("speedup_timer")))     # the run's own primary timer first
        claim = primary if primary in s else next(iter(s))
        others = [o for o in s if o != claim]
        x, noise = s[claim]
        apart = {o: max(x, s[o][0]) / min(x, s[o][0]) - 1 for o in others}
        agree = [o for o in others if apart[o] <= noise + s[o][1] + TIMER_FLOOR]
        differ = [o for o in others if o not in agree]
        if not differ:
            continue
        said = ", ".join(f"{s[o][0]:.2f}x by {o}" for o in differ)
        v = r["variant"]
        if agree:
            out.append(Finding("timers_disagree", "info",
                               f"{v}: {said} against {x:.2f}x by {claim}, {max(apart[o] for o in differ):.0%} apart; "
                               f"{' and '.join(agree)} ({', '.join(f'{s[o][0]:.2f}x' for o in agree)}) "
                               f"{'agrees' if len(agree) == 1 else 'agree'} with {claim}", v))
            continue
        out.append(Finding(
            "timers_disagree", "warning",
            f"{v}: the {x:.2f}x by {claim} rests on that timer alone: {said}, {min(apart[o] for o in differ):.0%} or "
            f"more apart, beyond the timers' spread and the {TIMER_FLOOR:.0%} their clocks allow (ncu replays each "
            "kernel alone with flushed caches; CUDA events time the whole call on the GPU, gaps between its kernels "
            "included; nsys adds up the time its kernels and copies were busy)", v))
    return out


def metric_value(inp: RuleInput, variant: str, metric: str) -> float | None:
    """A summary field of the variant, else its ncu launches' column: percentages weighted by
    duration, stalls by instructions, counts summed. None when the run did not measure it."""
    row = inp.row(variant) or {}
    if isinstance(row.get(metric), (int, float)) and not isinstance(row.get(metric), bool):
        return float(row[metric])
    k = inp.kernels
    if k.empty or metric not in k or "variant" not in k:
        return None
    k = k[k["variant"] == variant]
    col = k[metric].astype(float)
    if k.empty or col.isna().all():
        return None
    weight_col = "duration_ns" if metric.endswith("_pct") else "inst_executed" if metric.startswith("stall_") else None
    if weight_col and weight_col in k and k[weight_col].astype(float).sum() > 0:
        w = k[weight_col].astype(float)
        return float((col.fillna(0) * w).sum() / w.sum())
    return float(col.sum())


def _ratio(before: float, after: float, change: str) -> float:
    """How far the metric moved in the predicted direction: before/after for a decrease."""
    num, den = (before, after) if change == "decrease" else (after, before)
    return float("inf") if den == 0 and num > 0 else (num / den if den else 1.0)


def _show(metric: str, x: float) -> str:
    if metric.endswith(("_bytes", "bytes_per_call")):
        return si(x, "B")
    if metric.endswith("_ns"):
        return duration(x)
    return f"{x:.1f}%" if metric.endswith("_pct") else f"{x:.3g}"


def mechanisms(inp: RuleInput) -> list[Finding]:
    """Each declared Mechanism against the baseline and the optimizations it names (default: all)."""
    base, out = inp.baseline(), []
    expect = expectations_of(inp.info)
    if base is None or not expect:
        return out
    opts = [r["variant"] for r in inp.summary if r.get("role") == OPTIMIZATION]
    for m in expect:
        for v in [v for v in (m.variants or opts) if inp.row(v) is not None]:
            before, after = metric_value(inp, base["variant"], m.metric), metric_value(inp, v, m.metric)
            want = f"the lesson predicts {m.metric} to {m.change}" + (f" at least {m.factor:g}x" if m.factor > 1 else "")
            why = f" ({m.why})" if m.why else ""
            if before is None or after is None:
                out.append(Finding("mechanism", "info", f"{v}: {want}{why}: not measured in this run", v))
                continue
            moved = _ratio(before, after, m.change)
            seen = f"measured {_show(m.metric, before)} -> {_show(m.metric, after)} ({moved:.2f}x)"
            if moved >= max(m.factor, 1 + MECHANISM_NOISE):
                out.append(Finding("mechanism", "info", f"{v}: {m.metric} moved as predicted{why}: {seen}", v))
            else:
                out.append(Finding("mechanism", "warning", f"{v}: {want}{why}, but {seen}: the predicted mechanism "
                                   "did not happen, so whatever speedup there is comes from something else", v))
    return out


def skipped(inp: RuleInput) -> list[Finding]:
    """Each variant the check skipped because its backend has no kernel at the run's sizes
    (run.json's `skipped_variants`, collect.correctness.check.no_kernel_reason): not run, not wrong."""
    return [Finding("skipped", "info", f"{v} was not run at these sizes: {why}", v)
            for v, why in (inp.info.get("skipped_variants") or {}).items()]


RULES: tuple[Callable[[RuleInput], list[Finding]], ...] = (bimodal, drifted, below_floor, host_bound, host_share,
                                                          host_paced, timers_disagree, mechanisms, skipped,
                                                          low_clock)


def findings(inp: RuleInput) -> list[Finding]:
    """Every rule's findings, warnings first."""
    found = [f for rule in RULES for f in rule(inp)]
    return sorted(found, key=lambda f: f.severity != "warning")
