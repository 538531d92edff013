"""Chapter 10: the hand-written warp-specialized wgmma GEMM against CUTLASS's cooperative 2x1-cluster one.

The lesson: once a GEMM's roles are split (a TMA producer warpgroup, wgmma consumer warpgroups, a
full/empty mbarrier ring, persistent over tiles), what is left between a hand-written kernel and a
library's is no longer the pipeline: it is the tile shape, how many CTAs share an operand (a 2x1
cluster multicasting B), the order the persistent scheduler hands out tiles in, and the epilogue
(registers straight to global memory, or through shared memory and a TMA store that overlaps the
next tile). This pair measures those side by side, at the book's size, on the same operands.

What the book's code does (spec 2.3, `tcgen05_warpgroup_specialization`): baseline is its
hand-rolled `tcgen05_warp_specialized.cu` (the optimized side of `tcgen05_warp_specialization`:
one TMA warp, one UMMA warp, 4 stages, one tile per block, accumulators in TMEM), optimized is
CUTLASS's `KernelTmaWarpSpecialized2SmSm100` 256x128x64 on a 2x1 cluster (one UMMA for a pair of
SMs). 16384 x 16384 x 2048 fp16, fp32 accumulation. B200: 2.7543 -> 1.7195 ms, 1.602x (spec 3.2):
there the library wins by 60%, because the hand-rolled kernel is one tile per block with one
issuing thread while CUTLASS's is persistent and uses both SMs' tensor cores for one MMA.

The Hopper port runs no new CUDA: both kernels are the ones two sibling pairs build and test, loaded
with `load_sibling` (their sources are part of this pair's digest).
  baseline (hand_written)
      ch10.warp_specialization's `warp_specialized` kernel: 128 x 256 tiles, a setmaxnreg producer
      warpgroup (40 registers) and two consumer warpgroups (232) on a 3-stage ring, persistent
      (grid = SMs), tiles in groups of 8 row tiles, and (since session 9) a TMA-store epilogue:
      the fp16 tile staged in shared memory and stored by TMA while the consumers start the next
      tile. It already has what made the book's CUTLASS kernel faster than its hand-rolled one:
      persistence and a producer that loads the next tile during the epilogue.
  cutlass_cooperative_c2
      ch10.warp_specialization_cutlass's `KernelTmaWarpSpecializedCooperative` 256x128x64 on a 2x1
      cluster (each CTA loads half of the B box and multicasts it to both; Hopper's closest analog
      of the book's 2-SM MMA), persistent, CUTLASS's default tile order (swizzle 1), TMA-store
      epilogue. The book's optimized side.
  cutlass_cooperative_c2_swizzle8
      the same kernel with the persistent scheduler handing out tiles in groups 8 clusters wide:
      only the order of the tiles changes, which is what keeps the operands of a wave in L2.
  cublas
      torch.mm(a, b.t(), out=c): the reference library (nvjet 192x192 tiles, 1x2 cluster on H100).

Predicted profile (from the sibling pairs' runs at this size: profiles/samples_h100_ch10/ and the
session-9 H200 timings of ch10.warp_specialization; measured numbers belong in kernels/ch10/README.md):
  - Hopper ratio ~1.0x or below, nowhere near the book's 1.602x: with its register epilogue the
    hand-written kernel was 1.71 ms by ncu on an H100, CUTLASS cooperative 1.86 ms (0.92x) and
    with swizzle 8 1.59 ms (1.07x), cuBLAS 1.46 ms; with the TMA store the hand-written kernel ran
    at ~100% of cuBLAS on an H200 (gate timing), so both CUTLASS variants are predicted slower
    than it (~0.97x with swizzle 8, ~0.9x without). The book's gap came from persistence and 2-SM
    MMA; Hopper's hand-written kernel has the first and Hopper has no second.
  - DRAM bytes: hand_written ~1.8 GB (group-8 tile order), cooperative with swizzle 1 ~4.5 GB (2.5x:
    its tile order streams A again for every ~2 tile columns), swizzle 8 ~2.3 GB.
  - L2 -> SM bytes (lts__t_bytes): ~13.8 GB hand-written (128 x 256 tiles read A once per 256 columns
    and B once per 128 rows, 12 GiB of operand reads), ~14.8 GB cooperative (256 x 128 tiles,
    B multicast: 10 GiB predicted, more measured): the cluster's multicast does not buy fewer L2
    bytes than a wider tile does (ch10.warp_specialization's c2 variant, B multicast on the
    hand-written kernel, bought no time either), so the cooperative kernel's edge over the
    register-epilogue kernel was elsewhere: its epilogue (UTMASTG from shared memory, overlapping
    the next tile) and the tile order. With both epilogues alike, the tile order is what is left.
  - SASS: HGMMA.64x256x16 + UTMALDG.2D, USETMAXREG, STS + UTMASTG.2D in hand_written;
    HGMMA.64x128x16, UTMALDG.3D.MULTICAST, UTMASTG, UCGABAR in the cooperative kernels.
  - Launch: hand_written 132 blocks x 384 threads, no cluster; cooperative 132 CTAs x 384 threads
    in 2x1 clusters (launch__cluster_dim_x = 2).
  - Tensor pipe active: highest for cuBLAS and swizzle 8, lowest for cooperative swizzle 1.

Correctness, inputs, reference, FLOPs and bytes are the sibling pairs' (they are the same fp16 TN
GEMM): A ~ N(0, 1/k) [m, k], B ~ N(0, 1) [n, k], fp16; the float64 reference A @ B^T of the rounded
operands; tolerance 2e-3 (~10x the fp16 rounding of C). 2 m n k = 1.10 TFLOP per call; minimum
DRAM bytes 2 (m k + n k + m n) = 671 MB. Small size: the CUTLASS pair's ragged 520 x 264 x 520
(2 clusters, one half out of range; 9 k-blocks, so every ring wraps). Needs sm_90a, nvcc and the
CUTLASS headers (`nvidia-cutlass` wheel) for the CUTLASS variants.
"""
from __future__ import annotations

