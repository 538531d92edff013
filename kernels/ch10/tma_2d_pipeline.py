"""Chapter 10: moving 2-D tiles with TMA (cp.async.bulk.tensor.2d) instead of thread loads and stores.

The operation: y = x * 1.0001 + 1e-4 elementwise over an M x N fp32 row-major matrix (default
4096 x 4096, the book's size): 64 MiB read and 64 MiB written, 2 FLOPs per element, so it is a
pure streaming kernel whose roof is DRAM bandwidth (~3.35 TB/s on an H100 SXM: ~40 us for the
134 MB; 4.8 TB/s on an H200: ~28 us). The lesson is how the bytes are moved, not the math.

What the book's code really does (one binary, tma_2d_pipeline_blackwell.cu; spec 2.1): every CTA
is 32 x 4 threads and owns 128 rows x tile_n columns, which it walks in chunk-row pieces through
shared memory, computes in place, and writes back.
  - baseline (the wrapper passes --baseline-only): tile_n 64, chunk 32, one [32][64] smem buffer,
    plain cooperative loads and stores with __syncthreads between load, compute and store.
  - optimized: TMA 2-D load into the stage with a cuda::barrier armed by expect-tx, compute in
    smem, fence.proxy.async, TMA 2-D store (plain stores for partial tiles), SWIZZLE_NONE, no L2
    promotion. The tile config is the first of {128,64,1}, {128,32,2}, ... that fits the TMA box
    limits of cuda_arch::get_tma_limits(). At the spec's commit that table has only CC 10.0
    (box width/height 128), so the B200 ran {tile_n 128, chunk 64, 1 stage}; every other arch
    gets the fallback (width 64, height 32), so an H100 would have run {64, 32, 2 stages}, the
    baseline's tile. (A later upstream header returns 256 x 256 boxes for every CC >= 9, under
    which an H100 would pick {128, 64, 1} too.) With one stage the "pipeline" is serial inside a
    CTA: load -> compute -> store -> wait until the store has read smem -> next load; any overlap
    comes from the ~6 CTAs per SM. B200: 0.0783 ms -> 0.0441 ms, 1.777x (spec 3.2; 3 timed
    iterations of the binary, L2 never flushed).

Variants (tma_2d_pipeline.cu; every one computes __fadd_rn(__fmul_rn(v, 1.0001f), 1e-4f), so no
FMA contraction, and the result is bit-exact):
  baseline          the book's baseline: 128 x 64 per CTA, 32-row chunks, [32][64] smem, plain
                    loads/stores (scalar LDG/STG), runtime-stride loops as in the book.
  tma_book_config   the config the B200 ran, for a like-for-like ratio: 128 x 128 per CTA, two
                    64-row chunks through one 32 KiB stage; thread 0 arms an mbarrier with the
                    32 KiB (expect-tx) and issues the TMA load, all wait, compute (float4 in
                    smem), fence.proxy.async, __syncthreads, thread 0 issues the TMA store,
                    commit_group, wait_group.read 0, then the next load. (The book's barrier
                    counts all 128 threads' arrivals; here only the issuing thread arrives, with
                    the byte count, which is the same completion condition.)
  tma_hopper        NEW, tuned for sm_90: persistent CTAs (2 per SM, 64 KiB ring each) stride over
                    32 x 128 tiles (16 KiB); a 4-stage ring keeps 3 loads in flight ahead of the
                    compute; each tile's TMA store is committed as a bulk group and waited for
                    (wait_group.read 1) only one tile later, just before its stage is refilled,
                    so stores overlap the next loads and the compute. The grid is min(2 x SMs,
                    tiles / 8) so every CTA wraps its ring at least twice (at the sanitizer size
                    too); the same float4 compute as tma_book_config, so only the schedule differs.
Edges: TMA loads zero-fill what lies outside the matrix and TMA stores clip it, so the TMA
kernels have no edge code (the book's optimized kernel falls back to plain stores there); the
baseline checks bounds. N must be a multiple of 4 (TMA row pitches are multiples of 16 bytes):
make_inputs raises ValueError otherwise; M is free (up to 8,388,480: 65535 grid rows of 128).
The CUtensorMaps are encoded on the host per call through cuTensorMapEncodeTiled from
cudaGetDriverEntryPointByVersion (no -lcuda), passed as __grid_constant__ parameters.

Why tma_hopper should be the fastest on Hopper (Little's law). To stream at ~3.35 TB/s with a
loaded DRAM latency of ~600-800 ns the GPU needs ~2-3 MB in flight, ~16-20 KB per SM (132 SMs).
  - baseline: one 4-byte LDG in flight per thread (the loop strides are runtime values, so the
    loop is not unrolled and each LDG waits for the previous STS), 16 CTAs x 128 threads per SM:
    at most 8 KiB per SM, and only in the load phase of each chunk. It is latency-bound: 16
    dependent ~1 us load rounds per chunk x 4 chunks per CTA, one wave of 2048 CTAs. That is why
    the B200, with 2.4x the H100's bandwidth, still took 78 us; expect ~65-80 us here too.
  - tma_book_config: 32 KiB per load, ~6 CTAs per SM (32 KiB static smem each), but each CTA
    has bytes in flight only between its load and its wait; the store's read-back, the compute
    and the CTA launch/exit of 1024 CTAs in 1.3 waves (792 resident) leave gaps. Expect most
    of the way to the roof, ~50-60 us.
  - tma_hopper: 3 x 16 KiB loads always queued per CTA, 2 CTAs per SM: ~96 KiB per SM, 5x the
    Little's-law need, continuously, plus the stores draining behind; ~16 tiles per CTA so the
    tail is one tile. Expect ~44-48 us, ~90% of the DRAM roof.

Predicted profile (ncu/nsys):
  - DRAM bytes: ~134 MB per call in every variant (the minimum); only the time changes, so
    dram__throughput: baseline lowest (~50-60% of peak), tma_hopper highest (~85-90%).
  - SASS: UTMALDG.2D and UTMASTG.2D (+ UTMACMDFLUSH for commit_group, DEPBAR.LE SB0 for
    wait_group) only in the TMA kernels, and no LDG/STG of the data there; SYNCS.* mbarrier
    instructions (SYNCS.EXCH.64 init, SYNCS.ARRIVE.TRANS64 expect-tx, SYNCS.PHASECHK.TRANS64
    try-wait) only in the TMA kernels; FENCE.VIEW.ASYNC.S (fence.proxy.async) before each store;
    tma_hopper alone has DEPBAR.LE SB0, 0x1 (a store left in flight). The baseline has scalar
    LDG.E/STG.E and LDS/STS, nothing asynchronous.
  - Stalls: baseline dominated by long_scoreboard (each LDG feeds the STS right after it); the
    TMA kernels issue few instructions and spend their time in the mbarrier try-wait loop (the
    SYNCS.PHASECHK line in ncu's source view) and at __syncthreads; global-load requests through
    L1/LSU are zero in the TMA kernels (the TMA unit writes shared memory directly).
  - L2: 128 MiB per call is well above the H100's 50 MB L2, so every call streams from DRAM
    (on the B200's 126 MB L2 the book's unflushed 3-iteration loop could partly hit in L2).
  - No clusters, no DSMEM, no atomics.

Correctness: x ~ N(0, 4^2) fp32, seeded. The reference is the fp32 result of the same two
roundings, RN(RN(x * 1.0001f) + 1e-4f), computed by torch in fp32 and held as float64, and every
variant must match it exactly (tolerance 0): a kernel that fused the two into an FMA would miss
by one ulp on many elements (~30% at these inputs), and the check would catch it. Against the
exact float64 value the error is up to half an ulp of x * 1.0001f plus half an ulp of the result
(several ulps of the result where the product nearly cancels -1e-4), which is why the check
compares with the rounded fp32 result, not with float64 under a tolerance. Analytic counts, one call: `flops` =
2 M N (one multiply, one add per element); `bytes` = minimum DRAM bytes 8 M N (read x, write y).
Sanitizer size (memcheck/racecheck/synccheck): M=300, N=388: ragged in both dimensions for every
tile shape (a 44-row last tile, 4 valid columns in the last box), and 40 ring tiles over 5 CTAs,
so the ring wraps and the barrier parity flips.
"""
from __future__ import annotations

