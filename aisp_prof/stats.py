"""Sample statistics every stage shares: the timer (collect.timing.timer) summarizes its samples, the
store summarizes a run's pooled processes, the gate and the validity rules read them back.

Robust by design: the median and a spread from the MAD, which a few stragglers do not move, and
a distribution-free interval of the median that the timer's stopping rule uses.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Mapping, Sequence

MAD_TO_SIGMA = 1.4826              # for normally distributed noise, 1.4826 x MAD estimates the std deviation


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


def summarize_times(times_ns: Sequence[float]) -> dict[str, float]:
    """median_ns, min/max, p10/p90, mad_ns and rel_spread (robust sigma / median)."""
    if not times_ns:
        raise ValueError("no timings to summarize")
    values = sorted(float(t) for t in times_ns)
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    return {
        "median_ns": median, "min_ns": values[0], "max_ns": values[-1],
        "p10_ns": _quantile(values, 0.10), "p90_ns": _quantile(values, 0.90),
        "mad_ns": mad, "rel_spread": MAD_TO_SIGMA * mad / median if median else 0.0,
        "repeats": len(values),
    }


def summarize_samples(samples: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per variant, the statistics of each kind of time: the gpu kind's unprefixed (`median_ns`,
    `p10_ns`, ...: what older runs' one CUDA-event timer filled), the others' prefixed with their
    kind (`latency_median_ns`, `steady_p90_ns`), `latency_wall_median_ns` (the host clock),
    `steady_issue_median_ns` (the host's time to issue one call, where sampled) and `waits_for_gpu`.
    Samples without a kind (runs before issue 28) are one legacy timer: their
    statistics are unprefixed and `design` stays unset."""
    by: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for s in samples:
        by.setdefault(str(s["variant"]), {}).setdefault(str(s.get("kind") or "legacy"), []).append(s)
    out: dict[str, dict[str, Any]] = {}
    for v, kinds in by.items():
        row: dict[str, Any] = {}
        for kind, rows in kinds.items():
            stats = summarize_times([float(r["time_ns"]) for r in rows])
            prefix = "" if kind in ("gpu", "legacy") else f"{kind}_"
            row.update({f"{prefix}{k}": x for k, x in stats.items()})
            if kind == "latency" and all(r.get("wall_ns") is not None for r in rows):
                row["latency_wall_median_ns"] = statistics.median(float(r["wall_ns"]) for r in rows)
            if kind == "steady":
                row["steady_calls"] = int(max(int(r.get("calls") or 1) for r in rows))
                issued = [float(r["issue_ns"]) for r in rows if r.get("issue_ns") is not None
                          and r["issue_ns"] == r["issue_ns"]]
                if issued:
                    row["steady_issue_median_ns"] = statistics.median(issued)
        if "legacy" not in kinds:
            row["design"] = "kinds"
            row["waits_for_gpu"] = any(bool(r.get("waits_for_gpu")) for rows in kinds.values() for r in rows)
        out[v] = row
    return out


def median_rel_halfwidth(values: Sequence[float]) -> float:
    """Half the width of the distribution-free 95% interval of the median, over the median."""
    n = len(values)
    if n < 5:
        return math.inf
    s = sorted(values)
    k = 1.96 * math.sqrt(n) / 2
    lo, hi = s[max(0, math.floor(n / 2 - k))], s[min(n - 1, math.ceil(n / 2 + k))]
    mid = statistics.median(s)
    return (hi - lo) / 2 / mid if mid else math.inf


SAMPLE_KEYS = ("process", "round", "variant", "kind")    # one timed call of one variant, on every rank


def slowest_rank(samples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The samples of a multi-rank run (each with its `rank`) as one sample per timed call: the
    slowest rank's, whole (its time and its clocks), with `slowest_rank` naming it. Every rank
    times the same calls in the same rounds (the ranks stop together, collect.ranks.group.agree),
    and a collective is done only when the last rank is: the job's time of a call is its slowest
    rank's. Its `issue_ns` is the largest of its ranks' (the slowest host paces the collective,
    whichever rank's GPU finished last). Samples without a rank (one process) come back as they are."""
    if not any("rank" in s for s in samples):
        return [dict(s) for s in samples]
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    issued: dict[tuple[Any, ...], float] = {}
    for s in samples:
        key = tuple(s.get(k) for k in SAMPLE_KEYS)
        if key not in best or float(s["time_ns"]) > float(best[key]["time_ns"]):
            best[key] = dict(s, slowest_rank=s.get("rank"))
        x = s.get("issue_ns")
        if x is not None and x == x:
            issued[key] = max(issued.get(key, float("-inf")), float(x))
    for key, x in issued.items():
        best[key]["issue_ns"] = x
    return list(best.values())
