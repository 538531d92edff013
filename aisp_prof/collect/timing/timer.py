"""The one CUDA-event timer: pairs' variants (run, bench) and calibration probes use it.

`time_rounds` is the timer. A variant has three kinds of time (`collect.timing.samplers` says how each
is measured and why one timer cannot give all three): its GPU time per call, its latency per
call on an idle GPU, and its steady time per call back to back. Each round takes one sample of
every kind of every variant, the variants in ABBA order (in order, then reversed), the GPU's
clocks, power and temperature (collect.timing.sensors) read after each round; a ratio of two variants
is then measured side by side, under the same conditions. The L2 is flushed before each gpu and
latency sample (a memset over twice the L2, outside the events) and inputs are rotated among
several sets when one set would fit in L2, so repeats measure DRAM, not a warm cache. Sampling
stops once every median is known to the target precision, or the time budget is spent (past a floor
of rounds where the plan sets one: `SamplingPlan`).

Reference kernels (a device copy and a cuBLAS GEMM) can ride along, in rounds of their own:
when they move, the machine moved. Calibration probes use the queued design (all calls of one
launch in one block, one synchronize). The statistics are robust: the median and a spread (MAD)
that ignores stragglers. torch is imported lazily: only the GPU child times anything.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ...pairs import KernelPair
from ...stats import median_rel_halfwidth, summarize_times
from ..code.dynamo import stop_compile_workers
from .samplers import (KINDS, CudaDevice, Device, Hold, call_variant, gpu_round, latency_round, steady_calls,
                       steady_round, waits_for_gpu)
from .sensors import GpuSensor

log = logging.getLogger(__name__)
ROTATION_BUDGET_BYTES = 4 << 30    # at most this much extra memory for rotated input sets
MAX_INPUT_SETS = 8
REF_PREFIX = "ref:"
Launches = Mapping[str, Sequence[Callable[[], Any]]]
Observer = Callable[[str, bool], None]   # after each call: (variant, timed); collect.code.dynamo.CallObserver


FLOOR_CAP_BUDGETS = 5.0            # the floor's hard wall cap, in budgets (SamplingPlan.floor_cap_s)


@dataclass(frozen=True)
class SamplingPlan:
    """How long one process samples. The defaults suit kernels of 10 us to 100 ms.

    Sampling stops at the first round r >= `min_rounds` at which every median is known to
    `target_rel_ci`, or `budget_s` is spent, or `max_rounds` is reached. A slow round (issue 28:
    ch09.structured_sparsity_ffn, ~0.22 s) spends the budget in `min_rounds` rounds, whose intervals
    then straddle the gate's 2% margin every time (AMBIGUOUS). So where the budget runs out before
    `floor_rounds` rounds and the target is not yet met, sampling goes on until it is met or
    `floor_rounds` rounds are taken (0: no floor), but never past `floor_cap_s` of wall time. That
    cap defaults to FLOOR_CAP_BUDGETS (5) budgets, 10 s in the gate: the smallest whole multiple that
    fits the floor's 40 rounds at ffn's ~0.23 s a round (9 s; 4 budgets, 8 s, would stop it at ~35,
    short of the ~40-50 the replay says it needs), while a pair slower than ~0.25 s a round gets
    fewer rounds instead of an unbounded process (40 rounds of 1 s would eat the pair's whole 40-s
    chase budget). A target met before the budget is spent stops at `min_rounds` as without the floor."""

    min_rounds: int = 10
    max_rounds: int = 400
    budget_s: float = 4.0            # wall time of sampling in one process
    target_rel_ci: float = 0.0025    # stop when every median's 95% interval is within +-0.25%
    floor_rounds: int = 0            # where the budget runs out first: on to this many rounds (0: none)
    floor_cap_s: float | None = None  # ... but never past this wall time (None: FLOOR_CAP_BUDGETS x budget_s)
    warmup: int = 5
    flush_bytes: int = 0             # 0: no L2 flush
    interleaved: bool = True         # False: queue every call, synchronize once (fixed max_rounds)
    kinds: tuple[str, ...] = KINDS   # which times to take (collect.timing.samplers)

    def __post_init__(self) -> None:
        if self.floor_cap_s is None:      # stored resolved: a run's plan says the cap it ran under
            object.__setattr__(self, "floor_cap_s", FLOOR_CAP_BUDGETS * self.budget_s)

    def stops(self, rounds: int, elapsed_s: float, precise: bool) -> bool:
        """Whether sampling stops after `rounds` rounds, `elapsed_s` into it, every median within the
        target or not (`precise`). The budget stops it only once the floor is reached or the cap spent."""
        if rounds < self.min_rounds:
            return False
        if precise:
            return True
        cap_s = max(self.budget_s, self.floor_cap_s or 0.0)
        return elapsed_s > self.budget_s and (rounds >= self.floor_rounds or elapsed_s > cap_s)


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
                process: int = 0, observer: Observer | None = None, device: Device | None = None) -> list[dict[str, Any]]:
    """Time every variant of `launches` in ABBA rounds, each round one sample of every kind in
    `plan.kinds` (`collect.timing.samplers`: gpu, latency, steady); reference kernels (`ref:` names) get
    gpu samples only. No sample shares a queued block with another variant's calls. One
    dict per sample: process, round, slot, variant, kind, time_ns (per call) and the sensor's
    readings, taken once per round. `launches[v]` holds closures of v over rotated input sets.

    `observer`, when given, is called after every call with (variant, timed): it sees a recompile
    inside the timed phase. The ranks of a torchrun job stop at the same round (rank 0 decides,
    `ranks.agree`), make as many calls per steady sample (the most any rank wants,
    `ranks.agree_max`), and their gpu rounds are not held by a spin (each rank's would end at another
    moment, and a collective would wait for the latest)."""
    from ..ranks.group import agree, agree_max, in_group

    if not plan.interleaved:
        return _queued(launches, plan, device)
    dev = device or CudaDevice(plan.flush_bytes)
    names = [v for v in launches if not v.startswith(REF_PREFIX)]
    refs = [v for v in launches if v.startswith(REF_PREFIX)]
    untimed = (lambda v, _: observer(v, False)) if observer is not None else None
    for i in range(plan.warmup):
        for v in launches:
            call_variant(launches, v, i, untimed)
    stop_compile_workers()          # a first call that compiled: its workers must not run beside the timing
    joint = in_group()
    waits = {v: not joint and waits_for_gpu(dev, launches[v][0]) for v in names}
    estimate = {row["variant"]: row["time_ns"] for row in latency_round(dev, launches, names, 0, untimed)}
    calls = {v: agree_max(steady_calls(estimate[v])) for v in names}   # one count on every rank
    holds: dict[str, Hold] | None = None if joint else {}
    out: list[dict[str, Any]] = []
    series: dict[tuple[str, str], list[float]] = {}
    began_ns = dev.now_ns()                  # the device's host clock (a simulated one in the tests)
    for r in range(plan.max_rounds):
        order = round_order(names, r)
        rows = gpu_round(dev, launches, [v for v in order if not waits[v]], r, holds, observer) if "gpu" in plan.kinds else []
        rows += gpu_round(dev, launches, round_order(refs, r), r, holds)
        if "latency" in plan.kinds:
            rows += latency_round(dev, launches, order, r, observer)
        if "steady" in plan.kinds:
            rows += steady_round(dev, launches, order, r, calls, observer)
        reading = sensor.read() if sensor else {}
        for row in rows:
            row.update(process=process, **reading)
            series.setdefault((row["variant"], row["kind"]), []).append(row["time_ns"])
        out += rows
        if r + 1 >= plan.min_rounds and agree(plan.stops(r + 1, (dev.now_ns() - began_ns) / 1e9, all(
                median_rel_halfwidth(t) <= plan.target_rel_ci for t in series.values()))):
            break
    for row in out:
        row.setdefault("waits_for_gpu", waits.get(row["variant"], False))
    for v, hold in (holds or {}).items():
        if hold.discarded_blocks:
            log.info("%s: %d gpu blocks discarded, the host caught up with the spin", v, hold.discarded_blocks)
    return out


def _queued(launches: Launches, plan: SamplingPlan, device: Device | None) -> list[dict[str, Any]]:
    """The queued design (calibration probes, GPU-bound by construction): every call of one
    launch queued back to back with its events, one synchronize at the end."""
    dev = device or CudaDevice(plan.flush_bytes)
    names = list(launches)
    for i in range(plan.warmup):
        for v in names:
            call_variant(launches, v, i, None)
    dev.synchronize()
    pending = []
    for r in range(plan.max_rounds):
        for slot, v in enumerate(names):
            dev.flush()
            start = dev.record()
            call_variant(launches, v, r, None)
            pending.append((r, slot, v, start, dev.record()))
    dev.synchronize()
    return [{"process": 0, "round": r, "slot": slot, "variant": v, "kind": "gpu", "time_ns": dev.elapsed_ns(s, e)}
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
    launches = {v: [pair.variants[v](inputs) for inputs in input_sets] for v in variants}
    stop_compile_workers()
    return launches, input_sets


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
