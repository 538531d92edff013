"""Chapter 10: warp specialization with a ping-pong ring, and what a 3-warp CTA can stream.

The operation: C = sqrt(A^2 + B^2) elementwise over n fp32 (default n = 2^24: the book's 4096
tiles of 64 x 64, 64 MiB per operand), cut into tiles of 4096 floats; a short last tile is
allowed (any n >= 1). Each CTA has 3 warps and walks tiles blockIdx.x, + grid, ... (a persistent
loop); grid = min(tiles, 2 x SMs), the book's, unless the size key `grid` (0 = the book's) says
otherwise. Inputs are random integers in [-2048, 2048] stored as fp32: A^2 + B^2 <= 2^23 is exact
in fp32 (also with FMA contraction) and sqrtf is correctly rounded (nvcc's default
-prec-sqrt=true), so each output is the fp32 rounding of the true root. The reference takes the
float64 root and rounds it to fp32, which is the same number (double rounding is innocuous for
sqrt when 53 >= 2 x 24 + 2 bits; the tests check it for every sum the inputs can make): the
check is exact, tolerance 0.

What the book's pair does (spec 2.1; book B200: 0.3325 -> 0.2413 ms, 1.378x):
  baseline   one shared stage (A, B, C: 48 KiB): warp 0 loads the tile (float4), warp 1
             computes, warp 2 stores, three block.sync() per tile: fully serialized, one warp
             working at a time.
  optimized  a 2-stage ring (96 KiB dynamic shared memory): warp 0 keeps the next tile
             loaded; warps 1 and 2 "alternate compute and store roles". Hand-offs are a
             (state, tile) flag pair per stage in volatile shared memory, published by lane 0
             after __syncwarp with __threadfence_block between the two stores, polled by every
             lane with __nanosleep(64). No mbarrier.
Where its name oversells: warps 1 and 2 do not hand tiles to each other. The warp that computes
tile t is also the one that stores it one loop iteration later, so warp 1 owns the even tiles
and stage 0, warp 2 the odd tiles and stage 1; the COMPUTED flag is a warp signalling itself.
The ping-pong is two consumer warps taking tiles in turn while one producer feeds both.

Variants (warp_spec_pingpong.cu; the same load_tile / compute_tile / store_tile in all three,
so only the schedule and the hand-off differ):
  baseline           the book's serialized kernel, 48 KiB, 3 __syncthreads per tile.
  pingpong_flags     the book's optimized kernel and protocol, with one change: the flags are
                     cuda::atomic_ref<int, thread_scope_block>, lane 0 publishes the state with
                     a release store (after __syncwarp) and every polling lane reads it with an
                     acquire load. Why: in the PTX memory model a volatile access is a relaxed
                     .sys access, so the book's writer (plain STS of the tile, __syncwarp, fence
                     by lane 0 = MEMBAR.SC.CTA, volatile store of the flag) is a valid release
                     pattern, but its readers have no acquire: a volatile load of the flag and no
                     fence after it. Without the acquire there is no synchronizes-with edge, so
                     the consumer's plain loads of the tile (and, the other way, the producer's
                     overwrite of a stage after reading EMPTY) are data races: the outcome is not
                     defined even though today's hardware and ptxas keep the shared loads after
                     the poll. Cost in SASS: the same one CTA fence per publish (MEMBAR.ALL.CTA
                     where the book has MEMBAR.SC.CTA), and the flag accesses become
                     LD/ST.E.STRONG.SM (generic, strong) instead of LDS/STS: one poll or publish
                     per stage hand-off, nothing per element.
  pingpong_mbarrier  the same roles and ring on Hopper's hardware barriers, the way CUTLASS's
                     sm90 pipelines hand off: a `full` and an `empty` mbarrier per stage, 32
                     arrivals each (every lane arrives for its own accesses; mbarrier.arrive
                     releases and try_wait.parity acquires at CTA scope), consumers wait with
                     mbarrier.try_wait.parity (the hardware suspends the warp), no flags, no
                     fence instructions, no nanosleep. The book's COMPUTED flag becomes a
                     __syncwarp, since compute and store of a tile are one warp's.
compute-sanitizer racecheck sees __syncthreads and __syncwarp; whether it also follows the
acquire/release flags (and the mbarrier phases) is for the sanitizer run to show. A hazard it
reports on a ring variant only, with memcheck clean and the checks exact, is to be read against
the memory-model argument above; on the book's volatile protocol it would be a real race.

What this port changes from the book, and why:
  - The producer's load depth is written out. ptxas picks it from the registers live around the
    loop (nvcc 13.0: the book's loop got up to 5 LDG.128 ahead of their STS.128 in a test kernel;
    a plain batch of 2 + 2 got 4 in the serialized kernel but 2 in the flags kernel), so the
    variants would differ in their loads, not only their hand-off. load_tile issues the
    next 4 LDG.128 (2 float4 of A, 2 of B per lane) before storing the previous 4: 8 LDG.128 in
    flight per lane, 4 KiB per producer warp, the same in every variant (tests check the SASS).
  - A short last tile takes a checked scalar path (the book's sizes are whole tiles only).
  - Exact integer inputs and a tolerance of 0 instead of the book's mean checksum.
  - The flags are acquire/release atomics (above); pingpong_mbarrier is new.

Predicted profile (n = 2^24; `bytes` = 12 n = 192 MiB = 201 MB per call):
  - DRAM: every variant reads A and B once and writes C once (128 MiB in, 64 MiB out; no reuse,
    well above the 50 MB L2). Roof: 201 MB / 3.35 TB/s = 60 us on an H100 SXM at its datasheet
    bandwidth (the calibrated roof is in kernels/ch10/README.md), ~42-47 us on an H200. None of the three gets near
    it, and what bounds them is bytes in flight, not the hand-off.
  - Little's law: 3.35 TB/s x ~700 ns loaded latency = 2.3 MB in flight device-wide, ~18 KB per
    SM. Only producer warps load, 2 CTAs fit per SM (96 KiB each for the ring; the grid is 2 x
    SMs anyway), and a producer lane holds 8 LDG.128: 4 KiB per warp, 8 KiB per SM, ~45% of what
    the DRAM needs. The 1-tile prefetch (32 KiB of A and B per CTA, 64 KiB per SM) has room, but
    loads go through registers, so the stage size is not what is in flight: the producer warp's
    registers are. Read ceiling: 8 KiB x 132 SMs / 0.7 us = ~1.5 TB/s, so reads (134 MB) alone
    take ~85-90 us. Expect pingpong_flags and pingpong_mbarrier at ~85-100 us on an H100, within
    a few % of each other (both producer-bound: a tile's compute + store, ~4-5 us for one warp,
    fits in the two tile-loads, ~5-6 us each, that its consumer warp has before its next tile).
  - baseline: per tile the load (~5-6 us: 64 LDG.128 per lane, 8 per ~0.7 us round trip), the
    compute by one warp (~4 us: 128 correctly rounded roots per lane, each a dependent chain of
    MUFU.RSQ and fix-up FMAs behind a slow-path branch) and the store (~0.5 us) run one after
    another, ~10 us x 16 tiles per CTA: ~140-180 us, a 1.5-2x gap (book B200: 1.378x).
  - Stalls: the baseline is dominated by barrier stalls (two of a CTA's three warps sit at
    BAR.SYNC at any time) plus long_scoreboard in the producer. In the ring variants the producer
    shows long_scoreboard (its STS.128 waiting for LDG data) nearly all the time; the consumer
    warps are mostly idle: sleeping (NANOSLEEP) in pingpong_flags, suspended in mbarrier
    try_wait in pingpong_mbarrier, which also issues fewer instructions per tile (no flag polls).
  - sm__warps_active: 6 warps per SM of 64 (~9% achieved occupancy) in every variant.
  - SASS (tests/test_ch10_warp_spec_pingpong.py): baseline 3 BAR.SYNC; pingpong_flags 1 BAR.SYNC
    (flag init), MEMBAR.ALL.CTA, NANOSLEEP, LD/ST.E.STRONG.SM; pingpong_mbarrier 1 BAR.SYNC,
    SYNCS.ARRIVE.TRANS64 and SYNCS.PHASECHK.TRANS64.TRYWAIT, no MEMBAR, no NANOSLEEP.
What would reach the roof is more bytes in flight per SM, not a better hand-off: a bulk copy
(cp.async.bulk, one instruction per 16 KiB, nothing held in registers) as in ch09's
warp_specialized_tma, or more loading warps.

Analytic counts, one call: `flops` = 4 n (2 multiplies, 1 add, 1 square root per element; ncu's
fp32 counters also see the root's fix-up FMAs); `bytes` = 12 n (A and B read, C written).
Sanitizer size: n = 13 x 4096 + 1001 with grid = 4 (14 tiles, 3-4 per CTA: both stages reused,
both consumer warps, and a 1001-float last tile).
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels.binding import CudaLibrary
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

CUDA_SOURCE = Path(__file__).with_name("warp_spec_pingpong.cu")
ARCH = "sm_90a"                        # mbarrier try_wait and the 96 KiB opt-in: Hopper's target
DEFAULT_SIZES = {"n": 1 << 24, "grid": 0}                 # 4096 tiles; grid 0 = 2 x SMs (the book's)
SMALL_SIZES = {"n": 13 * 4096 + 1001, "grid": 4}          # the sanitizer size
TILE = 64 * 64                         # floats per tile
MAX_ABS = 2048                         # inputs are integers in [-2048, 2048]: A^2 + B^2 <= 2^23
VARIANT_IDS = {"baseline": 0, "pingpong_flags": 1, "pingpong_mbarrier": 2}
RING_VARIANTS = ("pingpong_flags", "pingpong_mbarrier")   # 96 KiB of dynamic shared memory
INFO_FIELDS = ("grid", "max_blocks_per_sm", "sm_count", "dynamic_smem_bytes", "static_smem_bytes", "registers",
               "local_bytes")
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built for sm_90a on first use, never on import
    "aisp_warp_spec_pingpong": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
                                 ctypes.c_int, ctypes.c_void_p), ctypes.c_int),
    "aisp_warp_spec_pingpong_smem_support": ((), ctypes.c_int),
    "aisp_warp_spec_pingpong_info": ((ctypes.c_int, ctypes.c_longlong, ctypes.c_int, ctypes.POINTER(ctypes.c_int)),
                                     ctypes.c_int),
}, error_string="aisp_warp_spec_pingpong_error_string", arch=ARCH)


def tiles(n: int) -> int:
    """Number of 4096-float tiles: ceil(n / 4096)."""
    return -(-int(n) // TILE)


def _check_sizes(n: int, grid: int) -> None:
    if n < 1 or tiles(n) >= 2**31:
        raise ValueError(f"n must be >= 1 and give fewer than 2^31 tiles of {TILE}, got {n}")
    if grid < 0 or grid >= 2**31:
        raise ValueError(f"grid must be 0 (2 x SMs, the book's) or a CTA count < 2^31, got {grid}")


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """a, b: n random integers in [-2048, 2048] as fp32, seeded; `grid` (0: 2 x SMs) for the launch."""
    n, grid = int(sizes["n"]), int(sizes.get("grid", 0))
    _check_sizes(n, grid)
    gen = torch.Generator(device=device).manual_seed(seed)
    a, b = (torch.randint(-MAX_ABS, MAX_ABS + 1, (n,), generator=gen, device=device, dtype=torch.int32)
            for _ in range(2))
    return {"a": a.to(torch.float32), "b": b.to(torch.float32), "grid": grid}


def _check_operands(name: str, a: torch.Tensor, b: torch.Tensor) -> None:
    if not (a.is_cuda and b.is_cuda):
        raise RequirementError(f"ch10.warp_spec_pingpong {name} variant needs CUDA tensors (run on a GPU)")
    for label, t in (("a", a), ("b", b)):
        if t.dtype != torch.float32 or t.dim() != 1 or not t.is_contiguous() or t.data_ptr() % 16:
            raise ValueError(f"{label} must be a contiguous, 16-byte aligned 1-D float32 tensor")
    if a.shape != b.shape or a.device != b.device:
        raise ValueError(f"a and b must have the same shape and device, got {tuple(a.shape)} and {tuple(b.shape)}")


def _require_smem(variant: str) -> None:
    """RequirementError unless a block may have the ring's 96 KiB of dynamic shared memory."""
    LIBRARY.require("aisp_warp_spec_pingpong_smem_support",
                    f"ch10.warp_spec_pingpong {variant} needs 96 KiB of shared memory per block "
                    "(cudaDevAttrMaxSharedMemoryPerBlockOptin); this GPU offers less")


