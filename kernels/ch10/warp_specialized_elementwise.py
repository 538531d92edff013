"""Chapter 10: an elementwise kernel with warp roles, synchronous staging vs a 2-stage
cuda::pipeline (the book's `warp_specialized_pipeline_enhanced` pair, renamed for what it computes).

The operation: C = sqrt(A^2 + B^2) elementwise over `tiles` tiles of 32 x 32 fp32 (default
tiles = 4096, the book's count on both H100 and B200: A, B and C are 16 MiB each, 48 MiB per
call). A block of the grid min(tiles, 256) has 96 threads (3 warps) and takes tiles blockIdx.x,
blockIdx.x + 256, ... (16 each at the default size).

What the book's pair really does (spec 2.1; B200 0.101 -> 0.0662 ms, 1.527x; a warm-up, then 10
timed launches averaged): the tile edge is picked at runtime from {32, 16, 8} by the shared
memory budget (32 on H100 and B200; fixed at 32 here), tiles = min(16384, max(4096, 512 x max
cluster size)) = 4096. "Enhanced" means that runtime tile choice: the work is a plain
sqrt(a^2 + b^2) per element, and the optimized side's pipeline is one the whole block produces into:
  baseline   A, B, C one 4 KiB buffer each; warp 0 copies A and B with 4-byte loads,
             __syncthreads, warp 1 computes, __syncthreads, warp 2 stores, __syncthreads.
  optimized  a unified 2-stage block-scope cuda::pipeline: ALL 96 threads issue block-collective
             cuda::memcpy_async (cp.async) of the next tiles and all consume; warp 1 computes,
             warp 2 stores, with block barriers between the roles.
The book's pipeline use is correct (every thread calls every pipeline function, the barrier
counts are the block size). This port (warp_specialized_elementwise.cu) keeps both schedules:
  baseline   the book's.
  pipelined  the book's optimized with its five block barriers per tile cut to one: consumer_wait
             already orders the copies for every thread, C has two stages so the store of tile i
             overlaps the compute of tile i+1, and tile i+2 is issued into tile i's stage right
             after the compute -> store barrier (16-byte cp.async, aligned_size_t<16>, L1
             bypassed). 24 KiB of shared memory per block.
  The baseline's copies are 4-byte loads, the pipelined ones 16-byte cp.async (as in the book).

Predicted profile (H100 SXM, 3.35 TB/s):
  - The DRAM floor: 48 MiB per call = 15.0 us at 3.35 TB/s (~10.5 us on an H200). The harness
    flushes L2 between calls, so the bytes come from DRAM (on the B200's 126 MB L2 the book's
    back-to-back launches ran from L2, so its times are not DRAM times).
  - baseline is latency bound, not bandwidth bound: per tile the block runs load -> compute ->
    store in series. warp 0's loop is unrolled 16 deep (32 LDG per lane, 4 KiB per warp in
    flight), so a tile's 8 KiB take 2 dependent DRAM round trips (~1.5 us), then ~0.5 us of
    compute (32 elements a lane: 2 LDS, FMUL, FFMA, an IEEE sqrt = MUFU.RSQ + Newton fix-up) and
    the store, with 3 barriers: ~2.5 us a tile, 16 tiles: expect ~40 us, ~1.2 TB/s, with
    long_scoreboard (warp 0) and barrier stalls (the idle warps) dominating.
  - pipelined: two tiles (16 KiB) in flight per block, ~2 blocks per SM (~32 KiB per SM, about
    what Little's law asks for at ~1 us of loaded latency), and per tile only compute + one
    barrier + issuing the copies on the critical path (~1 us): expect it within ~1.5x of the DRAM
    floor (~15-25 us), a larger gain than the book's 1.53x, with barrier and mbarrier-wait stalls
    instead of long_scoreboard.
  - SASS: baseline LDG.E + STS and no LDGSTS or mbarrier (SYNCS) instructions; pipelined
    LDGSTS.E.BYPASS.128, no LDG, and per producer_commit SYNCS.ARRIVE.TRANS64.RED.A0T1 +
    ARRIVES.LDGSTSBAR.64.TRANSCNT + SYNCS.ARRIVE.TRANS64.A1T0 (libcu++'s block-scope pipeline);
    compute-sanitizer synccheck is expected to report "Missing wait" at that A1T0 arrive, as it
    does for this project's other cuda::pipeline kernels (see the ch10 README).

Correctness: A and B are random integers in [-2048, 2048] stored as fp32, so a^2 + b^2 <= 2^23 is
exact in fp32 and sqrtf (IEEE, correctly rounded: no fast math) returns the correctly rounded
root. The reference is float64 sqrt(a^2 + b^2) rounded to fp32 (double rounding is exact for a
square root when the wider format has >= 2 x 24 + 2 bits; float64 has 53; the check computes the
reference on the GPU, whose float64 sqrt is IEEE), so the check is exact: tolerance 0. (torch's
CPU sqrt is not correctly rounded, in float32 or float64, but its float64 error vanishes in the
rounding to fp32: the tests compare the CPU reference with numpy's IEEE float32 sqrt.) Any tiles >= 1 works. Analytic counts, one call: `flops` = 4 per element (2
multiplies, 1 add, the square root counted as one); `bytes` = 12 per element (A, B read once, C
written once). Sanitizer size: tiles = 600 (grid 256: 88 blocks get a third tile, so the refill
path runs).
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels.binding import CudaLibrary
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

CUDA_SOURCE = Path(__file__).with_name("warp_specialized_elementwise.cu")
ARCH = "sm_90a"
TILE = 32                                         # 32 x 32 fp32 tiles (the book's pick on H100)
DEFAULT_SIZES = {"tiles": 4096}                   # the book's size
SMALL_SIZES = {"tiles": 600}                      # for compute-sanitizer: some blocks refill a stage
MAX_ABS = 2048                                    # a^2 + b^2 <= 2^23: exact in fp32
VARIANT_IDS = {"baseline": 0, "pipelined": 1}
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built on first use, never on import
    "aisp_wsp_elementwise": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                              ctypes.c_void_p), ctypes.c_int),
}, error_string="aisp_wsp_elementwise_error_string", arch=ARCH)


def _check_tiles(tiles: int) -> None:
    if not 1 <= tiles < 2**31 // (TILE * TILE):
        raise ValueError(f"tiles={tiles}: must be >= 1 (and tiles x 1024 < 2^31)")


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """A and B: [tiles, 32, 32] random integers in [-2048, 2048] as fp32, seeded with `seed`."""
    tiles = int(sizes["tiles"])
    _check_tiles(tiles)
    gen = torch.Generator(device=device).manual_seed(seed)
    a, b = (torch.randint(-MAX_ABS, MAX_ABS + 1, (tiles, TILE, TILE), generator=gen, device=device,
                          dtype=torch.int32).to(torch.float32) for _ in range(2))
    return {"a": a, "b": b}


def _factory(name: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    variant_id = VARIANT_IDS[name]

    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        a, b = inputs["a"], inputs["b"]
        if not (a.is_cuda and b.is_cuda):
            raise RequirementError(f"ch10.warp_specialized_elementwise {name} variant needs CUDA tensors (run on a GPU)")
        for t in (a, b):
            if (t.dtype != torch.float32 or t.dim() != 3 or tuple(t.shape[1:]) != (TILE, TILE)
                    or not t.is_contiguous() or t.data_ptr() % 16):
                raise ValueError("a and b must be contiguous, 16-byte aligned float32 [tiles, 32, 32] tensors")
        if a.shape != b.shape:
            raise ValueError(f"a {tuple(a.shape)} and b {tuple(b.shape)} must have the same shape")
        tiles = a.shape[0]
        _check_tiles(tiles)
        LIBRARY.load()                 # build here, outside the timed call
        c = torch.empty_like(a)
        a_ptr, b_ptr, c_ptr = a.data_ptr(), b.data_ptr(), c.data_ptr()
        label = f"aisp_wsp_elementwise({name})"

        def launch() -> torch.Tensor:
            LIBRARY.call("aisp_wsp_elementwise", variant_id, a_ptr, b_ptr, c_ptr, tiles,
                         torch.cuda.current_stream().cuda_stream, label=label)
            return c

        launch.keep_alive = (a, b)  # type: ignore[attr-defined]  # the closure owns its inputs
        return launch

    factory.__name__ = name
    factory.__doc__ = f"The {name} kernel of warp_specialized_elementwise.cu via ctypes, on torch's current stream."
    return factory


baseline = _factory("baseline")
pipelined = _factory("pipelined")


def reference(inputs: Inputs) -> torch.Tensor:
    """sqrt(a^2 + b^2) in float64, rounded to fp32 (what a correctly rounded fp32 sqrt returns), as float64."""
    a, b = inputs["a"].double(), inputs["b"].double()
    return torch.sqrt(a * a + b * b).float().double()


def flops(sizes: Mapping[str, int]) -> int:
    """4 per element: two multiplies, one add and the square root (counted as one)."""
    return 4 * TILE * TILE * int(sizes["tiles"])


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes: A and B read once, C written once, 4 bytes each per element."""
    return 12 * TILE * TILE * int(sizes["tiles"])


PAIR = KernelPair(
    name="ch10.warp_specialized_elementwise",
    chapter=10,
    lesson="sqrt(a^2+b^2) by load/compute/store warps: synchronous staging is latency bound; a 2-stage "
           "cuda::pipeline with cp.async keeps two tiles in flight and should approach DRAM speed.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "pipelined": pipelined},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    tolerance=0.0,                     # exact squares, correctly rounded sqrt, reference rounded to fp32
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (Hopper); on Blackwell run the book's pair"),
    variant_needs={name: ("gpu", "nvcc") for name in VARIANT_IDS},
    book=Book("pipelined", 1.527, "spec §3.2 warp_specialized_pipeline_enhanced_cuda",
              off_reason="the book's loop ran warm from the B200's 126 MB L2 with five barriers per tile; "
                         "here DRAM with the L2 flushed, one barrier per tile"),
)
