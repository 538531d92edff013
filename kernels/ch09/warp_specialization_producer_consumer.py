"""Chapter 9: overlap the next tile's load with this tile's math (producer/consumer pipelines).

The book's warp-specialization pair and its two_stage_pipeline.cu, on Hopper. The work is a
stream of tiles with real math per element, so that hiding the load behind the math matters:

    y[i] = p(x[i]),  p(x) = c0 + c1 x + ... + cD x^D   (Horner: D FMAs per element)

for a long fp32 vector x (default n = 2^26: 256 MiB in, 256 MiB out, several times the 50-60 MB
L2). The coefficients are fresh random numbers per input set, passed by value: they sit in the
kernel's parameter (constant) bank, and every Horner step is one FFMA with a uniform-register
operand, no memory load.

Analytic counts, one call (`flops`, `bytes`): 2 * D * n FLOPs and 8 * n bytes (x read once, y
written once). D = 64 gives 16 FLOP/byte, close to both ridges, so the kernel is neither purely
memory- nor purely compute-bound. With the ceilings `aisp-prof calibrate` measured
(profiles/calibration/):

    card   DRAM        fp32 FFMA      memory time   math time   bound (max)    no overlap (sum)
    H100   3.01 TB/s   60.5 TFLOP/s   178 us        142 us      178 us (DRAM)  320 us
    H200   4.26 TB/s   60.1 TFLOP/s   126 us        143 us      143 us (math)  269 us

Variants (warp_specialization_producer_consumer.cu; every one streams 16 KiB tiles through a
persistent grid of SM count x resident blocks, with 256 compute threads per block holding 16
independent Horner chains each, so only the schedule differs):
  baseline          single stage: ld.global -> st.shared, __syncthreads, compute, __syncthreads.
                    A block never has loads in flight while it computes; only the other
                    blocks resident on its SM overlap it.
  pipelined         two-stage cuda::pipeline (memcpy_async = cp.async, producer_acquire/commit,
                    consumer_wait/release), every thread both producer and consumer: tile i+1 is
                    in flight while tile i is computed (two_stage_pipeline.cu).
  warp_specialized  the same two stages, partitioned with cuda::pipeline_role: one producer
                    warp only issues the copies, eight consumer warps only compute (the
                    optimized variant of the book's pair).
  direct            no shared memory and no barriers: loads straight to registers. A control:
                    what the warp schedulers overlap on their own, with nothing staged.
  warp_specialized_tma
                    Hopper's producer: the same two stages and eight consumer warps, but one
                    thread of the producer warp moves each 16 KiB tile with a single bulk copy
                    (cp.async.bulk, the TMA engine's 1-D form; UBLKCP in SASS) that completes
                    transaction bytes on the stage's `full` mbarrier; consumer warps arrive on
                    an `empty` mbarrier (each thread) when their slice is in registers. 1024 cp.async per tile
                    become one instruction; the producer sleeps (nanosleep backoff) between polls.
Consumers move their slice of a stage into registers and release it before the math, so the
stage refills during the math of the tile it held.

Prediction (written before measuring): the baseline between the bound and the no-overlap sum,
~250 us on an H100 (~70% of the bound) and ~210 us on an H200; the pipelined and warp-specialized
kernels at ~85-90% of the bound, a 1.2-1.4x speedup; the baseline's `barrier` and
`long_scoreboard` stalls gone from the pipelined kernels.

What the runs taught (the numbers, H200 and H100: kernels/ch09/README.md):
  - The prediction missed at full occupancy: the resident blocks of an SM already overlap one
    block's loads with another block's math, so load-barrier-compute-barrier costs little. The
    profile says so: the baseline's barrier and long_scoreboard stalls are small next to
    not_selected (a scheduler almost always had another warp ready); the pipelines remove them,
    but there is little to win.
  - The predicted gain appears where occupancy cannot hide the loop: at one block per SM (the
    regime of large-tile kernels whose shared memory or registers limit residency) the baseline
    takes longer than the no-overlap sum and the two-stage pipeline wins clearly.
    `aisp-prof run ... --sizes blocks_per_sm=1` profiles that regime.
  - Warp specialization with cp.async does not beat the unified pipeline: one producer warp
    issues all 1024 cp.async of a tile, its registers cost a resident block, and its consumers
    wait longer on the stage barrier. Its Hopper payoff needs the bulk copy engine (one thread
    moves a tile) and setmaxnreg (sm_90a).
  - The bulk-copy producer (warp_specialized_tma) closes most of the rest: with one instruction
    per tile the producer costs the consumers no issue slots. Every consumer thread arrives on
    `empty` for itself: with one arrive per warp a stage could be refilled before all lanes had
    read it (notes/2026-11-26-hopper-probes/warp_spec_tma_race_h100.md; scripts/stress_check.py).
  - Before it, no schedule got near the bound at degree 64: near the ridge the FMA pipe and DRAM
    must both stay saturated at once. At degree 16 (memory-bound) or 128 (math-bound) every
    variant gets closer, except the bulk-copy one at degree 128, whose coefficients take enough
    registers to allow only one block per SM. On an H100 degree 64 is memory-bound, so every
    schedule lands near the same fraction of the bound and none wins.
"""
from __future__ import annotations