def _factory(name: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    variant_id = VARIANT_IDS[name]

    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        a, b, grid = inputs["a"], inputs["b"], int(inputs["grid"])
        _check_operands(name, a, b)        # CPU tensors: RequirementError before any build
        _check_sizes(a.numel(), grid)
        LIBRARY.load()                     # build here, outside the timed call
        if name in RING_VARIANTS:
            _require_smem(name)
        c = torch.empty_like(a)            # every element written by every call
        a_ptr, b_ptr, c_ptr, n = a.data_ptr(), b.data_ptr(), c.data_ptr(), a.numel()
        label = f"aisp_warp_spec_pingpong({name})"

        def launch() -> torch.Tensor:
            LIBRARY.call("aisp_warp_spec_pingpong", variant_id, a_ptr, b_ptr, c_ptr, n, grid,
                         torch.cuda.current_stream().cuda_stream, label=label)
            return c

        launch.keep_alive = (a, b)  # type: ignore[attr-defined]   # the closure owns its inputs
        return launch

    factory.__name__ = name
    factory.__doc__ = f"The {name} kernel of warp_spec_pingpong.cu via ctypes, on torch's current stream."
    return factory


baseline = _factory("baseline")
pingpong_flags = _factory("pingpong_flags")
pingpong_mbarrier = _factory("pingpong_mbarrier")


def kernel_info(variant: str, n: int = DEFAULT_SIZES["n"], grid: int = 0) -> dict[str, int]:
    """Grid, occupancy and resources of one variant on the current GPU (builds the library)."""
    out = (ctypes.c_int * len(INFO_FIELDS))()
    LIBRARY.call("aisp_warp_spec_pingpong_info", VARIANT_IDS[variant], n, grid, out)
    return dict(zip(INFO_FIELDS, out))


def reference(inputs: Inputs) -> torch.Tensor:
    """sqrt(a^2 + b^2) in float64, rounded to fp32 (the correctly rounded fp32 root), as float64."""
    a, b = inputs["a"].double(), inputs["b"].double()
    return torch.sqrt(a * a + b * b).to(torch.float32).to(torch.float64)


def flops(sizes: Mapping[str, int]) -> int:
    """4 per element: two multiplies, one add, one square root."""
    return 4 * int(sizes["n"])


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: read A and B, write C, 4 bytes each per element."""
    return 12 * int(sizes["n"])


PAIR = KernelPair(
    name="ch10.warp_spec_pingpong",
    chapter=10,
    lesson="A producer warp and two consumer warps per CTA: one serialized shared stage vs a 2-stage ping-pong "
           "ring, handed off with acquire/release flags (the book's protocol, made correct) or with mbarriers.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "pingpong_flags": pingpong_flags, "pingpong_mbarrier": pingpong_mbarrier},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    tolerance=0.0,                     # integer inputs, exact sums, correctly rounded roots
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (Hopper mbarriers, 96 KiB opt-in shared memory); "
                               "on Blackwell run the book's pair"),
    variant_needs={name: ("gpu", "nvcc") for name in VARIANT_IDS},
    book=Book("pingpong_flags", 1.378, "spec §3.2 warp_spec_pingpong_cuda",
              off_reason="DRAM-bound at 64 MiB per operand: the ratio is how much of the serialized stage's "
                         "latency each GPU's bandwidth leaves exposed"),
)
