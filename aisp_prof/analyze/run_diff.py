"""Two runs of one pair side by side (`aisp-prof diff A B`): before and after a code change,
or the same code on two GPUs.

Per variant: the time and speedup (by the diff's timer, below), DRAM bytes, FLOPs, the top stalls
and the roofline position of each run, taken from the run summary (`api.run_summary`) and the
roofline points, never recomputed here; then the gate's verdict (`analyze.gate.verdict.judge`) on
the runs' timed samples: run A's samples play the recorded expectation (median, cycles, ratio to
the baseline and the A/A margin learnt across A's processes, `analyze.gate.expectations.summarize`),
run B's are judged against them. FASTER/SLOWER therefore say how B moved relative to A. A run without samples
(recorded before interleaved timing, or an imported export) is "no samples: not judged": runs before issue 28
whose samples are all of the one legacy timer (stored with an empty kind) are judged by it against each other.
Two runs on different cards are judged only where both timed the gate's machine references (`ref:`); without
them the card's difference would read as the code's ("GPUs differ, no machine reference timed in both").

Times, their ratio and the speedups are by one timer both runs have (`diff_timer`: the first of the
pair's order, `analyze.timing.speedup.timer_order`, that both runs have for every variant they share,
`analyze.page.cards.common_timer` as `compare --cards`), named. A run recorded before issue 28 has
one CUDA-event timer (`cuda_events`) whose value depended on the variant's place in the queue; a
later run's CUDA events time the GPU alone (`gpu_events`): the two are different quantities, never
a ratio, and the gate judges the kind of samples both runs have (the compared timer's first: the
kind `bench run` records, `headline_kind`) or says the kinds differ. With no timer in common each
time is by its run's own timer and none is compared.

What else differed is said beside the times (`analyze.run_diff_context`): whether the code did (the runs'
source digests; unknown where a run predates them) and the SM clock each run's timed calls ran at.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd

from ..errors import UnknownTargetError
from ..naming import TIMER_KINDS, TIMER_LABELS
from ..values import finite_float
from .page.cards import common_timer
from .run_diff_context import clock_change, code_change, judged_kind, sm_clock
from .timing.rounds import LEGACY
from .timing.speedup import timer_order

NOT_JUDGED = "no samples: not judged"
KINDS_DIFFER = "kinds of time differ: not judged"
CARDS_DIFFER = "GPUs differ, no machine reference timed in both: not judged"
STALLS_SHOWN = 3
# a summary record's time per call by each timer (`analyze.timing.speedup`'s names): the fields the summary
# fills from the frames its speedups use (`speedup_by_timer` is the baseline's over the variant's of these)
TIMER_FIELDS = {"gpu_events": "gpu_events_median_ns", "nsys_gpu_time": "gpu_time_ns",
                "cuda_events": "cuda_event_median_ns", "ncu_duration": "ncu_duration_ns",
                "steady": "steady_median_ns", "latency": "latency_median_ns"}


@dataclass(frozen=True)
class RunSide:
    """What one run brings to a diff: its `summary --json` result, its per-variant roofline
    points (one row per variant, `kernel` empty) and its timed samples."""

    result: Mapping[str, Any]
    roofline: pd.DataFrame = field(default_factory=pd.DataFrame)
    samples: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def run(self) -> Mapping[str, Any]:
        return self.result["run"]

    @property
    def records(self) -> dict[str, Mapping[str, Any]]:
        return {r["variant"]: r for r in self.result.get("summary") or []}

    @property
    def sm_clock_max_mhz(self) -> float | None:
        return ((self.result.get("info") or {}).get("sensor") or {}).get("sm_clock_max_mhz")

    @property
    def order(self) -> tuple[str, ...]:
        """The order the run's speedups pick a timer in, the pair's own quantity first."""
        return timer_order(self.result.get("info"))

    @property
    def sample_kinds(self) -> set[str]:
        """The kinds of time its samples are of (gpu, latency, steady; legacy before issue 28)."""
        if self.samples.empty:
            return set()
        kinds = set(self.samples["kind"].dropna().astype(str)) if "kind" in self.samples else set()
        return kinds or {LEGACY}


def timer_times(record: Mapping[str, Any]) -> dict[str, float | None]:
    """{timer: ns per call} of a summary record. A run timed in the three kinds (issue 28) has its
    GPU-time CUDA events in both `gpu_events_median_ns` and `cuda_event_median_ns`: they are
    `gpu_events` there, never the legacy `cuda_events`, which timed calls queued behind others."""
    out = {t: finite_float(record.get(f)) for t, f in TIMER_FIELDS.items()}
    if "gpu_events_median_ns" in record:
        out["cuda_events"] = None
    if record.get("gpu_time_source") != "nsys":
        out["nsys_gpu_time"] = None
    return out


def diff_timer(a: RunSide, b: RunSide) -> str | None:
    """The timer the diff compares by: the first of A's order (the pair's own quantity first), then
    B's, that both runs have for every variant they share; None where they share none."""
    shared = [v for v in a.records if v in b.records]
    # common_timer reads each row's values under `speedup_by_timer`: here the times of one variant of one run
    rows = [{"timer_order": side.order, "speedup_by_timer": timer_times(side.records[v])}
            for side in (a, b) for v in shared]
    return common_timer(rows) if rows else None


