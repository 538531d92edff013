"""The three times of a variant, each measured so that what ran before it cannot change it.

A call of a variant costs the host (Python, the driver, launches) and the GPU (kernels, copies).
One timer cannot say both: CUDA events around a call queued behind other work time the GPU, the
same events around a call on an idle GPU time the host's launches too. The old design queued a
variant behind two ~180 us reference kernels or at the head of a block, wherever its turn fell,
and a host-bound variant was 125 us in one position and 370-950 us in the other (issue 28). So
each kind of time gets its own measurement, and none depends on position:

  gpu      GPU time per call. A spin kernel holds the stream while the host queues the call (L2
           flush, start event, call, end event), so the GPU runs it with no host in between:
           nvbench's blocking kernel, busy on every SM (collect.timing.hold). Each variant has a block
           of its own: what is queued behind a call on other streams slows it (`gpu_round`). A
           block whose spin ended before the host finished queueing (the host caught up) is
           discarded and the next spin is made longer. A variant that waits for the GPU inside
           its call (a synchronous copy, `.item()`) cannot be queued ahead at all
           (`waits_for_gpu`): it has no gpu time here; nsys still measures its GPU busy time.
  latency  one call on an idle GPU, synchronized before and after, L2 flushed, after an untimed
           call of the same variant: CUDA events from the moment the host issues the call to its
           last GPU work (the book's harness times this way), the host clock's wall time beside it.
  steady   back to back: `calls` calls after a first one that fills the queue, one pair of
           events around them, per call. A GPU-bound variant runs at its GPU time, a host-bound
           one at the host's pace (no flush: a loop of calls in a real program has none). Beside it,
           `issue_ns`: what the host needs to issue one call, the lesser of the host clock around the
           first call (an idle queue; a first call after a synchronize can cost more: int8's NCCL
           calls on 2x H200, ~350 us against ~150 in a loop) and around the loop, per call (which a
           full launch queue would stretch to the GPU's pace). Where it is most of the steady time
           the host sets the pace, and the steady time follows the host's jitter
           (ch14.quantized_allreduce int8_overlap on 2x H200: ~530 us to issue, ~637 us of GPU work,
           600-1300 us back to back).

The device is a parameter (`Device`): `CudaDevice` is torch.cuda; tests pass a simulated one.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence

KINDS = ("gpu", "latency", "steady")
HOLD_MIN_NS = 200_000.0        # the shortest spin that holds a round
HOLD_MAX_NS = 2e9              # a round the host cannot queue in 2 s is not held at all
WAIT_PROBE_NS = 50e6           # a call that returns while a 50 ms spin runs did not wait for the GPU
STEADY_SPAN_NS = 1e6           # a steady sample spans about this much time
STEADY_CALLS = (2, 200)        # ... in this many calls at least and at most
Launches = Mapping[str, Sequence[Callable[[], Any]]]
Observer = Callable[[str, bool], None]


class Device(Protocol):
    """What the samplers need of a GPU: timestamps on its stream, a host clock, a spin."""

    def record(self) -> Any: ...                       # an event recorded on the current stream
    def elapsed_ns(self, start: Any, end: Any) -> float: ...
    def done(self, event: Any) -> bool: ...            # has the GPU passed this event?
    def synchronize(self) -> None: ...
    def spin(self, ns: float) -> None: ...             # hold the stream about this long
    def flush(self) -> None: ...                       # evict the L2 (no-op without a buffer)
    def now_ns(self) -> int: ...                       # the host clock


class CudaDevice:
    """torch.cuda on the current stream; `flush_bytes` of memset evict the L2 before a call. The
    spin is a busy kernel on every SM (collect.timing.hold) where Triton can build one, else
    `torch.cuda._sleep` (`hold_kernel` says which)."""

    def __init__(self, flush_bytes: int = 0) -> None:
        import torch

        from .hold import busy_hold

        self._torch = torch
        self._flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda") if flush_bytes else None
        self._busy = busy_hold(torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count)
        self.hold_kernel = "busy_hold" if self._busy is not None else "cuda_sleep"
        self._cycles_per_ns = self._calibrate() if self._busy is None else 0.0

    def _calibrate(self) -> float:
        """SM cycles per ns of `_sleep`, from one timed 2M-cycle spin (the clock may move later:
        a spin that ends early is caught by `done`, not trusted)."""
        self.synchronize()
        start = self.record()
        self._torch.cuda._sleep(2_000_000)
        end = self.record()
        self.synchronize()
        return 2_000_000 / max(self.elapsed_ns(start, end), 1.0)

    def record(self) -> Any:
        event = self._torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def elapsed_ns(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end)) * 1e6

    def done(self, event: Any) -> bool:
        return bool(event.query())

    def synchronize(self) -> None:
        self._torch.cuda.synchronize()

    def spin(self, ns: float) -> None:
        if self._busy is not None:
            self._busy(ns)
        else:
            self._torch.cuda._sleep(max(1, int(ns * self._cycles_per_ns)))

    def flush(self) -> None:
        if self._flush is not None:
            self._flush.zero_()

    def now_ns(self) -> int:
        return time.perf_counter_ns()


@dataclass
class Hold:
    """How long a variant's next gpu block is held: twice what the host took to queue the last
    one, and longer after a block the spin failed to hold."""

    ns: float = 1e6
    discarded_blocks: int = 0

    def after(self, queue_ns: float, held: bool) -> None:
        if held:
            self.ns = min(HOLD_MAX_NS, max(HOLD_MIN_NS, 2.0 * queue_ns, self.ns * 0.9))
        else:
            self.discarded_blocks += 1
            self.ns = min(HOLD_MAX_NS, max(4.0 * queue_ns, 2.0 * self.ns))


def call_variant(launches: Launches, v: str, i: int, observer: Observer | None, timed: bool = True) -> None:
    """Call v's closure of input set i (rotating), then tell the observer."""
    launches[v][i % len(launches[v])]()
    if observer is not None:       # outside the events: the GPU does not wait for it
        observer(v, timed)


