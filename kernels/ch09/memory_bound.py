"""Chapter 9: the memory-bound reference point, left of the ridge, and what fusion does to it.

The operation, elementwise over x[n] (fp32):  y = relu(a * x + b)  with scalars a, b.

Every element costs 3 FLOPs (multiply, add, max) and at least 8 bytes of DRAM traffic (read x,
write y), so the best possible arithmetic intensity is 3 / 8 = 0.375 FLOP/byte, 50-800x left of
an H100's ridge points (~20 FLOP/byte for FP32 on the CUDA cores, 67 TFLOP/s over 3.35 TB/s;
~300 for dense bf16 on the tensor cores). No amount of arithmetic tuning helps: the time is
bytes / bandwidth. The only lever is moving fewer bytes.

Baseline (PyTorch eager, 3 kernels): each step is its own full pass over the tensor, handing its
result to the next through global memory:

    mul        reads x, writes t      2 x n x 4 bytes
    add        reads t, writes t      2 x n x 4 bytes
    clamp_min  reads t, writes y      2 x n x 4 bytes

so 6 x n x 4 bytes for 3n FLOPs: 0.125 FLOP/byte. At the default n = 256 Mi elements (1 GiB per
tensor, ~18x the 50-60 MB L2) no pass can be served from L2.

Optimized (one Triton kernel): each program loads a 4096-element tile with 16-byte vector loads,
computes fma + max in registers and stores y: 2 x n x 4 bytes, the minimum.

What should move in the profile, and why:
  - launches per call: 3 -> 1;
  - DRAM bytes: ~6.4 GB -> ~2.15 GB (3x fewer); both at ~85-90% of peak DRAM bandwidth
    (the copy roof `aisp-prof calibrate` finds: H100 ~3 TB/s, H200 ~4.3 TB/s);
  - duration: ~3x shorter (H100: ~2.2 ms -> ~0.72 ms; H200: ~1.5 ms -> ~0.5 ms), because both
    versions are DRAM-bandwidth bound and the fused one moves 3x fewer bytes;
  - arithmetic intensity (hardware FLOPs / DRAM bytes): ~0.125 -> ~0.375 FLOP/byte. ncu counts
    the baseline as FMUL + FADD (+ FMNMX, which it does not count as a FLOP) and the fused
    kernel as one FFMA (2 FLOPs) per element;
  - tensor pipe: idle in both; top stall: long_scoreboard (waiting on DRAM).
Fusion speeds memory-bound work up by moving fewer bytes, not by computing faster; the point
stays far left of the ridge (compare ch09.compute_bound, hundreds of FLOP/byte).
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from aisp_kernels import triton_helpers
from aisp_prof.pairs import Book, Inputs, KernelPair, Mechanism, Requirements

try:
    import triton
    import triton.language as tl
except ImportError:  # the Triton variant then raises RequirementError when it is asked for
    triton = None
    tl = None

DEFAULT_SIZES = {"n": 256 * 2**20}     # 268,435,456 fp32 elements: 1 GiB per tensor
TRITON_BLOCK = 4096                    # elements per program: 16 per thread with 8 warps
TRITON_NUM_WARPS = 8


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x ~ N(0, 1) of n fp32 elements; scalars a in [0.5, 1.5), b in [-0.5, 0.5), all from `seed`."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(sizes["n"], generator=gen, device=device, dtype=torch.float32)
    ab = torch.rand(2, generator=gen, device=device, dtype=torch.float64).tolist()
    return {"x": x, "a": 0.5 + ab[0], "b": ab[1] - 0.5}


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Eager chain, one kernel and one full DRAM round trip per step."""
    x, a, b = inputs["x"], float(inputs["a"]), float(inputs["b"])
    t = torch.empty_like(x)
    y = torch.empty_like(x)

    def launch() -> torch.Tensor:
        torch.mul(x, a, out=t)
        torch.add(t, b, out=t)
        torch.clamp_min(t, 0.0, out=y)
        return y

    return launch


# Plain function, jitted on first use (triton_helpers.jit); the tl.constexpr annotation stays
# an unevaluated string (PEP 563), so this module imports without triton.
def _axpb_relu(x_ptr, y_ptr, n, a, b, BLOCK: tl.constexpr):
    """One BLOCK-wide tile per program: load, fma, max, store."""
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.maximum(x * a + b, 0.0)
    tl.store(y_ptr + offsets, y, mask=mask)


def optimized_triton(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The whole chain in one Triton kernel: one read of x, one write of y."""
    x, a, b = inputs["x"], float(inputs["a"]), float(inputs["b"])
    triton_helpers.require_triton(x, "ch09.memory_bound")
    if x.dtype != torch.float32 or not x.is_contiguous():
        raise ValueError(f"x must be contiguous float32, got {x.dtype}, strides {x.stride()}")
    n = x.numel()
    kernel = triton_helpers.jit(_axpb_relu, triton_helpers.interpreting())
    grid = (triton.cdiv(n, TRITON_BLOCK),)
    y = torch.empty_like(x)

    def launch() -> torch.Tensor:
        kernel[grid](x, y, n, a, b, BLOCK=TRITON_BLOCK, num_warps=TRITON_NUM_WARPS)
        return y

    return launch


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 on x's device."""
    return (inputs["x"].double() * inputs["a"] + inputs["b"]).clamp_min(0.0)


def flops(sizes: Mapping[str, int]) -> int:
    """3 per element: multiply, add, max (the fused kernel does the first two as one FMA)."""
    return 3 * sizes["n"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes: read x once, write y once, fp32 (the baseline moves 3x this)."""
    return 2 * sizes["n"] * 4


PAIR = KernelPair(
    name="ch09.memory_bound",
    chapter=9,
    lesson="Memory-bound work is bounded by bytes: fusing a 3-kernel elementwise chain into one "
           "pass cuts DRAM traffic 3x while intensity stays below 1 FLOP/byte.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "triton": optimized_triton},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    tolerance=1e-6,      # fp32: one or two roundings per element, ~6e-8 relative
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90) or newer"),
    variant_needs={"triton": ("triton",)},
    expect=(Mechanism("dram_bytes", "decrease", factor=2.5, why="6n -> 2n x 4 bytes: one pass instead of three"),
            Mechanism("kernels_per_call", "decrease", why="3 launches -> 1")),
    book=Book("triton", 17.001, "spec §3.1 memory_bound",
              off_reason="fusing three DRAM-bound eager passes into one saves at most 3x the bytes, so ~3x is "
                         "the ceiling here; the book's 17x (3.50 -> 0.21 ms on its B200) starts from a slower baseline"),
)
