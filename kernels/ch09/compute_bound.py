"""Chapter 9: the compute-bound reference point, far right of the ridge, and the tensor cores.

The operation: C[m, n] = A[m, k] @ B[k, n], a square GEMM (default 8192^3).

It does 2 m n k FLOPs on 4 (m k + k n + m n) bytes of fp32 operands and result: at 8192^3 that
is 1.10 TFLOP on 805 MB, 1365 FLOP/byte, 4,000-11,000 times memory_bound's 0.125-0.375 and far
right of any ridge point (H100 SXM: ~20 FLOP/byte for FP32 SIMT at 67 TFLOP/s over 3.35 TB/s,
~300 for dense bf16 at 989 TFLOP/s). Bytes no longer matter; the rate of the unit doing the
multiply-adds does. Every variant reads and writes (nearly) the same bytes; what changes is the
execution unit:

  baseline   fp32 with TF32 disabled (torch.backends.cuda.matmul.fp32_precision = "ieee"):
             cuBLAS SGEMM on the CUDA cores, FFMA instructions. H100 SXM peak 67 TFLOP/s;
             expect ~45-55, i.e. ~20-25 ms.
  tf32       the same fp32 tensors, TF32 allowed: cuBLAS runs wgmma on the tensor cores with
             10-bit-mantissa inputs. Peak 495 TFLOP/s dense; expect ~300-400, i.e. ~3-4 ms.
  bf16       operands stored in bf16 (converted once, in the factory), fp32 accumulation,
             bf16 output: cuBLAS HGMMA. Peak 989 TFLOP/s dense; expect ~80% of it on random
             data, i.e. ~1.4 ms.

The precision switch is global PyTorch state, so the baseline and tf32 closures set
`fp32_precision` around their one call and restore it afterwards (CPU-side only, no GPU work).

What should move in the profile, and why:
  - FLOPs counted by ncu: baseline ~2 m n k in the FP32 counters (FFMA = 2 FLOPs), tf32/bf16
    ~2 m n k in the tensor counters (sm__ops_path_tensor_*), FP32 near zero;
  - tensor pipe: idle for the baseline, busy for tf32 and bf16 (SASS shows FFMA vs HGMMA);
  - duration: baseline ~22 ms -> tf32 ~3.5 ms -> bf16 ~1.4 ms on an H100 (speedup ~15x);
  - DRAM bytes: the operands plus the tiles that miss the 50-60 MB L2 (expect ~1-3 GB for
    fp32, less for bf16), DRAM bandwidth well under 50% of peak: measured intensity in the
    hundreds-to-thousands of FLOP/byte, the compute-bound corner of the roofline;
  - top stall: not long_scoreboard (memory) but math-pipe / wgmma waits.

Correctness: A and B are drawn as N(0, 1) (A scaled by 1/sqrt(k) so C ~ N(0, 1)) and rounded to
bf16-representable values, stored as fp32. So all three variants multiply exactly the same
numbers (bf16 and TF32 represent them exactly) and differ only in accumulation order and output
rounding: fp32 and TF32 land near 1e-6 of the float64 reference, bf16 near 1.7e-3 (bf16 output
rounding, 8 significant bits). Tolerance 5e-3: a 3x margin over bf16 output rounding, still
far below what a wrong tile (rel. error ~1) or a lost 1/64 of k (~0.13) produces.
"""
from __future__ import annotations

import math
from typing import Callable, Mapping

import torch

from aisp_kernels import gemm
from aisp_kernels.torch_settings import fp32_matmul_precision
from aisp_prof.pairs import Inputs, KernelPair, Requirements

DEFAULT_SIZES = {"m": 8192, "n": 8192, "k": 8192}


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """A ~ N(0, 1/k), B ~ N(0, 1) in fp32, rounded to bf16-representable values."""
    gen = torch.Generator(device=device).manual_seed(seed)
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    a = torch.randn(m, k, generator=gen, device=device, dtype=torch.float32) / math.sqrt(k)
    b = torch.randn(k, n, generator=gen, device=device, dtype=torch.float32)
    return {"a": a.to(torch.bfloat16).float(), "b": b.to(torch.bfloat16).float()}


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """fp32 GEMM, TF32 off: cuBLAS SGEMM on the CUDA cores (FFMA)."""
    a, b = inputs["a"], inputs["b"]
    c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.float32)

    def launch() -> torch.Tensor:
        with fp32_matmul_precision("ieee"):
            torch.mm(a, b, out=c)
        return c

    return launch


def optimized_tf32(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The same fp32 tensors with TF32 allowed: tensor cores, fp32 in and out."""
    a, b = inputs["a"], inputs["b"]
    c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.float32)

    def launch() -> torch.Tensor:
        with fp32_matmul_precision("tf32"):
            torch.mm(a, b, out=c)
        return c

    return launch


def optimized_bf16(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """bf16 operands (converted here, outside the timed call), fp32 accumulate, bf16 out."""
    a = inputs["a"].to(torch.bfloat16)
    b = inputs["b"].to(torch.bfloat16)
    c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.bfloat16)

    def launch() -> torch.Tensor:
        torch.mm(a, b, out=c)
        return c

    return launch


reference = gemm.reference   # float64 GEMM on the inputs' device (cuBLAS DGEMM on a GPU: ~20 ms at 8192^3).


flops = gemm.flops           # 2 m n k


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of the fp32 problem: read A and B once, write C once, 4 bytes each.

    (The bf16 variant's own minimum is half of this; either way the intensity is ~1000+.)
    """
    return gemm.min_bytes(sizes, 4)


PAIR = KernelPair(
    name="ch09.compute_bound",
    chapter=9,
    lesson="A large GEMM sits far right of the ridge: only the execution unit matters, so moving "
           "fp32 FFMA to TF32/bf16 tensor cores (wgmma) is worth an order of magnitude.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "tf32": optimized_tf32, "bf16": optimized_bf16},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    tolerance=5e-3,      # bf16 output rounding gives ~1.7e-3; fp32 and tf32 ~1e-6 (see docstring)
    # fp32 (baseline, FFMA) and TF32 (tf32, tensor cores) multiply the same bf16-exact operands and
    # accumulate k = 8192 products in fp32 (u = 2^-24), partial sums averaging ~0.53 |c|: rounding to
    # nearest gives ~u sqrt(k / 6) = 2.2e-6, and even every add erring the same way stays under
    # u k x 0.53 = 2.6e-4 (FFMA: half an ulp each) or 2u (k / 4) x 0.53 = 1.3e-4 (a tensor core
    # truncating at each of its k / 4 accumulator adds). 5e-4 is ~2x that worst case and 3x under the
    # bf16 output rounding (1.7e-3), so an fp32 variant that silently rounds through bf16 fails.
    variant_tolerance={"baseline": 5e-4, "tf32": 5e-4},
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90, wgmma) or newer"),
    variant_needs={"tf32": ("gpu",), "bf16": ("gpu",)},
)