import ctypes
import math
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels.binding import CudaLibrary
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

CUDA_SOURCE = Path(__file__).with_name("warp_specialization_producer_consumer.cu")
DEFAULT_SIZES = {"n": 1 << 26, "degree": 64, "blocks_per_sm": 0}   # 0: as many blocks as fit
DEGREES = (16, 32, 64, 128)            # the degrees the CUDA library is instantiated for
SIZE_RULES = (SizeRule("degree", choices=DEGREES, why="the degrees the CUDA library is instantiated for"),
              SizeRule("blocks_per_sm", minimum=0, why="0: as many blocks as fit"))
VARIANT_IDS = {"baseline": 0, "pipelined": 1, "warp_specialized": 2, "direct": 3, "warp_specialized_tma": 4}
INFO_FIELDS = ("threads", "static_smem_bytes", "registers", "local_bytes", "max_blocks_per_sm",
               "blocks_per_sm", "sm_count")


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x ~ U(-1, 1) of n fp32 values and degree + 1 coefficients ~ N(0, 1/(degree + 1)), seeded.

    `blocks_per_sm` (size key, 0: as many as fit) sets the persistent grid of every variant:
    `aisp-prof run ... --sizes blocks_per_sm=1` profiles the low-occupancy regime.
    """
    n, degree = int(sizes["n"]), int(sizes["degree"])
    blocks_per_sm = int(sizes.get("blocks_per_sm", 0))
    if blocks_per_sm < 0:
        raise ValueError(f"blocks_per_sm must be >= 0, got {blocks_per_sm}")
    if degree not in DEGREES:
        raise ValueError(f"degree must be one of {DEGREES}, got {degree}")
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.rand(n, generator=gen, device=device, dtype=torch.float32).mul_(2).sub_(1)
    coeffs = torch.randn(degree + 1, generator=gen, device=device, dtype=torch.float32)
    coeffs /= math.sqrt(degree + 1)
    return {"x": x, "coeffs": coeffs, "blocks_per_sm": blocks_per_sm}


LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built on first use, never on import
    "aisp_warp_spec_launch": ((ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int,
                               ctypes.POINTER(ctypes.c_float), ctypes.c_int, ctypes.c_void_p), ctypes.c_int),
    "aisp_warp_spec_info": ((ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)), ctypes.c_int),
}, error_string="aisp_warp_spec_error_string")


def _check_inputs(name: str, x: torch.Tensor, coeffs: torch.Tensor) -> None:
    if not x.is_cuda:
        raise RequirementError(f"ch09.warp_specialization_producer_consumer {name} variant needs a CUDA "
                               "tensor (run on a GPU)")
    if x.dtype != torch.float32 or x.dim() != 1 or not x.is_contiguous():
        raise ValueError(f"x must be a contiguous 1-D float32 tensor, got {x.dtype}, shape {tuple(x.shape)}")
    if x.data_ptr() % 16 != 0:
        raise ValueError("x must be 16-byte aligned (the kernels move float4)")
    if coeffs.numel() - 1 not in DEGREES:
        raise ValueError(f"degree must be one of {DEGREES}, got {coeffs.numel() - 1}")
    if coeffs.dtype != torch.float32 or coeffs.dim() != 1:
        raise ValueError(f"coeffs must be a 1-D float32 tensor, got {coeffs.dtype}, shape {tuple(coeffs.shape)}")


def _factory(name: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    variant_id = VARIANT_IDS[name]

    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        x, coeffs = inputs["x"], inputs["coeffs"]
        _check_inputs(name, x, coeffs)
        blocks_per_sm = int(inputs.get("blocks_per_sm", 0))
        LIBRARY.load()                 # build here, outside the timed call
        degree = coeffs.numel() - 1
        # Host copy of the coefficients, made once here: the kernel takes them by value.
        host = (ctypes.c_float * (degree + 1))(*coeffs.detach().cpu().tolist())
        y = torch.empty_like(x)
        x_ptr, y_ptr, n = x.data_ptr(), y.data_ptr(), x.numel()
        label = f"aisp_warp_spec_launch({name})"

        def launch() -> torch.Tensor:
            LIBRARY.call("aisp_warp_spec_launch", variant_id, x_ptr, y_ptr, n, degree, host, blocks_per_sm,
                         torch.cuda.current_stream().cuda_stream, label=label)
            return y

        # The closure must own x: callers such as bench.timing keep only the closure, and a
        # freed x would be handed out again by torch's allocator under our pointer.
        launch.keep_alive = x  # type: ignore[attr-defined]
        return launch

    factory.__name__ = name
    factory.__doc__ = f"The {name} CUDA kernel (warp_specialization_producer_consumer.cu) via ctypes."
    return factory


baseline = _factory("baseline")
pipelined = _factory("pipelined")
warp_specialized = _factory("warp_specialized")
direct = _factory("direct")
warp_specialized_tma = _factory("warp_specialized_tma")


def kernel_info(variant: str, degree: int = 64, blocks_per_sm: int = 0) -> dict[str, int]:
    """Launch shape and resources of one variant on the current GPU (builds the library)."""
    out = (ctypes.c_int * len(INFO_FIELDS))()
    LIBRARY.call("aisp_warp_spec_info", VARIANT_IDS[variant], degree, blocks_per_sm, out)
    return dict(zip(INFO_FIELDS, out))


def reference(inputs: Inputs) -> torch.Tensor:
    """Horner in float64 on x's device, with the same (fp32-rounded) coefficients."""
    x = inputs["x"].double()
    c = inputs["coeffs"].double().tolist()
    y = torch.full_like(x, c[-1])
    for ck in reversed(c[:-1]):
        y.mul_(x).add_(ck)
    return y


def flops(sizes: Mapping[str, int]) -> int:
    """2 * degree * n: one multiply and one add per Horner step (one FFMA), degree steps."""
    return 2 * sizes["degree"] * sizes["n"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: read x once and write y once, fp32."""
    return 8 * sizes["n"]


PAIR = KernelPair(
    name="ch09.warp_specialization_producer_consumer",
    chapter=9,
    lesson="A two-stage cuda::pipeline (here with a producer warp) overlaps the next tile's load with "
           "this tile's math; it pays where occupancy cannot hide a load-barrier-compute loop.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "pipelined": pipelined, "warp_specialized": warp_specialized,
              "direct": direct, "warp_specialized_tma": warp_specialized_tma},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    size_rules=SIZE_RULES,
    tolerance=1e-5,
    requires=Requirements(min_cc=(9, 0)),
    variant_needs={name: ("gpu", "nvcc") for name in VARIANT_IDS},
    roles={"direct": "control"},      # no staging at all: what the schedulers overlap on their own
    book=Book("warp_specialized", None, "seed 001 (the chapter 9 README): the book's producer/consumer "
              "pair and two_stage_pipeline.cu; spec §3.1 has no ratio for it", also={"pipelined": None}),
)
