"""Chapter 10: one TMA multicast feeds a whole cluster the B tile that every CTA used to fetch itself.

The operation: an fp32 GEMM C[M, N] = A[M, K] @ B[K, N], all row-major (default M = N = K = 4096,
the book's size). Inputs are random integers in [-2, 2] stored as fp32, so every partial sum is
an integer of magnitude <= 4K < 2^24 and exact in fp32 in any order: the check is exact
(tolerance 0 against float64) for any K <= 2^22.

What the book's code does (tma_multicast_baseline.cu / tma_multicast_cluster.cu, spec 2.1): a
deliberately thin CTA tile, 4 x 128 with TILE_K = 128, 128 threads x 4 outputs, so a CTA reuses
each B element only 4 times and the 64 KiB B tile dominates its traffic. Both binaries launch
16 x 1 clusters along M (cluster size 16 is non-portable): the 16 CTAs of a cluster need the
same B tile at every k step. The baseline ignores that: each CTA loads its own B tile with plain
loads, so L2 serves every B byte 16 times per cluster. Its kernel is called
tma_nomulticast_gemm_kernel, but it uses no TMA at all (LDG + STS), so the book's ratio is TMA and
multicast together against per-thread loads. The optimized kernel has cluster rank 0
issue one cp.async.bulk.tensor with .multicast::cluster (ctaMask 0xFFFF) that writes the box into
all 16 CTAs' shared memory, completion counted by an mbarrier expect-tx in each CTA, with a
cluster.sync() before each issue; each CTA loads its own 2 KiB A tile meanwhile. The book's kernel
has a second cluster.sync() after the math of every k step, which the first one of the next step
already covers; its multicast B tile is a 64 KiB *static* __shared__ array; its cuda::barrier
counts all 128 threads' arrivals (thread 0's with the expect-tx), where one arrival (thread 0's
expect-tx) is enough: everyone still waits on the phase.

Variants (cluster_multicast.cu; all launched in clusters of `cluster` CTAs, 16 by default, the
inner product identical: per k one broadcast A value and one 16-byte LDS of 4 B columns, 4 FFMAs):
  baseline          the book's baseline: every CTA copies the 128 x 128 B tile with plain,
                    coalesced 4-byte loads (LDG + STS, unrolled 8 deep), then __syncthreads.
  multicast         the book's optimized kernel: rank 0, thread 0 issues ONE TMA multicast of the
                    B tile (UTMALDG.2D.MULTICAST) to all `cluster` CTAs, mask (1 << cluster) - 1;
                    every CTA arms its mbarrier with 65,536 expect-tx bytes, and one cluster
                    barrier per k step (release/acquire: MEMBAR.ALL.GPU + UCGABAR in SASS)
                    guarantees every CTA is done with the previous tile and armed before rank 0
                    overwrites all tiles. One more cluster barrier at the end keeps any CTA from
                    leaving while its multicast may still be landing elsewhere.
  tma_no_multicast  (new, the control) every CTA issues its own TMA load of the B tile
                    (UTMALDG.2D, no multicast, no cluster barrier). multicast vs this is what
                    multicast itself buys (one L2 read instead of `cluster`, at the price of a
                    cluster barrier per k step); this vs the baseline is what the bulk copy engine
                    buys over 128 loads per thread. The book's 2.72x mixes the two.
`--sizes cluster=N` (N in 2, 4, 8, 16) runs every variant with clusters of N, so the report can show
multicast width against gain, and a GPU that refuses the non-portable 16 still runs the lesson at
the portable 8. Each variant first asks CUDA whether clusters of N CTAs of its kernel (128 threads,
67,592 bytes of dynamic shared memory) can be resident (cudaOccupancyMaxActiveClusters >= 1, after
cudaFuncAttributeNonPortableClusterSizeAllowed); if not, RequirementError (a skip).

What this port changes: the shared memory is dynamic in every variant (64 KiB B tile + 2 KiB A tile
+ the mbarrier = 67,592 bytes, above the 48 KiB static limit; the same layout everywhere, so
occupancy is equal: up to 3 CTAs per SM on an H100, 3 x 67.6 of its 228 KB); one cluster barrier
per k step instead of two; the CUtensorMap is encoded once in the factory, not per call (as the
book builds it once outside its timed loop); M, N and K may be ragged: TMA
zero-fills what sticks out of B, the plain loads do the same by hand, grid.x is rounded up to
whole clusters (padding CTAs join every barrier and multicast but store nothing). N must be a
multiple of 4 (TMA needs a 16-byte row pitch): make_inputs raises ValueError otherwise.

Predicted profile (default size, cluster 16; H100 SXM: 132 SMs, ~50 MB L2):
  - grid 1024 x 32 = 32,768 CTAs, 2,048 clusters; launch__cluster_dim_x = 16 in every variant;
    32 k steps per CTA. ncu should report ~24 clusters resident (3 CTAs per SM by shared memory).
  - L2 -> SM bytes: the baseline and tma_no_multicast pull 64 KiB of B + 2 KiB of A per CTA per k
    step = 64 GiB + 2 GiB per call (~2.2e9 L2 read sectors); multicast reads each B box once per
    cluster: 4 GiB + 2 GiB (~0.2e9 sectors, ~11x fewer; cluster=8: 8 + 2 GiB). The LSU global
    loads (l1tex__t_sectors_pipe_lsu_mem_global_op_ld) fall from ~2.2e9 sectors in the baseline
    to A's ~0.07e9 in both TMA variants.
  - SASS: UTMALDG.2D.MULTICAST only in multicast, UTMALDG.2D only in tma_no_multicast, the
    mbarrier (SYNCS.*) in both, cluster barriers (UCGABAR) only in multicast, none in the
    baseline, whose B tile is LDG + STS.
  - DRAM is not the bound: the minimum is 192 MiB (`bytes`), the real traffic ~2.1 GiB because A
    (64 MiB, above the L2) is streamed again for each of the 32 column strips: ~0.7 ms at 3.35 TB/s.
  - Ceiling: the FP32 FMA peak is ~67 TFLOPS (2.1 ms for 137 GFLOP), but with 4 outputs per thread
    every variant is bound by shared-memory bandwidth: per 4 k steps a warp issues 16 FFMAs (4 SM
    clocks of FMA pipe) against 17 shared-memory wavefronts (4 LDS.128 of B at 512 bytes, one
    broadcast LDS.128 of A), plus 512 wavefronts per CTA per k step to write the B tile (by STS
    or TMA): ~2,700 shared-memory clocks per CTA per k step, ~10.8 ms per call at 1.98 GHz
    (~12.7 TFLOPS). The baseline also needs ~71 GB from L2 (10-13 ms at ~5.5-7 TB/s) with at most 8
    loads in flight per thread and the whole k step's loads exposed (single buffer), so expect it
    at 2-3x the floor (20-35 ms; B200: 64.0 ms); multicast near the floor plus its per-k cluster
    barrier and exposed TMA latency (12-18 ms; B200: 23.5 ms, 2.72x); tma_no_multicast between,
    its 66 GiB of L2 reads now issued by the copy engine.
  - Stalls: long_scoreboard (LDG) and barrier dominate the baseline; the TMA variants wait in the
    mbarrier try-wait loop (SYNCS.PHASECHK); multicast adds membar/barrier stalls from the
    per-k cluster barrier.

The book's size stays the default: one call should take tens of milliseconds on Hopper, fine for
ncu replays and the timer.

Analytic counts, one call: `flops` = 2 M N K; `bytes` = the minimum DRAM bytes, 4 (MK + KN + MN).
Sanitizer size (compute-sanitizer memcheck/racecheck/synccheck): m=102, n=260, k=300, cluster=16:
a 32 x 3 grid (two clusters per column strip, the second with 6 padding CTAs), 3 k steps (the last
44 deep), a 4-column last n tile and a 2-row last m tile.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels.binding import CudaLibrary
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

CUDA_SOURCE = Path(__file__).with_name("cluster_multicast.cu")
ARCH = "sm_90a"                        # TMA multicast and clusters: the arch-specific Hopper target
DEFAULT_SIZES = {"m": 4096, "n": 4096, "k": 4096, "cluster": 16}
SMALL_SIZES = {"m": 102, "n": 260, "k": 300, "cluster": 16}     # for compute-sanitizer
TILE_M, TILE_N, TILE_K = 4, 128, 128
CLUSTERS = (2, 4, 8, 16)               # 16 is non-portable; 8 is the largest portable size
MAX_ABS = 2                            # inputs are integers in [-2, 2]
MAX_K = 1 << 22                        # |partial sums| <= 4K < 2^24: exact in fp32
SIZE_RULES = (SizeRule("n", step=4, minimum=4, maximum=65535 * TILE_N, why="TMA needs 16-byte row pitches"),
              SizeRule("k", maximum=MAX_K, why="beyond it the fp32 sums of the integer inputs are no longer exact"),
              SizeRule("cluster", choices=CLUSTERS, why="the cluster sizes the kernel is built for"))
MAP_BYTES = 128                        # sizeof(CUtensorMap)
SMEM_BYTES = TILE_K * TILE_N * 4 + TILE_M * TILE_K * 4 + 8
VARIANT_IDS = {"baseline": 0, "multicast": 1, "tma_no_multicast": 2}
_PROBES = {c: f"aisp_cluster_multicast_cluster{c}_support" for c in CLUSTERS}
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built for sm_90a on first use, never on import
    "aisp_cluster_multicast": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p), ctypes.c_int),
    "aisp_cluster_multicast_encode_b": ((ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p), ctypes.c_int),
    **{probe: ((), ctypes.c_int) for probe in _PROBES.values()},
}, error_string="aisp_cluster_multicast_error_string", arch=ARCH)


def check_sizes(m: int, n: int, k: int, cluster: int) -> None:
    """ValueError unless the kernels take these sizes exactly."""
    if m < 1 or m >= 2**31:
        raise ValueError(f"m={m}: must be in 1 .. 2^31 - 1")
    if n < 4 or n % 4 or n > 65535 * TILE_N:
        raise ValueError(f"n={n}: must be a multiple of 4 (TMA needs 16-byte row pitches) in 4 .. {65535 * TILE_N}")
    if k < 1 or k > MAX_K:
        raise ValueError(f"k={k}: must be in 1 .. 2^22 (beyond that the fp32 sums are no longer exact)")
    if cluster not in CLUSTERS:
        raise ValueError(f"cluster={cluster}: must be one of {', '.join(map(str, CLUSTERS))}")


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """A [m, k] and B [k, n]: random integers in [-2, 2] as fp32, seeded; `cluster` for the launch."""
    m, n, k = int(sizes["m"]), int(sizes["n"]), int(sizes["k"])
    cluster = int(sizes.get("cluster", DEFAULT_SIZES["cluster"]))
    check_sizes(m, n, k, cluster)
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randint(-MAX_ABS, MAX_ABS + 1, (m, k), generator=gen, device=device, dtype=torch.int32)
    b = torch.randint(-MAX_ABS, MAX_ABS + 1, (k, n), generator=gen, device=device, dtype=torch.int32)
    return {"a": a.to(torch.float32), "b": b.to(torch.float32), "cluster": cluster}


def _require_cluster(variant: str, cluster: int) -> None:
    """RequirementError unless clusters of `cluster` CTAs of these kernels fit this GPU (asked in CUDA)."""
    kind = "non-portable, allowed by cudaFuncAttributeNonPortableClusterSizeAllowed" if cluster > 8 else "portable"
    LIBRARY.require(_PROBES[cluster], f"ch10.cluster_multicast {variant} needs clusters of {cluster} CTAs ({kind}) "
                    f"with {SMEM_BYTES} bytes of shared memory each resident at once, and this GPU has none "
                    "(cudaOccupancyMaxActiveClusters is 0 or refuses it); try --sizes cluster=8")


def _factory(name: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    variant_id = VARIANT_IDS[name]

    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        a, b = inputs["a"], inputs["b"]
        cluster = int(inputs.get("cluster", DEFAULT_SIZES["cluster"]))
        if not (a.is_cuda and b.is_cuda):    # CPU tensors: RequirementError before any build
            raise RequirementError(f"ch10.cluster_multicast {name} variant needs CUDA tensors (run on a GPU)")
        if a.dtype != torch.float32 or b.dtype != torch.float32 or not (a.is_contiguous() and b.is_contiguous()):
            raise ValueError("a and b must be contiguous float32 matrices")
        (m, k), (k2, n) = a.shape, b.shape
        if k2 != k:
            raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
        check_sizes(m, n, k, cluster)
        if (a.data_ptr() | b.data_ptr()) % 16:
            raise ValueError("a and b must be 16-byte aligned (TMA reads B; C is stored as float4)")
        LIBRARY.load()                       # build here, outside the timed call
        _require_cluster(name, cluster)
        c = torch.empty(m, n, device=a.device, dtype=torch.float32)
        map_b = None
        if variant_id != 0:                  # the tensor map is encoded once, here, not per call
            map_b = ctypes.create_string_buffer(MAP_BYTES)
            LIBRARY.call("aisp_cluster_multicast_encode_b", b.data_ptr(), k, n, map_b,
                         label=f"aisp_cluster_multicast_encode_b({name})")
        a_ptr, b_ptr, c_ptr = a.data_ptr(), b.data_ptr(), c.data_ptr()
        label = f"aisp_cluster_multicast({name}, cluster={cluster})"

        def launch() -> torch.Tensor:
            LIBRARY.call("aisp_cluster_multicast", variant_id, map_b, a_ptr, b_ptr, c_ptr, m, n, k, cluster,
                         torch.cuda.current_stream().cuda_stream, label=label)
            return c

        # The closure owns its inputs (the tensor map points into b): bench.timing keeps only the closure.
        launch.keep_alive = (a, b, map_b)  # type: ignore[attr-defined]
        return launch

    factory.__name__ = name
    factory.__doc__ = f"The {name} kernel of cluster_multicast.cu via ctypes, on torch's current stream."
    return factory


baseline = _factory("baseline")
multicast = _factory("multicast")
tma_no_multicast = _factory("tma_no_multicast")


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 A @ B on the inputs' device (exact for these integer inputs)."""
    return inputs["a"].double() @ inputs["b"].double()


