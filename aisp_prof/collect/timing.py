"""The one CUDA-event timer: pairs' variants (check child) and calibration probes use it.

CUDA events around each call, after warm-up; calls queued back to back so host launch latency
stays out; optionally the L2 is flushed before every call (a memset over twice the L2, outside
the events) and inputs rotated among several sets when one set would fit in L2, so repeats
measure DRAM, not a warm cache. The statistics are robust: the median, and a spread (MAD)
that ignores stragglers. torch is imported lazily: only the GPU child times anything.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Callable, Sequence

from ..pairs import KernelPair

ROTATION_BUDGET_BYTES = 4 << 30    # at most this much extra memory for rotated input sets
MAX_INPUT_SETS = 8
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


def input_sets_needed(working_set_bytes: int, l2_bytes: int) -> int:
    """How many input sets to rotate through so that consecutive calls don't share L2 lines."""
    if working_set_bytes <= 0 or working_set_bytes >= 2 * l2_bytes:
        return 1
    wanted = math.ceil(2 * l2_bytes / working_set_bytes) + 1
    affordable = max(1, ROTATION_BUDGET_BYTES // working_set_bytes)
    return int(min(wanted, affordable, MAX_INPUT_SETS))


def time_calls(launches: Sequence[Callable[[], Any]], repeats: int, warmup: int,
               flush_bytes: int = 0) -> dict[str, float]:
    """CUDA-event time of each of `repeats` calls (launches taken in rotation), after `warmup`
    calls; with `flush_bytes`, a buffer that large is zeroed before each call, outside the events."""
    import torch

    flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda") if flush_bytes else None
    for i in range(warmup):
        launches[i % len(launches)]()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    for i, (start, end) in enumerate(events):
        if flush is not None:
            flush.zero_()
        start.record()
        launches[i % len(launches)]()
        end.record()
    torch.cuda.synchronize()
    stats = summarize_times([start.elapsed_time(end) * 1e6 for start, end in events])
    stats.update(warmup=warmup, l2_flushed=flush is not None)
    return stats


def time_variant(pair: KernelPair, variant: str, sizes: dict[str, int], *, repeats: int = 50,
                 warmup: int = 5, flush_l2: bool = True, seed: int = 0) -> dict[str, Any]:
    """A pair's variant on fresh inputs (rotated where one set fits in L2), L2 flushed per call."""
    import torch

    props = torch.cuda.get_device_properties(0)
    l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
    n_sets = input_sets_needed(int(pair.bytes(sizes)), l2_bytes)
    # the input sets stay referenced for the whole timing: a closure that kept only raw
    # pointers would otherwise read freed memory (reused by the flush buffer)
    input_sets = [pair.make_inputs(sizes, "cuda", seed + i) for i in range(n_sets)]
    launches = [pair.variants[variant](inputs) for inputs in input_sets]
    stats = time_calls(launches, repeats, warmup, flush_bytes=2 * l2_bytes if flush_l2 else 0)
    stats["input_sets"] = n_sets
    del input_sets
    return stats
