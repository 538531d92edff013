"""Chapter 9: 2:4 structured sparsity in a SwiGLU FFN block (GEMM + SwiGLU + GEMM).

The operation, for x[tokens, hidden] and weights W1, W3 [ffn, hidden], W2 [hidden, ffn] (bf16):

    y = (silu(x W1^T) * (x W3^T)) W2^T

at the chapter's size: 8 x 8192 = 65536 tokens, hidden 6144, ffn 24576 (59.4 TFLOP per call).
make_inputs prunes every weight 2:4 along its input dimension (keep the 2 largest |w| of each
group of 4, ties to the lower index), so the dense and sparse variants compute the same function
and the float64 reference uses the same pruned weights.

  baseline   dense: 3 cuBLAS GEMMs (gate, up, down) + silu (in place) + multiply (in place):
             5 kernels. The [tokens, ffn] intermediates (3.2 GB each in bf16) go through DRAM.
  sparse24   the three weights compressed once, outside the timed call, with
             torch.sparse.to_sparse_semi_structured (cuSPARSELt when torch has it, CUTLASS
             otherwise); F.linear on the sparse weights; the same eager SwiGLU; the down
             projection's result copied into the preallocated output (the API allocates it).
  sparse24_tuned
             the same compressed weights through cuSPARSELt's private ops with the algorithm
             its search picks per GEMM shape (aisp_kernels.sparse, once, outside the timed
             call), in feature-major layout: cuSPARSELt is fast for W @ B with B row-major, so
             the block computes gate^T = W1 x^T, up^T = W3 x^T and y^T = W2 (silu(gate) * up)^T
             on [features, tokens] activations. Transposing x in and y out is inside the timed
             call (2 x 0.8 GB copies, ~1% of it).

GPU memory at the default size: x 0.8 GB, weights 0.9 GB, gate/up 6.4 GB, y 0.8 GB, plus the
sparse path's own temporaries (~7-10 GB) and the check's float64 copies of y (3.2 GB each):
well under 40 GB. The float64 reference runs 4096 tokens at a time (~0.8 GB per fp64 slice).

What should move in the profile, and why:
  - the three GEMMs are ~99% of the FLOPs and ~95% of the time: dense ~85 ms on an H100
    (~700 TFLOP/s); sparse GEMMs 1.1-1.6x faster on Hopper, so ~60-75 ms per call;
  - the SwiGLU kernels are memory-bound and identical in both (~16 GB of DRAM traffic, ~5 ms):
    they cap the end-to-end gain (Amdahl); fusing them into the gate/up GEMM epilogue would be
    the next step, not attempted here;
  - FLOPs: the analytic count is the dense-equivalent for both variants ("effective" FLOP/s);
    the hardware tensor counters may count the sparse MMAs as half (see structured_sparsity);
  - kernels per call: 5 dense; sparse 5-8 (3 sparse GEMMs, silu, mul, the copy, and any
    transposes the sparse backend inserts for F.linear).

Tolerance 1e-2: bf16 rounding of gate, up, silu, their product and y compounds to ~4e-3 against
float64 (measured on CPU at 512 x 256 x 1024); dense and sparse round in different orders,
so they differ from each other by up to ~sqrt(2) x that. A wrong weight or a dropped half of
the sparse values gives errors of order 1.
"""
from __future__ import annotations

import math
from typing import Callable, Mapping

import torch
import torch.nn.functional as F

from aisp_kernels import sparse
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

DEFAULT_SIZES = {"tokens": 8 * 8192, "hidden": 6144, "ffn": 24576}
REFERENCE_CHUNK_TOKENS = 4096


prune_2_4 = sparse.prune_2_4          # the same rule as ch09.structured_sparsity


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x ~ N(0, 1); W1, W3 ~ N(0, 1/hidden), W2 ~ N(0, 1/ffn), pruned 2:4 in fp32; all bf16."""
    gen = torch.Generator(device=device).manual_seed(seed)
    t, h, f = sizes["tokens"], sizes["hidden"], sizes["ffn"]

    def weight(rows: int, cols: int) -> torch.Tensor:
        w = torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float32) / math.sqrt(cols)
        return prune_2_4(w).to(torch.bfloat16)

    x = torch.randn(t, h, generator=gen, device=device, dtype=torch.float32).to(torch.bfloat16)
    return {"x": x, "w1": weight(f, h), "w3": weight(f, h), "w2": weight(h, f)}


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Dense SwiGLU FFN: gate and up GEMMs, silu and multiply in place, down GEMM."""
    x, w1, w3, w2 = inputs["x"], inputs["w1"], inputs["w3"], inputs["w2"]
    t, f = x.shape[0], w1.shape[0]
    gate = torch.empty(t, f, device=x.device, dtype=x.dtype)
    up = torch.empty_like(gate)
    y = torch.empty(t, w2.shape[0], device=x.device, dtype=x.dtype)

    def launch() -> torch.Tensor:
        torch.mm(x, w1.t(), out=gate)
        torch.mm(x, w3.t(), out=up)
        F.silu(gate, inplace=True)
        gate.mul_(up)
        torch.mm(gate, w2.t(), out=y)
        return y

    return launch


