"""Chapter 9: cublaslt_gemm (fp16 and fp8), a hand-written tensor-core GEMM against cuBLASLt.

The operation: C[m, n] = A[m, k] @ B[k, n], fp32 accumulation, fp16 out (default 8192^3):
2 m n k = 1.10 TFLOP. At fp16 that is 2 (m k + k n + m n) = 403 MB of operands and output
(fp8: 1 byte per operand element, 2 per output: 268 MB), so ~1-2 ms of tensor math against
~0.1 ms of DRAM time: compute bound, and the question is which tensor-core instructions the
math runs on and how well they are fed.

  baseline          hand-written mma.sync kernel (cublaslt_gemm.cu, hgemm_mma_sync): 128 x 128
                    x 32 block tiles, 8 warps of 64 x 32, mma.sync.m16n8k16 fed by ldmatrix from
                    a two-stage cp.async ring (padded rows, no bank conflicts), 124 registers, no
                    spills, 37 KB shared. A straightforward Ampere-style kernel, on purpose not
                    tuned further (no grouped rasterization, no deeper pipeline). SASS:
                    HMMA.16816.F32, LDSM(.MT).88.4, LDGSTS.E.BYPASS.128.
  cublaslt_fp16     torch.mm(a, b, out=c) on the same fp16 tensors: cuBLAS hands it to
                    cuBLASLt, which on torch 2.11 / CUDA 13.0 picks an "nvjet" Hopper kernel
                    (nvjet_sm90_hsh_320x128_64x3_1x2_h_bz_coopB_NNT: wgmma, so HGMMA in SASS, with
                    TMA loads; by its name 1x2 clusters and cooperative warpgroups; ncu's gmma
                    stall confirms wgmma), preceded by a small memset that is part of the call.
  cublaslt_fp8      torch._scaled_mm(a8, b8_t.t(), scale_a, scale_b, out_dtype=fp16, out=c) (the
                    .out overload exists in torch 2.11: no copy): e4m3 A (row-major) and B
                    (column-major, the transpose of a contiguous [n, k] tensor), per-tensor
                    float32 scales on the device, fp16 out, use_fast_accum off (cuBLASLt promotes
                    fp8 partial sums to fp32 at intervals). Kernel
                    nvjet_sm90_qqhsh_144x128_128x6_1x2_h_bz_coopA_algo2_TNN (fp8 wgmma, QGMMA in
                    SASS; its FLOPs land in ncu's fp8 tensor counter): twice fp16's dense tensor
                    rate per clock. (cuBLASLt's SASS was not disassembled in this port.)

The lesson: on Hopper the legacy warp-level mma.sync path (HMMA) peaks at about 2/3 of the dense
rate that the warpgroup-level wgmma instructions (HGMMA) reach, and wgmma wants its operands in
shared memory laid out by TMA with the issuing warps freed from address arithmetic: a hand-written
mma.sync kernel, however tidy, stays well below cuBLASLt's. fp8 (QGMMA) doubles the tensor
throughput per clock again and halves the operand bytes.

What should move in the profile, and why:
  - time: cuBLASLt fp16 well ahead of the baseline (wgmma's dense rate against mma.sync's ~2/3
    of it, and a tuned TMA pipeline against a plain two-stage cp.async ring); fp8 ahead again,
    though short of 2x if the card's power cap lowers the clock under fp8's denser math;
  - tensor pipe active: about half the time for the baseline, near saturation for cuBLASLt;
    none of the variants issues FFMA for the product;
  - FLOP counters: ~2 m n k in sm__ops_path_tensor_src_fp16 for the baseline and cuBLASLt fp16
    (a little more when a library tile overhangs n), and only in sm__ops_path_tensor_src_fp8 for
    cublaslt_fp8 (flops_tensor_fp16 vs flops_tensor_fp8 in aisp-prof's terms);
  - stalls: the baseline's barrier (one barrier pair per 32 k) and short_scoreboard (ldmatrix
    latency); cuBLASLt's gmma (warps waiting on wgmma: the tensor core is the limit);
  - DRAM: the baseline reads the operands several times over (row-major block order, no
    L2-friendly rasterization), cuBLASLt close to once; all three stay compute bound.
Measured times, counters and clocks, H200 and H100: kernels/ch09/README.md.

Inputs and correctness. make_inputs draws A ~ N(0, 1) [m, k] and B ~ N(0, 1/k) [k, n] (so C ~
N(0, 1)), quantizes each to e4m3 with a per-tensor power-of-two scale chosen so the tensor's
largest magnitude fits e4m3's 448, and hands every variant the same matrices: the fp16 operands
are the DEQUANTIZED fp8 values (fp8 value x power-of-two scale is exact in fp16). So all three
variants compute the same product and the pair's single float64 reference (from the dequantized
operands) measures the GEMM, not the quantization (which alone is ~2.7% relative on A, ~3.7% on
C: it would swamp any tolerance). What is left is fp32 accumulation and the final rounding to
fp16: products of e4m3-valued operands are exact and their fp32 sums nearly so, so expect every
variant's error to be about the fp16 output rounding, ~2-3e-4 relative (Frobenius), the
baseline and cublaslt_fp16 nearly identical. Tolerance 2e-3, ~8x that (fp16's expected ~2e-3,
fp8's ~5e-3 from the brief are looser than needed here because the operands are shared), while
a dropped or doubled k slice gives > 1e-2. The measured errors are in the README.
A consequence worth knowing: the fp16 operands carry only e4m3's 3 mantissa bits, so their bit
patterns toggle less than random fp16 data would, which lowers tensor-core power and, on a
power-capped card, can flatter the fp16 variants' clock slightly compared with full-entropy data.

Sizes: m free; n and k multiples of 16 (torch._scaled_mm's requirement; the hand-written kernel
needs multiples of 8 and zero-fills partial tiles).
"""
from __future__ import annotations

