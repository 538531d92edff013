"""Chapter 10: warp-specialized GEMMs from CUTLASS, the 1-CTA kernel against the 2-CTA-cluster one.

The lesson: a warp-specialized GEMM gives loading and math to different warps (a TMA producer,
wgmma consumers) over a ring of shared-memory stages, and CUTLASS's CollectiveBuilder assembles
one from a handful of choices. Which choices matter once the roles are split? The tile shape and
how many CTAs share an operand: a 256x128 tile on a 2-CTA cluster reads fewer operand bytes per
FLOP from L2 than a 128x128 tile alone, and a persistent kernel hides the epilogue behind the
next tile's loads. This is the book's `tcgen05_warp_specialization_cutlass` pair, whose goal is
"comparison", not speed: on B200 the two CUTLASS kernels land within 3.3% of each other (1.7787
vs 1.7213 ms, 1.033x), and here the library reference, cuBLAS, stands beside them (issue 13's
bar: the cooperative 2x1 kernel at >= 95% of cuBLAS).

What the book's code does (as the project's spec, section 2.3, reads it):
`tcgen05_warp_specialized_cutlass.cu` builds a CUTLASS Sm100 GEMM with
`KernelTmaWarpSpecialized1SmSm100`, a 128x128x64 MMA tile on a 1x1x1 cluster, and
`tcgen05_warpgroup_specialized.cu` the same with `KernelTmaWarpSpecialized2SmSm100`, a 256x128x64
tile whose UMMA is issued by one CTA for a pair of SMs (cluster 2x1x1, accumulators in tensor
memory). fp16 in and out, fp32 accumulation, A row-major, B column-major, 16384 x 16384 x 2048.

The Hopper port (warp_specialization_cutlass.cu, one .cu, three template instantiations of one
CollectiveBuilder recipe, as ch09.cutlass_gemm builds them). Hopper has no 2-SM MMA and no tensor
memory; the closest analog of the book's 2-SM kernel is a 256x128 tile split over two consumer
warpgroups (`KernelTmaWarpSpecializedCooperative`) on a 2x1 cluster whose two CTAs share the B
tile through TMA multicast: two SMs still cooperate on one operand, but through L2 traffic, not
through one MMA.
  baseline (ws_128x128)
      `KernelTmaWarpSpecialized`, 128x128x64, cluster 1x1x1 (the book's 1-SM kernel): one TMA
      producer warpgroup and one wgmma consumer warpgroup (256 threads, no setmaxnreg), a 6-stage
      ring, one output tile per CTA (16,384 CTAs at the book's size, ~124 waves of one CTA per
      SM), so every tile pays its ring fill and its epilogue with the tensor cores idle.
  cooperative_256x128_c2
      `KernelTmaWarpSpecializedCooperative`, 256x128x64, cluster 2x1x1 (the book's 2-SM kernel):
      persistent (one CTA per SM loops over tiles), a producer warpgroup that gives up registers
      (setmaxnreg 40) to two consumer warpgroups (setmaxnreg 232) each computing 128x128 of the
      tile, a 4-stage ring; the two CTAs of a cluster take vertically adjacent tiles with the same
      B columns, each loads half of the B box and TMA multicasts it into both. CUTLASS's default
      tile order (swizzle 1).
  cooperative_256x128_c2_swizzle8
      the same kernel, with the persistent scheduler handing out tiles in groups 8 clusters wide
      (max_swizzle_size = 8): only the order of the tiles changes (see the L2 note below).
  pingpong_128x128
      `KernelTmaWarpSpecializedPingpong`, 128x128x64, cluster 1x1x1: persistent, two consumer
      warpgroups each own a whole tile and take turns, one in its mainloop while the other runs
      its epilogue (CUTLASS's usual choice for fp16 on Hopper at this size).
  cublas
      torch.mm(a, b.t()) on the same fp16 operands: cuBLAS's Hopper kernel, the reference library.
Built with -DNDEBUG: without it CuTe's device asserts leave calls in the kernels and ptxas
serializes every wgmma around them (warning C7510; one WARPGROUP.DEPBAR per HGMMA in SASS).

Predicted profile (ncu; the measured numbers belong in kernels/ch10/README.md):
  - SASS: HGMMA.64x128x16 fed by UTMALDG in every CUTLASS kernel (HGMMA + UTMALDG + UTMASTG, the
    TMA store epilogue); UTMALDG.3D.MULTICAST (B) and cluster barriers (UCGABAR) only in the 2x1
    kernel; USETMAXREG only in the cooperative and ping-pong kernels; in every kernel far fewer
    WARPGROUP.DEPBAR than HGMMA (the wgmma pipeline is not serialized).
  - launch (ncu `cluster_dim_x`, launch__cluster_dim_x): 2 for the cooperative kernel; the 1x1x1
    kernels are launched without a cluster attribute (0 or 1). Grids: 16,384 CTAs x 256 threads
    (baseline), one CTA per SM x 384 threads (the persistent kernels).
  - L2->SM operand bytes (`l2_bytes`, lts__t_bytes.sum; `sol_l2_pct`): a 128x128 tile reads
    2 x 128 x k x 2 bytes for 2 x 128^2 x k FLOP, 64 FLOP per L2 byte: 16 GiB at the book's size
    (8 GiB of A, 8 GiB of B). The 256x128 tile on a 2x1 cluster reads A once per 128 columns
    (8 GiB) and B once per 512 rows, because each CTA loads half of the multicast box and L2
    serves it once for both SMs (2 GiB of B; 4 GiB without multicast, 8 GiB with 128-row tiles):
    ~10 GiB, 102 FLOP/B. At ~700 TFLOP/s the 128x128 tiles ask L2 for ~11 TB/s, above what
    Hopper's L2 is usually measured to deliver; the cluster kernel ~7 TB/s.
  - DRAM bytes (`dram_read_bytes`): the minimum is 640 MiB, but each operand is 64 MiB, more than
    the 50 MB L2. The baseline's grid walks down M first (blockIdx.x = M tile), so each of the 128
    tile columns streams all of A again: up to ~8 GiB of DRAM reads, ~2.5 ms at H100's 3.35 TB/s,
    which would make it DRAM-bound rather than tensor-bound. The persistent kernels with swizzle 1
    stream all of A per ~2 tile columns (cooperative: up to ~4 GiB) or all of B per tile row
    (ping-pong, 128 x 128 tiles walked along N: up to ~8 GiB); swizzle 8 keeps a wave's working
    set (~16 MiB of A, 4 MiB of B) in L2 and cuts the DRAM reads to ~1.1 GiB. How far below
    "up to" the measured bytes land says how much of the 64 MiB operand L2 keeps.
  - tensor pipe (`tensor_pipe_active_pct`, sm__pipe_tensor_cycles_active): highest for the
    swizzled cooperative kernel and cuBLAS, lowest for the baseline; expected order of time:
    cublas ~ cooperative_swizzle8 ~ pingpong < cooperative (swizzle 1) < baseline, the baseline
    1.2-2x slower on Hopper (a larger gap than the book's 1.033x, because here the 1-CTA kernel is
    also the non-persistent, DRAM-heavy one); stalls: `gmma` and barrier waits in the consumers,
    long waits on the full barrier where DRAM is the limit.
Analytic counts (`flops`, `bytes`): 2 m n k = 1.10 TFLOP per call at the book's size (1.1 ms at
H100/H200's 989 TFLOP/s dense fp16 datasheet roof); minimum DRAM bytes 2 (m k + n k + m n) =
640 MiB, 1638 FLOP/B: compute-bound by the roofline, so everything above is about feeding it.

Correctness: A ~ N(0, 1/k) [m, k] and B ~ N(0, 1) [n, k], both rounded to fp16, so every variant
multiplies exactly the numbers the float64 reference A @ B^T multiplies; C ~ N(0, 1). The errors
left are fp32 accumulation (~2.5e-7 relative at k = 2048, measured on the CPU) and the fp16
rounding of C, ~2.1e-4 relative (Frobenius; at most 2^-11 / sqrt(3) ~ 2.8e-4); cuBLAS may also
reduce split-K partial sums in fp16 (torch allows it by default), a few 1e-4 more. Tolerance
2e-3: ~10x the expected error, while one dropped k-block of 64 gives ~0.18 and a transposed C
~1.4 (the tests measure all three). The reference is the full float64 product, not a sample: at
the book's size 2 GiB of output and 1.1 TFLOP of fp64 (tens of ms on the GPU's DGEMM, ~10 GiB of
device memory for the check in all), affordable where the check runs; on a CPU use small sizes.

Sizes: m is free; n and k must be multiples of 8 (16-byte rows for TMA; TMA zero-fills the
ragged edges and clips the stores). The kernels are built for sm_90a (wgmma, setmaxnreg and
multicast TMA are arch-specific): Hopper only, and the CUTLASS headers come from the
`nvidia-cutlass` package (aisp_prof.tools.cutlass_include_dirs: include/ and
tools/util/include/), $AISP_CUTLASS_INCLUDE or `.cutlass/include`. Building the three kernel
instantiations takes ~2 minutes of nvcc (2 CPU cores), on first use only.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from aisp_kernels import gemm
from aisp_kernels.binding import CudaLibrary
from aisp_prof import tools
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

NAME = "ch10.warp_specialization_cutlass"
CUDA_SOURCE = Path(__file__).with_name("warp_specialization_cutlass.cu")
DEFAULT_SIZES = {"m": 16384, "n": 16384, "k": 2048}       # the book's size
ARCH = "sm_90a"                                            # wgmma, setmaxnreg, multicast TMA
EXTRA_FLAGS = ("--expt-relaxed-constexpr", "-DNDEBUG")     # -DNDEBUG: no assert calls, wgmma not serialized
# variant -> (configuration index in warp_specialization_cutlass.cu, tile-order swizzle)
CONFIGS = {
    "baseline": (0, 1),                       # KernelTmaWarpSpecialized 128x128x64, cluster 1x1x1
    "cooperative_256x128_c2": (1, 1),         # KernelTmaWarpSpecializedCooperative 256x128x64, 2x1x1
    "cooperative_256x128_c2_swizzle8": (1, 8),
    "pingpong_128x128": (2, 1),               # KernelTmaWarpSpecializedPingpong 128x128x64, 1x1x1
}
CONFIG_NAMES = ("KernelTmaWarpSpecialized 128x128x64 cluster1x1x1",
                "KernelTmaWarpSpecializedCooperative 256x128x64 cluster2x1x1",
                "KernelTmaWarpSpecializedPingpong 128x128x64 cluster1x1x1")

LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built for sm_90a on first use (3 parts at once on 8+ cores), never on import
    "aisp_ws_cutlass_gemm": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                              ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong,
                              ctypes.c_void_p), ctypes.c_int),
    "aisp_ws_cutlass_workspace_size": ((ctypes.c_int,) * 5, ctypes.c_longlong),
    "aisp_ws_cutlass_config_count": ((), ctypes.c_int),
    "aisp_ws_cutlass_config_name": ((ctypes.c_int,), ctypes.c_char_p),
    "aisp_ws_cutlass_config_persistent": ((ctypes.c_int,), ctypes.c_int),
}, arch=ARCH, include_dirs=(tools.cutlass_include_dirs,), extra_flags=EXTRA_FLAGS, parts=3)


def validate_sizes(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(m, n, k), or ValueError: all >= 1 and < 2^31, n and k multiples of 8."""
    return gemm.validate_sizes(sizes, 8, "16-byte fp16 rows for TMA")


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """`a` [m, k] ~ N(0, 1/k) and `b` [n, k] ~ N(0, 1), fp16, contiguous (both K-major)."""
    return gemm.kmajor_inputs(*validate_sizes(sizes), device, seed, torch.float16)


