"""The kernel that holds the stream while the host queues a round of gpu samples (collect.timing.samplers).

It has to keep the GPU busy, not merely blocked. `torch.cuda._sleep` spins one thread: the GPU
looks idle, lowers its SM clock, and the first work queued behind it runs while the clock climbs
back. On an H200 that made ch10.stream_concurrency's baseline (128 short kernels) 712-749 us when
it came first after the sleep and 445-448 us when it came second, and `_sleep` itself ran at
0.24 cycles per ns (the idle clock), so a cycle count is no measure of time either. This kernel
spins every SM, two programs each, on the global nanosecond timer until `hold_ns` have passed:
the clock stays where busy work keeps it, and the hold lasts its time whatever the clock.
Triton is imported when the kernel is first built; without it (or without `globaltimer` in its
CUDA extras) there is no busy hold and the caller falls back on `_sleep`.
"""
from __future__ import annotations

from typing import Callable

PROGRAMS_PER_SM = 2


def busy_hold(sm_count: int) -> Callable[[float], None] | None:
    """A function that queues a `hold_ns`-long busy kernel on the current stream, or None."""
    try:
        import torch
        import triton
        import triton.language as tl
        from triton.language.extra.cuda import globaltimer
    except ImportError:
        return None

    @triton.jit
    def _hold(hold_ns, out_ptr):
        start = globaltimer()
        now = start
        while now - start < hold_ns:
            now = globaltimer()
        tl.store(out_ptr + tl.program_id(0), (now - start).to(tl.int64))

    grid = (max(1, sm_count) * PROGRAMS_PER_SM,)
    out = torch.empty(grid[0], dtype=torch.int64, device="cuda")

    def hold(hold_ns: float) -> None:
        _hold[grid](int(hold_ns), out, num_warps=4)

    try:
        hold(1_000.0)                 # compiles it now, not inside the first round
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - a Triton that cannot build it: the caller falls back
        return None
    return hold

