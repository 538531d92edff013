"""Chapter 9: CUTLASS-driven matmuls, the CUDA-core (SIMT) path against Hopper's tensor-op path.

The operation: D[m, n] = A[m, k] @ B[k, n], row-major (default m = n = 4096, k = 8192, the
book's `--sizes 4096 4096 8192`): 2 m n k = 275 GFLOP on at least 2 (m k + k n + m n) = 168 MB
(bf16) of DRAM traffic, ~1600 FLOP/B: compute bound on either path, so the time is set by which
math units do the multiply-adds and how well the kernel feeds them.

  baseline       `simt`: CUTLASS 2.x `cutlass::gemm::device::Gemm<float, RowMajor, ...,
                 OpClassSimt, Sm80>` (cutlass_gemm.cu, aisp_cutlass_simt): the default SIMT
                 configuration, 128x128x8 threadblock tiles, 32x64x8 warp tiles, a two-stage
                 register-staged pipeline, fp32 FFMA on the CUDA cores (~67 TFLOP/s datasheet
                 peak at boost clock).
  tensorop_sm90  CUTLASS 3.x Hopper GEMM assembled by the CollectiveBuilder (aisp_cutlass_tensorop,
                 configuration 0): bf16 A and B, fp32 accumulation, bf16 D;
                 `KernelTmaWarpSpecializedCooperative` with 128x256x64 tiles on 2x1x1 thread-block
                 clusters (A tiles multicast by TMA across the cluster), a TMA producer warp
                 filling a shared-memory ring as deep as the carve-out allows, two consumer
                 warpgroups issuing wgmma (HGMMA in SASS) on halves of the tile, a persistent tile
                 scheduler, a TMA store epilogue. Built for sm_90a (wgmma is arch-specific).
                 Other configurations (128x128x64 cooperative, 64x256x64 ping-pong) are compiled in
                 too; AISP_CUTLASS_CONFIG=N makes this variant run configuration N.
  cublas         torch.mm on the same bf16 operands: cuBLAS's Hopper kernel, the bar the CUTLASS
                 tensor-op kernel is held to (>= 85% of it).

What should move in the profile, and why:
  - SASS and pipes: FFMA only (no HMMA/HGMMA) in the SIMT kernel; HGMMA fed by UTMALDG (TMA) in
    the tensor-op kernel, the tensor pipe busy instead of the FMA pipe;
  - time: an order of magnitude, the SIMT kernel bounded by ~67 TFLOP/s of FFMA and the tensor-op
    one by the bf16 tensor roof; the CUTLASS kernel within reach of cuBLAS (>= 85% of it);
  - DRAM bytes: the fp32 SIMT operands are twice the bf16 ones; both paths compute bound;
  - what is left between CUTLASS and cuBLAS: barrier stalls and DRAM traffic from the order in
    which the persistent scheduler visits tiles (rasterization/swizzle) and the epilogue, not the
    mainloop.
Measured times, the configuration sweep and the ncu comparison (H200, H100):
kernels/ch09/README.md.

The lesson is the one the book draws: the same library, the same problem, and a change of
operator class (OpClassSimt -> OpClassTensorOp, plus the Hopper-only TMA/wgmma mainloop) moves
the GEMM from the FFMA pipe to the tensor cores, an order of magnitude.

Correctness: A ~ N(0, 1/k), B ~ N(0, 1), both rounded to bf16-representable values, so the fp32
SIMT kernel and the bf16 kernels multiply exactly the same numbers; the float64 reference is their
exact product. SIMT accumulates in fp32 (~1e-6 relative); the bf16 variants' output rounding
alone is ~2^-9 / sqrt(3) ~ 1.1e-3 relative (Frobenius), so the tolerance is 5e-3.

Sizes: m is free; n and k must be multiples of 8 (16-byte rows for TMA). The CUTLASS headers
come from $AISP_CUTLASS_INCLUDE, else the `nvidia-cutlass` package, else `.cutlass/include` at the
repository root (aisp_prof.tools.find_cutlass_include).
"""
from __future__ import annotations

import ctypes
import math
import os
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels import gemm
from aisp_kernels.binding import CudaLibrary
from aisp_prof import tools
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

