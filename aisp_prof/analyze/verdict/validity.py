"""Distrust before you publish: the rules that decide whether a variant's time may be a headline.

A ratio is only as good as the two times under it, and a time can be wrong in ways no spread
shows (issue 28):

  bimodal      the variant's samples fall in groups far apart (a fifth or more lie over 25%
               from the densest half; 50% for a host-side time, which jitters more), or spread
               that far even in their densest half: a median of them picks one group by
               chance. The legacy timer's samples of a host-bound variant did this
               (ch10.stream_concurrency streams32: 121-131 us at one position, 133-952 us at
               another).
  drifted      the variant's time later in its process is well above its own earlier time: a
               call after other variants ran costs more than the same call before them, so some
               state they left behind (threads, caches, allocator, compiled code) is timed, not
               the variant (ch14.gpu_quantization's baseline: 1.99 ms on its second call, then
               125-128 ms after the compiled variant's factory ran).
  below_floor  faster than the card can move the pair's minimum bytes or do its FLOPs: the
               timer missed work. The floor is generous: bytes beyond what the L2 could hold
               back, at the card's theoretical DRAM bandwidth; FLOPs at its 2:4-sparse FP8 peak.

`withhold` takes the rules' warnings (and `timers_disagree` on a GPU-bound variant) and turns a
headline that rests on a flagged variant into a statement of why there is none.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Mapping, Sequence

import pandas as pd

from ...naming import HOST_TIMERS, TIMER_KINDS, hardware_key
from ...units import duration
from ..rule_input import Finding, RuleInput
from ..timing.intervals import slowest_ranks

FAR_RATIO = 1.25           # bimodal: a sample this far (either way) from the densest half's centre is far
FAR_SHARE = 0.2            # ... and a group of them this large is a second mode
# A host-side time (latency, steady) jitters with the OS scheduler: on an H200 machine the calls of
# host-bound variants spread +-30% between p10 and p90 (ch14.gpu_quantization's gpu: 134-242 us)
# with no change of regime, so there a second group must lie 1.5x away to count
HOST_FAR_RATIO = 1.5
MIN_SAMPLES = 20
DRIFT_RATIO = 2.0          # drifted: later / earlier time of the same variant in one process (one
                           # synchronized call of a host-bound variant lies anywhere in +-30% of its median)
DRIFT_MIN_NS = 50_000.0    # ... and at least this much apart (one synchronized call's wall time jitters)
FLOOR_SHARE = 0.9          # below_floor: under 90% of the floor (the peaks are theoretical)
# theoretical DRAM bandwidth (byte/s) and 2:4-sparse FP8 tensor peak (FLOP/s) per card: NVIDIA's
# H100 SXM5 and H200 data sheets; the DRAM figures are ncu's (1280 B/cycle x 2.62 GHz, 1504 x 3.2)
CARD_PEAKS = {"h100_80gb_hbm3": (3.35e12, 3958e12), "h200": (4.81e12, 3958e12)}
# a timer -> the kind of samples it summarizes (collect.timing.samplers); "" for a legacy run's samples
SAMPLE_KINDS = {**TIMER_KINDS, "cuda_events": ""}
BLOCKING = ("bimodal", "drifted", "below_floor")


def modes(values: Sequence[float], far_ratio: float = FAR_RATIO) -> dict[str, float] | None:
    """Where the samples lie: the densest half's centre and how many lie `far_ratio` beyond it
    (with the median of those), or None with fewer than MIN_SAMPLES."""
    x = sorted(math.log(v) for v in values if v and v > 0)
    if len(x) < MIN_SAMPLES:
        return None
    half = len(x) // 2
    i = min(range(len(x) - half), key=lambda j: x[j + half] - x[j])
    centre = (x[i] + x[i + half]) / 2
    far = [t for t in x if abs(t - centre) > math.log(far_ratio)]
    return {"centre_ns": math.exp(centre), "far_share": len(far) / len(x),
            "far_median_ns": math.exp(statistics.median(far)) if far else math.nan,
            "half_width": math.exp((x[i + half] - x[i]) / 2)}


def _rows(s: pd.DataFrame, variant: str, timer: str | None) -> pd.DataFrame:
    """The variant's samples of the kind `timer` summarizes (all of a legacy run's), in the order
    taken, with their process and round where the run has them; `s` is the run's samples one row a
    call (`slowest_ranks`: a multi-rank call's time is its slowest rank's)."""
    if s.empty or timer not in SAMPLE_KINDS or "variant" not in s:
        return pd.DataFrame(columns=["time_ns"])
    rows = s[s["variant"] == variant]
    kind = SAMPLE_KINDS[timer]
    if "kind" in rows:
        rows = rows[rows["kind"].fillna("") == kind]
    elif kind:
        return pd.DataFrame(columns=["time_ns"])
    return rows[rows["time_ns"].notna()]


def _series(samples: pd.DataFrame, variant: str, timer: str | None) -> list[float]:
    """The variant's times as `_rows` takes them from `samples`, one row a call (`_one_per_call`)."""
    return [float(t) for t in _rows(samples, variant, timer)["time_ns"]]


