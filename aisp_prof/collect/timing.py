"""The one CUDA-event timer: pairs' variants (run, bench) and calibration probes use it.

`time_rounds` is the timer. Each call is one sample: CUDA events around it, optionally the L2
flushed before it (a memset over twice the L2, outside the events) and inputs rotated among
several sets when one set would fit in L2, so repeats measure DRAM, not a warm cache.

Two designs share it:
  - interleaved (`aisp-prof run`, `bench run`): the variants of a pair take turns in ABBA rounds
    (in order, then reversed), queued a few rounds at a time, the GPU's clocks, power and
    temperature (collect.sensors) read after each block; a ratio of two variants is then
    measured side by side, under the same conditions. Sampling stops once every variant's
    median is known to the target precision, or the time budget is spent.
  - queued (calibration probes): all calls of one launch in one block, one synchronize at the end.
Reference kernels (a device copy and a cuBLAS GEMM) can ride along: when they move, the machine
moved. The statistics are robust: the median and a spread (MAD) that ignores stragglers. torch
is imported lazily: only the GPU child times anything.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..pairs import KernelPair
from .sensors import GpuSensor

ROTATION_BUDGET_BYTES = 4 << 30    # at most this much extra memory for rotated input sets
MAX_INPUT_SETS = 8
MAD_TO_SIGMA = 1.4826              # for normally distributed noise, 1.4826 x MAD estimates the std deviation
REF_PREFIX = "ref:"
ROUNDS_PER_BLOCK = 4               # interleaved rounds queued between two synchronizes
Launches = Mapping[str, Sequence[Callable[[], Any]]]
Observer = Callable[[str, bool], None]   # after each call: (variant, timed); collect.dynamo.CallObserver


@dataclass(frozen=True)
class SamplingPlan:
    """How long one process samples. The defaults suit kernels of 10 us to 100 ms."""

    min_rounds: int = 10
    max_rounds: int = 400
    budget_s: float = 4.0            # wall time of sampling in one process
    target_rel_ci: float = 0.0025    # stop when every median's 95% interval is within +-0.25%
    warmup: int = 5
    flush_bytes: int = 0             # 0: no L2 flush
    interleaved: bool = True         # False: queue every call, synchronize once (fixed max_rounds)


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


def round_order(names: Sequence[str], round_index: int) -> list[str]:
    """ABBA: the variants in order on even rounds, reversed on odd ones."""
    return list(names) if round_index % 2 == 0 else list(reversed(names))


def input_sets_needed(working_set_bytes: int, l2_bytes: int) -> int:
    """How many input sets to rotate through so that consecutive calls don't share L2 lines."""
    if working_set_bytes <= 0 or working_set_bytes >= 2 * l2_bytes:
        return 1
    wanted = math.ceil(2 * l2_bytes / working_set_bytes) + 1
    affordable = max(1, ROTATION_BUDGET_BYTES // working_set_bytes)
    return int(min(wanted, affordable, MAX_INPUT_SETS))


def time_rounds(launches: Launches, plan: SamplingPlan, sensor: GpuSensor | None = None,
                process: int = 0, observer: Observer | None = None) -> list[dict[str, Any]]:
    """Time every variant of `launches` in rounds; one dict per call (process, round, slot,
    variant, time_ns and the sensor's readings). `launches[v]` holds one or more closures of v,
    taken in rotation.

    Calls are queued a block of rounds at a time and the host synchronizes once per block: with
    a synchronize per call the GPU would finish the flush and wait for the host to launch the
    next kernel inside the timed region (a Triton launch costs tens of microseconds of Python),
    and that wait varied by a quarter between processes on an H200. An untimed call opens each
    block, so the GPU is busy while the host queues the first timed one. The sensor is read after
    each block (clocks move over milliseconds, a block lasts a few). `observer`, when given, is
    called after every call with (variant, timed): it sees a recompile inside the timed phase
    (timed: False for the warm-up calls). The ranks of a torchrun job stop at the same round:
    rank 0's stop decision is everyone's (`ranks.agree`)."""
    import torch

    from .ranks import agree

    names = list(launches)
    flush = torch.empty(plan.flush_bytes // 4, dtype=torch.int32, device="cuda") if plan.flush_bytes else None
    for i in range(plan.warmup):
        for v in names:
            launches[v][i % len(launches[v])]()
            if observer is not None:
                observer(v, False)
    torch.cuda.synchronize()
    block = ROUNDS_PER_BLOCK if plan.interleaved else plan.max_rounds
    out: list[dict[str, Any]] = []
    times: dict[str, list[float]] = {v: [] for v in names}
    began = time.monotonic()
    for first in range(0, plan.max_rounds, block):
        rounds = range(first, min(first + block, plan.max_rounds))
        rows = _timed_block(launches, names, rounds, plan.interleaved, flush, sensor, process, observer)
        for row in rows:
            times[row["variant"]].append(row["time_ns"])
        out += rows
        if plan.interleaved and rounds[-1] + 1 >= plan.min_rounds and agree(time.monotonic() - began > plan.budget_s or all(
                median_rel_halfwidth(t) <= plan.target_rel_ci for t in times.values())):
            break
    return out


def _timed_block(launches: Launches, names: list[str], rounds: range, interleaved: bool, flush: Any,
                 sensor: GpuSensor | None, process: int, observer: Observer | None = None) -> list[dict[str, Any]]:
    """One block: an untimed opening call, then every round's calls queued with their events;
    one synchronize, one sensor reading for the block."""
    import torch

    order = round_order(names, rounds[0]) if interleaved else names
    launches[order[0]][rounds[0] % len(launches[order[0]])]()          # keeps the GPU busy while we queue
    if observer is not None:
        observer(order[0], True)
    pending = []
    for r in rounds:
        for slot, v in enumerate(round_order(names, r) if interleaved else names):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if flush is not None:
                flush.zero_()
            start.record()
            launches[v][r % len(launches[v])]()
            end.record()
            if observer is not None:     # outside the events: the GPU does not wait for it
                observer(v, True)
            pending.append((r, slot, v, start, end))
    torch.cuda.synchronize()
    reading = sensor.read() if sensor else {}
    return [{"process": process, "round": r, "slot": slot, "variant": v, "time_ns": s.elapsed_time(e) * 1e6, **reading}
            for r, slot, v, s, e in pending]


def time_calls(launches: Sequence[Callable[[], Any]], repeats: int, warmup: int,
               flush_bytes: int = 0) -> dict[str, float]:
    """The queued design for one launch: summary statistics of `repeats` calls after `warmup`."""
    plan = SamplingPlan(max_rounds=repeats, warmup=warmup, flush_bytes=flush_bytes, interleaved=False)
    stats = summarize_times([s["time_ns"] for s in time_rounds({"x": launches}, plan)])
    stats.update(warmup=warmup, l2_flushed=bool(flush_bytes))
    return stats


def reference_launches() -> dict[str, list[Callable[[], Any]]]:
    """A 256 MiB device copy (DRAM bound) and a 4096^3 bf16 GEMM (tensor-core bound, clock and
    power sensitive): when they move, the machine moved, whatever the code did."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(64 << 20, device="cuda", generator=gen)
    y = torch.empty_like(x)
    a, b = (torch.randn(4096, 4096, device="cuda", generator=gen, dtype=torch.bfloat16) for _ in range(2))
    c = torch.empty(4096, 4096, device="cuda", dtype=torch.bfloat16)
    return {f"{REF_PREFIX}copy": [lambda: y.copy_(x)], f"{REF_PREFIX}gemm_bf16": [lambda: torch.matmul(a, b, out=c)]}


def pair_launches(pair: KernelPair, variants: Sequence[str], sizes: dict[str, int], seed: int = 0) -> tuple[Launches, list]:
    """Each variant's closures over rotated input sets (enough that calls don't share L2), and
    the input sets, which the caller keeps alive while timing (closures may hold raw pointers)."""
    import torch

    l2_bytes = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
    input_sets = [pair.make_inputs(sizes, "cuda", seed + i) for i in range(input_sets_needed(int(pair.bytes(sizes)), l2_bytes))]
    return {v: [pair.variants[v](inputs) for inputs in input_sets] for v in variants}, input_sets


def l2_flush_bytes() -> int:
    """Twice the L2: a memset that size leaves none of the previous call's lines in it."""
    import torch

    return 2 * int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))


def time_variant(pair: KernelPair, variant: str, sizes: dict[str, int], *, repeats: int = 50,
                 warmup: int = 5, flush_l2: bool = True, seed: int = 0) -> dict[str, Any]:
    """One variant alone, queued calls, L2 flushed per call (the GPU scripts' timer)."""
    launches, input_sets = pair_launches(pair, [variant], sizes, seed)
    stats = time_calls(launches[variant], repeats, warmup, flush_bytes=l2_flush_bytes() if flush_l2 else 0)
    stats["input_sets"] = len(input_sets)
    return stats