import ctypes
import math
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels import gemm
from aisp_kernels.binding import CudaLibrary
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

CUDA_SOURCE = Path(__file__).with_name("cublaslt_gemm.cu")
DEFAULT_SIZES = {"m": 8192, "n": 8192, "k": 8192}
E4M3_MAX = 448.0
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # the hand-written kernel; built on first use, never on import
    "aisp_hgemm_mma_sync": ((ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p), ctypes.c_int),
})


def validate_sizes(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(m, n, k), or ValueError: all >= 1 and < 2^31, n and k multiples of 16."""
    return gemm.validate_sizes(sizes, 16, "torch._scaled_mm's fp8 layout rule")


def quantize_e4m3(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(x8, scale): e4m3 values and a float32 power-of-two scale with x8 * scale ~ x and
    max |x| / scale <= 448 (no saturation). A power of two makes x8 * scale exact in fp16."""
    amax = float(x.abs().max()) if x.numel() else 1.0
    amax = amax if amax > 0 else 1.0
    scale = 2.0 ** math.ceil(math.log2(amax / E4M3_MAX))
    x8 = (x / scale).to(torch.float8_e4m3fn)
    return x8, torch.tensor(scale, dtype=torch.float32, device=x.device)


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """A ~ N(0, 1) [m, k], B ~ N(0, 1/k) [k, n], quantized to e4m3 (per-tensor power-of-two
    scales); fp16 `a`, `b` are the dequantized values, so every variant multiplies the same
    numbers. fp8: `a8` [m, k] row-major, `b8_t` [n, k] contiguous (B column-major)."""
    m, n, k = validate_sizes(sizes)
    gen = torch.Generator(device=device).manual_seed(seed)
    a32 = torch.randn(m, k, generator=gen, device=device, dtype=torch.float32)
    b32 = torch.randn(k, n, generator=gen, device=device, dtype=torch.float32) / math.sqrt(k)
    a8, scale_a = quantize_e4m3(a32)
    b8, scale_b = quantize_e4m3(b32)
    del a32, b32
    a = (a8.to(torch.float32) * scale_a).to(torch.float16)
    b = (b8.to(torch.float32) * scale_b).to(torch.float16)
    b8_t = b8.t().contiguous()
    return {"a": a, "b": b, "a8": a8, "b8_t": b8_t, "scale_a": scale_a, "scale_b": scale_b}


def _operands(inputs: Inputs, variant: str) -> tuple[torch.Tensor, torch.Tensor, int, int, int]:
    a, b = inputs["a"], inputs["b"]
    gemm.check_operands("ch09.cublaslt_gemm", variant, {"a": a, "b": b}, torch.float16)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: a is {m}x{k}, b is {k2}x{n}")
    validate_sizes({"m": m, "n": n, "k": k})
    return a, b, m, n, k


# --- the hand-written CUDA C++ kernel, through ctypes ---------------------------------------

def handwritten_fp16(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """mma.sync.m16n8k16 kernel (hgemm_mma_sync) into a preallocated fp16 C, on torch's stream."""
    a, b, m, n, k = _operands(inputs, "handwritten_fp16")   # before building: CPU is a RequirementError
    LIBRARY.load()                     # build here, outside the timed call
    c = torch.empty(m, n, device=a.device, dtype=torch.float16)

    def launch() -> torch.Tensor:
        # a, b, c are referenced here (not only their addresses) so the closure keeps them alive;
        # the stream is read per call so the launch follows torch's current stream.
        LIBRARY.call("aisp_hgemm_mma_sync", a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k,
                     torch.cuda.current_stream().cuda_stream)
        return c

    return launch


# --- cuBLASLt through torch -------------------------------------------------------------------

def cublaslt_fp16(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """torch.mm(a, b, out=c): cuBLAS/cuBLASLt's Hopper fp16 GEMM (wgmma, fp32 accumulation)."""
    a, b, m, n, _ = _operands(inputs, "cublaslt_fp16")
    c = torch.empty(m, n, device=a.device, dtype=torch.float16)

    def launch() -> torch.Tensor:
        torch.mm(a, b, out=c)
        return c

    return launch


def cublaslt_fp8(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """torch._scaled_mm on e4m3 A (row-major) and B (column-major), per-tensor scales, fp16 out."""
    _, _, m, n, _ = _operands(inputs, "cublaslt_fp8")
    a8, b8_t = inputs["a8"], inputs["b8_t"]
    scale_a, scale_b = inputs["scale_a"], inputs["scale_b"]
    b8 = b8_t.t()                          # [k, n] with strides (1, k): column-major, as cuBLASLt wants
    c = torch.empty(m, n, device=a8.device, dtype=torch.float16)

    def launch() -> torch.Tensor:
        torch._scaled_mm(a8, b8, scale_a, scale_b, out_dtype=torch.float16, use_fast_accum=False, out=c)
        return c

    return launch


reference = gemm.reference   # float64 GEMM of the dequantized operands (the fp16 `a`, `b` are exactly those values).


flops = gemm.flops           # 2 m n k


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of the fp16 variants: read A and B once, write C once, 2 bytes each."""
    return gemm.min_bytes(sizes, 2)


def bytes_fp8(sizes: Mapping[str, int]) -> int:
    """Minimum DRAM bytes of cublaslt_fp8: 1-byte e4m3 A and B, 2-byte fp16 C (scales ignored)."""
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    return (m * k + k * n) + 2 * m * n



SIZE_RULES = gemm.size_rules(16, "torch._scaled_mm's fp8 layout rule")


PAIR = KernelPair(
    name="ch09.cublaslt_gemm",
    chapter=9,
    lesson="A hand-written mma.sync (HMMA) fp16 GEMM against cuBLASLt's Hopper wgmma/TMA kernels "
           "(HGMMA fp16, QGMMA fp8): mma.sync peaks at 2/3 of wgmma's dense rate, fp8 doubles it.",
    make_inputs=make_inputs,
    variants={"baseline": handwritten_fp16, "cublaslt_fp16": cublaslt_fp16,
              "cublaslt_fp8": cublaslt_fp8},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    size_rules=SIZE_RULES,
    tolerance=2e-3,      # same operands for all; the fp16 output rounding alone is ~2-3e-4
    requires=Requirements(min_cc=(9, 0), needs=("nvcc",),
                          note="Hopper (sm_90): wgmma/fp8 cuBLASLt kernels; builds CUDA C++"),
    variant_needs={"baseline": ("gpu", "nvcc"), "cublaslt_fp16": ("gpu",), "cublaslt_fp8": ("gpu",)},
    book=Book("cublaslt_fp16", 155.748, "spec §3.1 cublaslt_gemm_fp16_cuda (fp8: cublaslt_gemm_fp8_cuda)",
              off_reason="the book's baseline is 156x slower than cuBLASLt on its B200; this one is a tuned "
                         "mma.sync tensor-core kernel, so only mma.sync -> wgmma (and fp8) is left to gain",
              also={"cublaslt_fp8": 349.728}),
)