def _one_per_call(inp: RuleInput) -> pd.DataFrame:
    """The run's samples one row a call (`slowest_ranks`: a multi-rank call's time is its slowest
    rank's; two ranks' samples pooled would look like two groups of calls), for `_rows`."""
    return slowest_ranks(inp.samples)


def _keys(rows: pd.DataFrame) -> list[tuple[int, int]]:
    """(process, round) of each sample (the rows have a `round` column)."""
    process = rows["process"].fillna(0) if "process" in rows else pd.Series(0, index=rows.index)
    return [(int(p), int(r)) for p, r in zip(process, rows["round"])]


def _stretches(keys: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Runs of consecutive rounds, (process, first, last), in order."""
    out: list[tuple[int, int, int]] = []
    for p, r in sorted(set(keys)):
        if out and out[-1][0] == p and out[-1][2] == r - 1:
            out[-1] = (p, out[-1][1], r)
        else:
            out.append((p, r, r))
    return out


def where_far(samples: pd.DataFrame, variants: Sequence[str], variant: str, timer: str | None,
              m: Mapping[str, float], far_ratio: float) -> tuple[str, bool]:
    """Where a variant's far group lies and who moved with it: the rounds of the far samples, and each
    other variant's median in those rounds against its median in the rest. Variants that moved the
    same way (at least half as far) say the machine changed state under every call, not that this
    variant's code runs two ways (ch14.graph_break_control_flow on an H200: both variants ~35-40%
    faster from round 250 on); a host-bound variant moving while a GPU-bound one does not says the host
    did (ch14.triton_persistent: its 64-launch baseline and persistent_128 +55%, the one-launch persistent 0%).
    `samples` as `_rows` takes them, `variants` the run's. Returns the text and whether another variant
    moved with it."""
    rows = _rows(samples, variant, timer)
    if timer not in TIMER_KINDS or "round" not in rows or rows["round"].isna().any():
        return "", False    # the legacy timer (times hung on a call's position in a queued block) or no rounds
    keys = _keys(rows)
    centre = math.log(m["centre_ns"])
    far = {k for k, t in zip(keys, rows["time_ns"]) if abs(math.log(float(t)) - centre) > math.log(far_ratio)}
    runs = _stretches(list(far))
    if not runs:
        return "", False
    longest = max(runs, key=lambda x: x[2] - x[1])
    span = f"{'process %d ' % longest[0] if len({p for p, _, _ in runs}) > 1 else ''}rounds {longest[1]}-{longest[2]}"
    text = (f"all in {span}" if len(runs) == 1 else f"in {len(runs)} stretches of rounds (the longest {span})")
    own = m["far_median_ns"] / m["centre_ns"]
    moved, still = [], []
    for other in variants:
        o = _rows(samples, other, timer)
        if other == variant or o.empty or "round" not in o or o["round"].isna().any():
            continue
        inside = [k in far for k in _keys(o)]
        a = o["time_ns"][inside]
        b = o["time_ns"][[not x for x in inside]]
        if len(a) < 3 or len(b) < 3:
            continue
        shift = float(a.median()) / float(b.median())
        same_way = (shift - 1) * (own - 1) > 0 and abs(math.log(shift)) >= 0.5 * abs(math.log(own))
        if same_way:
            moved.append(f"{other} {shift - 1:+.0%}")
        else:
            still.append(other)
    if moved:
        text += (f"; in those rounds {', '.join(moved)} moved with it" + (f", {', '.join(still)} did not" if still
                 else "") + ": the machine changed state under the calls, not the variant's code")
    elif still:
        text += f"; in those rounds {', '.join(still)} did not move"
    return text, bool(moved)


def bimodal(inp: RuleInput) -> list[Finding]:
    """A warning for each variant whose headline timer's samples are not one group."""
    out = []
    samples = _one_per_call(inp)
    variants = list(dict.fromkeys(r["variant"] for r in inp.summary))
    for r in inp.summary:
        v, timer = r["variant"], r.get("speedup_timer")
        far_ratio = HOST_FAR_RATIO if timer in HOST_TIMERS else FAR_RATIO
        m = modes(_series(samples, v, timer), far_ratio)
        if m is None:
            continue
        if m["far_share"] >= FAR_SHARE and m["half_width"] <= far_ratio:
            what = (f"{m['far_share']:.0%} of them lie near {duration(m['far_median_ns'])}, the rest near "
                    f"{duration(m['centre_ns'])}")
            where, machine = where_far(samples, variants, v, timer, m, far_ratio)
            what += f", {where}" if where else ""
        elif m["half_width"] > far_ratio:
            what = f"even their densest half spreads over +-{m['half_width'] - 1:.0%} around {duration(m['centre_ns'])}"
            machine = False
        else:
            continue
        why = ("a median picks one state by chance" if machine else "a median picks one by chance (a host-bound "
               "call timed at different positions, or a machine that changed state)")
        out.append(Finding("bimodal", "warning", f"{v}: its samples ({timer}) are not one group: {what}; {why}", v))
    return out


