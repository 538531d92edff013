"""Robust statistics of repeated timings: the median and a spread that ignores stragglers."""
from __future__ import annotations

import statistics
from typing import Sequence

MAD_TO_SIGMA = 1.4826   # for normally distributed noise, 1.4826 x MAD estimates the std deviation


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
