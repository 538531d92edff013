"""Chapter 10: a 2 x 1 cluster GEMM that fetches its shared B tile once (TMA multicast), fed by a 2- or 4-stage ring.

The lesson: two CTAs that compute neighbouring row tiles of C need the same column tile of B at
every k step. Launched as a 2 x 1 thread-block cluster, each can load half of that tile and
multicast it into both CTAs' shared memory, so L2 serves B once per cluster instead of twice; the
price is a ring whose stages are written by both CTAs, so a stage may only be refilled once the
readers of BOTH CTAs released it (a cluster-wide `empty` barrier). And the ring's depth decides
whether the loads are hidden: with 2 stages the next k-tile's load is issued only one k-tile
ahead, after the previous wgmma group retires, and TMA's latency shows; with 4 stages three loads
are in flight behind the math.

The operation: C[m, n] = A[m, k] @ B[n, k]^T, fp16 in and out, fp32 accumulation, both operands
K-major. Default m = n = 6144, k = 2048 (the book's size): 2 m n k = 154.6 GFLOP on at least
2 (m k + n k + m n) = 125.8 MB, ~1230 FLOP/B: compute-bound.

What the book's code does (spec 2.3, `tcgen05_cluster_pipeline`; B200 0.6453 -> 0.5697 ms,
1.133x, spec 3.2): the baseline is ch09/tcgen05_pipelined.cu called plainly (a 2-stage TMA
double buffer whose single issuing warp waits on the MMA barrier after every k-tile; no
cluster). The optimized side is ch10/tcgen05_cluster.cu: `__cluster_dims__(2, 1, 1)` launched
with cudaLaunchKernelEx as 2 x 1 clusters, 4 stages, the two CTAs of a cluster on different M
tiles and the same N tile, the call captured once into a torch.cuda.CUDAGraph and replayed. Its
header says the B tiles are multicast, but it issues a per-CTA SM90_TMA_LOAD: there is no
multicast in the book's kernel; its 1.133x mixes the deeper ring, the cluster launch and the
graph. (Both sides write an fp32 buffer and convert it with `.to(float16)`, tcgen05 + TMEM.)

This port (cluster_pipeline.cu), every hand-written variant the same TMA + wgmma kernel as
matmul_wgmma_pipelined.cu (128 x 256 tile per CTA, BK = 64, two consumer warpgroups of 64 rows,
4 wgmma m64n256k16 per k-tile, wait_group 1 so one wgmma group stays in flight, thread 0 the TMA
producer, fp16 stored from the registers), compiled with `__cluster_dims__(2, 1, 1)`: rank r of
cluster c takes row tile 2 p + r of row pair p and both take column tile n (raster: groups of 4
row pairs walked column by column). Only one lever moves between neighbouring variants:
  baseline (two_stage)       kStages = 2 (96 KiB) with the B multicast: the ring loads 1 k-tile
                             ahead. Graph-replayed.
  four_stage                 kStages = 4 (192 KiB) with the B multicast: the book's optimized
                             kernel as its header describes it. Graph-replayed.
  four_stage_no_multicast    (new, the control) 4 stages, each CTA loads all 256 rows of B itself
                             (two TMA boxes), barriers counting its own 8 warps, no cluster
                             barrier; still launched in 2 x 1 clusters with the same raster, so
                             four_stage vs this is the multicast alone. Graph-replayed.
  four_stage_eager           (new) four_stage launched directly through ctypes each call (tensor
                             maps encoded, kernel launched): four_stage vs this is the graph alone.
  cublas                     torch.mm(a, b.t(), out=c), the reference an fp16 GEMM is held to.
The multicast, per k-tile: each CTA's thread 0 arms its own `full` barrier for the whole 48 KiB
stage, loads its A box (16 KiB) and loads half of the B tile (rank r: rows 128 r ..) with
cp.async.bulk.tensor.2d...multicast::cluster, ctaMask 0b11: the 16 KiB land at the same offset in
both CTAs and complete on both `full` barriers. A stage of CTA 0 is thus written by CTA 1 too,
so each `empty` barrier counts 16 arrivals, its own 8 warps and the peer's 8: a warp releases a
stage with a local arrive plus a remote one (`mapa` + mbarrier.arrive.shared::cluster), and each
producer waits on its own `empty` before refilling. A cluster barrier after the barrier init and
one after the main loop (nobody exits while the peer can still arrive on its barriers) complete
the protocol. The remote arrive keeps PTX's default release-at-CTA-scope semantics, as CUTLASS's
sm90 ClusterBarrier::arrive does: spelled .release.cluster, ptxas puts MEMBAR.ALL.GPU before
every arrive (one per warp per k-tile) and the released accesses are wgmma reads that
wait_group has already retired. What a CUDA graph changes for ONE kernel of ~0.25 ms: nothing on
the GPU (the same kernel, grid and time); it removes the host work of a call (a ctypes call, two
cuTensorMapEncodeTiled, a launch: ~10-20 us of CPU) and replaces it by one cudaGraphLaunch. When
calls are queued back to back the GPU never sees that host time; when each call is timed alone
with events around it, part of it lands between the events, so expect four_stage_eager within a
few percent of four_stage, and equal kernel time in nsys.
Sizes are free up to TMA's rules: n and k multiples of 8 (16-byte row pitches), any m >= 1:
TMA zero-fills the boxes that stick out (k-tiles = ceil(k / 64)), an odd row-tile count gets a
padding CTA that joins its cluster and stores nothing, the epilogue stores in-range elements
only; make_inputs raises ValueError otherwise.

Predicted profile (H100 SXM, 132 SMs, 50 MB L2; measured numbers belong in kernels/ch10/README.md):
  - Grid 1152 CTAs = 576 clusters (48 x 24 tiles), 1 CTA per SM (154 registers: two 256-thread
    CTAs would need more than the SM's 64 K registers, so two_stage's smaller ring buys nothing),
    launch__cluster_dim_x = 2 in every hand-written variant (1 for cuBLAS unless it picks a
    cluster kernel); launch__cluster_max_active ~60-66 (a GPC with an odd SM count strands one),
    ~8.7-9.6 waves of 32 k-tiles per CTA.
  - L2 -> SM (TMA) traffic: per CTA and k-tile 16 KiB of A plus 32 KiB of B without multicast,
    16 + 16 KiB with it: 1.81 GB per call in four_stage_no_multicast (B: 1.21 GB) against
    1.21 GB in two_stage and four_stage (B: 0.60 GB, halved), i.e. lts__t_sectors_srcunit_tex
    read sectors ~56.6 M -> ~37.7 M and lts__t_bytes (l2_bytes) down by ~0.6 GB. The SM side
    (l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld, tma_load_bytes) may NOT halve: every
    SM still receives 48 KiB per k-tile, the crossbar delivers a multicast once to each
    destination; read the L2-side counters for the multicast.
  - DRAM: ~126 MB compulsory (A and B, 25 MB each, fit the L2 together; C's 75.5 MB written once):
    equal in every variant, far from the DRAM roof.
  - Time: 0.25 ms is 620 TFLOP/s. four_stage should run near cuBLAS (~0.22-0.27 ms, tensor pipe
    ~75-85% active; 1152 tiles are 8.7 waves of 132, so the last wave is 73% full); two_stage
    pays TMA's L2 round trip (~1 us) on most k-tiles against ~0.6 us of wgmma per k-tile:
    ~1.3-1.6x slower (book: 1.133x for stages + cluster + graph together; matmul_wgmma_pipelined
    measures one stage against a 4-stage ring, one stage shallower: kernels/ch10/README.md).
    Without multicast the 4-stage kernel asks L2 for ~7-8 TB/s at that speed (multicast: ~4.8-5.4),
    and L2 delivers that: matmul_wgmma_pipelined's 4-stage ring pulls the same 48 KiB per CTA and
    k-tile at close to cuBLAS's speed, more than that from L2 (its measurement is in
    kernels/ch10/README.md). So expect four_stage_no_multicast within ~5% of four_stage: at this tile the
    multicast shows in the L2 counters, not in the time (as the README's cluster_multicast found at
    a thinner tile; the crossbar still delivers 48 KiB per k-tile to every SM either way). It pays
    where L2 is the bound: smaller tiles, more clusters per GPC, or a GPU with less L2 bandwidth.
  - Stalls: two_stage dominated by the mbarrier try-wait on `full` (long_scoreboard); four_stage
    by waiting on its own wgmma group; the multicast variants add a little wait on `empty` in
    thread 0 (the slower CTA of the pair paces both).
  - SASS (CUDA 13 ptxas): every kernel HGMMA.64x256x16.F32 x 4 in one gsb0 group per k-tile,
    WARPGROUP.DEPBAR.LE gsb0, 0x1 in the loop and 0x0 once after, SYNCS.EXCH.64 = 2 x stages
    (full + empty), SYNCS.ARRIVE.TRANS64 (expect_tx), SYNCS.PHASECHK.TRANS64.TRYWAIT, STG.E only
    for C (no LDG/LDS, no local memory). Multicast kernels: UTMALDG.2D.MULTICAST x 2 (prologue and
    refill) beside UTMALDG.2D x 2 (A), the remote arrive SYNCS.ARRIVE.TRANS64.RED.A1T0 beside the
    local SYNCS.ARRIVE.TRANS64.A1T0, UCGABAR_ARV + UCGABAR_WAIT x 2 (the two cluster barriers, each
    after MEMBAR.ALL.GPU), no BAR.SYNC, no MEMBAR inside the loop. The control: UTMALDG.2D x 6
    (A + two B boxes, prologue and refill), no MULTICAST, no UCGABAR, no remote arrive, one BAR.SYNC.
    The PTX of every kernel says `.reqnctapercluster 2, 1, 1`.

Correctness: A ~ N(0, 1/k), B ~ N(0, 1) rounded to fp16, so C ~ N(0, 1); the float64 reference
multiplies the same fp16 values, so the only error is fp32 accumulation and the final rounding of
C to fp16 (~2e-4 relative, Frobenius). Tolerance 2e-3, ~10x that; a multicast half landing at
the wrong offset, a stage refilled early or a wrong barrier phase gives O(1) errors.

Analytic counts, one call: `flops` = 2 m n k; `bytes` = minimum DRAM bytes 2 (m k + n k + m n).
Sanitizer size (compute-sanitizer memcheck/racecheck/synccheck): m=300, n=264, k=584: 3 row tiles
(a padding CTA), 2 column tiles (the second 8 wide), 10 k-tiles (the last 8 deep), so the 2-stage
ring wraps 5 times and the 4-stage ring twice, on 4 clusters.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from aisp_kernels import gemm
from aisp_kernels.binding import CudaLibrary
from aisp_prof.pairs import Book, Inputs, KernelPair, Mechanism, Requirements, SizeRule

NAME = "ch10.cluster_pipeline"
CUDA_SOURCE = Path(__file__).with_name("cluster_pipeline.cu")
ARCH = "sm_90a"                        # wgmma, clusters and multicast TMA: the arch-specific Hopper target
DEFAULT_SIZES = {"m": 6144, "n": 6144, "k": 2048}
SMALL_SIZES = {"m": 300, "n": 264, "k": 584}
TILE = {"m": 128, "n": 256, "k": 64}   # the CTA tile (m, n) and the k-tile, in elements
CLUSTER = 2                            # CTAs per cluster (along m): they share B's column tile
ALIGN = 8                              # n and k: 16-byte row pitches for TMA
SIZE_RULES = (SizeRule("n", step=ALIGN, minimum=ALIGN, why="TMA needs 16-byte row pitches"),
              SizeRule("k", step=ALIGN, minimum=ALIGN, why="TMA needs 16-byte row pitches"))
KERNEL_IDS = {"two_stage": 0, "four_stage": 1, "four_stage_no_multicast": 2}
STAGES = {"two_stage": 2, "four_stage": 4, "four_stage_no_multicast": 4}
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built for sm_90a on first use, never on import
    "aisp_cluster_pipeline": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                               ctypes.c_int, ctypes.c_int, ctypes.c_void_p), ctypes.c_int),
    "aisp_cluster_pipeline_support": ((), ctypes.c_int),
}, error_string="aisp_cluster_pipeline_error_string", arch=ARCH)


def validate_sizes(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(m, n, k), or ValueError: m >= 1, n and k positive multiples of 8, the grid within an int."""
    m, n, k = (int(sizes[key]) for key in ("m", "n", "k"))
    if min(m, n, k) < 1 or max(m, n, k) > gemm.INT_MAX or n % ALIGN or k % ALIGN:
        raise ValueError(f"m must be >= 1 and n, k positive multiples of {ALIGN} (TMA needs 16-byte row pitches), "
                         f"each below 2^31; got m={m} n={n} k={k}")
    clusters = -(-m // (CLUSTER * TILE["m"])) * -(-n // TILE["n"])
    if clusters * CLUSTER > gemm.INT_MAX:
        raise ValueError(f"m={m} n={n} needs {clusters * CLUSTER} CTAs, more than a grid of 2^31 - 1")
    return m, n, k


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """`a` [m, k] ~ N(0, 1/k) and `b` [n, k] ~ N(0, 1), fp16, contiguous (both K-major): C ~ N(0, 1)."""
    return gemm.kmajor_inputs(*validate_sizes(sizes), device, seed, torch.float16)


def _operands(inputs: Inputs, variant: str) -> tuple[torch.Tensor, torch.Tensor, int, int, int]:
    return gemm.kmajor_operands(NAME, variant, inputs, torch.float16, validate_sizes)


def _require_support(variant: str) -> None:
    """RequirementError unless this GPU is sm_90, keeps a 2-CTA cluster of every kernel resident
    and the driver exports cuTensorMapEncodeTiled."""
    LIBRARY.require("aisp_cluster_pipeline_support", f"{NAME} {variant} needs an sm_90 GPU (wgmma, TMA multicast) "
                    "that launches 2-CTA clusters of 192 KiB CTAs, and a driver that exports cuTensorMapEncodeTiled")


def _eager(kernel: str, variant: str, inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The direct launch of `kernel` into a preallocated C on torch's current stream (built here)."""
    a, b, m, n, k = _operands(inputs, variant)
    LIBRARY.load()                                   # build here, outside the timed call
    _require_support(variant)
    c = torch.empty(m, n, device=a.device, dtype=torch.float16)
    a_ptr, b_ptr, c_ptr = a.data_ptr(), b.data_ptr(), c.data_ptr()
    kernel_id, label = KERNEL_IDS[kernel], f"aisp_cluster_pipeline({kernel})"

    def launch() -> torch.Tensor:
        LIBRARY.call("aisp_cluster_pipeline", kernel_id, a_ptr, b_ptr, c_ptr, m, n, k,
                     torch.cuda.current_stream().cuda_stream, label=label)
        return c

    launch.keep_alive = (a, b)  # type: ignore[attr-defined]   # the closure owns its operands
    return launch


def _graphed(eager: Callable[[], torch.Tensor]) -> Callable[[], torch.Tensor]:
    """`eager` run once off the capture (sets the kernels' shared-memory attribute), then captured
    into a CUDA graph; the closure replays it on torch's current stream."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        eager()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = eager()

    def launch() -> torch.Tensor:
        graph.replay()
        return out

    launch.keep_alive = (eager, graph)  # type: ignore[attr-defined]   # operands, C and the graph
    return launch


def _factory(kernel: str, variant: str, graphed: bool) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        eager = _eager(kernel, variant, inputs)
        return _graphed(eager) if graphed else eager

    factory.__name__ = kernel if graphed else f"{kernel}_eager"
    factory.__doc__ = (f"The {kernel} kernel of cluster_pipeline.cu ({STAGES[kernel]} stages) into a preallocated "
                       "fp16 C, " + ("captured once into a CUDA graph and replayed" if graphed else
                                     "launched directly each call") + " on torch's current stream.")
    return factory


two_stage = _factory("two_stage", "baseline", graphed=True)
four_stage = _factory("four_stage", "four_stage", graphed=True)
four_stage_no_multicast = _factory("four_stage_no_multicast", "four_stage_no_multicast", graphed=True)
four_stage_eager = _factory("four_stage", "four_stage_eager", graphed=False)


cublas = gemm.cublas_tn(_operands)        # torch.mm(a, b.t(), out=c): cuBLAS's TN GEMM


reference = gemm.reference_tn            # float64 A @ B^T of the rounded operands


flops = gemm.flops                     # 2 m n k


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: read A and B once, write C once, 2 bytes each."""
    return gemm.min_bytes(sizes, 2)


def l2_to_sm_bytes(sizes: Mapping[str, int], multicast: bool) -> int:
    """The bytes the CTAs' TMA loads ask L2 for in one call: per CTA (padding ones included) and
    k-tile, A's 128 x 64 box and B's 256 x 64 tile, of which a multicast CTA asks only its half."""
    m, n, k = validate_sizes(sizes)
    ctas = -(-m // (CLUSTER * TILE["m"])) * CLUSTER * -(-n // TILE["n"])
    k_tiles = -(-k // TILE["k"])
    b_rows = TILE["n"] // CLUSTER if multicast else TILE["n"]
    return ctas * k_tiles * (TILE["m"] + b_rows) * TILE["k"] * 2


PAIR = KernelPair(
    name=NAME,
    chapter=10,
    lesson="A TMA + wgmma GEMM on 2x1 clusters whose CTAs share B's tile through a real TMA multicast "
           "(one L2 read per cluster, a cluster-wide empty barrier), fed by a 2- vs 4-stage ring, graph-replayed.",
    make_inputs=make_inputs,
    variants={"baseline": two_stage, "four_stage": four_stage, "four_stage_no_multicast": four_stage_no_multicast,
              "four_stage_eager": four_stage_eager, "cublas": cublas},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=2e-3,                    # fp16 output rounding ~2e-4 (Frobenius)
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (wgmma, clusters, TMA multicast); on Blackwell run the book's "
                               "tcgen05 pair"),
    variant_needs={"baseline": ("gpu", "nvcc"), "four_stage": ("gpu", "nvcc"),
                   "four_stage_no_multicast": ("gpu", "nvcc"), "four_stage_eager": ("gpu", "nvcc"),
                   "cublas": ("gpu",)},
    roles={"cublas": "reference",       # what an fp16 GEMM is held to, never the headline
           "four_stage_no_multicast": "control", "four_stage_eager": "control"},   # one ingredient each
    expect=(Mechanism("tensor_pipe_active_pct", "increase", factor=1.2,
                      variants=("four_stage", "four_stage_no_multicast", "four_stage_eager"),
                      why="3 k-tiles in flight instead of 1: the wgmmas stop waiting on TMA's L2 round trip"),
            Mechanism("l2_bytes", "increase", factor=1.25, variants=("four_stage_no_multicast",),
                      why="without the multicast L2 serves each B tile twice per cluster: 1.81 vs 1.21 GB "
                          "of TMA reads per call")),
    book=Book("four_stage", 1.133, "spec §3.2 tcgen05_cluster_pipeline",
              off_reason="the book's 1.133x mixes the deeper ring, the cluster launch and the CUDA graph, and "
                         "its kernel has no real multicast; here the 2-stage baseline already has all but the ring"),
)
