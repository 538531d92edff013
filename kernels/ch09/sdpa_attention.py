"""Chapter 9: fuse matmul-softmax-matmul so the S x S attention scores never reach DRAM.

The operation, per batch b and head h (q, k, v: [batch, heads, seq, head_dim] bf16, no mask):

    O = softmax(Q K^T / sqrt(D)) V

Baseline (eager, 3 kernels, materializes the scores):

    baddbmm   S = (Q K^T) / sqrt(D)    cuBLAS, writes B*H*S^2 bf16 scores
    softmax   P = softmax(S)           reads S, writes P (B*H*S^2 each)
    bmm       O = P V                  cuBLAS, reads P

At the default 8 x 16 x 4096 x 128 the score tensor is 8*16*4096^2*2 B = 4.3 GB (and P another
4.3 GB): ~17.2 GB of DRAM traffic for scores alone against 0.54 GB for Q, K, V and O. The first
GEMM has K = head_dim = 128 and writes an S x S tile per head, so it is itself memory-bound
(~128 FLOP/byte against a bf16 ridge of ~300).

Optimized, two fused kernels behind the same API, torch.nn.functional.scaled_dot_product_attention
pinned to one backend with `sdpa_kernel(...)` (it fails rather than fall back):
  flash   SDPBackend.FLASH_ATTENTION, FlashAttention-2 as built into torch 2.11: one kernel that
          tiles Q, streams K and V blocks through shared memory, keeps the running max/sum
          (online softmax) and the O accumulator in registers, and never writes S or P. FA2 is
          written for Ampere: mma.sync (HMMA) and cp.async, no wgmma and no TMA.
  cudnn   SDPBackend.CUDNN_ATTENTION: the same algorithm from cuDNN's Hopper kernel
          (`cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_...`,
          cuDNN 9.19): the same fusion written for Hopper's warpgroup MMA (wgmma, HGMMA in
          SASS), so the tensor pipe runs at its Hopper rate rather than mma.sync's.
The API allocates its result, so each closure copies it into the preallocated output: one
extra elementwise kernel of 2 x B*H*S*D*2 bytes (0.27 GB, ~0.1 ms), counted in the time.

What should move in the profile, and why:
  - kernels per call: 3 -> 2 (flash forward + the output copy; cudnn adds a small memset);
  - DRAM bytes: ~17.7 GB -> ~0.8 GB (Q, K, V read, O written, the copy): ~20x fewer;
  - tensor pipe: the baseline's GEMMs use cuBLAS wgmma (HGMMA) but wait on DRAM; FA2 uses
    mma.sync (HMMA), which on Hopper peaks near 2/3 of wgmma's dense rate even in a plain GEMM
    (ch09.cublaslt_gemm), before softmax overheads, so expect it far below the bf16 roof;
    cuDNN's HGMMA kernel should get most of the way to it;
  - arithmetic intensity: ~60 FLOP/byte (baseline, scores traffic) -> ~1300+ FLOP/byte (flash):
    the fusion moves attention from the memory-bound side of the roofline to the compute side.
Measured times and % of roof (H200, H100): kernels/ch09/README.md.
The lesson is the same as fused_l2norm's, at the scale where it matters most: an intermediate
larger than the inputs (S^2 vs S*D) should never be written out.

Tolerance: the baseline stores S and P in bf16, so its error against a float64 reference is
~4-5e-3; flash keeps them in fp32 registers (~2e-3); the two differ by ~5e-3 (measured on CPU at
seq 1024). 1e-2 gives a 2x margin and still rejects a wrong scale (1/D instead of 1/sqrt(D):
error ~0.5) or a dropped key block.
"""
from __future__ import annotations

import math
from typing import Callable, Mapping

import torch
import torch.nn.functional as F

from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

