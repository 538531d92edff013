"""Chapter 10: per-chunk statistics with a thread-block cluster, and why it is not the fast answer.

The operation: for each chunk c of 2048 fp32 elements of x (default n = 2^24 = 64 MiB, 8192
chunks; a short last chunk is allowed), out[c] = (sum of x, sum of x^2): out has shape [chunks, 2].
Inputs are random integers in [-2, 2] stored as fp32, so both stats are exact in fp32 in any order
(|sum| <= 4096, sum of squares <= 8192): the check is exact (tolerance 0 against float64).

Variants (cluster_group.cu; the book's cluster_group, cluster_group_no_dsmem and
cluster_group_single_cta pairs, all against the same baseline):
  baseline           per-element global atomics: grid = chunks x 256 threads, 8 elements per
                     thread, 2 atomicAdd per element (REDG in SASS), 2048 of them on each output
                     address; out zeroed by cudaMemsetAsync inside the call (the book does 2
                     memsets in its timed loop; one memset of the interleaved out is the same work).
  cluster2_dsmem     (book cluster_group) a 2-CTA cluster per chunk, set at launch
                     (cudaLaunchKernelEx + cudaLaunchAttributeClusterDimension): rank 0 loads the
                     chunk into 8 KiB of shared memory, cluster.sync(), both CTAs read the tile
                     through cluster.map_shared_rank (DSMEM; generic LD.E into the shared window in
                     SASS), rank 0 reduces the sum, rank 1 the sum of squares, a final
                     cluster.sync() keeps rank 0's tile alive while rank 1 reads it.
  block_reduce       (book cluster_group_no_dsmem) no cluster: min(chunks, 4 x SMs) blocks stride
                     over the chunks, scalar loads, both stats reduced with warp shuffles.
  single_cta_float4  (book cluster_group_single_cta) one CTA per chunk, float4 loads, both stats
                     with warp shuffles. The book keeps the baseline's memsets in its timed loop;
                     every chunk's output is written exactly once here, so this port has none (nor
                     do cluster2_dsmem and block_reduce).
The book also probes DSMEM with a separate kernel first and skips the pair if it fails; here the
cluster variant asks CUDA for cudaDevAttrClusterLaunch (RequirementError when it is 0).

Predicted profile. The baseline is atomic-bound, not memory-bound: 2 x 16M RED ops funnel into
16384 addresses, 2048 per address, serialized in the L2 atomic units (B200: 2.3 ms for 64 MB);
expect ~2 ms on Hopper and lts__t_requests dominated by atomics. The three optimizations stream
64 MiB once (+ 64 KiB written) and should sit near DRAM speed, ~22-25 us on an H100 (~3 TB/s),
~16-18 us on an H200 (64 MiB is above the 50 MB L2 of both; on B200's 126 MB L2 the book's
loop, which never flushes, ran partly from L2). The book's own ratios rank the cluster version
last (B200: cluster_group 19x, no_dsmem 42x, single_cta 75x); from the mechanism, cluster2_dsmem
should stay slowest here too, because
  - the tile makes an extra full round trip: rank 0 writes 8 KiB to shared memory, and then all
    8 KiB are read twice more over DSMEM (rank 1 across the SM-to-SM network, rank 0 through the
    same window), so each chunk costs 24 KiB of shared/DSMEM traffic for 8 KiB from DRAM;
  - two cluster barriers per chunk (each a MEMBAR.ALL.GPU + UCGABAR arrive/wait), the first one
    waiting on rank 0's DRAM loads;
  - half the CTAs (every rank 1) do nothing while their rank 0 loads, so only half the resident
    warps have DRAM loads in flight: fewer bytes in flight per SM, lower achieved bandwidth;
  - 2x the CTAs of single_cta_float4 for the same work, and cluster placement constraints.
block_reduce should land between (scalar loads, fewer CTAs with a grid-stride loop: less memory
parallelism per SM than one CTA per chunk with 16-byte loads); single_cta_float4 nearest the
DRAM bound. ncu should show cluster2_dsmem with the lowest dram__throughput of the three and
barrier stalls; single_cta_float4 with the fewest, widest LDGs.

Analytic counts, one call: `flops` = 3n (1 add for the sum, 1 multiply + 1 add for the sum of
squares per element); `bytes` = minimum DRAM bytes: 4n read + 8 bytes per chunk written.
Sanitizer size (compute-sanitizer memcheck/racecheck/synccheck): n=65536 (32 chunks); n=65541
adds a 5-element last chunk.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels.binding import CudaLibrary
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

CUDA_SOURCE = Path(__file__).with_name("cluster_group.cu")
ARCH = "sm_90a"                        # clusters and DSMEM: the arch-specific Hopper target
DEFAULT_SIZES = {"n": 1 << 24}
CHUNK = 2048                           # 256 threads x 8 elements per output row
MAX_ABS = 2                            # inputs are integers in [-2, 2]: exact fp32 stats
VARIANT_IDS = {"baseline": 0, "cluster2_dsmem": 1, "block_reduce": 2, "single_cta_float4": 3}
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built for sm_90a on first use, never on import
    "aisp_cluster_group": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p),
                           ctypes.c_int),
    "aisp_cluster_group_cluster_support": ((), ctypes.c_int),
}, error_string="aisp_cluster_group_error_string", arch=ARCH)


def chunks(n: int) -> int:
    """Number of output rows: ceil(n / 2048)."""
    return -(-int(n) // CHUNK)


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x: n random integers in [-2, 2] as fp32, from a generator seeded with `seed`."""
    n = int(sizes["n"])
    if n < 1 or 2 * chunks(n) >= 2**31:
        raise ValueError(f"n must be >= 1 and give fewer than 2^30 chunks, got {n}")
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randint(-MAX_ABS, MAX_ABS + 1, (n,), generator=gen, device=device, dtype=torch.int32)
    return {"x": x.to(torch.float32)}