def _walls(compiles: pd.DataFrame, variant: str) -> list[float]:
    """The check's second-call wall times of `variant`, trial by trial (synchronized, ns)."""
    need = {"variant", "phase", "second_call_wall_ns"}
    if compiles.empty or not need <= set(compiles):
        return []
    c = compiles[(compiles["variant"] == variant) & (compiles["phase"] == "check")]
    if "trial" in c:
        c = c.sort_values("trial")
    return [float(x) for x in c["second_call_wall_ns"].dropna()]


def drifted(inp: RuleInput) -> list[Finding]:
    """A warning where a variant's later time in its process is DRIFT_RATIO above its first."""
    out = []
    for r in inp.summary:
        v = r["variant"]
        walls = _walls(inp.compiles, v)
        later = walls[1:] + ([float(r["latency_wall_median_ns"])] if r.get("latency_wall_median_ns") else [])
        if not walls or not later:
            continue
        first, worst = walls[0], max(later)
        if worst > DRIFT_RATIO * first and worst - first > DRIFT_MIN_NS:
            out.append(Finding("drifted", "warning", f"{v}: one call took {duration(first)} in the check's first "
                               f"trial and {duration(worst)} later in the same process ({worst / first:.1f}x): "
                               "what other variants left behind slows it, so its time measures that state", v))
    return out


def floor_ns(info: Mapping[str, Any]) -> float | None:
    """The least time one call can take on this card (None: card or analytic counts unknown)."""
    gpu = info.get("gpu") or {}
    key = hardware_key(gpu.get("gpu_name") or (info.get("env") or {}).get("gpu_name"))
    analytic = info.get("analytic") or {}
    if key not in CARD_PEAKS or not analytic:
        return None
    bandwidth, flops_peak = CARD_PEAKS[key]
    l2 = float(gpu.get("l2_cache_bytes") or (info.get("env") or {}).get("l2_cache_bytes") or 0)
    moved = max(0.0, float(analytic.get("dram_bytes") or 0) - l2)
    return max(moved / bandwidth, float(analytic.get("flops") or 0) / flops_peak) * 1e9


def below_floor(inp: RuleInput) -> list[Finding]:
    """A warning for each variant timed under FLOOR_SHARE of the card's floor by its headline timer."""
    floor, out = floor_ns(inp.info), []
    if not floor:
        return out
    for r in inp.summary:
        base_ns, ratio = _time_of(r)
        if base_ns and base_ns < FLOOR_SHARE * floor:
            out.append(Finding("below_floor", "warning", f"{r['variant']}: {duration(base_ns)} per call by {ratio}, "
                               f"below the {duration(floor)} this card needs to move the pair's bytes or do its "
                               "FLOPs at its theoretical peaks: the timer missed work", r["variant"]))
    return out


_TIMER_FIELDS = {"gpu_events": "gpu_events_median_ns", "latency": "latency_median_ns",
                 "steady": "steady_median_ns", "cuda_events": "cuda_event_median_ns",
                 "nsys_gpu_time": "gpu_time_ns", "ncu_duration": "ncu_duration_ns"}


def _time_of(row: Mapping[str, Any]) -> tuple[float | None, str]:
    timer = str(row.get("speedup_timer") or "")
    x = row.get(_TIMER_FIELDS.get(timer, ""))
    return (float(x) if x else None), timer


def blocking(found: Sequence[Finding], summary: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """The warnings that withhold a headline: the rules above, and timers_disagree where the
    variant is GPU-bound (there every timer should agree; elsewhere they measure different things)."""
    classes = {r["variant"]: r.get("time_class") for r in summary}
    return [f for f in found if f.severity == "warning" and (
        f.rule in BLOCKING or (f.rule == "timers_disagree" and classes.get(f.variant) in (None, "gpu_bound")))]


def withhold(head: dict[str, Any], found: Sequence[Finding], summary: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The headline, or, where its variant or the baseline is flagged, why there is none: `withheld`
    lists the reasons, `text` says so first."""
    subjects = {head.get("best"), "baseline"}
    reasons = [f for f in blocking(found, summary) if f.variant in subjects]
    if not reasons or head.get("comparison"):
        return {**head, "withheld": []}
    rules = ", ".join(dict.fromkeys(f.rule for f in reasons))
    return {**head, "withheld": [f.to_dict() for f in reasons],
            "text": f"headline withheld ({rules}): {reasons[0].message} [measured: {head.get('text')}]"}