DEFAULT_SIZES = {"batch": 8, "heads": 16, "seq": 4096, "head_dim": 128}


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """q, k, v ~ N(0, 1) in bf16, shape [batch, heads, seq, head_dim], contiguous."""
    gen = torch.Generator(device=device).manual_seed(seed)
    shape = (sizes["batch"], sizes["heads"], sizes["seq"], sizes["head_dim"])
    q, k, v = (torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(torch.bfloat16)
               for _ in range(3))
    return {"q": q, "k": k, "v": v}


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Eager attention: scaled scores by cuBLAS, softmax, P V by cuBLAS; S and P in DRAM."""
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    b, h, s, d = q.shape
    q3, v3 = q.reshape(b * h, s, d), v.reshape(b * h, s, d)
    k3t = k.reshape(b * h, s, d).transpose(1, 2)
    scale = 1.0 / math.sqrt(d)
    scores = torch.empty(b * h, s, s, device=q.device, dtype=q.dtype)
    probs = torch.empty_like(scores)
    out = torch.empty_like(q)
    out3 = out.view(b * h, s, d)

    def launch() -> torch.Tensor:
        # in place with beta=0: the old scores are ignored (never read), the scale rides on
        # cuBLAS's alpha, so this is one GEMM writing S once
        scores.baddbmm_(q3, k3t, beta=0.0, alpha=scale)
        torch.softmax(scores, dim=-1, out=probs)
        torch.bmm(probs, v3, out=out3)
        return out

    return launch


def _sdpa_on(backend_name: str, gpu_only: bool) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    """A factory running scaled_dot_product_attention on one backend only (it fails rather than
    fall back to another), copying the result into a preallocated output."""
    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, backend_name)
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        if gpu_only and not q.is_cuda:
            raise RequirementError(f"the {backend_name} SDPA backend needs CUDA tensors (run on a GPU)")
        out = torch.empty_like(q)

        def launch() -> torch.Tensor:
            with sdpa_kernel(backend):
                result = F.scaled_dot_product_attention(q, k, v)
            out.copy_(result)
            return out

        return launch

    return factory


optimized_flash = _sdpa_on("FLASH_ATTENTION", gpu_only=False)   # torch has a CPU flash kernel too
optimized_flash.__name__ = "optimized_flash"
optimized_flash.__doc__ = "SDPA on torch's FlashAttention backend only (FA2: mma.sync, no TMA)."
optimized_cudnn = _sdpa_on("CUDNN_ATTENTION", gpu_only=True)
optimized_cudnn.__name__ = "optimized_cudnn"
optimized_cudnn.__doc__ = "SDPA on the cuDNN backend only (cuDNN's sm90 flash forward: wgmma + TMA)."


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 attention on the inputs' device, one batch entry at a time (S^2 fp64 per head is large)."""
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    scale = 1.0 / math.sqrt(q.shape[-1])
    out = torch.empty(q.shape, device=q.device, dtype=torch.float64)
    for i in range(q.shape[0]):
        s = (q[i].double() @ k[i].double().transpose(-1, -2)).mul_(scale)
        out[i] = torch.softmax(s, dim=-1) @ v[i].double()
        del s
    return out


def flops(sizes: Mapping[str, int]) -> int:
    """4 B H S^2 D: the two GEMMs (Q K^T and P V), 2 S^2 D each per head.

    The softmax's ~5 S^2 per head (~1% at D = 128) is left out, as attention FLOP counts
    conventionally do.
    """
    return 4 * sizes["batch"] * sizes["heads"] * sizes["seq"] ** 2 * sizes["head_dim"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes (what flash moves): Q, K, V read once and O written once, bf16."""
    return 4 * sizes["batch"] * sizes["heads"] * sizes["seq"] * sizes["head_dim"] * 2


def baseline_bytes(sizes: Mapping[str, int]) -> int:
    """What the eager baseline must move on top: S written, S read + P written, P read (bf16)."""
    return bytes(sizes) + 4 * sizes["batch"] * sizes["heads"] * sizes["seq"] ** 2 * 2


PAIR = KernelPair(
    name="ch09.sdpa_attention",
    chapter=9,
    lesson="Fused (flash) attention never writes the S x S scores: ~20x fewer DRAM bytes, and "
           "attention moves from the memory-bound side of the roofline to the compute side; on "
           "Hopper a wgmma/TMA flash kernel (cuDNN) nearly doubles FA2's mma.sync one.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "flash": optimized_flash, "cudnn": optimized_cudnn},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    tolerance=1e-2,      # bf16 scores/probabilities in the baseline: ~5e-3 (see docstring)
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90) or newer"),
    variant_needs={"flash": ("gpu",), "cudnn": ("gpu",)},
    book=Book("flash", 1.794, "spec §3.1 sdpa_attention",
              off_reason="another size than the book's (0.70 -> 0.39 ms on its B200): here B8 H16 S4096 D128, "
                         "whose eager baseline streams 17 GB of scores"),
)