def optimized_sparse24(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The same block with the three weights compressed 2:4 (once, here)."""
    x, w1, w3, w2 = inputs["x"], inputs["w1"], inputs["w3"], inputs["w2"]
    if not x.is_cuda:
        raise RequirementError("2:4 semi-structured sparsity needs CUDA tensors (run on a GPU)")
    from torch.sparse import to_sparse_semi_structured

    w1s, w3s, w2s = (to_sparse_semi_structured(w) for w in (w1, w3, w2))
    y = torch.empty(x.shape[0], w2.shape[0], device=x.device, dtype=x.dtype)

    def launch() -> torch.Tensor:
        gate = F.linear(x, w1s)
        up = F.linear(x, w3s)
        F.silu(gate, inplace=True)
        gate.mul_(up)
        y.copy_(F.linear(gate, w2s))
        return y

    return launch


def optimized_sparse24_tuned(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The block in feature-major layout on cuSPARSELt with searched algorithms (once, here)."""
    x, w1, w3, w2 = inputs["x"], inputs["w1"], inputs["w3"], inputs["w2"]
    if not x.is_cuda:
        raise RequirementError("2:4 semi-structured sparsity needs CUDA tensors (run on a GPU)")
    t, h, f = x.shape[0], x.shape[1], w1.shape[0]
    x_t = x.t().contiguous()                                   # [h, t]: B of the gate/up GEMMs
    gate_mm, _ = sparse.tuned_sparse_matmul(w1, x_t)
    up_mm, _ = sparse.tuned_sparse_matmul(w3, x_t)
    down_mm, _ = sparse.tuned_sparse_matmul(w2, torch.zeros(f, t, device=x.device, dtype=x.dtype))
    y = torch.empty(t, h, device=x.device, dtype=x.dtype)

    def launch() -> torch.Tensor:
        x_t.copy_(x.t())                 # tokens-major -> feature-major, inside the timed call
        gate = gate_mm(x_t)              # [f, t] = W1 x^T
        up = up_mm(x_t)                  # [f, t] = W3 x^T
        F.silu(gate, inplace=True)
        gate.mul_(up)
        y.copy_(down_mm(gate).t())       # [h, t] = W2 (silu(gate) * up), back to [t, h]
        return y

    return launch


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 on the inputs' device, REFERENCE_CHUNK_TOKENS tokens at a time."""
    x = inputs["x"]
    w1, w3, w2 = (inputs[k].double() for k in ("w1", "w3", "w2"))
    out = torch.empty(x.shape[0], w2.shape[0], device=x.device, dtype=torch.float64)
    for start in range(0, x.shape[0], REFERENCE_CHUNK_TOKENS):
        xs = x[start:start + REFERENCE_CHUNK_TOKENS].double()
        h = F.silu(xs @ w1.t()) * (xs @ w3.t())
        out[start:start + REFERENCE_CHUNK_TOKENS] = h @ w2.t()
        del xs, h
    return out


def flops(sizes: Mapping[str, int]) -> int:
    """6 t h f for the three GEMMs (2 t h f each) + 4 t f for SwiGLU (exp, add, divide: silu;
    one multiply by up). Dense-equivalent for both variants."""
    t, h, f = sizes["tokens"], sizes["hidden"], sizes["ffn"]
    return 6 * t * h * f + 4 * t * f


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes, bf16: read x and the three dense weights once, write y once.

    (A block that keeps gate/up on chip would reach this; the eager baseline also writes and
    re-reads the [t, f] intermediates, ~8 t f x 2 bytes more.)
    """
    t, h, f = sizes["tokens"], sizes["hidden"], sizes["ffn"]
    return 2 * (2 * t * h + 3 * h * f)



SEMI_STRUCTURED = "torch's semi-structured sparse bf16 tensors (CUTLASS: rows a multiple of 32, columns of 64)"
SIZE_RULES = (SizeRule("hidden", step=64, minimum=64, why=SEMI_STRUCTURED),
              SizeRule("ffn", step=64, minimum=64, why=SEMI_STRUCTURED))


PAIR = KernelPair(
    name="ch09.structured_sparsity_ffn",
    chapter=9,
    lesson="2:4 sparse weights speed up the three GEMMs of a SwiGLU FFN, but the unchanged "
           "memory-bound SwiGLU kernels cap the end-to-end gain (Amdahl).",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "sparse24": optimized_sparse24, "sparse24_tuned": optimized_sparse24_tuned},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    size_rules=SIZE_RULES,
    tolerance=1e-2,      # compounded bf16 rounding of the intermediates, ~4e-3 (see docstring)
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90) or newer"),
    variant_needs={"sparse24": ("gpu",), "sparse24_tuned": ("gpu",)},
    book=Book("sparse24_tuned", None, "seed 001 (the chapter 9 README): 2:4 SwiGLU FFN with cuSPARSELt; "
              "spec §3.1 has no ratio for it"),
)
