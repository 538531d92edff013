"""Chapter 14: sliding-window causal attention, made true: a block mask skips what a dense mask can't.

The operation (B=4, S=4096, embed E=1024, 16 heads of D=64, fp16, bias-free projections):

    Q, K, V = split(x W_qkv^T);  O_h = softmax(Q_h K_h^T / sqrt(D) + band) V_h;  y = merge(O) W_out^T

where query i sees key j iff 0 <= i - j <= window (window 512: the token itself and the 512 before
it; the same predicate as the book's flex_attention_sparse, `q >= kv and q - kv <= window`).

What the book's code really does (`ch14/{baseline,optimized}_sliding_window.py`): neither side has
a window. The baseline is explicit causal attention (scores, a cached causal mask, softmax, P V,
between the projections); the optimized side is `F.scaled_dot_product_attention(is_causal=True)`,
and `window_size=512` is "kept only for API compatibility". The B200's 12.046x is eager causal vs
fused causal. That pair, as the book runs it, is `ch14.sliding_window_causal` here (its variant
`causal_sdpa_no_window` computes a different function from this pair's, plain causal attention,
so it is checked there against its own causal reference, never against this windowed one: a
KernelPair has one reference, and a variant that fails it stops the whole pair's timing).

This pair has the window the name promises (sizes["window"], default 512):
  baseline         the book's explicit attention with a causal + sliding-window band instead of
                   the causal mask: Q K^T * scale, masked_fill_ with the precomputed band
                   (16 MB of bool), softmax, P V, between the projections. Computes all S^2 scores.
  flex             torch.compile(flex_attention) with a `create_block_mask` of the band (128 x 128
                   blocks, built once in the factory): blocks outside the band are never loaded
                   or computed. The factory compiles and runs it once (Dynamo tracing, Inductor's
                   flex template, a Triton compile with the template's default config, no
                   max-autotune: ~10-60 s on a process's first call, an Inductor/Triton cache hit
                   after); the timed call only launches. `launch.compiled`
                   and `launch.block_mask` are what a tool can read back (Dynamo's counters, the
                   generated code, the mask's sparsity).
  sdpa_band_mask   SDPA with the band as a mask tensor, on EFFICIENT_ATTENTION only: the boolean
                   band turned once into the fp16 additive bias (0 / -inf) that SDPA would rebuild
                   every call, stored with a 16-element-aligned row stride so the kernel does not
                   pad a copy. The kernel reads the mask but cannot skip: it computes all S^2
                   scores (a mask and is_causal=True cannot be combined).

Predicted profile (what must move in ncu / nsys), default sizes:
  - FLOPs (`flops`, `causal_flops`, `dense_flops`): projections 137.4 G in every variant; the
    attention the band needs is 32.2 G, plain causal 137.5 G (4.3x), dense 274.9 G (8.5x). Flex
    runs every 128 x 128 block that touches the band, 150 of 1024 (`flex_block_pairs`): 1.25x
    the band's work, 40.3 G. The baseline and sdpa_band_mask execute the dense 274.9 G;
  - DRAM bytes: the baseline makes 8 passes over the 2.15 GB fp16 score tensor (bmm writes S;
    `* scale` reads and writes; masked_fill_ reads and writes; softmax reads S, writes P; bmm
    reads P): 17.2 GB, plus up to 1 GB of band-mask reads (16 MB per (batch, head)). flex and
    sdpa_band_mask move ~0.3 GB (x, weights, the QKV buffer and O between kernels, y); the
    bias (32 MB) sdpa_band_mask rereads for every (batch, head) stays in L2;
  - launches per call: baseline ~11 (QKV GEMM, Q/K/V layout copies for the batched matmuls,
    bmm, scale, masked_fill_, softmax, bmm, the head-merge copy, output GEMM); flex 3 (QKV GEMM,
    one Inductor `triton_tem_fused_*` flex kernel, output GEMM); sdpa_band_mask 3
    (`fmha_cutlassF_*` in the middle);
  - tensor pipe: cuBLAS HGMMA for the projections everywhere; the flex template is Triton
    (wgmma where Triton picks it on sm_90, HMMA otherwise: the SASS says), the efficient
    kernel is sm80 code (HMMA, no TMA);
  - duration on an H100 (~3 TB/s, ~600-700 TFLOP/s fp16 in cuBLAS): baseline >= 6 ms (DRAM);
    flex ~0.4-0.5 ms (0.25 ms of projections + ~0.15-0.2 ms of attention); sdpa_band_mask
    ~1.7-2 ms, slower than plain causal SDPA (`ch14.sliding_window_causal`, ~0.75 ms): a mask
    tensor makes the work dense, only a block mask lets the kernel skip. Flex should beat
    causal SDPA by ~1.5-2x overall (attention alone ~3x: 1/3.4 of the FLOPs at somewhat lower
    efficiency than FA2), the B200's 12.046x is eager vs fused causal, not this.

FLOPs: 8 B S E^2 (projections) + 4 B E x visible_pairs(S, window), the (i, j) pairs the band
allows (4 D per pair and head: Q K^T and P V). Minimum DRAM bytes: x, W_qkv, W_out read once, y
written once, fp16.

Correctness: x ~ N(0, 1) and weights ~ N(0, 1/E) (the book's nn.Linear default U(+-1/sqrt(E))
gives scores of std 0.33 and a nearly flat softmax, where a wrong window edge barely shows), so Q,
K, V ~ N(0, 1) and scores ~ N(0, 1). The reference is float64 from the same fp16 inputs, on their
device, one batch entry and REFERENCE_HEADS heads at a time (8 x 4096^2 fp64 scores = 1.1 GB per
chunk at the default size), as ch10.flashattention3_pipeline does. Measured on a CPU (S 600,
window 200 and S 1024, window 512; E 256): baseline ~5.7e-4 relative (fp16 scores and
probabilities), flex and the band-masked SDPA ~4.5e-4 (fp16 Q, K, V, O), ~5.6e-4 apart. Tolerance
5e-3 is ~9x that and rejects plain causal attention (the book's optimized side, ~0.2-0.35), a
window of 256 (~0.24-0.43) and a window one key short (~1.6e-2-3.6e-2). The sanitizer size
(SMALL_SIZES) is S 600 (ragged in 128-blocks), window 200, E 256: seconds.
"""
from __future__ import annotations

