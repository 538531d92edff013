"""Two runs of one pair side by side (`aisp-prof diff A B`): before and after a code change,
or the same code on two GPUs.

Per variant: the primary time, DRAM bytes, FLOPs, the top stalls and the roofline position of
each run, taken from the run summary (`api.run_summary`) and the roofline points, never
recomputed here; then the gate's verdict (`analyze.gate.verdict.judge`) on the runs' timed samples:
run A's samples play the recorded expectation (median, cycles, ratio to the baseline and the
A/A margin learnt across A's processes, `analyze.gate.expectations.summarize`), run B's are judged
against them. FASTER/SLOWER therefore say how B moved relative to A. A run without samples
(recorded before interleaved timing, or an imported export) is "no samples: not judged".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd

from ..errors import UnknownTargetError
from ..values import finite_float

NOT_JUDGED = "no samples: not judged"
STALLS_SHOWN = 3


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


def primary_time(record: Mapping[str, Any]) -> tuple[float | None, str]:
    """The variant's time per call and which timer gave it: the summary's primary time where it
    names one, else the CUDA-event median (the gate's timer), else the GPU time (nsys or ncu)."""
    for key, source in (("primary_time_ns", record.get("primary_time_source") or "primary"),
                        ("cuda_event_median_ns", "cuda_events"),
                        ("gpu_time_ns", record.get("gpu_time_source") or "gpu")):
        if record.get(key) is not None:
            return float(record[key]), str(source)
    return None, ""


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


def _side(rec: Mapping[str, Any] | None, points: pd.DataFrame, variant: str) -> dict[str, Any] | None:
    if rec is None:
        return None
    t, source = primary_time(rec)
    return {"time_ns": t, "time_source": source, "dram_bytes": finite_float(rec.get("dram_bytes")),
            "flops": finite_float(rec.get("flops_total")),
            "top_stalls": [s["reason"] for s in (rec.get("top_stalls") or [])[:STALLS_SHOWN]],
            "roofline": _position(points, variant)}


def _ratio(b: float | None, a: float | None) -> float | None:
    return b / a if a and b is not None else None


def judged(a: RunSide, b: RunSide, pair: str) -> dict[str, Any]:
    """variant -> the gate's verdict dict, B judged against A's samples (empty without samples)."""
    if a.samples.empty or b.samples.empty:
        return {}
    from .gate.expectations import of_kind, session_of, summarize
    from .gate.verdict import judge

    # both sides by the same kind of time: B's samples of every kind pooled against A's gpu ones read a run
    # against itself as SLOWER (graph_break_control_flow's tensor_branch +126%) or FASTER (int8 -16%)
    kind = "gpu"
    entry = {"summary": summarize({"sessions": [session_of(a.samples, {}, {"sm_clock_max_mhz": a.sm_clock_max_mhz},
                                                           kind)]})}
    return {v.variant: v.to_dict() for v in judge(pair, of_kind(b.samples, kind), entry, b.sm_clock_max_mhz)}


def compare(a: RunSide, b: RunSide) -> dict[str, Any]:
    """The diff of two runs of one pair; UnknownTargetError (exit 2) for runs of different pairs."""
    pair_a, pair_b = a.run.get("pair"), b.run.get("pair")
    if pair_a != pair_b:
        raise UnknownTargetError(f"runs of different pairs: {a.run.get('run_id')} is {pair_a}, "
                                 f"{b.run.get('run_id')} is {pair_b}; diff compares two runs of one pair")
    recs_a, recs_b = a.records, b.records
    verdicts = judged(a, b, str(pair_a))
    variants = list(dict.fromkeys([*recs_a, *recs_b]))
    rows = []
    for v in variants:
        sa, sb = _side(recs_a.get(v), a.roofline, v), _side(recs_b.get(v), b.roofline, v)
        judged_v = verdicts.get(v)
        if sa is None or sb is None:
            verdict, reason = ("NEW" if sa is None else "MISSING"), f"only in run {'B' if sa is None else 'A'}"
        elif judged_v is None:
            verdict, reason = None, NOT_JUDGED
        else:
            verdict, reason = judged_v["verdict"], _reason(judged_v)
        rows.append({"variant": v, "role": (recs_b.get(v) or recs_a.get(v) or {}).get("role"), "a": sa, "b": sb,
                     "time_ratio_b_over_a": _ratio((sb or {}).get("time_ns"), (sa or {}).get("time_ns")),
                     "dram_bytes_ratio_b_over_a": _ratio((sb or {}).get("dram_bytes"), (sa or {}).get("dram_bytes")),
                     "flops_ratio_b_over_a": _ratio((sb or {}).get("flops"), (sa or {}).get("flops")),
                     "same_timer": bool(sa and sb and sa["time_source"] == sb["time_source"]),
                     "verdict": verdict, "reason": reason, "gate": judged_v})
    return {"pair": pair_a, "a": _run_fields(a.run), "b": _run_fields(b.run), "judged": bool(verdicts),
            "not_judged": NOT_JUDGED, "variants": rows}


def _reason(v: Mapping[str, Any]) -> str:
    """The gate's cause, or the metrics it rests on in words (B relative to A)."""
    if v.get("cause"):
        return str(v["cause"])
    parts = [f"{m['metric']} {(m['change']['value'] - 1) * 100:+.1f}% (margin ±{m['margin'] * 100:.0f}%)"
             for m in v.get("metrics") or []]
    return "; ".join(parts) or str(v.get("verdict"))


def _run_fields(run: Mapping[str, Any]) -> dict[str, Any]:
    return {k: run.get(k) for k in ("run_id", "pair", "label", "gpu_name", "created_at", "git_sha")}
