"""Chapter 10: many small independent kernels, one stream vs 32 streams.

The book calls this pair `pipeline_3stage`, but there is no pipeline in it (no stages, no shared
memory): it is the default stream against 32 CUDA streams, so it is named for what it is here.

The work: x is [segments, seg_len] fp32 (128 x 65,536 = 8M floats, 32 MiB, by default) and one
kernel launch per segment computes, per element, the book's 8 rounds of

    v <- sin(v) cos(v) + tanh(v / 2),   v0 = x,   y = v8

(the spec's "8 x (sin cos + tanh)" is this 8-round loop, not a multiplication by 8).

  baseline   the 128 launches one after another on the caller's stream (the book's default
             stream; here torch's current stream, so the timer sees them).
  streams32  the same 128 launches round-robin over 32 streams, created once in the factory
             (never in the timed call) with their events: the call records an event on the
             caller's stream (cudaEventRecord) and makes every worker stream wait on it
             (cudaStreamWaitEvent: the fork), launches, then records one event per worker after
             its launches and makes the caller's stream wait on each (the join). So everything queued on the caller's stream afterwards, a CUDA-event
             timer included, covers all 128 kernels. The streams and events are freed when the
             closure is garbage-collected (a weakref.finalize on it; never at interpreter exit,
             when the CUDA context may already be gone: a pool alive then is left to the driver).
  `--sizes streams=N` changes the pool size (the name stays streams32).

Why concurrency helps: a 65,536-element segment is 256 blocks of 256 threads, while an H100 holds
132 SMs x 2048 threads = 1056 such blocks at once; one launch fills a quarter of the GPU and the
next waits for its tail. On 32 streams up to 4 kernels' blocks share the GPU, and one kernel's
tail overlaps the next one's start.

Predicted profile: nsys shows 128 kernels serialized on one stream in the baseline and
overlapping across 32 streams in streams32 (the same 128 kernels, the same per-kernel ncu counters,
the same total DRAM bytes, 2 x 4 x 8M = 64 MiB); the call's duration falls while each kernel's own
duration rises a little (they share SMs); achieved occupancy per kernel stays ~25% of the GPU but
SM utilization over the call goes up. B200 ratio (spec 3.2): 1.436x (0.787 -> 0.5479 ms).

Analytic counts, one call: 4 FLOPs per element per round (v / pi, s * c, v / 2, the add; the
sin/cos/tanh evaluations not counted) = 32 FLOPs per element, 268 MFLOP; 8 bytes per element
(x read once, y written once) = 64 MiB.

Correctness: x ~ N(0, 1); reference: the 8 rounds in float64. The kernel takes sin and cos from
sincospif(v / pi) (exact argument reduction, no local-memory path) and accurate tanhf; a float32
CPU emulation drifts from float64 by ~4e-8 (relative norm), so the tolerance is 1e-5. Small size
for the sanitizers: `--sizes segments=8,seg_len=4096` (any seg_len >= 1 works; a partial last block is
masked).
"""
from __future__ import annotations

import ctypes
import weakref
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels.binding import CudaLibrary
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