import functools
import importlib.util
import math
from typing import Callable, Mapping

import torch
import torch.nn.functional as F

from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Inputs, KernelPair, Requirements, SizeRule

NAME = "ch14.sliding_window"
DEFAULT_SIZES = {"batch": 4, "seq": 4096, "embed": 1024, "heads": 16, "window": 512}
SMALL_SIZES = {"batch": 1, "seq": 600, "embed": 256, "heads": 4, "window": 200}
SIZE_RULES = (SizeRule("embed", step=8, per="heads", why="heads x a head_dim that is a multiple of 8: the "
                                                     "fused attention kernels' vector loads"),
              SizeRule("window", minimum=0, why="keys before the query a query sees"))
DTYPE = torch.float16
REFERENCE_HEADS = 8        # heads per float64 chunk in the reference
FLEX_BLOCK = 128           # create_block_mask's default block size
MASK_ALIGN = 16            # the efficient kernel wants the bias's row stride a multiple of 16 elements


def make_inputs(sizes: Mapping[str, int], device: str, seed: int, dtype: torch.dtype = DTYPE) -> Inputs:
    """x ~ N(0, 1) [batch, seq, embed], W_qkv ~ N(0, 1/E) [3E, E], W_out ~ N(0, 1/E) [E, E], fp16
    (`dtype`: ch14.flex_attention_sparse draws the same in bf16)."""
    b, s, e, heads, window = (sizes[k] for k in ("batch", "seq", "embed", "heads", "window"))
    if e % heads or (e // heads) % 8:
        raise ValueError(f"embed ({e}) must be heads ({heads}) x a head_dim that is a multiple of 8")
    if window < 0:
        raise ValueError(f"window must be >= 0 (keys before the query a query sees), got {window}")
    gen = torch.Generator(device=device).manual_seed(seed)

    def normal(*shape: int, std: float) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen, device=device, dtype=torch.float32) * std).to(dtype)

    return {"x": normal(b, s, e, std=1.0), "w_qkv": normal(3 * e, e, std=1 / math.sqrt(e)),
            "w_out": normal(e, e, std=1 / math.sqrt(e)), "heads": heads, "window": window}


def band(seq: int, window: int, device: torch.device | str) -> torch.Tensor:
    """[seq, seq] bool, True where query i may see key j: 0 <= i - j <= window."""
    i = torch.arange(seq, device=device)
    diff = i[:, None] - i[None, :]
    return (diff >= 0) & (diff <= window)


