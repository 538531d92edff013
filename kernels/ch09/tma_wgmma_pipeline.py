"""Chapter 9 on Hopper: a TMA + wgmma GEMM, load and math in series, then pipelined.

The book's `tcgen05_tma_pipeline` pair (tcgen05_basic.cu -> tcgen05_pipelined.cu) teaches that a
tensor-core GEMM is only as fast as the loads feeding it: with TMA bringing tiles into shared
memory and the tensor cores reading them from there, overlapping the next tile's load with this
tile's math (a ring of shared-memory stages guarded by mbarriers) is what moves the kernel to the
compute roof. tcgen05 and its tensor memory exist only on Blackwell (sm_100); this pair teaches
the same lesson with Hopper's own instructions, hand-written (tma_wgmma_pipeline.cu):
cp.async.bulk.tensor (TMA) loads with 128-byte swizzle, mbarrier expect_tx/try_wait, wgmma
m64n256k16 reading both operands through shared-memory descriptors, setmaxnreg to move
registers from the producer warpgroup to the consumers.

The operation: C[m, n] = A[m, k] @ B[n, k]^T, bf16 in and out, fp32 accumulation (both operands
K-major, the layout TMA + wgmma take without a transpose; cuBLAS's "TN" GEMM). Default
m = n = 4096, k = 8192, the size cutlass_gemm uses: 2 m n k = 275 GFLOP on at least
2 (m k + n k + m n) = 168 MB, ~1600 FLOP/B, compute-bound.

  baseline   `serial` (aisp_tma_wgmma_serial): one shared-memory stage; TMA load, wait on the
             mbarrier, 4 wgmmas per warpgroup, wait for them, __syncthreads, next load. The
             tensor cores idle while a tile loads and the TMA unit while it is multiplied.
  pipelined  (aisp_tma_wgmma_pipelined) the same tiles and math, with a 4-stage ring (192 KiB),
             a producer warpgroup whose one thread issues TMA up to 3 k-tiles ahead, and two
             consumer warpgroups that keep one wgmma group in flight and hand each stage back
             through an `empty` mbarrier.
  pipelined_cluster
             the pipelined kernel on 2-CTA thread-block clusters (Hopper only): the two CTAs of a
             cluster compute vertically adjacent tiles that need the same B box, so each loads half
             of it and TMA multicasts it into both CTAs' shared memory, halving B's L2->SM
             traffic; each stage is released to the producers through the `empty` barriers of
             both CTAs (remote mbarrier arrives over distributed shared memory).
  cublas     torch.mm(a, b.t()): cuBLAS's Hopper kernel for the same shape and dtype, the bar the
             hand-written pipeline is held to (>= 85% of it, issue 5).

What should move in the profile: the same FLOPs, bytes and HGMMA count in both variants; the
tensor pipe's busy fraction and the achieved FLOP/s rise, the warp stalls on the mbarrier wait
(the `long_scoreboard`/`barrier`-type stalls of the serial kernel) shrink, and the roofline point
moves straight up toward the bf16 roof.

The 2-CTA cluster should pay only where L2->SM bandwidth for B limits the pipelined kernel, and
the remote stage release must not serialize a consumer against its in-flight wgmma group: a
plain `shared::cluster` arrive, as CUTLASS uses, rather than `mbarrier.arrive.release.cluster`.
Measured times, % of roof and of cuBLAS, stalls (H200, H100): kernels/ch09/README.md.

Correctness: A ~ N(0, 1/k), B ~ N(0, 1) in bf16; the float64 reference multiplies the same bf16
values, so the only error is fp32 accumulation and the bf16 rounding of C (~1.1e-3 relative,
Frobenius); tolerance 5e-3 as for the other bf16 GEMM pairs. A wrong swizzle, descriptor or
stage hand-off gives O(1) errors.

Sizes: m is free; n and k must be multiples of 8 (16-byte row pitches for TMA); edges are
zero-filled by TMA and stores are guarded. The kernels are compiled for sm_90a (wgmma and
setmaxnreg are arch-specific), so the pair runs on Hopper only.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from aisp_kernels import gemm
from aisp_kernels.binding import CudaLibrary
from aisp_prof.pairs import Book, Inputs, KernelPair, Mechanism, Requirements

CUDA_SOURCE = Path(__file__).with_name("tma_wgmma_pipeline.cu")
DEFAULT_SIZES = {"m": 4096, "n": 4096, "k": 8192}
ARCH = "sm_90a"                  # wgmma and setmaxnreg need the arch-specific target


def validate_sizes(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(m, n, k), or ValueError: all >= 1 and < 2^31, n and k multiples of 8."""
    return gemm.validate_sizes(sizes, 8, "16-byte bf16 rows for TMA")


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """`a` [m, k] ~ N(0, 1/k) and `b` [n, k] ~ N(0, 1), bf16, contiguous (both K-major)."""
    return gemm.kmajor_inputs(*validate_sizes(sizes), device, seed, torch.bfloat16)