CUDA_SOURCE = Path(__file__).with_name("stream_concurrency.cu")
ARCH = "sm_90a"
DEFAULT_SIZES = {"segments": 128, "seg_len": 65536, "streams": 32}
SMALL_SIZES = {"segments": 8, "seg_len": 4096, "streams": 32}     # for compute-sanitizer
SIZE_RULES = (SizeRule("streams", maximum=1024, why="the pool of streams the factory creates"),)
ROUNDS = 8
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built on first use, never on import
    "aisp_stream_serial": ((ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p),
                           ctypes.c_int),
    "aisp_stream_pool_create": ((ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)), ctypes.c_int),
    "aisp_stream_pool_launch": ((ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_void_p), ctypes.c_int),
    "aisp_stream_pool_destroy": ((ctypes.c_void_p,), ctypes.c_int),
}, error_string="aisp_stream_error_string", arch=ARCH)


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x ~ N(0, 1) of shape [segments, seg_len] fp32, seeded; `streams` for the pool."""
    segments, seg_len = int(sizes["segments"]), int(sizes["seg_len"])
    streams = int(sizes.get("streams", 32))
    if segments < 1 or seg_len < 1 or segments * seg_len >= 2**31:
        raise ValueError(f"segments={segments}, seg_len={seg_len}: both must be >= 1, product < 2^31")
    if not 1 <= streams <= 1024:
        raise ValueError(f"streams={streams}: must be in 1..1024")
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(segments, seg_len, generator=gen, device=device, dtype=torch.float32)
    return {"x": x, "streams": streams}


def _prepare(inputs: Inputs, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    x = inputs["x"]
    if not x.is_cuda:
        raise RequirementError(f"ch10.stream_concurrency {name} variant needs a CUDA tensor (run on a GPU)")
    if x.dtype != torch.float32 or x.dim() != 2 or not x.is_contiguous():
        raise ValueError("x must be a contiguous [segments, seg_len] float32 tensor")
    LIBRARY.load()                     # build here, outside the timed call
    return x, torch.empty_like(x)


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """One launch per segment, in order, on the caller's stream."""
    x, y = _prepare(inputs, "baseline")
    segments, seg_len = x.shape

    def launch() -> torch.Tensor:
        LIBRARY.call("aisp_stream_serial", x.data_ptr(), y.data_ptr(), segments, seg_len,
                     torch.cuda.current_stream().cuda_stream)
        return y

    return launch


def _destroy_pool(handle: int) -> None:
    LIBRARY.call("aisp_stream_pool_destroy", handle)


def streams32(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The same launches round-robin over a pool of streams (32 by default), forked from and
    joined back into the caller's stream with events."""
    x, y = _prepare(inputs, "streams32")
    segments, seg_len = x.shape
    handle = ctypes.c_void_p()
    LIBRARY.call("aisp_stream_pool_create", int(inputs.get("streams", 32)), ctypes.byref(handle))
    pool = handle.value

    def launch() -> torch.Tensor:
        LIBRARY.call("aisp_stream_pool_launch", pool, x.data_ptr(), y.data_ptr(), segments, seg_len,
                     torch.cuda.current_stream().cuda_stream)
        return y

    # The pool lives as long as the closure; not at exit (the CUDA context may be gone by then).
    launch.pool_finalizer = weakref.finalize(launch, _destroy_pool, pool)  # type: ignore[attr-defined]
    launch.pool_finalizer.atexit = False  # type: ignore[attr-defined]
    return launch


def step(v: torch.Tensor) -> torch.Tensor:
    """One round, in v's dtype."""
    return torch.sin(v) * torch.cos(v) + torch.tanh(0.5 * v)


def reference(inputs: Inputs) -> torch.Tensor:
    """The 8 rounds in float64 on x's device."""
    v = inputs["x"].double()
    for _ in range(ROUNDS):
        v = step(v)
    return v


def flops(sizes: Mapping[str, int]) -> int:
    """4 FLOPs per element per round (sin/cos/tanh evaluations not counted), 8 rounds."""
    return 4 * ROUNDS * sizes["segments"] * sizes["seg_len"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """x read once and y written once, fp32."""
    return 8 * sizes["segments"] * sizes["seg_len"]


PAIR = KernelPair(
    name="ch10.stream_concurrency",
    chapter=10,
    lesson="128 small independent kernels each fill a quarter of the GPU; spread over 32 streams they "
           "overlap instead of waiting for each other's tails.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "streams32": streams32},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=1e-5,
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0),
                          note="built for sm_90a (Hopper) only; the book's B200 build is the one to run elsewhere"),
    variant_needs={"baseline": ("gpu", "nvcc"), "streams32": ("gpu", "nvcc")},
    book=Book("streams32", 1.436, "spec §3.2 pipeline_3stage_cuda",
              off_reason="the gain is 128 short kernels overlapping their tails and launches on 32 streams: it "
                         "follows the host's launch rate and the timer (GPU busy time barely moves)"),
)