import ctypes
import struct
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels.binding import CudaLibrary
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

CUDA_SOURCE = Path(__file__).with_name("tma_2d_pipeline.cu")
ARCH = "sm_90a"                            # TMA tensor copies: the arch-specific Hopper target
DEFAULT_SIZES = {"m": 4096, "n": 4096}
SMALL_SIZES = {"m": 300, "n": 388}         # for compute-sanitizer: ragged in both dimensions
N_MULTIPLE = 4                             # TMA row pitch: a multiple of 16 bytes of fp32
MAX_M = 65535 * 128                        # the 128-row tiles' grid y extent
SIZE_RULES = (SizeRule("m", maximum=MAX_M, why="65535 tiles of 128 rows: the grid's y extent"),
              SizeRule("n", step=N_MULTIPLE, minimum=N_MULTIPLE, maximum=2**31 - 4,
                       why="TMA needs 16-byte row pitches"))
VARIANT_IDS = {"baseline": 0, "tma_book_config": 1, "tma_hopper": 2}
LIBRARY = CudaLibrary(CUDA_SOURCE, {       # built for sm_90a on first use, never on import
    "aisp_tma_2d_pipeline": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                              ctypes.c_void_p), ctypes.c_int),
    "aisp_tma_2d_pipeline_tma_support": ((), ctypes.c_int),
}, error_string="aisp_tma_2d_pipeline_error_string", arch=ARCH)