class _Projections:
    """The fused QKV projection and the output projection every variant shares, into buffers
    allocated once; Q, K, V are [batch, heads, seq, D] views of the QKV buffer (no copy)."""

    def __init__(self, inputs: Inputs):
        self.x, self.heads = inputs["x"], inputs["heads"]
        self.w_qkv_t, self.w_out_t = inputs["w_qkv"].t(), inputs["w_out"].t()
        b, s, e = self.x.shape
        self.qkv = torch.empty(b, s, 3 * e, device=self.x.device, dtype=self.x.dtype)
        self.y = torch.empty_like(self.x)

    def qkv_heads(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, s, e = self.x.shape
        torch.matmul(self.x, self.w_qkv_t, out=self.qkv)
        q, k, v = self.qkv.view(b, s, 3, self.heads, e // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        return q, k, v

    def output(self, o: torch.Tensor) -> torch.Tensor:
        """y = merge_heads(O) W_out^T into the preallocated y (the merge is free when O is
        stored [batch, seq, heads, D], as the fused kernels store it)."""
        b, s, e = self.x.shape
        torch.matmul(o.transpose(1, 2).reshape(b, s, e), self.w_out_t, out=self.y)
        return self.y


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Explicit attention with the band as a dense mask: all S^2 scores, then masked_fill_."""
    proj = _Projections(inputs)
    s, e = proj.x.shape[1:]
    scale = 1.0 / math.sqrt(e // proj.heads)
    outside = ~band(s, inputs["window"], proj.x.device)       # precomputed, as the book caches its mask

    def launch() -> torch.Tensor:
        q, k, v = proj.qkv_heads()
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
        scores.masked_fill_(outside, float("-inf"))
        return proj.output(torch.matmul(torch.softmax(scores, dim=-1), v))

    return launch


def flex_api() -> tuple[Callable, Callable]:
    """(flex_attention, create_block_mask), or RequirementError: there is no fallback."""
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError as exc:
        raise RequirementError(f"FlexAttention needs torch.nn.attention.flex_attention (torch >= 2.5), "
                               f"torch {torch.__version__} has none; these pairs never fall back to SDPA") from exc
    return flex_attention, create_block_mask


@functools.cache
def band_mask_mod(window: int) -> Callable:
    """The band as a FlexAttention mask_mod, one function object per window: a new object per
    factory would fail Dynamo's guards and recompile."""
    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx <= window)

    return mask_mod


@functools.cache
def compiled_flex() -> Callable:
    """torch.compile(flex_attention), one per process, static shapes (one graph per size)."""
    return torch.compile(flex_api()[0], dynamic=False)


def optimized_flex(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Compiled FlexAttention with the band's block mask (built and compiled here, not timed)."""
    _, create_block_mask = flex_api()
    x = inputs["x"]
    if x.is_cuda and importlib.util.find_spec("triton") is None:
        raise RequirementError("FlexAttention on a GPU needs triton for torch.compile's Inductor (pip install triton)")
    proj = _Projections(inputs)
    s = x.shape[1]
    block_mask = create_block_mask(band_mask_mod(inputs["window"]), B=None, H=None, Q_LEN=s, KV_LEN=s,
                                   device=x.device, BLOCK_SIZE=FLEX_BLOCK)
    flex = compiled_flex()
    flex(*proj.qkv_heads(), block_mask=block_mask)           # Dynamo + Inductor + Triton compile now

    def launch() -> torch.Tensor:
        return proj.output(flex(*proj.qkv_heads(), block_mask=block_mask))

    launch.compiled = flex
    launch.block_mask = block_mask
    return launch


def additive_band(seq: int, window: int, device: torch.device | str, dtype: torch.dtype) -> torch.Tensor:
    """The band as an additive bias (0 inside, -inf outside), [1, 1, seq, seq], in a buffer whose
    rows are padded to MASK_ALIGN elements (SDPA's efficient kernel would otherwise pad a copy)."""
    stride = -(-seq // MASK_ALIGN) * MASK_ALIGN
    storage = torch.zeros(seq, stride, device=device, dtype=dtype)
    bias = storage[:, :seq]
    bias.masked_fill_(~band(seq, window, device), float("-inf"))
    return bias[None, None]


def sdpa_band(inputs: Inputs, backend_name: str) -> Callable[[], torch.Tensor]:
    """The projections around SDPA with the band as a mask tensor, on one backend (no fallback)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    x = inputs["x"]
    if backend_name in ("EFFICIENT_ATTENTION", "CUDNN_ATTENTION") and not x.is_cuda:
        raise RequirementError(f"{NAME}: the {backend_name} SDPA backend needs CUDA tensors (run on a GPU)")
    backend = getattr(SDPBackend, backend_name)
    proj = _Projections(inputs)
    bias = additive_band(x.shape[1], inputs["window"], x.device, x.dtype)

    def launch() -> torch.Tensor:
        q, k, v = proj.qkv_heads()
        with sdpa_kernel(backend):
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return proj.output(o)

    return launch


def optimized_sdpa_band_mask(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """SDPA on EFFICIENT_ATTENTION with the band as an additive mask: dense work, no block skipping."""
    return sdpa_band(inputs, "EFFICIENT_ATTENTION")


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 projections, banded causal attention and output projection from the same fp16
    inputs, on their device, one batch entry and REFERENCE_HEADS heads at a time."""
    x = inputs["x"]
    b, s, e = x.shape
    heads = inputs["heads"]
    d = e // heads
    w_qkv, w_out = inputs["w_qkv"].double(), inputs["w_out"].double()
    outside = ~band(s, inputs["window"], x.device)
    out = torch.empty(b, s, e, dtype=torch.float64, device=x.device)
    o = torch.empty(heads, s, d, dtype=torch.float64, device=x.device)
    for i in range(b):
        q, k, v = (x[i].double() @ w_qkv.t()).view(s, 3, heads, d).permute(1, 2, 0, 3)   # [H, S, D] each
        for h in range(0, heads, REFERENCE_HEADS):
            part = slice(h, h + REFERENCE_HEADS)
            scores = (q[part] @ k[part].transpose(-1, -2)).mul_(1.0 / math.sqrt(d))
            o[part] = torch.softmax(scores.masked_fill_(outside, float("-inf")), dim=-1) @ v[part]
            del scores
        out[i] = o.transpose(0, 1).reshape(s, e) @ w_out.t()
    return out


def visible_pairs(seq: int, window: int) -> int:
    """(query, key) pairs with 0 <= i - j <= window: sum over i of min(i, window) + 1."""
    w = min(window, seq - 1)
    return (w + 1) * seq - w * (w + 1) // 2


def projection_flops(sizes: Mapping[str, int]) -> int:
    """8 B S E^2: x W_qkv^T (6 B S E^2) and merge(O) W_out^T (2 B S E^2)."""
    return 8 * sizes["batch"] * sizes["seq"] * sizes["embed"] ** 2


def flops(sizes: Mapping[str, int]) -> int:
    """What the math needs: projections + 4 B E per visible (query, key) pair (4 D per head)."""
    return projection_flops(sizes) + 4 * sizes["batch"] * sizes["embed"] * visible_pairs(sizes["seq"], sizes["window"])


def causal_flops(sizes: Mapping[str, int]) -> int:
    """The same with plain causal attention (the book's optimized side): S (S + 1) / 2 pairs."""
    return flops({**sizes, "window": sizes["seq"]})


def dense_flops(sizes: Mapping[str, int]) -> int:
    """What the baseline and sdpa_band_mask execute: all S^2 pairs."""
    return projection_flops(sizes) + 4 * sizes["batch"] * sizes["embed"] * sizes["seq"] ** 2


def flex_block_pairs(seq: int, window: int, block: int = FLEX_BLOCK) -> tuple[int, int]:
    """(blocks that touch the band, (query, key) pairs inside them): what flex computes."""
    n = -(-seq // block)
    count = pairs = 0
    for qb in range(n):
        q0, q1 = qb * block, min(seq, qb * block + block) - 1
        for kb in range(qb + 1):
            k0, k1 = kb * block, min(seq, kb * block + block) - 1
            if q0 - k1 <= window:                       # q1 >= k0 holds for kb <= qb
                count, pairs = count + 1, pairs + (q1 - q0 + 1) * (k1 - k0 + 1)
    return count, pairs


def flex_flops(sizes: Mapping[str, int]) -> int:
    """What flex executes: projections + 4 B E per pair in the blocks that touch the band."""
    return projection_flops(sizes) + 4 * sizes["batch"] * sizes["embed"] * flex_block_pairs(sizes["seq"], sizes["window"])[1]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes: x, W_qkv and W_out read once, y written once, fp16."""
    b, s, e = sizes["batch"], sizes["seq"], sizes["embed"]
    return 2 * (2 * b * s * e + 4 * e * e)


def baseline_bytes(sizes: Mapping[str, int]) -> int:
    """The baseline's score traffic on top of the minimum: 8 passes over fp16 B H S^2."""
    return bytes(sizes) + 8 * 2 * sizes["batch"] * sizes["heads"] * sizes["seq"] ** 2


PAIR = KernelPair(
    name=NAME,
    chapter=14,
    lesson="A 512-token sliding window needs 1/4.3 of causal attention's FLOPs, but only a block "
           "mask (FlexAttention) lets the kernel skip the rest; a dense band mask (eager or SDPA) "
           "still computes all S^2 scores, and eager attention streams 17 GB of them.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "flex": optimized_flex, "sdpa_band_mask": optimized_sdpa_band_mask},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=5e-3,      # fp16 scores and probabilities in the baseline: ~5.7e-4 (see docstring)
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90) or newer"),
    variant_needs={"flex": ("triton",), "sdpa_band_mask": ("gpu",)},
)
