"""Chapter 9: 2:4 structured sparsity, the tensor cores' way to skip half the multiplies.

The operation: C[m, n] = W[m, k] @ X[k, n] in bf16, where W is pruned 2:4 along k (in every
group of 4 consecutive weights of a row, 2 are zero). make_inputs prunes with a fixed rule,
keep the 2 largest |w| of each group (ties to the lower index), so the dense and the sparse
variants compute exactly the same product, and the float64 reference uses the same pruned W.

  baseline   dense bf16 GEMM (cuBLAS, HGMMA): multiplies the zeros too.
  sparse24   W compressed once, outside the timed call, by torch.sparse.to_sparse_semi_structured
             (cuSPARSELt when torch has it, CUTLASS otherwise): the kept half of the values plus
             2-bit indices. The sparse tensor-core MMA (wgmma .sp on Hopper) reads the compressed
             operand and does half the multiply-adds. cuSPARSELt's default algorithm (alg_id 0)
             is used: torch's public API has no way to choose another. The API
             allocates its result, so the closure copies it into the preallocated output (one
             extra elementwise kernel of 2 x m n x 2 bytes: 1 GB, ~0.35 ms, ~4% of the call).
  sparse24_tuned
             the same compressed W through torch's private cuSPARSELt ops
             (aisp_kernels.sparse): the algorithm cuSPARSELt's search finds fastest for this
             shape, chosen once outside the timed call; the same output copy as sparse24.

Default size 16384^3 (8.8 TFLOP dense-equivalent; W, X, C 512 MB each in bf16): big enough that
the GEMM fills the chip and the copy stays small.

What should move in the profile, and why:
  - duration: dense ~12-13 ms on an H100 (~700-750 TFLOP/s); sparse faster but well short of
    2x: on Hopper 2:4 bf16 GEMMs typically gain 1.1-1.6x (the MMA does half the work, but
    operand fetch, metadata and the epilogue do not halve); ~8-11 ms expected;
  - DRAM bytes: W's traffic drops to ~9/16 (half the values + 1/16 metadata);
  - FLOPs: the analytic count (and the TFLOP/s the summary reports from it) is the
    dense-equivalent 2 m n k for both variants, i.e. "effective" FLOP/s. The hardware tensor
    counters may count the sparse MMA as the dense-equivalent or as half; the GPU run will say
    which (compare flops_tensor of the two variants);
  - kernels per call: 1 -> 2 (sparse GEMM + output copy), plus any transpose the backend adds;
  - power: the sparse MMA packs more work into each clock, so a card near its power cap may
    lower the clock while it runs (`aisp-prof roofline` takes the run's clock into account).
Measured times, the algorithm sweep and clocks (H200, H100): kernels/ch09/README.md.

Tolerance 5e-3: both variants multiply the same bf16 numbers with fp32 accumulation and round
the output to bf16 (~1.7e-3 relative); they differ only by accumulation order.
"""
from __future__ import annotations

import math
from typing import Callable, Mapping

import torch

from aisp_kernels import sparse
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

DEFAULT_SIZES = {"m": 16384, "n": 16384, "k": 16384}


prune_2_4 = sparse.prune_2_4          # keep the 2 largest |w| of each group of 4 (stable)
is_2_4_sparse = sparse.is_2_4_sparse


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """W ~ N(0, 1/k) pruned 2:4 along k, X ~ N(0, 1), both bf16 (pruned in fp32: no ties)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    w = torch.randn(m, k, generator=gen, device=device, dtype=torch.float32) / math.sqrt(k)
    w = prune_2_4(w).to(torch.bfloat16)
    x = torch.randn(k, n, generator=gen, device=device, dtype=torch.float32).to(torch.bfloat16)
    return {"w": w, "x": x}


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Dense bf16 GEMM of the pruned weights: cuBLAS multiplies the zeros too."""
    w, x = inputs["w"], inputs["x"]
    c = torch.empty(w.shape[0], x.shape[1], device=w.device, dtype=w.dtype)

    def launch() -> torch.Tensor:
        torch.mm(w, x, out=c)
        return c

    return launch


def compress(w: torch.Tensor) -> torch.Tensor:
    """W as a semi-structured sparse tensor (cuSPARSELt if available, else CUTLASS); GPU only."""
    if not w.is_cuda:
        raise RequirementError("2:4 semi-structured sparsity needs a CUDA tensor (run on a GPU)")
    from torch.sparse import to_sparse_semi_structured

    return to_sparse_semi_structured(w)


def sparse_backend() -> str:
    """Which library torch.sparse.to_sparse_semi_structured will use here."""
    from torch.sparse import SparseSemiStructuredTensor

    cusparselt = getattr(torch.backends, "cusparselt", None)
    if cusparselt is not None and cusparselt.is_available() and not SparseSemiStructuredTensor._FORCE_CUTLASS:
        return f"cusparselt {cusparselt.version()}"
    return "cutlass"


def optimized_sparse24(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """W compressed 2:4 once here; the timed call is the sparse GEMM (+ a copy into the output)."""
    w, x = inputs["w"], inputs["x"]
    w_sparse = compress(w)
    c = torch.empty(w.shape[0], x.shape[1], device=w.device, dtype=w.dtype)

    def launch() -> torch.Tensor:
        c.copy_(torch.mm(w_sparse, x))
        return c

    return launch


def optimized_sparse24_tuned(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """W compressed once and cuSPARSELt's fastest algorithm for this shape searched once, here;
    the timed call is the sparse GEMM and, as for sparse24, a copy of its freshly allocated
    result into the preallocated output (the private op has no `out=`)."""
    w, x = inputs["w"], inputs["x"]
    matmul, _alg_id = sparse.tuned_sparse_matmul(w, x)
    c = torch.empty(w.shape[0], x.shape[1], device=w.device, dtype=w.dtype)

    def launch() -> torch.Tensor:
        c.copy_(matmul(x))
        return c

    return launch


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 product of the pruned W and X, on the inputs' device."""
    return inputs["w"].double() @ inputs["x"].double()


def flops(sizes: Mapping[str, int]) -> int:
    """2 m n k: the dense-equivalent count, the same for both variants (see docstring)."""
    return 2 * sizes["m"] * sizes["n"] * sizes["k"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of the dense problem: read W and X once, write C once, bf16.

    (The sparse variant's own minimum reads W's compressed form, ~9/16 of m k x 2 bytes.)
    """
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    return 2 * (m * k + k * n + m * n)



SEMI_STRUCTURED = "torch's semi-structured sparse bf16 tensors (CUTLASS: rows a multiple of 32, columns of 64)"
SIZE_RULES = (SizeRule("m", step=32, minimum=32, why=SEMI_STRUCTURED),
              SizeRule("k", step=64, minimum=64, why=SEMI_STRUCTURED))


PAIR = KernelPair(
    name="ch09.structured_sparsity",
    chapter=9,
    lesson="2:4 structured sparsity lets the tensor cores skip half the multiply-adds of a large "
           "GEMM: same product, well short of 2x faster on Hopper, and only with the algorithm "
           "cuSPARSELt's own search picks (torch's default gains little).",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "sparse24": optimized_sparse24, "sparse24_tuned": optimized_sparse24_tuned},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    size_rules=SIZE_RULES,
    tolerance=5e-3,      # bf16 output rounding ~1.7e-3, same operands in both variants
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90) or newer"),
    variant_needs={"sparse24": ("gpu",), "sparse24_tuned": ("gpu",)},
    book=Book("sparse24_tuned", None, "seed 001 (the chapter 9 README): cuSPARSELt compression + "
              "algorithm search; spec §3.1 has no ratio for it"),
)