def own_timer(record: Mapping[str, Any], order: tuple[str, ...]) -> str | None:
    """The first timer of `order` the record has a time by."""
    times = timer_times(record)
    return next((t for t in order if times.get(t)), None)


def _position(points: pd.DataFrame, variant: str) -> dict[str, Any] | None:
    if points.empty or "variant" not in points:
        return None
    rows = points[(points["variant"] == variant) & points["kernel"].isna()] if "kernel" in points else \
        points[points["variant"] == variant]
    if rows.empty:
        return None
    r = rows.iloc[0]
    return {"bound": r.get("bound"), "pct_of_roof": finite_float(r.get("pct_of_roof")),
            "pct_of_measured_roof": finite_float(r.get("pct_of_measured_roof")),
            "ai_dram_flop_per_byte": finite_float(r.get("ai_dram_flop_per_byte"))}


def _side(rec: Mapping[str, Any] | None, side: RunSide, variant: str, timer: str | None) -> dict[str, Any] | None:
    """One run's figures of a variant: its time and speedup by `timer` (without it: by its run's own first)."""
    if rec is None:
        return None
    times = timer_times(rec)
    source = timer if times.get(timer or "") else own_timer(rec, side.order)
    return {"time_ns": times.get(source or ""), "time_source": source or "",
            "speedup": finite_float((rec.get("speedup_by_timer") or {}).get(source or "")),
            "dram_bytes": finite_float(rec.get("dram_bytes")),
            "flops": finite_float(rec.get("flops_total")),
            "top_stalls": [s["reason"] for s in (rec.get("top_stalls") or [])[:STALLS_SHOWN]],
            "roofline": _position(side.roofline, variant)}


def _ratio(b: float | None, a: float | None) -> float | None:
    return b / a if a and b is not None else None


def judged_timer(a: RunSide, b: RunSide, timer: str | None) -> str | None:
    """The timer whose samples the gate judges: the compared one where both runs have samples of its
    kind (gpu, latency, steady), else the first of the pair's order that both have; `cuda_events`
    where both runs' samples are legacy; None where they share no kind (legacy against the kinds)."""
    both = a.sample_kinds & b.sample_kinds
    if both == {LEGACY}:
        return "cuda_events"
    return next((t for t in (timer, *a.order) if TIMER_KINDS.get(t or "") in both), None)


def judged(a: RunSide, b: RunSide, pair: str, by: str | None) -> dict[str, Any]:
    """variant -> the gate's verdict dict, B's samples of `by`'s kind judged against A's (empty without)."""
    if by is None:
        return {}
    from .gate.expectations import of_kind, session_of, summarize
    from .gate.verdict import judge

    # both sides by the same kind of time: B's samples of every kind pooled against A's gpu ones read a run
    # against itself as SLOWER (graph_break_control_flow's tensor_branch +126%) or FASTER (int8 -16%)
    kind = TIMER_KINDS.get(by, "gpu")
    sa, sb = a.samples, b.samples
    if by == "cuda_events":     # both legacy: stored with an empty kind, which of_kind's kind filter dropped (no
        sa, sb = (s.drop(columns="kind", errors="ignore") for s in (sa, sb))   # verdict); kindless: one timer's
    limits = {"sm_clock_max_mhz": a.sm_clock_max_mhz}
    entry = {"summary": summarize({"sessions": [session_of(sa, {}, limits, kind)]})}
    return {v.variant: v.to_dict() for v in judge(pair, of_kind(sb, kind), entry, b.sm_clock_max_mhz)}


def _row(v: str, a: RunSide, b: RunSide, timer: str | None, verdicts: Mapping[str, Any],
         not_judged: str) -> dict[str, Any]:
    """One variant of the diff: both runs' figures, B/A where both are by one timer, the verdict."""
    ra, rb = a.records.get(v), b.records.get(v)
    sa, sb = _side(ra, a, v, timer), _side(rb, b, v, timer)
    judged_v = verdicts.get(v)
    if sa is None or sb is None:
        verdict, reason = ("NEW" if sa is None else "MISSING"), f"only in run {'B' if sa is None else 'A'}"
    elif judged_v is None:
        verdict, reason = None, not_judged
    else:
        verdict, reason = judged_v["verdict"], _reason(judged_v)
    same = bool(sa and sb and sa["time_source"] and sa["time_source"] == sb["time_source"])
    return {"variant": v, "role": (rb or ra or {}).get("role"), "a": sa, "b": sb,
            "time_ratio_b_over_a": _ratio(sb["time_ns"], sa["time_ns"]) if same else None,
            "dram_bytes_ratio_b_over_a": _ratio((sb or {}).get("dram_bytes"), (sa or {}).get("dram_bytes")),
            "flops_ratio_b_over_a": _ratio((sb or {}).get("flops"), (sa or {}).get("flops")),
            "same_timer": same, "verdict": verdict, "reason": reason, "gate": judged_v}