from collections.abc import Mapping

from aisp_kernels import gemm
from aisp_kernels.siblings import load_sibling
from aisp_prof.pairs import Book, KernelPair, Mechanism, Requirements

NAME = "ch10.warpgroup_specialization"
DEFAULT_SIZES = {"m": 16384, "n": 16384, "k": 2048}          # the book's size
SMALL_SIZES = {"m": 520, "n": 264, "k": 520}

# The two sibling pairs whose kernels this one compares (their files are in this pair's digest).
_HAND = load_sibling(__file__, "warp_specialization.py", "aisp_ch10_warp_specialization_for_warpgroup")
_CUTLASS = load_sibling(__file__, "warp_specialization_cutlass.py", "aisp_ch10_ws_cutlass_for_warpgroup")

make_inputs = _HAND.make_inputs          # a [m, k] ~ N(0, 1/k), b [n, k] ~ N(0, 1), fp16: the same in both siblings

hand_written = _HAND.warp_specialized
cutlass_cooperative_c2 = _CUTLASS.cooperative_256x128_c2
cutlass_cooperative_c2_swizzle8 = _CUTLASS.cooperative_256x128_c2_swizzle8
cublas = _HAND.cublas

reference = gemm.reference_tn            # float64 A @ B^T of the rounded operands
flops = gemm.flops                       # 2 m n k


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: read A and B once, write C once, 2 bytes each."""
    return gemm.min_bytes(sizes, 2)


_CUTLASS_NEEDS = ("gpu", "nvcc", "cutlass")


SIZE_RULES = _HAND.SIZE_RULES                    # the hand-written sibling's: 16-byte fp16 rows for TMA


PAIR = KernelPair(
    name=NAME,
    chapter=10,
    lesson="The hand-written warp-specialized wgmma GEMM (persistent, setmaxnreg producer and consumers, 128x256 "
           "tiles) vs CUTLASS's cooperative 256x128 kernel on a 2x1 cluster with B multicast, in its default "
           "and a group-8 tile order: what is left between them once both split their roles.",
    make_inputs=make_inputs,
    variants={"baseline": hand_written, "cutlass_cooperative_c2": cutlass_cooperative_c2,
              "cutlass_cooperative_c2_swizzle8": cutlass_cooperative_c2_swizzle8, "cublas": cublas},
    roles={"cublas": "reference"},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=2e-3,                      # fp16 rounding of C ~2.8e-4 relative; fp32 accumulation ~3e-6
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (wgmma, setmaxnreg, TMA multicast); on Blackwell run the book's "
                               "tcgen05 pair"),
    variant_needs={"baseline": ("gpu", "nvcc"), "cutlass_cooperative_c2": _CUTLASS_NEEDS,
                   "cutlass_cooperative_c2_swizzle8": _CUTLASS_NEEDS, "cublas": ("gpu",)},
    expect=(Mechanism("dram_bytes", "increase", factor=2.0, variants=("cutlass_cooperative_c2",),
                      why="CUTLASS's default tile order streams A from DRAM again every ~2 tile columns: "
                          "~4.5 GB against ~1.8 GB for the hand-written kernel's group-8 order"),),
    book=Book("cutlass_cooperative_c2", 1.602, "spec §3.2 tcgen05_warpgroup_specialization",
              off_reason="the hand-written baseline here already has what made the book's CUTLASS kernel "
                         "faster (persistence, warp specialization, a group-8 tile order) and Hopper has no 2-SM MMA"),
)