_GEMM_SIGNATURE = ((ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                    ctypes.c_void_p), ctypes.c_int)
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built for sm_90a on first use, never on import
    "aisp_tma_wgmma_serial": _GEMM_SIGNATURE,
    "aisp_tma_wgmma_pipelined": _GEMM_SIGNATURE,
    "aisp_tma_wgmma_pipelined_cluster": _GEMM_SIGNATURE,
    "aisp_tma_wgmma_stages": ((), ctypes.c_int),
}, arch=ARCH)


def _operands(inputs: Inputs, variant: str) -> tuple[torch.Tensor, torch.Tensor, int, int, int]:
    return gemm.kmajor_operands("ch09.tma_wgmma_pipeline", variant, inputs, torch.bfloat16, validate_sizes)


def _kernel_variant(symbol: str, variant: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        a, b, m, n, k = _operands(inputs, variant)     # CPU tensors: RequirementError before any build
        LIBRARY.fn(symbol)                              # build here, outside the timed call
        c = torch.empty(m, n, device=a.device, dtype=torch.bfloat16)

        def launch() -> torch.Tensor:
            # a, b, c are referenced here (not only their addresses) so the closure keeps them alive.
            LIBRARY.call(symbol, a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k,
                         torch.cuda.current_stream().cuda_stream)
            return c

        return launch

    factory.__name__ = variant
    factory.__doc__ = f"{symbol} into a preallocated bf16 C, on torch's current stream."
    return factory


serial = _kernel_variant("aisp_tma_wgmma_serial", "serial")
pipelined = _kernel_variant("aisp_tma_wgmma_pipelined", "pipelined")
pipelined_cluster = _kernel_variant("aisp_tma_wgmma_pipelined_cluster", "pipelined_cluster")


cublas = gemm.cublas_tn(_operands)        # torch.mm(a, b.t(), out=c): cuBLAS's TN GEMM


reference = gemm.reference_tn            # float64 A @ B^T of the rounded operands


flops = gemm.flops               # 2 m n k


def bytes(sizes: Mapping[str, int]) -> int:  # the KernelPair field is called bytes
    """Minimum DRAM bytes: read A and B once, write C once, 2 bytes each."""
    return gemm.min_bytes(sizes, 2)



SIZE_RULES = gemm.size_rules(8, "16-byte bf16 rows for TMA")


PAIR = KernelPair(
    name="ch09.tma_wgmma_pipeline",
    chapter=9,
    lesson="Hopper's tcgen05_tma_pipeline: a hand-written TMA + wgmma bf16 GEMM with load and math "
           "in series, then a 4-stage mbarrier ring with a producer warpgroup: same math, the "
           "tensor cores fed.",
    make_inputs=make_inputs,
    variants={"baseline": serial, "pipelined": pipelined, "pipelined_cluster": pipelined_cluster,
              "cublas": cublas},
    roles={"cublas": "reference"},   # how close the hand-written pipeline comes to the library
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    size_rules=SIZE_RULES,
    tolerance=5e-3,      # bf16 output rounding ~1.1e-3
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="Hopper only (sm_90a wgmma/TMA/setmaxnreg); on Blackwell the book's "
                               "tcgen05 pair is the one to run"),
    variant_needs={"baseline": ("gpu", "nvcc"), "pipelined": ("gpu", "nvcc"),
                   "pipelined_cluster": ("gpu", "nvcc"), "cublas": ("gpu",)},
    expect=(Mechanism("tensor_pipe_active_pct", "increase", factor=1.5,
                      why="the next tile loads while this one multiplies: the tensor cores stop waiting"),
            Mechanism("stall_long_scoreboard", "decrease", factor=2.0,
                      why="warps no longer wait on each tile's load")),
    book=Book("pipelined", 1.288, "spec §3.1 tcgen05_tma_pipeline (tcgen05_basic.cu -> tcgen05_pipelined.cu)",
              off_reason="tcgen05 with TMEM on the B200 against wgmma with register accumulators here: the "
                         "serial kernel idles a different share of each GPU's tensor rate"),
)
