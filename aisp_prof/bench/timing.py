"""Timing a variant the way a benchmark should (runs in the GPU child process).

CUDA events around each call, after warm-up; calls queued back to back so host launch latency
stays out; L2 flushed before every call (a memset over twice the L2, outside the events) and
inputs rotated among several sets when one set would fit in L2, so repeats measure DRAM, not a
warm cache. torch is imported lazily: this module is only used where a GPU is.
"""
from __future__ import annotations

import math
from typing import Any

from ..pairs import KernelPair
from .stats import summarize_times

ROTATION_BUDGET_BYTES = 4 << 30    # at most this much extra memory for rotated input sets
MAX_INPUT_SETS = 8


def input_sets_needed(working_set_bytes: int, l2_bytes: int) -> int:
    """How many input sets to rotate through so that consecutive calls don't share L2 lines."""
    if working_set_bytes <= 0 or working_set_bytes >= 2 * l2_bytes:
        return 1
    wanted = math.ceil(2 * l2_bytes / working_set_bytes) + 1
    affordable = max(1, ROTATION_BUDGET_BYTES // working_set_bytes)
    return int(min(wanted, affordable, MAX_INPUT_SETS))


def time_variant(pair: KernelPair, variant: str, sizes: dict[str, int], *, repeats: int = 50,
                 warmup: int = 5, flush_l2: bool = True, seed: int = 0) -> dict[str, Any]:
    import torch

    props = torch.cuda.get_device_properties(0)
    l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
    n_sets = input_sets_needed(int(pair.bytes(sizes)), l2_bytes)
    # the input sets stay referenced for the whole timing: a closure that kept only raw
    # pointers would otherwise read freed memory (reused by the flush buffer below)
    input_sets = [pair.make_inputs(sizes, "cuda", seed + i) for i in range(n_sets)]
    launches = [pair.variants[variant](inputs) for inputs in input_sets]
    flush = torch.empty(2 * l2_bytes // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    for i in range(warmup):
        launches[i % n_sets]()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(repeats)]
    for i, (start, end) in enumerate(events):
        if flush is not None:
            flush.zero_()
        start.record()
        launches[i % n_sets]()
        end.record()
    torch.cuda.synchronize()
    times_ns = [start.elapsed_time(end) * 1e6 for start, end in events]
    stats = summarize_times(times_ns)
    stats.update(input_sets=n_sets, l2_flushed=flush is not None, warmup=warmup)
    return stats
