"""Chapter 10: a hand-written single-stage TMA + wgmma GEMM against cuBLAS, and what the gap is made of.

The lesson: writing a tensor-core GEMM from the hardware's own instructions (TMA loads into
shared memory, tensor-core MMAs reading shared memory, an mbarrier between them) is not enough
to match the library. With load and math in series every k-tile pays the full TMA latency with
the tensor cores idle, and then the full MMA time with the TMA unit idle; cuBLAS keeps several
loads in flight behind its math. The pair measures that gap; matmul_wgmma_pipelined closes it.

The operation: C[m, n] = A[m, k] @ B[n, k]^T, fp16 in and out, fp32 accumulation, both operands
K-major (the layout TMA + wgmma take without a transpose; cuBLAS's "TN" GEMM). Default
m = n = k = 8192 (the book's size): 2 m n k = 1.10 TFLOP on at least 2 (m k + n k + m n) =
403 MB, ~2700 FLOP/B, compute-bound.

What the book's code does (spec 2.3, `matmul_tcgen05_vs_cublas`): the baseline is
ch10/matmul_tcgen05.cu::matmul_tcgen05, a single-stage CuTe GEMM for Blackwell (tcgen05.mma
`SM100_MMA_F16BF16_SS` with a 128 x 256 tile, `SM90_TMA_LOAD`, the accumulator in tensor memory
(TMEM), a TMEM -> register epilogue) that writes an fp32 buffer (zeroed with torch.zeros first)
and returns `.to(float16)` of it, so a zero-fill and a conversion kernel (a 268 MB fp32 write,
its read and a 134 MB fp16 write) run inside its timed region; the optimized side is
`torch.matmul(A, B.T)` (cuBLAS). B200: 4.0536 -> 0.939 ms, 4.317x (spec 3.2).

This port (matmul_wgmma_vs_cublas.cu). tcgen05 and TMEM exist only on sm_100, so the baseline is
the same single-stage schedule in Hopper's instructions, the `serial` kernel that
ch09.tma_wgmma_pipeline proves on H100, in fp16:
  baseline (single_stage)
      one 128 x 256 tile of C per block (the book's tile), BK = 64, two warpgroups of 128
      threads each owning 64 rows (128 fp32 accumulators per thread, in registers: Hopper's
      accumulators live in the register file, there is no TMEM). Per k-tile: thread 0 arms an
      mbarrier with expect_tx and issues the TMA loads (128-byte swizzle) of A's 128 x 64 and
      B's 256 x 64 box; all wait on the mbarrier (try_wait); each warpgroup issues 4 wgmma
      m64n256k16 reading both operands through shared-memory descriptors, commits and waits for
      all of them (wait_group 0); __syncthreads; next load. Tiles are rasterized in groups of 8
      row tiles for L2 reuse. The fp32 accumulators become fp16 in registers and are stored
      directly: no fp32 buffer, no zero-fill and no conversion kernel (the book's baseline pays
      for both; this one is a single kernel, so the ratio here is the schedule's alone).
  cublas
      torch.mm(a, b.t(), out=c): the same cuBLAS call as the book's torch.matmul(A, B.T), into a
      preallocated C (no allocation in the timed call).
Sizes: any m, n >= 1 and k a positive multiple of 8 (make_inputs raises ValueError otherwise):
TMA needs 16-byte row pitches of the K-major fp16 A and B. Edge tiles cost nothing on the tile
grid: TMA zero-fills the parts of a box past m, n or k, the grid and the k loop count tiles
rounded up, and only a tile reaching past m or n stores element by element
(kernels/common/wgmma_edges.cuh); the book's kernels take whole 128 x 256 x 64 tiles only.

Why the ratio should be smaller than the book's. On H100 a 48 KiB k-tile takes ~0.56 us of MMA
at the tensor roof per SM and ~0.8-0.9 us of TMA round trip (ch09.tma_wgmma_pipeline's serial
kernel: 1.41 us per k-tile on H100), so the single-stage kernel runs at ~40% of the tensor roof,
~2x cuBLAS: predicted ~2.8-3.0 ms vs ~1.4-1.5 ms (cuBLAS near 750-800 TFLOP/s), a ratio of
~2.0-2.2x. The B200's tensor cores are ~2.3x faster than an H100's while the load latency is
about the same, so its single-stage kernel leaves a larger share idle, and its baseline also
carries the fp32 buffer's extra kernels: hence 4.3x there.

Predicted profile (ncu; measured numbers belong in kernels/ch10/README.md):
  - SASS (single_stage): HGMMA.64x256x16.F32 (4 per k-tile per warpgroup, one `gsb0` group),
    UTMALDG.2D (2 per k-tile, thread 0), SYNCS.ARRIVE.TRANS64 (expect_tx),
    SYNCS.PHASECHK.TRANS64.TRYWAIT (the mbarrier wait), WARPGROUP.ARRIVE (wgmma.fence),
    WARPGROUP.DEPBAR.LE gsb0, 0x0 (wait_group 0: nothing left in flight), BAR.SYNC; no local
    memory. Warp-level HGMMA instructions executed: 4 x (m/64) x (n/256) x (k/16) = 8.4 M.
  - Tensor pipe active (sm__pipe_tensor_op_hmma_cycles_active): ~40% for single_stage, ~85-90%
    for cuBLAS; FLOP/s in the same proportion.
  - Stalls (single_stage): dominated by the mbarrier try-wait (long_scoreboard) while the tile
    loads and by __syncthreads (barrier) and the wgmma wait while the math runs; few cycles per
    issued instruction are "selected". cuBLAS: mostly waiting on its own wgmma (math-bound).
  - DRAM bytes: the compulsory 403 MB is a floor; both kernels re-read B once per group of row
    tiles, so expect a small multiple of it (ch09's serial kernel: 2.4x at 4096 x 4096 x 8192),
    still under ~30% of DRAM bandwidth at these times: memory is not the bound of either.
  - % of cuBLAS: single_stage ~45-50%. Launches per call: 1 and 1.

Correctness: A ~ N(0, 1/k), B ~ N(0, 1) rounded to fp16, so C ~ N(0, 1); the float64 reference
multiplies the same fp16 values, so the only error is fp32 accumulation (~sqrt(k) x 2^-24,
negligible) and the final rounding of C to fp16 (~2e-4 relative, Frobenius). Tolerance 2e-3,
~10x that; a wrong swizzle, descriptor or barrier phase gives O(1) errors.

Analytic counts, one call: `flops` = 2 m n k; `bytes` = minimum DRAM bytes 2 (m k + n k + m n).
Sanitizer size (compute-sanitizer memcheck/racecheck/synccheck): m=384, n=512, k=192: 6 tiles,
3 k-tiles (the mbarrier's phase flips), ragged sizes are refused by design.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from aisp_kernels import gemm
from aisp_kernels.binding import CudaLibrary
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

NAME = "ch10.matmul_wgmma_vs_cublas"
CUDA_SOURCE = Path(__file__).with_name("matmul_wgmma_vs_cublas.cu")
ARCH = "sm_90a"                        # wgmma exists only on the arch-specific Hopper target
DEFAULT_SIZES = {"m": 8192, "n": 8192, "k": 8192}
SMALL_SIZES = {"m": 384, "n": 512, "k": 192}
TILE = {"m": 128, "n": 256, "k": 64}   # the CTA tile (m, n) and the k-tile, in elements
K_ALIGN = 8                            # k: fp16 rows of 16 bytes, TMA's row pitch
SIZE_RULES = (SizeRule("m", maximum=gemm.INT_MAX), SizeRule("n", maximum=gemm.INT_MAX),
              SizeRule("k", step=K_ALIGN, minimum=K_ALIGN, maximum=gemm.INT_MAX - K_ALIGN + 1,
                       why="TMA needs 16-byte row pitches of fp16 A and B"))
VARIANT_IDS = {"single_stage": 0}
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built for sm_90a on first use, never on import
    "aisp_matmul_wgmma_vs_cublas": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                     ctypes.c_int, ctypes.c_int, ctypes.c_void_p), ctypes.c_int),
    "aisp_matmul_wgmma_vs_cublas_support": ((), ctypes.c_int),
}, error_string="aisp_matmul_wgmma_vs_cublas_error_string", arch=ARCH)


def validate_sizes(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(m, n, k), or ValueError: m, n >= 1, k a positive multiple of 8, each below 2^31."""
    m, n, k = (int(sizes[key]) for key in ("m", "n", "k"))
    tiles = -(-m // TILE["m"]) * -(-n // TILE["n"])
    if min(m, n, k) < 1 or max(m, n, k) > gemm.INT_MAX or k % K_ALIGN or tiles > gemm.INT_MAX:
        raise ValueError(f"m, n >= 1 and k a positive multiple of {K_ALIGN} (TMA needs 16-byte row pitches), each "
                         f"below 2^31, got m={m} n={n} k={k}")
    return m, n, k


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """`a` [m, k] ~ N(0, 1/k) and `b` [n, k] ~ N(0, 1), fp16, contiguous (both K-major): C ~ N(0, 1)."""
    return gemm.kmajor_inputs(*validate_sizes(sizes), device, seed, torch.float16)


def _operands(inputs: Inputs, variant: str) -> tuple[torch.Tensor, torch.Tensor, int, int, int]:
    return gemm.kmajor_operands(NAME, variant, inputs, torch.float16, validate_sizes)


def _require_support(variant: str) -> None:
    """RequirementError unless this GPU is sm_90 and the driver exports cuTensorMapEncodeTiled."""
    LIBRARY.require("aisp_matmul_wgmma_vs_cublas_support", f"{NAME} {variant} needs an sm_90 GPU (wgmma, TMA) "
                    "and a driver that exports cuTensorMapEncodeTiled")


def single_stage(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The single-stage TMA + wgmma kernel into a preallocated fp16 C, on torch's current stream."""
    a, b, m, n, k = _operands(inputs, "baseline")
    LIBRARY.load()                                   # build here, outside the timed call
    _require_support("baseline")
    c = torch.empty(m, n, device=a.device, dtype=torch.float16)
    a_ptr, b_ptr, c_ptr = a.data_ptr(), b.data_ptr(), c.data_ptr()

    def launch() -> torch.Tensor:
        LIBRARY.call("aisp_matmul_wgmma_vs_cublas", VARIANT_IDS["single_stage"], a_ptr, b_ptr, c_ptr, m, n, k,
                     torch.cuda.current_stream().cuda_stream, label="aisp_matmul_wgmma_vs_cublas(single_stage)")
        return c

    launch.keep_alive = (a, b)  # type: ignore[attr-defined]   # the closure owns its operands
    return launch


cublas = gemm.cublas_tn(_operands)        # torch.mm(a, b.t(), out=c): cuBLAS's TN GEMM


reference = gemm.reference_tn            # float64 A @ B^T of the rounded operands


flops = gemm.flops                     # 2 m n k


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: read A and B once, write C once, 2 bytes each."""
    return gemm.min_bytes(sizes, 2)


PAIR = KernelPair(
    name=NAME,
    chapter=10,
    lesson="A hand-written fp16 TMA + wgmma GEMM with load and math in series (one shared-memory stage) "
           "against cuBLAS: the tensor cores idle through every load.",
    make_inputs=make_inputs,
    variants={"baseline": single_stage, "cublas": cublas},
    roles={"cublas": "reference"},   # the pair measures the gap to the library
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=2e-3,                    # fp16 output rounding ~2e-4 (Frobenius)
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (wgmma, TMA); on Blackwell run the book's tcgen05 pair"),
    variant_needs={"baseline": ("gpu", "nvcc"), "cublas": ("gpu",)},
    book=Book("cublas", 4.317, "spec §3.2 matmul_tcgen05_vs_cublas (the book's optimized side is cuBLAS)",
              off_reason="the B200's tensor cores are ~2.3x faster at about the same TMA latency, so its "
                         "single-stage kernel idles more, and its baseline adds an fp32 buffer and a conversion kernel"),
)
