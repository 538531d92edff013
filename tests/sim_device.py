"""A host and a GPU on one simulated clock, for the timer's CPU tests (collect.timing.samplers.Device).

Host work moves the host clock; GPU work starts when both the host has issued it and the GPU has
finished what was queued before it; an event is stamped when the GPU reaches it. That is all a
CUDA stream does that the timer depends on, so the timer's designs can be tested without a GPU:
a variant is a closure of (host ns, GPU ns) steps.
"""
from __future__ import annotations

from typing import Callable


class SimDevice:
    """Implements collect.timing.samplers.Device on a simulated clock (ns)."""

    def __init__(self, issue_ns: float = 1_000.0, flush_ns: float = 0.0) -> None:
        self.host_ns = 0.0          # where the host is
        self.gpu_free_ns = 0.0      # when the GPU finishes everything queued so far
        self.issue_ns = issue_ns    # host cost of issuing one GPU operation (a launch, an event)
        self.flush_ns = flush_ns

    # what a variant does
    def host(self, ns: float) -> None:
        self.host_ns += ns

    def gpu(self, ns: float) -> float:
        """Queue `ns` of GPU work; returns when it will end."""
        self.host_ns += self.issue_ns
        start = max(self.host_ns, self.gpu_free_ns)
        self.gpu_free_ns = start + ns
        return self.gpu_free_ns

    def variant(self, host_ns: float, gpu_ns: float, launches: int = 1, syncs: bool = False) -> Callable[[], None]:
        """A call: `launches` kernels, each after host_ns / launches of host work; `syncs`: the
        call waits for the GPU after each kernel (a synchronous copy)."""
        def call() -> None:
            for _ in range(launches):
                self.host(host_ns / launches)
                self.gpu(gpu_ns / launches)
                if syncs:
                    self.synchronize()
        return call

    # collect.timing.samplers.Device
    def record(self) -> float:
        return self.gpu(0.0)

    def elapsed_ns(self, start: float, end: float) -> float:
        return end - start

    def done(self, event: float) -> bool:
        return event <= self.host_ns

    def synchronize(self) -> None:
        self.host_ns = max(self.host_ns, self.gpu_free_ns)

    def spin(self, ns: float) -> None:
        self.gpu(ns)

    def flush(self) -> None:
        if self.flush_ns:
            self.gpu(self.flush_ns)

    def now_ns(self) -> int:
        return int(self.host_ns)