def compare(a: RunSide, b: RunSide) -> dict[str, Any]:
    """The diff of two runs of one pair; UnknownTargetError (exit 2) for runs of different pairs."""
    pair_a, pair_b = a.run.get("pair"), b.run.get("pair")
    if pair_a != pair_b:
        raise UnknownTargetError(f"runs of different pairs: {a.run.get('run_id')} is {pair_a}, "
                                 f"{b.run.get('run_id')} is {pair_b}; diff compares two runs of one pair")
    timer = diff_timer(a, b)
    by = judged_timer(a, b, timer)
    differ = by is None and bool(a.sample_kinds) and bool(b.sample_kinds) and a.sample_kinds != b.sample_kinds
    unprobed = by is not None and a.run.get("gpu_name") != b.run.get("gpu_name") and not (_refs(a) and _refs(b))
    verdicts = judged(a, b, str(pair_a), None if unprobed else by)
    not_judged = KINDS_DIFFER if differ else CARDS_DIFFER if unprobed else NOT_JUDGED
    rows = [_row(v, a, b, timer, verdicts, not_judged) for v in dict.fromkeys([*a.records, *b.records])]
    clocks = [sm_clock(side.samples, side.result.get("info") or {}, judged_kind(by)) for side in (a, b)]
    code = code_change(a.result.get("info") or {}, b.result.get("info") or {}, a.run, b.run)
    return {"pair": pair_a, "a": {**_run_fields(a), **clocks[0]}, "b": {**_run_fields(b), **clocks[1]},
            "timer": timer, "timer_label": TIMER_LABELS.get(timer or ""), "timer_notes": timer_notes(a, b, timer),
            "code": code, "clock": clock_change(*clocks),
            "judged": bool(verdicts), "judged_timer": by if verdicts else None, "not_judged": not_judged,
            "variants": rows}


def timer_notes(a: RunSide, b: RunSide, timer: str | None) -> list[str]:
    """What the times are by, in words: the timer and why it, each run's own where that differs, and
    CUDA events of different kinds (legacy against the GPU alone), which never compare."""
    first = a.order[0]
    if timer is None:
        lines = ["times: no timer both runs have, so none is compared: each time is by its run's own timer, "
                 "named beside it"]
    elif timer == first:
        lines = [f"times and speedups: {TIMER_LABELS[timer]} ({timer}, the pair's own timer), per call"]
    else:
        lines = [f"times and speedups: {TIMER_LABELS[timer]} ({timer}), per call: the first of the pair's timers "
                 f"({TIMER_LABELS.get(first, first)} first) that both runs have"]
    own = {name: _speedup_timer(side) for name, side in (("A", a), ("B", b))}
    if any(t and t != timer for t in own.values()):
        lines.append("each run's own speedups: " + ", ".join(
            f"{name}'s by {TIMER_LABELS.get(t or '', 'none')}" for name, t in own.items()))
    legacy = [name for name, side in (("A", a), ("B", b)) if _has(side, "cuda_events")]
    current = [name for name, side in (("A", a), ("B", b)) if _has(side, "gpu_events")]
    if len(legacy) == 1 and len(current) == 1 and legacy != current:
        lines.append(f"CUDA events differ in kind: {legacy[0]}'s are the one timer of runs before issue 28 "
                     f"(calls queued behind other variants: a time that depended on the variant's place in "
                     f"the queue), {current[0]}'s time the GPU alone: never compared")
    return lines


def _speedup_timer(side: RunSide) -> str | None:
    return next((r.get("speedup_timer") for r in side.records.values() if r.get("speedup_timer")), None)


def _refs(side: RunSide) -> bool:
    """Whether the run timed the gate's machine references (`ref:` variants, a device copy and a GEMM) beside
    the pair: across two cards only they tell the card's change from the code's (`verdict.judge`: moved with
    the machine); without them B's card alone reads SLOWER (2x H200 -> 2x H100 quantized_allreduce int8 +14%)."""
    return not side.samples.empty and side.samples["variant"].astype(str).str.startswith("ref:").any()


def _has(side: RunSide, timer: str) -> bool:
    return any(timer_times(r).get(timer) for r in side.records.values())


def _reason(v: Mapping[str, Any]) -> str:
    """The gate's cause, or the metrics it rests on in words (B relative to A)."""
    if v.get("cause"):
        return str(v["cause"])
    parts = [f"{m['metric']} {(m['change']['value'] - 1) * 100:+.1f}% (margin ±{m['margin'] * 100:.0f}%)"
             for m in v.get("metrics") or []]
    return "; ".join(parts) or str(v.get("verdict"))


def _run_fields(side: RunSide) -> dict[str, Any]:
    return {**{k: side.run.get(k) for k in ("run_id", "pair", "label", "gpu_name", "created_at", "git_sha")},
            "sample_kinds": sorted(side.sample_kinds)}
