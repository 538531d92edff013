"""Chapter 14: the book's `sliding_window` pair as it really runs: eager causal vs causal SDPA, no window.

The operation: ch14.sliding_window's projections and attention with every earlier key visible
(plain causal attention), at the same sizes (B=4, S=4096, E=1024, 16 heads of 64, fp16), on the
same inputs for the same seed (x ~ N(0, 1), weights ~ N(0, 1/E)).

What the book's code really does (`ch14/{baseline,optimized}_sliding_window.py`): the baseline is
explicit attention with a cached causal mask (scores * scale, masked_fill, softmax, P V, between a
fused QKV projection and the output projection); the optimized side is
`F.scaled_dot_product_attention(q, k, v, is_causal=True)` with PyTorch's default backend choice.
Its `window_size=512` is "kept only for API compatibility": no window on either side. The B200's
12.046x is this comparison, eager causal vs fused causal; this pair reproduces it like for like.

Why a pair of its own: the book's optimized side (`causal_sdpa_no_window`) computes a different
function from ch14.sliding_window's (which has the 512-token window its name promises). A
KernelPair has one float64 reference and every variant is checked against it and the baseline, so
this variant cannot sit among the windowed ones without failing their check (which stops the whole
pair's timing). Here it has its own causal reference. The comparison the chapter wants, windowed
FlexAttention vs plain causal SDPA, is ch14.sliding_window's `flex` against this pair's
`causal_sdpa_no_window` at the same sizes; ch14.sliding_window's docstring has the FLOPs.

Variants:
  baseline               ch14.sliding_window's baseline with window = seq - 1, which is the
                         book's causal mask (precomputed, as the book caches it); masked_fill_ in
                         place instead of the book's out-of-place copy: the same two passes.
  causal_sdpa_no_window  the book's optimized side: causal SDPA, default dispatch, like the book;
                         `dispatcher_choice(inputs)` says which backend that is (expected:
                         FLASH_ATTENTION, FA2's `flash_fwd_kernel`; the GPU test prints it).

Predicted profile (what must move in ncu / nsys), default sizes:
  - DRAM bytes: 8 passes over the 2.15 GB fp16 score tensor in the baseline (17.2 GB), ~0.3 GB
    in the fused variant; the baseline is DRAM-bound (>= ~5.7 ms at ~3 TB/s);
  - FLOPs: 137.4 G of projections on both sides; attention 274.9 G executed by the baseline
    (all S^2, half masked) vs 137.5 G causal (`flops`) in SDPA, which skips the tiles above the
    diagonal;
  - launches per call: ~11 (QKV GEMM, layout copies, bmm, scale, masked_fill_, softmax, bmm,
    head-merge copy, output GEMM) -> 3 (QKV GEMM, the SDPA kernel, output GEMM);
  - tensor pipe: cuBLAS HGMMA for the projections; FA2 is mma.sync (HMMA), not wgmma;
  - duration on an H100: baseline ~6-7 ms, causal SDPA ~0.7-0.8 ms (0.25 ms projections,
    ~0.5 ms FA2 causal at ~270 TFLOP/s): ~8-10x; B200 12.046x.

FLOPs: 8 B S E^2 + 4 B E S (S + 1) / 2. Minimum DRAM bytes: x, W_qkv, W_out read, y written, fp16.

Correctness: float64 reference from the same fp16 inputs (ch14.sliding_window's, with the window
covering every earlier key), chunked by batch entry and 8 heads. Measured on a CPU (S 600 and 1024,
E 256): baseline ~5.6e-4 relative, causal SDPA ~4.5e-4. Tolerance 5e-3, as in ch14.sliding_window,
rejects a 512-token window (~0.2 at S 1024) or a missing mask (~0.8). Sanitizer size: S 600, E 256.
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch
import torch.nn.functional as F

from aisp_kernels.siblings import load_sibling
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

NAME = "ch14.sliding_window_causal"
DEFAULT_SIZES = {"batch": 4, "seq": 4096, "embed": 1024, "heads": 16}
SMALL_SIZES = {"batch": 1, "seq": 600, "embed": 256, "heads": 4}
SIZE_RULES = (SizeRule("embed", step=8, per="heads", why="heads x a head_dim that is a multiple of 8: the "
                                                     "fused attention kernels' vector loads"),)


# ch14.sliding_window, whose inputs, projections, baseline and reference this pair reuses
_SW = load_sibling(__file__, "sliding_window.py", "aisp_ch14_sliding_window_for_causal")


def _causal(sizes: Mapping[str, int]) -> dict[str, int]:
    return {**sizes, "window": sizes["seq"] - 1}


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """ch14.sliding_window's inputs with window = seq - 1: every earlier key visible (causal)."""
    return _SW.make_inputs(_causal(sizes), device, seed)


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The book's eager causal attention: all S^2 scores, the causal mask, softmax, P V."""
    return _SW.baseline(inputs)


def optimized_causal_sdpa_no_window(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The book's optimized side: F.scaled_dot_product_attention(is_causal=True), default dispatch."""
    proj = _SW._Projections(inputs)

    def launch() -> torch.Tensor:
        q, k, v = proj.qkv_heads()
        return proj.output(F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True))

    return launch


def dispatcher_choice(inputs: Inputs) -> str:
    """The SDPBackend name PyTorch's dispatcher picks for the causal_sdpa_no_window call."""
    from torch.nn.attention import SDPBackend

    q, k, v = _SW._Projections(inputs).qkv_heads()
    return SDPBackend(torch._fused_sdp_choice(q, k, v, None, 0.0, True)).name


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 causal attention with the projections (ch14.sliding_window's, window = seq - 1)."""
    return _SW.reference(inputs)


def flops(sizes: Mapping[str, int]) -> int:
    """8 B S E^2 (projections) + 4 B E S (S + 1) / 2 (causal Q K^T and P V)."""
    return _SW.flops(_causal(sizes))


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes: x, W_qkv and W_out read once, y written once, fp16."""
    return _SW.bytes(sizes)


def baseline_bytes(sizes: Mapping[str, int]) -> int:
    """The baseline's score traffic on top of the minimum: 8 passes over fp16 B H S^2."""
    return _SW.baseline_bytes(sizes)


PAIR = KernelPair(
    name=NAME,
    chapter=14,
    lesson="The book's 'sliding window' pair has no window: eager causal attention (17 GB of "
           "score traffic) vs causal SDPA (flash, no scores in DRAM, masked tiles skipped); the "
           "windowed version, with its own reference, is ch14.sliding_window.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "causal_sdpa_no_window": optimized_causal_sdpa_no_window},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=5e-3,      # fp16 scores and probabilities in the baseline: ~5.6e-4 (see docstring)
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90) or newer"),
    book=Book("causal_sdpa_no_window", 12.046, "spec §3.3 sliding_window (its optimized side has no window)",
              off_reason="the eager baseline streams ~17 GB of scores at each GPU's DRAM bandwidth, and the "
                         "book's calls end in a host sync (float(out.sum())) that this port drops"),
)