def _f32(value: float) -> float:
    """`value` rounded to the nearest fp32, as a Python float (exact in double)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


SCALE = _f32(1.0001)                       # the kernels' 1.0001f and 1e-4f, exactly
SHIFT = _f32(1e-4)


def _check_sizes(m: int, n: int) -> None:
    if not 1 <= m <= MAX_M:
        raise ValueError(f"m={m}: must be between 1 and {MAX_M} (65535 tiles of 128 rows)")
    if n < N_MULTIPLE or n % N_MULTIPLE or n >= 2**31:
        raise ValueError(f"n={n}: must be a positive multiple of {N_MULTIPLE} below 2^31 "
                         "(TMA needs 16-byte row pitches)")


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x: [m, n] fp32 ~ N(0, 16), seeded; ValueError unless n is a multiple of 4 (see _check_sizes)."""
    m, n = int(sizes["m"]), int(sizes["n"])
    _check_sizes(m, n)
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": 4.0 * torch.randn(m, n, generator=gen, device=device, dtype=torch.float32)}


def _check_x(name: str, x: torch.Tensor) -> None:
    if not x.is_cuda:
        raise RequirementError(f"ch10.tma_2d_pipeline {name} variant needs a CUDA tensor (run on a GPU)")
    if x.dtype != torch.float32 or x.dim() != 2 or not x.is_contiguous():
        raise ValueError(f"x must be a contiguous 2-D float32 tensor, got {x.dtype}, {tuple(x.shape)}")
    _check_sizes(*x.shape)
    if x.data_ptr() % 16 != 0:
        raise ValueError("x must be 16-byte aligned (TMA global addresses)")


def _require_tma(variant: str) -> None:
    """RequirementError unless this GPU runs TMA and the driver exports cuTensorMapEncodeTiled."""
    LIBRARY.require("aisp_tma_2d_pipeline_tma_support", f"ch10.tma_2d_pipeline {variant} needs TMA (sm_90+) and "
                    "a driver that exports cuTensorMapEncodeTiled")


def _factory(name: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    variant_id = VARIANT_IDS[name]

    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        x = inputs["x"]
        _check_x(name, x)                  # CPU tensors: RequirementError before any build
        LIBRARY.load()                     # build here, outside the timed call
        if name != "baseline":
            _require_tma(name)
        m, n = x.shape
        y = torch.empty_like(x)
        x_ptr, y_ptr = x.data_ptr(), y.data_ptr()
        label = f"aisp_tma_2d_pipeline({name})"

        def launch() -> torch.Tensor:
            LIBRARY.call("aisp_tma_2d_pipeline", variant_id, x_ptr, y_ptr, m, n,
                         torch.cuda.current_stream().cuda_stream, label=label)
            return y

        launch.keep_alive = x  # type: ignore[attr-defined]   # the closure owns its input
        return launch

    factory.__name__ = name
    factory.__doc__ = f"The {name} kernel of tma_2d_pipeline.cu via ctypes, on torch's current stream."
    return factory


baseline = _factory("baseline")
tma_book_config = _factory("tma_book_config")
tma_hopper = _factory("tma_hopper")


def reference(inputs: Inputs) -> torch.Tensor:
    """RN(RN(x * 1.0001f) + 1e-4f) computed in fp32 (two roundings, as the kernels), as float64."""
    x = inputs["x"]
    return (x.float() * SCALE + SHIFT).double()


def flops(sizes: Mapping[str, int]) -> int:
    """2 per element: one multiply, one add."""
    return 2 * int(sizes["m"]) * int(sizes["n"])


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: read x once, write y once, fp32."""
    return 8 * int(sizes["m"]) * int(sizes["n"])


PAIR = KernelPair(
    name="ch10.tma_2d_pipeline",
    chapter=10,
    lesson="Streaming 2-D tiles through shared memory: thread loads/stores vs TMA tensor copies with an "
           "mbarrier, in the book's one-stage config and in a multi-stage ring that keeps loads and stores in flight.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "tma_book_config": tma_book_config, "tma_hopper": tma_hopper},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=0.0,                     # the kernels' two fp32 roundings, reproduced exactly
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (TMA tensor copies); on Blackwell run the book's binary"),
    variant_needs={name: ("gpu", "nvcc") for name in VARIANT_IDS},
    book=Book("tma_book_config", 1.777, "spec §3.2 tma_2d_pipeline_cuda",
              off_reason="a DRAM-bound copy: the ratio is how far below bandwidth each GPU's plain loads and "
                         "stores run, which differs between the B200 (8 TB/s) and Hopper"),
)