def flops(sizes: Mapping[str, int]) -> int:
    """2 M N K: one FFMA per term."""
    return 2 * int(sizes["m"]) * int(sizes["n"]) * int(sizes["k"])


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: A and B read once, C written once, fp32."""
    m, n, k = int(sizes["m"]), int(sizes["n"]), int(sizes["k"])
    return 4 * (m * k + k * n + m * n)


PAIR = KernelPair(
    name="ch10.cluster_multicast",
    chapter=10,
    lesson="A cluster of 16 CTAs that need the same B tile: each fetching it from L2 itself vs one TMA "
           "multicast that writes it into all 16 (and a per-CTA TMA control that separates the two gains).",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "multicast": multicast, "tma_no_multicast": tma_no_multicast},
    roles={"tma_no_multicast": "control"},      # TMA without the multicast: the multicast alone
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=0.0,                     # integer-valued inputs: the fp32 GEMM is exact
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (Hopper TMA multicast, clusters of 16); on Blackwell run the "
                               "book's pair"),
    variant_needs={name: ("gpu", "nvcc") for name in VARIANT_IDS},
    book=Book("multicast", 2.72, "spec §3.2 cluster_multicast_cuda",
              off_reason="the book's ratio mixes TMA and the multicast (tma_no_multicast splits them), and the "
                         "per-CTA loads' L2 cost differs by GPU"),
)
