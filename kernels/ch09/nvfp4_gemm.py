"""Chapter 9 (Blackwell only): an NVFP4 block-scaled GEMM on tcgen05 tensor cores vs bf16.

NVFP4 stores each value as a 4-bit e2m1 float (+-{0, 0.5, 1, 1.5, 2, 3, 4, 6}), two per byte,
with one float8 e4m3 scale per block of 16 consecutive values along k. Blackwell's tcgen05
block-scaled MMA consumes that format directly (4x the bf16 math rate, a quarter of the operand
bytes). Hopper has no such instruction (its lowest-precision MMA is fp8 wgmma, without block
scales), so this pair declares min_cc 10.0 and is skipped on an H100/H200 with exit code 9 and
"needs sm_100 ...": nothing is emulated or faked there.

The operation: C[m, n] = A[m, k] @ B[n, k]^T with A and B given in NVFP4 (make_inputs quantizes
N(0, 1) data: per 16-block scale = amax / 6 rounded to e4m3, values rounded to the nearest
e2m1). Both variants compute the product of exactly the same quantized numbers:

  baseline   the dequantized operands (e2m1 value x e4m3 scale, exact in bf16: at most 6
             significant bits) in a dense bf16 GEMM (cuBLAS);
  nvfp4      torch._scaled_mm on the packed float4_e2m1fn_x2 operands with the e4m3 block
             scales in cuBLAS's swizzled 128x4 tile layout (`to_blocked`), bf16 output written
             straight into the preallocated result (out=).

What the profile should show on a B200 (not run by this project: no Blackwell machine): one
kernel each; nvfp4 ~2-4x faster than bf16 at 16384^3 (8.8 TFLOP), its operand DRAM bytes ~28%
of bf16's (4.5 bits per value vs 16), tensor-pipe FLOPs the same 2 m n k.

Tolerance 5e-3: identical operands in both variants, fp32 accumulation, bf16 output rounding
(~1.7e-3 relative).
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

DEFAULT_SIZES = {"m": 16384, "n": 16384, "k": 16384}
BLOCK = 16                                         # values per e4m3 scale (NVFP4)
SIZE_RULES = (SizeRule("k", step=2 * BLOCK, minimum=2 * BLOCK, why="two NVFP4 scale blocks of 16 values per byte row"),)
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E2M1_MAX = 6.0
_E2M1_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


def quantize_nvfp4(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x[rows, k] (k % 32 == 0) -> (packed uint8 [rows, k/2], e4m3 scales [rows, k/16], dequantized fp32).

    Codes are sign (bit 3) + index into E2M1_VALUES (bits 0-2); element 2i sits in the low
    nibble of byte i, element 2i+1 in the high nibble (torch's float4_e2m1fn_x2 layout).
    """
    rows, k = x.shape
    if k % (2 * BLOCK):
        raise ValueError(f"k = {k} must be a multiple of {2 * BLOCK}")
    blocks = x.float().reshape(rows, k // BLOCK, BLOCK)
    amax = blocks.abs().amax(dim=-1, keepdim=True)
    scale = (amax / E2M1_MAX).to(torch.float8_e4m3fn)          # rounds to nearest e4m3
    scale_f32 = scale.float()
    safe = torch.where(scale_f32 > 0, scale_f32, torch.ones_like(scale_f32))
    q = blocks / safe
    midpoints = torch.tensor(_E2M1_MIDPOINTS, device=x.device, dtype=torch.float32)
    magnitude = q.abs()
    index = torch.bucketize(magnitude, midpoints)                # 0..7, nearest value, ties down
    tie_up = (index % 2 == 1) & (index < 7) & (magnitude == midpoints[index.clamp(max=6)])
    index = index + tie_up.to(index.dtype)                       # ties to the even code (IEEE)
    index = torch.where(scale_f32 > 0, index, torch.zeros_like(index))
    sign = torch.signbit(q)                                      # -0 keeps its sign bit, as torch's encoder does
    codes = (index | (sign.to(index.dtype) << 3)).to(torch.uint8).reshape(rows, k)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    lut = torch.tensor(E2M1_VALUES, device=x.device, dtype=torch.float32)
    values = lut[index] * torch.where(sign, -1.0, 1.0)
    dequantized = (values * scale_f32).reshape(rows, k)
    return packed.contiguous(), scale.reshape(rows, k // BLOCK), dequantized


def dequantize_nvfp4(packed: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Inverse of the packing: uint8 [rows, k/2] + e4m3 [rows, k/16] -> fp32 [rows, k]."""
    rows = packed.shape[0]
    codes = torch.stack([packed & 0xF, packed >> 4], dim=-1).reshape(rows, -1).long()
    lut = torch.tensor(E2M1_VALUES, device=packed.device, dtype=torch.float32)
    values = lut[codes & 7] * torch.where((codes & 8) > 0, -1.0, 1.0)
    return (values.reshape(rows, -1, BLOCK) * scale.float().unsqueeze(-1)).reshape(rows, -1)


def to_blocked(scale: torch.Tensor) -> torch.Tensor:
    """[rows, cols] scales -> the flat 128x4-tile swizzled layout cuBLAS wants for block scaling.

    Rows pad to 128 and cols to 4 with zeros; each 128x4 tile is stored as 32x16 (rows r,
    r+32, r+64, r+96 side by side), tiles row-major. (Same as torch's test helper `to_blocked`.)
    """
    rows, cols = scale.shape
    row_blocks, col_blocks = -(-rows // 128), -(-cols // 4)
    raw = scale.view(torch.uint8)
    padded = torch.zeros(row_blocks * 128, col_blocks * 4, device=scale.device, dtype=torch.uint8)
    padded[:rows, :cols] = raw
    tiles = padded.view(row_blocks, 128, col_blocks, 4).permute(0, 2, 1, 3)
    swizzled = tiles.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1, 32, 16)
    return swizzled.flatten().contiguous().view(scale.dtype)


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """A [m, k] and B [n, k] ~ N(0, 1) quantized to NVFP4: packed operands, scales, dequantized bf16."""
    gen = torch.Generator(device=device).manual_seed(seed)
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    inputs: Inputs = {}
    for name, rows in (("a", m), ("b", n)):
        x = torch.randn(rows, k, generator=gen, device=device, dtype=torch.float32)
        packed, scale, dequantized = quantize_nvfp4(x)
        inputs[f"{name}_fp4"] = packed.view(torch.float4_e2m1fn_x2)
        inputs[f"{name}_scale"] = scale
        inputs[f"{name}_scale_blocked"] = to_blocked(scale)
        inputs[f"{name}_bf16"] = dequantized.to(torch.bfloat16)
    return inputs


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Dense bf16 GEMM of the dequantized operands."""
    a, b = inputs["a_bf16"], inputs["b_bf16"]
    c = torch.empty(a.shape[0], b.shape[0], device=a.device, dtype=torch.bfloat16)

    def launch() -> torch.Tensor:
        torch.mm(a, b.t(), out=c)
        return c

    return launch


def optimized_nvfp4(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Block-scaled NVFP4 GEMM through cuBLAS (tcgen05 on sm_100): A row-major, B^T column-major."""
    a, b = inputs["a_fp4"], inputs["b_fp4"]
    scale_a, scale_b = inputs["a_scale_blocked"], inputs["b_scale_blocked"]
    c = torch.empty(a.shape[0], b.shape[0], device=a.device, dtype=torch.bfloat16)

    def launch() -> torch.Tensor:
        torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16, out=c)
        return c

    return launch


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 product of the dequantized operands (exactly the numbers both variants multiply)."""
    return inputs["a_bf16"].double() @ inputs["b_bf16"].double().t()


def flops(sizes: Mapping[str, int]) -> int:
    """2 m n k."""
    return 2 * sizes["m"] * sizes["n"] * sizes["k"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of the NVFP4 problem: A and B at 0.5 byte per value + 1 scale byte per
    16 values, C written once in bf16. (The bf16 baseline reads 2 bytes per operand value.)"""
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    return (m * k + n * k) // 2 + (m * k + n * k) // BLOCK + 2 * m * n


PAIR = KernelPair(
    name="ch09.nvfp4_gemm",
    chapter=9,
    lesson="NVFP4 block-scaled GEMMs run on Blackwell's tcgen05 tensor cores at 4x the bf16 rate "
           "with a quarter of the operand bytes; Hopper has no equivalent, so it is skipped there.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "nvfp4": optimized_nvfp4},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    size_rules=SIZE_RULES,
    tolerance=5e-3,      # same quantized operands in both, bf16 output rounding ~1.7e-3
    requires=Requirements(min_cc=(10, 0),
                          note="needs sm_100 (tcgen05 + NVFP4 block-scaled MMA); no Hopper equivalent"),
    variant_needs={"nvfp4": ("gpu",)},
    book=Book("nvfp4", None, "spec §3.1 has no bf16 -> NVFP4 ratio (its fp4 keys have other baselines)"),
)