CUDA_SOURCE = Path(__file__).with_name("cutlass_gemm.cu")
DEFAULT_SIZES = {"m": 4096, "n": 4096, "k": 8192}
CONFIG_ENV = "AISP_CUTLASS_CONFIG"
ARCH = "sm_90a"                                   # wgmma needs the arch-specific target
EXTRA_FLAGS = ("--expt-relaxed-constexpr",)
_GEMM_ARGS = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int)


def validate_sizes(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(m, n, k), or ValueError: all >= 1 and < 2^31, n and k multiples of 8."""
    return gemm.validate_sizes(sizes, 8, "16-byte bf16 rows for TMA")


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """A ~ N(0, 1/k) [m, k], B ~ N(0, 1) [k, n], rounded to bf16: `a`, `b` in fp32 (for SIMT) and
    `a16`, `b16` the same values in bf16, all contiguous."""
    m, n, k = validate_sizes(sizes)
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(m, k, generator=gen, device=device, dtype=torch.float32) / math.sqrt(k)
    b = torch.randn(k, n, generator=gen, device=device, dtype=torch.float32)
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
    return {"a": a16.float(), "b": b16.float(), "a16": a16, "b16": b16}


# --- the CUTLASS kernels, through ctypes ----------------------------------------------------

def cutlass_include() -> Path:
    """The CUTLASS include directory; RequirementError (a ToolNotFoundError) if there is none."""
    return tools.find_cutlass_include()


# Built on first use (1-3 minutes of nvcc; 3 parts at once on 8+ cores), for sm_90a, with the headers found then.
LIBRARY = CudaLibrary(CUDA_SOURCE, {
    "aisp_cutlass_simt": ((*_GEMM_ARGS, ctypes.c_void_p), ctypes.c_int),
    "aisp_cutlass_tensorop": ((ctypes.c_int, *_GEMM_ARGS, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p),
                              ctypes.c_int),
    "aisp_cutlass_tensorop_workspace_size": ((ctypes.c_int,) * 4, ctypes.c_longlong),
    "aisp_cutlass_tensorop_config_count": ((), ctypes.c_int),
    "aisp_cutlass_tensorop_config_name": ((ctypes.c_int,), ctypes.c_char_p),
}, arch=ARCH, include_dirs=(tools.cutlass_include_dirs,), extra_flags=EXTRA_FLAGS, parts=3)


def config_names() -> list[str]:
    """The tensor-op configurations compiled into the library; index 0 is `tensorop_sm90`."""
    count = LIBRARY.fn("aisp_cutlass_tensorop_config_count")()
    return [LIBRARY.fn("aisp_cutlass_tensorop_config_name")(i).decode() for i in range(count)]


def _operands(inputs: Inputs, variant: str, key_a: str, key_b: str,
              dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, int, int, int]:
    a, b = inputs[key_a], inputs[key_b]
    gemm.check_operands("ch09.cutlass_gemm", variant, {key_a: a, key_b: b}, dtype)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: {key_a} is {m}x{k}, {key_b} is {k2}x{n}")
    validate_sizes({"m": m, "n": n, "k": k})
    return a, b, m, n, k


def simt(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """CUTLASS 2.x OpClassSimt fp32 GEMM into a preallocated fp32 D, on torch's stream."""
    a, b, m, n, k = _operands(inputs, "simt", "a", "b", torch.float32)   # CPU: RequirementError first
    LIBRARY.load()                     # build here, outside the timed call
    d = torch.empty(m, n, device=a.device, dtype=torch.float32)

    def launch() -> torch.Tensor:
        # a, b, d are referenced here (not only their addresses) so the closure keeps them alive.
        LIBRARY.call("aisp_cutlass_simt", a.data_ptr(), b.data_ptr(), d.data_ptr(), m, n, k,
                     torch.cuda.current_stream().cuda_stream)
        return d

    return launch


def tensorop_config(config: int) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    """A factory running tensor-op configuration `config` (see config_names())."""
    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        a, b, m, n, k = _operands(inputs, "tensorop_sm90", "a16", "b16", torch.bfloat16)
        count = LIBRARY.fn("aisp_cutlass_tensorop_config_count")()    # builds, outside the timed call
        if not 0 <= config < count:
            raise ValueError(f"tensor-op configuration {config} does not exist (0..{count - 1})")
        d = torch.empty(m, n, device=a.device, dtype=torch.bfloat16)
        ws_bytes = LIBRARY.fn("aisp_cutlass_tensorop_workspace_size")(config, m, n, k)
        if ws_bytes < 0:
            raise ValueError(f"tensor-op configuration {config}: no workspace size for {m}x{n}x{k}")
        workspace = torch.empty(max(ws_bytes, 1), device=a.device, dtype=torch.uint8)
        label = f"aisp_cutlass_tensorop (configuration {config})"

        def launch() -> torch.Tensor:
            LIBRARY.call("aisp_cutlass_tensorop", config, a.data_ptr(), b.data_ptr(), d.data_ptr(), m, n, k,
                         workspace.data_ptr(), ws_bytes, torch.cuda.current_stream().cuda_stream, label=label)
            return d

        return launch

    factory.__name__ = f"tensorop_config{config}"
    return factory


def tensorop_sm90(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """CUTLASS 3.x Hopper TMA + wgmma GEMM (configuration $AISP_CUTLASS_CONFIG, default 0), bf16."""
    config = int(os.environ.get(CONFIG_ENV, "0") or 0)
    return tensorop_config(config)(inputs)


def cublas(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """torch.mm(a16, b16, out=d): cuBLAS's Hopper bf16 GEMM, fp32 accumulation, bf16 out."""
    a, b, m, n, _ = _operands(inputs, "cublas", "a16", "b16", torch.bfloat16)
    d = torch.empty(m, n, device=a.device, dtype=torch.bfloat16)

    def launch() -> torch.Tensor:
        torch.mm(a, b, out=d)
        return d

    return launch


reference = gemm.reference   # float64 GEMM of the bf16-representable operands.


flops = gemm.flops           # 2 m n k


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of the bf16 variants: read A and B once, write D once, 2 bytes each
    (the fp32 SIMT baseline moves twice that)."""
    return gemm.min_bytes(sizes, 2)



SIZE_RULES = gemm.size_rules(8, "16-byte bf16 rows for TMA")


PAIR = KernelPair(
    name="ch09.cutlass_gemm",
    chapter=9,
    lesson="CUTLASS SIMT (fp32 FFMA on CUDA cores) against a CUTLASS 3.x Hopper tensor-op GEMM "
           "(CollectiveBuilder: TMA + wgmma, warp-specialized cooperative, bf16): same library, "
           "other operator class, an order of magnitude.",
    make_inputs=make_inputs,
    variants={"baseline": simt, "tensorop_sm90": tensorop_sm90, "cublas": cublas},
    roles={"cublas": "reference"},   # the library the CUTLASS kernel is measured against, not the lesson
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    size_rules=SIZE_RULES,
    tolerance=5e-3,      # bf16 output rounding ~1.1e-3; SIMT fp32 ~1e-6
    # the SIMT baseline accumulates k = 8192 products of bf16-exact operands with fp32 FFMA (u = 2^-24),
    # partial sums averaging ~0.53 |c|: rounding to nearest gives ~u sqrt(k / 6) = 2.2e-6, and even
    # every add erring half an ulp the same way stays under u k x 0.53 = 2.6e-4. 5e-4 is ~2x that
    # and ~2x under the bf16 output rounding (1.1e-3) that an fp32 kernel writing bf16 would show.
    variant_tolerance={"baseline": 5e-4},
    requires=Requirements(min_cc=(9, 0), needs=("nvcc",),
                          note="Hopper (sm_90a): CUTLASS 3.x TMA/wgmma kernels; builds CUDA C++"),
    variant_needs={"baseline": ("gpu", "nvcc", "cutlass"), "tensorop_sm90": ("gpu", "nvcc", "cutlass"),
                   "cublas": ("gpu",)},
    book=Book("tensorop_sm90", 11.894, "spec §3.1 cutlass_gemm_fp16_cuda (16-bit tensor op; cutlass_gemm_cuda: 3.955x)",
              off_reason="another size and baseline than the book's (0.86 -> 0.072 ms on its B200): here "
                         "fp32 SIMT against a bf16 wgmma kernel at 4096 x 4096 x 8192, an operator-class change"),
)