def _operands(inputs: Inputs, variant: str) -> tuple[torch.Tensor, torch.Tensor, int, int, int]:
    return gemm.kmajor_operands(NAME, variant, inputs, torch.float16, validate_sizes)


def config_names() -> list[str]:
    """The configurations compiled into the library, in index order (builds it)."""
    count = LIBRARY.fn("aisp_ws_cutlass_config_count")()
    return [LIBRARY.fn("aisp_ws_cutlass_config_name")(i).decode() for i in range(count)]


def _cutlass_factory(variant: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    config, swizzle = CONFIGS[variant]

    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        a, b, m, n, k = _operands(inputs, variant)
        ws_bytes = LIBRARY.fn("aisp_ws_cutlass_workspace_size")(config, m, n, k, swizzle)   # builds, untimed
        if ws_bytes < 0:
            raise ValueError(f"{CONFIG_NAMES[config]}: no workspace size for {m}x{n}x{k}, swizzle {swizzle}")
        d = torch.empty(m, n, device=a.device, dtype=torch.float16)
        workspace = torch.empty(max(ws_bytes, 1), device=a.device, dtype=torch.uint8)
        label = f"aisp_ws_cutlass_gemm ({variant}: {CONFIG_NAMES[config]}, swizzle {swizzle})"

        def launch() -> torch.Tensor:
            # a, b, d, workspace are referenced here (not only their addresses): the closure keeps them alive
            LIBRARY.call("aisp_ws_cutlass_gemm", config, a.data_ptr(), b.data_ptr(), d.data_ptr(), m, n, k,
                         swizzle, workspace.data_ptr(), ws_bytes, torch.cuda.current_stream().cuda_stream,
                         label=label)
            return d

        return launch

    factory.__name__ = "ws_128x128" if variant == "baseline" else variant
    factory.__doc__ = f"CUTLASS {CONFIG_NAMES[config]} (swizzle {swizzle}), fp16 A B^T, on torch's stream."
    return factory


ws_128x128 = _cutlass_factory("baseline")
cooperative_256x128_c2 = _cutlass_factory("cooperative_256x128_c2")
cooperative_256x128_c2_swizzle8 = _cutlass_factory("cooperative_256x128_c2_swizzle8")
pingpong_128x128 = _cutlass_factory("pingpong_128x128")


cublas = gemm.cublas_tn(_operands)        # torch.mm(a, b.t(), out=c): cuBLAS's TN GEMM


reference = gemm.reference_tn            # float64 A @ B^T of the rounded operands


flops = gemm.flops               # 2 m n k


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes: read A and B once, write D once, 2 bytes each."""
    return gemm.min_bytes(sizes, 2)


_CUTLASS_NEEDS = ("gpu", "nvcc", "cutlass")


SIZE_RULES = gemm.size_rules(8, "16-byte fp16 rows for TMA")


PAIR = KernelPair(
    name=NAME,
    chapter=10,
    lesson="Warp-specialized CUTLASS GEMMs compared: a 128x128 tile on one CTA vs a 256x128 tile split "
           "over two consumer warpgroups on a 2x1 cluster sharing B by TMA multicast (Hopper's analog "
           "of the book's 2-SM MMA), with cuBLAS as the reference.",
    make_inputs=make_inputs,
    variants={"baseline": ws_128x128, "cooperative_256x128_c2": cooperative_256x128_c2,
              "cooperative_256x128_c2_swizzle8": cooperative_256x128_c2_swizzle8,
              "pingpong_128x128": pingpong_128x128, "cublas": cublas},
    roles={"cublas": "reference"},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    size_rules=SIZE_RULES,
    # sanitizer size: 3 x 3 tiles of 256 x 128 (2 clusters, one half out of range), ragged M/N/K,
    # 9 k-blocks of 64 so each ring (4 or 6 stages) wraps
    small_sizes={"m": 520, "n": 264, "k": 520},
    tolerance=2e-3,      # fp16 rounding of C ~2.8e-4 relative; fp32 accumulation ~3e-6
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (CUTLASS 3.x TMA/wgmma kernels); on Blackwell run the "
                               "book's tcgen05 pair"),
    variant_needs={**{v: _CUTLASS_NEEDS for v in CONFIGS}, "cublas": ("gpu",)},
    comparison=True,                   # the book's goal for this pair is "comparison" (spec §3.2): no speed claim
    book=Book("cooperative_256x128_c2", 1.033, "spec §3.2 tcgen05_warp_specialization_cutlass "
              "(goal: comparison)",
              off_reason="the B200's 2-SM UMMA has no Hopper equivalent: here a 2x1 cluster sharing B by "
                         "multicast against a 1-CTA kernel that is slower on Hopper than the book's 1-SM one"),
)
