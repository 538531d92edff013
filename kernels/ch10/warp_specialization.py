"""Chapter 10: the same warps loading and multiplying vs a TMA producer warpgroup and wgmma consumer warpgroups.

The lesson: in a tensor-core GEMM, loading (TMA) and multiplying (wgmma) are different jobs with
different needs. When the same warps do both, every wait of one is a wait of the other: the
warps that issue the next load also wait for their own MMAs, so the tensor pipe drains at every
k-tile, and a block's loads stop while it stores its tile. Give each job its own warps - one
producer warpgroup that only issues TMA and needs almost no registers (setmaxnreg.dec to 40),
two consumer warpgroups that only issue wgmma and take those registers (setmaxnreg.inc to 232)
- connect them by a ring of full/empty mbarriers, and neither ever waits for the other except
when the ring is really empty or full: same tiles, same instructions, same bytes, faster.

The second lesson, found by measuring (session 9; the numbers are in kernels/ch10/README.md):
once the roles are split, what is left is the epilogue. A persistent GEMM's tiles run in lockstep waves, so all 132 SMs store their 64 KiB of C
at the same moment; stored from registers, the consumers wait for those stores to leave and the
tensor pipe idles. Staging the tile in shared memory and handing it to a TMA store lets the
warps start the next tile while the TMA unit drains this one; the ring gives up a stage for the
64 KiB staging buffer (3 stages are enough to keep the main loop fed, 2 are not).

The operation: C[m, n] = A[m, k] @ B[n, k]^T, fp16 in and out, fp32 accumulation, both operands
K-major (cuBLAS's "TN" GEMM). Default m = n = 16384, k = 2048 (the book's size): 2 m n k =
1.10 TFLOP on at least 2 (m k + n k + m n) = 671 MB, ~1640 FLOP/B, compute-bound; a 128 x 256
tile has only 32 k-tiles, so what a tile costs outside its main loop (filling the pipeline,
storing C) weighs 4x more than at k = 8192.

What the book's code does (spec 2.3, `tcgen05_warp_specialization`): the baseline is
ch09/tcgen05_pipelined.cu, a 2-stage TMA double buffer in which the same elected warp issues both
the TMA loads and the UMMAs and waits on the MMA barrier after every k-tile (no role split,
despite the pair's name being about roles: the baseline is "pipelined" only one k-tile deep).
The optimized side, ch10/tcgen05_warp_specialized.cu: 4 stages, warp 1 = TMA producer, warp 0 =
UMMA consumer (tcgen05.mma is issued by one thread), full/empty mbarriers, the consumer freeing
each stage with umma_arrive, GROUP_SIZE = 8 rasterization, the accumulator in TMEM
(TMEM::Allocator1Sm), one tile per block; its producer still steps through the same loop as the
consumer, one k-tile at a time. Both write an fp32 buffer and return `.to(float16)` (a
conversion kernel inside the timed region). B200: 3.7401 -> 2.7688 ms, 1.351x (spec 3.2).

This port (warp_specialization.cu), every kernel: 128 x 256 tiles, BK = 64, two math warpgroups
each owning 64 rows (128 fp32 accumulators per thread, in registers: Hopper has no TMEM), 4
wgmma m64n256k16 per k-tile per warpgroup, tiles rasterized in groups of 8 row tiles, fp16
written once (no fp32 buffer, no conversion kernel). Edges: TMA zero-fills boxes that stick out
of A or B, register stores are guarded and TMA stores clip, so m is free and n, k need only be
multiples of 8.
  baseline (one_issuer)
      the book's baseline: 256 threads, one tile per block, a 2-stage double buffer. Thread 0
      issues the TMA of k-tile kt + 1, everyone waits on `full`, the warpgroups issue their
      wgmmas, commit and wait for all of them (wait_group 0), __syncthreads; no setmaxnreg;
      C stored from the registers.
  warp_specialized
      384 threads = a producer warpgroup (setmaxnreg.dec.sync.aligned.u32 40; one thread waits
      on `empty`, arms `full` with expect_tx, issues TMA) and two consumer warpgroups
      (setmaxnreg.inc.sync.aligned.u32 232; wait on `full`, 4 wgmmas, commit_group, wait_group 1,
      one arrive per warp on the previous stage's `empty`), persistent: grid = min(SMs, tiles)
      and each block walks tiles blockIdx.x + i gridDim.x. Warpgroups, not warps, because wgmma
      is issued by 128 threads per 64-row slab (tcgen05.mma by one); registers: 128 x 40 + 256 x
      232 = 64512 of the 65536. wgmma has no umma_arrive, so a stage is released one k-tile
      later, after the wait_group that retires its reads. Persistence is where this port goes
      past the book's kernel, and it is the same lesson carried one step further: a producer
      that never waits for math needs no reason to stop at a tile's end, so it loads the next
      tile while the consumers store this one (the book's producer, one tile per block, cannot).
      The epilogue is a TMA store: each consumer writes its 64 x 256 fp16 slab into its half of
      a 64 KiB staging buffer (four 64 x 64 boxes in 128-byte swizzle, conflict-free), fence.proxy.async,
      a named barrier, one thread issues 4 cp.async.bulk.tensor stores and commits the bulk
      group; before reusing the buffer a tile later it waits only for the stores to have read it
      (cp.async.bulk.wait_group.read 0). Ring: 3 stages (144 KiB) + staging = 208 KiB.
  warp_specialized_c2
      warp_specialized on 2 x 1 thread-block clusters: the two CTAs take neighbouring row tiles
      of one column tile, and each multicasts half of the B tile (128 rows) to both, so B's L2
      reads halve (a third of all L2->SM operand bytes); each `empty` barrier counts both CTAs'
      8 consumer warps (remote arrives through mapa), as many clusters as can be resident.
      The question it answers: was the rest of the gap L2 bandwidth? (cuBLAS here runs 2-CTA
      clusters too.)
  warp_specialized_reg_epilogue (control)
      warp_specialized as it was before the TMA store: a 4-stage ring (192 KiB) and fp16x2
      stores straight from the registers (64 st.global per thread per tile). The difference
      between it and warp_specialized is the epilogue alone.
  cublas
      torch.mm(a, b.t(), out=c) on the same operands: the reference issue 13 holds the
      warp-specialized kernel to (>= 90% of cuBLAS at this shape and dtype).

Predicted profile (ncu; measured numbers belong in kernels/ch10/README.md):
  - SASS: every kernel HGMMA.64x256x16.F32 x 4 per k-tile (one gsb0 group), UTMALDG.2D, expect_tx
    (SYNCS.ARRIVE.TRANS64), mbarrier try-wait (SYNCS.PHASECHK.TRANS64.TRYWAIT), no local memory.
    one_issuer: no USETMAXREG, WARPGROUP.DEPBAR.LE gsb0, 0x0 only, 2 mbarriers (SYNCS.EXCH.64 x 2),
    a BAR.SYNC in the loop. The warp-specialized kernels: USETMAXREG.DEALLOC (producer, 40 = 0x28)
    and USETMAXREG.TRY_ALLOC (consumers, 232 = 0xe8), WARPGROUP.DEPBAR.LE gsb0, 0x1 in the loop
    and gsb0, 0x0 once per tile, plain arrives on `empty` (SYNCS.ARRIVE.TRANS64.A1T0), one
    BAR.SYNC 0x0 (after the barrier init). warp_specialized adds the TMA store: 64 STS per thread
    into the staging buffer, FENCE.VIEW.ASYNC.S, a named BAR.SYNC over 0x80 threads, 4 UTMASTG.2D
    and UTMACMDFLUSH, DEPBAR.LE SB0, 0x0 (the bulk-group waits), and no STG; 6 mbarriers (3
    stages). warp_specialized_c2 adds UTMALDG.2D.MULTICAST, remote arrives
    (SYNCS.ARRIVE.TRANS64.RED.A1T0) and the cluster barrier (UCGABAR_ARV / UCGABAR_WAIT).
    warp_specialized_reg_epilogue: 128 STG.E (64 on the unguarded path), 8 mbarriers (4 stages).
  - Launch: one_issuer 8192 blocks of 256 threads (62 waves on 132 SMs), the warp-specialized
    kernels 132 blocks of 384 threads (launch__grid_size = SM count; c2 as 2-CTA clusters, 66
    if all can be resident), 1 block per SM for all (168 registers a thread at launch; 97 KiB
    shared memory for one_issuer, 209 KiB with the TMA store, 193 KiB without).
  - Same FLOPs, HGMMA count (4 x (m/64) x (n/256) x (k/16) = 8.4 M warp-level instructions) and
    DRAM bytes in all; only time moves (and c2's L2 traffic).
  - Tensor pipe active: one_issuer ~55-65% (each k-tile drains the pipe: wait_group 0, a block
    barrier and a try-wait on a load issued only one k-tile earlier), warp_specialized_reg_epilogue
    ~76%, warp_specialized ~88-90% (cuBLAS's level); the roofline point moves straight up.
  - Stalls: one_issuer is dominated by the mbarrier try-wait (long_scoreboard), the wgmma wait
    and the __syncthreads (barrier). warp_specialized_reg_epilogue: long_scoreboard and barrier,
    not gmma: the consumers wait for data after
    every epilogue burst, not for the tensor pipe. warp_specialized: gmma moves up to the top
    stall (the tensor pipe is the limit, as in cuBLAS).
  - L2: A and B are re-read by other tile columns / rows through L2 (group-8 rasterization keeps
    DRAM bytes to a small multiple of the compulsory 671 MB); ~12.9 GB of L2->SM operand reads
    for the single-CTA kernels, ~8.6 GB for c2 (each B tile read once per cluster): a third
    fewer bytes, and no time saved if the epilogue, not L2, was the limit.
  - % of cuBLAS: one_issuer ~65%, warp_specialized_reg_epilogue ~86-88%, warp_specialized >= 90%
    (issue 13's target), c2 about the same as warp_specialized. Hopper ratio predicted ~1.3-1.5x
    over one_issuer for the register epilogue, near the book's 1.351x (its baseline is the same
    double buffer, and the B200's faster MMA makes each drained k-tile cost it relatively more,
    while its fp32 buffer and .to kernel add the same time to both sides); the TMA store adds
    what the epilogue cost (~12%).

Correctness: A ~ N(0, 1/k), B ~ N(0, 1) rounded to fp16, so C ~ N(0, 1); the float64 reference
multiplies the same fp16 values, so the only error is fp32 accumulation (~sqrt(k) x 2^-24,
negligible) and the final rounding of C to fp16 (~2e-4 relative, Frobenius). Tolerance 2e-3,
~10x that; a wrong swizzle, descriptor, stage index, barrier phase or tile walk gives O(1)
errors, and an unguarded edge or a zero-fill that did not happen shows at ragged sizes.

Analytic counts, one call: `flops` = 2 m n k; `bytes` = minimum DRAM bytes 2 (m k + n k + m n).
Sanitizer size (compute-sanitizer memcheck/racecheck/synccheck): m = n = 2056, k = 200: 17 x 9 =
153 tiles, more than the 132 SMs of an H100/H200, so some blocks of the persistent kernels walk
two tiles, carry the ring across a tile boundary and reuse the staging buffer (after the bulk
wait); the last row and column tiles hold 8 rows / 8 columns (guarded register stores, clipped
TMA stores), and k = 200 is 4 k-tiles, the last one 8 deep (zero-filled by TMA): each consumer
passes the ring once or more, so every barrier's phase flips. c2: 17 row tiles make 9 row
pairs, the last with a padding row tile past m (loaded as zeros, computed, never stored).
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from aisp_kernels import gemm
from aisp_kernels.binding import CudaLibrary
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

NAME = "ch10.warp_specialization"
CUDA_SOURCE = Path(__file__).with_name("warp_specialization.cu")
ARCH = "sm_90a"                        # wgmma and setmaxnreg exist only on the arch-specific Hopper target
DEFAULT_SIZES = {"m": 16384, "n": 16384, "k": 2048}
SMALL_SIZES = {"m": 2056, "n": 2056, "k": 200}
TILE = {"m": 128, "n": 256, "k": 64}   # the CTA tile (m, n) and the k-tile, in elements
STAGES = 3                             # warp_specialized's ring beside its staging buffer (kStagesTmaStore)
REG_EPILOGUE_STAGES = 4                # the register-epilogue control's ring (kStages in the .cu)
ISSUER_STAGES = 2                      # the baseline's double buffer (kIssuerStages)
REGISTERS = {"producer": 40, "consumer": 232}    # setmaxnreg targets (kProducerRegisters, kConsumerRegisters)
VARIANT_IDS = {"one_issuer": 0, "warp_specialized": 1, "warp_specialized_c2": 2, "warp_specialized_reg_epilogue": 3}
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built for sm_90a on first use, never on import
    "aisp_warp_specialization": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                  ctypes.c_int, ctypes.c_int, ctypes.c_void_p), ctypes.c_int),
    "aisp_warp_specialization_support": ((), ctypes.c_int),
}, error_string="aisp_warp_specialization_error_string", arch=ARCH)


def validate_sizes(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(m, n, k), or ValueError: all in [1, 2^31), n and k multiples of 8; m is free."""
    return gemm.validate_sizes(sizes, 8, "16-byte fp16 rows for TMA")


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """`a` [m, k] ~ N(0, 1/k) and `b` [n, k] ~ N(0, 1), fp16, contiguous (both K-major): C ~ N(0, 1)."""
    return gemm.kmajor_inputs(*validate_sizes(sizes), device, seed, torch.float16)