def _check_x(name: str, x: torch.Tensor) -> None:
    if not x.is_cuda:
        raise RequirementError(f"ch10.cluster_group {name} variant needs a CUDA tensor (run on a GPU)")
    if x.dtype != torch.float32 or x.dim() != 1 or not x.is_contiguous() or x.numel() < 1:
        raise ValueError(f"x must be a non-empty contiguous 1-D float32 tensor, got {x.dtype}, {tuple(x.shape)}")
    if x.data_ptr() % 16 != 0:
        raise ValueError("x must be 16-byte aligned (single_cta_float4 reads 16-byte vectors)")


def _require_clusters(variant: str) -> None:
    """RequirementError unless the current GPU launches thread-block clusters (asked in CUDA)."""
    LIBRARY.require("aisp_cluster_group_cluster_support", f"ch10.cluster_group {variant} needs thread-block clusters "
                    "(sm_90+ with cudaDevAttrClusterLaunch); this GPU does not launch them")


def _factory(name: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    variant_id = VARIANT_IDS[name]

    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        x = inputs["x"]
        _check_x(name, x)                  # CPU tensors: RequirementError before any build
        LIBRARY.load()                     # build here, outside the timed call
        if name == "cluster2_dsmem":
            _require_clusters(name)
        n = x.numel()
        out = torch.empty(chunks(n), 2, device=x.device, dtype=torch.float32)
        label = f"aisp_cluster_group({name})"

        def launch() -> torch.Tensor:
            LIBRARY.call("aisp_cluster_group", variant_id, x.data_ptr(), n, out.data_ptr(),
                         torch.cuda.current_stream().cuda_stream, label=label)
            return out

        launch.keep_alive = x  # type: ignore[attr-defined]   # bench.timing keeps only the closure
        return launch

    factory.__name__ = name
    factory.__doc__ = f"The {name} kernel of cluster_group.cu via ctypes, on torch's current stream."
    return factory


baseline = _factory("baseline")
cluster2_dsmem = _factory("cluster2_dsmem")
block_reduce = _factory("block_reduce")
single_cta_float4 = _factory("single_cta_float4")


def reference(inputs: Inputs) -> torch.Tensor:
    """[chunks, 2] float64 (sum, sum of squares) on x's device; a short last chunk is zero-padded."""
    x = inputs["x"].double()
    padded = torch.zeros(chunks(x.numel()) * CHUNK, device=x.device, dtype=torch.float64)
    padded[:x.numel()] = x
    rows = padded.view(-1, CHUNK)
    return torch.stack((rows.sum(dim=1), (rows * rows).sum(dim=1)), dim=1)


def flops(sizes: Mapping[str, int]) -> int:
    """3 per element: one add (sum), one multiply and one add (sum of squares)."""
    return 3 * int(sizes["n"])


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: read x once (4n), write 2 fp32 per chunk."""
    return 4 * int(sizes["n"]) + 8 * chunks(sizes["n"])


PAIR = KernelPair(
    name="ch10.cluster_group",
    chapter=10,
    lesson="Per-chunk sum and sum of squares: per-element global atomics vs a 2-CTA cluster sharing "
           "the tile over DSMEM vs plain block reductions, which need no cluster at all.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "cluster2_dsmem": cluster2_dsmem, "block_reduce": block_reduce,
              "single_cta_float4": single_cta_float4},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes={"n": 65541},          # 32 chunks and a ragged one: the sanitizer size
    tolerance=0.0,                     # integer-valued inputs: both stats are exact in fp32
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (Hopper clusters/DSMEM); on Blackwell run the book's pairs"),
    variant_needs={name: ("gpu", "nvcc") for name in VARIANT_IDS},
    book=Book("cluster2_dsmem", 19.05, "spec §3.2 cluster_group_cuda (no_dsmem, single_cta: their _cuda keys)",
              off_reason="the baseline runs at the L2 atomic units' rate, which differs by GPU, and the book's "
                         "loop, never flushed, ran partly from the B200's 126 MB L2",
              also={"block_reduce": 41.582, "single_cta_float4": 74.659}),
)