def waits_for_gpu(dev: Device, launch: Callable[[], Any], hold_ns: float = WAIT_PROBE_NS) -> bool:
    """Whether `launch` waits for the GPU inside its call: behind a `hold_ns` spin, a call that
    only queues work returns while the spin still runs; one that synchronizes returns after it."""
    dev.synchronize()
    dev.spin(hold_ns)
    marker = dev.record()
    launch()
    waited = dev.done(marker)
    dev.synchronize()
    return waited


def gpu_round(dev: Device, launches: Launches, order: Sequence[str], r: int, holds: dict[str, Hold] | None,
              observer: Observer | None = None) -> list[dict[str, Any]]:
    """One gpu sample of each variant in `order`, each in a block of its own: the spin (its
    `holds[v]`; None: not held, for the ranks of a job, whose spins would end apart), the L2
    flush, the start event, the call, the end event. A block the spin did not hold is dropped.

    One variant per block, because what is queued after a call changes it: on an H200,
    ch10.stream_concurrency's baseline (128 kernels on one stream) ran 744 us with streams32's
    fork and join over 32 streams queued behind it in the same block, and 461 us alone, after
    itself, after streams32, or after three flushes."""
    rows = []
    for slot, v in enumerate(order):
        hold = holds.setdefault(v, Hold()) if holds is not None else None
        dev.synchronize()
        began = dev.now_ns()
        if hold is not None:
            dev.spin(hold.ns)
        marker = dev.record()
        dev.flush()
        start = dev.record()
        call_variant(launches, v, r, observer)
        end = dev.record()
        queued_ns, held = dev.now_ns() - began, hold is None or not dev.done(marker)
        dev.synchronize()
        if hold is not None:
            hold.after(queued_ns, held)
        if held:
            rows.append({"round": r, "slot": slot, "variant": v, "kind": "gpu", "time_ns": dev.elapsed_ns(start, end),
                         "queue_ns": float(queued_ns)})
    return rows


def latency_round(dev: Device, launches: Launches, order: Sequence[str], r: int,
                  observer: Observer | None = None) -> list[dict[str, Any]]:
    """One call of each variant on an idle GPU with a flushed L2: events and the host clock. An
    untimed call of the same variant goes first: the host's caches then hold this variant's
    state, not the one before it (ch14.gpu_quantization's compiled call took 197 us after
    itself and 254 us right after the host-side baseline's 16 row round trips)."""
    rows = []
    for slot, v in enumerate(order):
        call_variant(launches, v, r + 1, observer)
        dev.flush()
        dev.synchronize()
        began = dev.now_ns()
        start = dev.record()
        call_variant(launches, v, r, observer)
        end = dev.record()
        dev.synchronize()
        rows.append({"round": r, "slot": slot, "variant": v, "kind": "latency",
                     "time_ns": dev.elapsed_ns(start, end), "wall_ns": float(dev.now_ns() - began)})
    return rows


def steady_round(dev: Device, launches: Launches, order: Sequence[str], r: int, calls: Mapping[str, int],
                 observer: Observer | None = None) -> list[dict[str, Any]]:
    """`calls[v]` calls of each variant back to back after one that fills the queue, per call, and
    the host's time to issue one call (`issue_ns`: the first's or the loop's per call, the lesser)."""
    rows = []
    for slot, v in enumerate(order):
        dev.synchronize()
        n = calls[v]
        began = dev.now_ns()
        call_variant(launches, v, r * (n + 1), observer)
        first_ns = dev.now_ns() - began
        start = dev.record()
        began = dev.now_ns()
        for i in range(n):
            call_variant(launches, v, r * (n + 1) + 1 + i, observer)
        looped_ns = (dev.now_ns() - began) / n
        end = dev.record()
        dev.synchronize()
        rows.append({"round": r, "slot": slot, "variant": v, "kind": "steady",
                     "time_ns": dev.elapsed_ns(start, end) / n, "calls": n, "issue_ns": float(min(first_ns, looped_ns))})
    return rows


def steady_calls(latency_ns: float) -> int:
    """Calls per steady sample: about STEADY_SPAN_NS of them, within STEADY_CALLS."""
    lo, hi = STEADY_CALLS
    return int(min(hi, max(lo, math.ceil(STEADY_SPAN_NS / max(latency_ns, 1.0)))))