def _operands(inputs: Inputs, variant: str) -> tuple[torch.Tensor, torch.Tensor, int, int, int]:
    return gemm.kmajor_operands(NAME, variant, inputs, torch.float16, validate_sizes)


def _require_support(variant: str) -> None:
    """RequirementError unless this GPU is sm_90 and the driver exports cuTensorMapEncodeTiled."""
    LIBRARY.require("aisp_warp_specialization_support", f"{NAME} {variant} needs an sm_90 GPU (wgmma, TMA, "
                    "setmaxnreg) and a driver that exports cuTensorMapEncodeTiled")


def _factory(kernel: str, variant: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    variant_id = VARIANT_IDS[kernel]

    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        a, b, m, n, k = _operands(inputs, variant)
        LIBRARY.load()                               # build here, outside the timed call
        _require_support(variant)
        c = torch.empty(m, n, device=a.device, dtype=torch.float16)
        a_ptr, b_ptr, c_ptr = a.data_ptr(), b.data_ptr(), c.data_ptr()
        label = f"aisp_warp_specialization({kernel})"

        def launch() -> torch.Tensor:
            LIBRARY.call("aisp_warp_specialization", variant_id, a_ptr, b_ptr, c_ptr, m, n, k,
                         torch.cuda.current_stream().cuda_stream, label=label)
            return c

        launch.keep_alive = (a, b)  # type: ignore[attr-defined]   # the closure owns its operands
        return launch

    factory.__name__ = kernel
    factory.__doc__ = f"The {kernel} kernel of warp_specialization.cu into a preallocated fp16 C, on torch's " \
                      "current stream."
    return factory


one_issuer = _factory("one_issuer", "baseline")
warp_specialized = _factory("warp_specialized", "warp_specialized")
warp_specialized_c2 = _factory("warp_specialized_c2", "warp_specialized_c2")
warp_specialized_reg_epilogue = _factory("warp_specialized_reg_epilogue", "warp_specialized_reg_epilogue")


cublas = gemm.cublas_tn(_operands)        # torch.mm(a, b.t(), out=c): cuBLAS's TN GEMM


reference = gemm.reference_tn            # float64 A @ B^T of the rounded operands


flops = gemm.flops                     # 2 m n k


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: read A and B once, write C once, 2 bytes each."""
    return gemm.min_bytes(sizes, 2)



SIZE_RULES = gemm.size_rules(8, "16-byte fp16 rows for TMA")


PAIR = KernelPair(
    name=NAME,
    chapter=10,
    lesson="A hand-written fp16 TMA + wgmma GEMM whose warps both load and multiply (a double buffer that waits "
           "for its math every k-tile) vs a setmaxnreg producer warpgroup and two consumer warpgroups on a "
           "full/empty mbarrier ring, persistent over tiles, whose tile leaves through a TMA store.",
    make_inputs=make_inputs,
    variants={"baseline": one_issuer, "warp_specialized": warp_specialized, "warp_specialized_c2": warp_specialized_c2,
              "warp_specialized_reg_epilogue": warp_specialized_reg_epilogue, "cublas": cublas},
    roles={"cublas": "reference", "warp_specialized_reg_epilogue": "control"},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=2e-3,                    # fp16 output rounding ~2e-4 (Frobenius)
    requires=Requirements(min_cc=(9, 0), max_cc=(9, 0), needs=("nvcc",),
                          note="built for sm_90a (wgmma, TMA, setmaxnreg); on Blackwell run the book's tcgen05 pair"),
    variant_needs={"baseline": ("gpu", "nvcc"), "warp_specialized": ("gpu", "nvcc"),
                   "warp_specialized_c2": ("gpu", "nvcc"), "warp_specialized_reg_epilogue": ("gpu", "nvcc"),
                   "cublas": ("gpu",)},
    book=Book("warp_specialized", 1.351, "spec §3.2 tcgen05_warp_specialization",
              off_reason="this port goes past the book's kernel (persistent tiles, a TMA-store epilogue); the "
                         "B200's faster MMA makes each drained k-tile cost its baseline relatively more"),
)
