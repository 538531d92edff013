"""The calibration probes: each one's analytic FLOPs and bytes, and the closure that launches it.

`SPECS` is plain data (importable without torch): what a probe measures and in which unit.
`build(name, ...)` needs torch and a GPU: it allocates inputs (random, never zeros: a bf16
GEMM on zeros runs ~13% faster than on real data) and returns a zero-argument launch closure,
as the kernel pairs do, so set-up stays outside the timed region.

| probe | what runs | work per call (exact) |
| --- | --- | --- |
| copy_dram | float4 copy kernel (streaming loads/stores), 1 GiB -> 1 GiB | 2 GiB at DRAM (read + write), 0 FLOPs |
| copy_dram_memcpy | torch copy_ (cudaMemcpyAsync device to device), same size | the same; timed only |
| stream_l2 | ld.global.cg over an ~8.6 MB buffer, 256 passes | 256 x buffer read at L2, 1 FADD per float |
| stream_l1 | each block re-reads 16 KiB with ld.global.ca, 4096 passes | bytes read at L1, 1 FADD per float |
| fma_fp32 | 8 independent FFMA chains per thread | 2 x 8 x iters FLOPs per thread |
| gemm_<p> | torch.matmul / torch._scaled_mm / torch._int_mm, M=N=K | 2 M N K FLOPs; A + B + C bytes |
"""
from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

CUDA_SOURCE = Path(__file__).with_name("probes.cu")


@dataclass(frozen=True)
class ProbeSpec:
    name: str
    ceiling: str            # "dram_bytes_per_s" | "l2_bytes_per_s" | "l1_bytes_per_s" | "flops_per_s"
    precision: str | None   # for FLOP/s probes: "fp32", "tensor_bf16", ...
    level: str | None       # memory level the probe's bytes are counted at
    what: str
    is_ceiling: bool = True  # False: measured and profiled, but too slow a path to bound anything
    note: str = ""


SPECS: tuple[ProbeSpec, ...] = (
    ProbeSpec("copy_dram", "dram_bytes_per_s", None, "dram", "device-to-device float4 copy kernel, bytes read + written"),
    ProbeSpec("copy_dram_memcpy", "dram_bytes_per_s", None, "dram",
              "device-to-device cudaMemcpyAsync (torch copy_), bytes read + written; no kernel for ncu to see"),
    ProbeSpec("stream_l2", "l2_bytes_per_s", None, "l2", "L2-resident read stream (ld.global.cg)"),
    ProbeSpec("stream_l1", "l1_bytes_per_s", None, "l1", "L1-resident read stream (ld.global.ca)"),
    ProbeSpec("fma_fp32", "flops_per_s", "fp32", None, "FP32 FFMA loop, 8 chains per thread"),
    ProbeSpec("gemm_bf16", "flops_per_s", "tensor_bf16", "dram", "torch.matmul bf16, fp32 accumulate"),
    ProbeSpec("gemm_fp16", "flops_per_s", "tensor_fp16", "dram", "torch.matmul fp16"),
    ProbeSpec("gemm_tf32", "flops_per_s", "tensor_tf32", "dram", "torch.matmul fp32 with TF32 allowed"),
    ProbeSpec("gemm_fp8", "flops_per_s", "tensor_fp8", "dram", "torch._scaled_mm e4m3 x e4m3 -> bf16, fast accumulate"),
    ProbeSpec("gemm_int8", "flops_per_s", "tensor_int8", "dram", "torch._int_mm int8 x int8 -> int32",
              is_ceiling=False, note="torch 2.11's _int_mm runs a CUTLASS sm80 WMMA kernel (mma.sync, no "
              "wgmma): ~128 TFLOP/s on an H200, a tenth of the int8 peak, so it is no ceiling"),
    ProbeSpec("gemm_fp64", "flops_per_s", "tensor_fp64", "dram", "torch.matmul fp64 (DMMA)"),
)
BY_NAME = {s.name: s for s in SPECS}
DEFAULT_SIZES = {"gemm": 8192, "gemm_fp64": 4096, "copy_bytes": 1 << 30, "l2_target_bytes": 8 << 20,
                 "l2_reps": 256, "l1_chunk_bytes": 16 << 10, "l1_reps": 4096, "fma_iters": 8192}

UNROLL = 4          # kUnroll in probes.cu
THREADS = 256


@dataclass
class Probe:
    """A built probe: its launch closure and its exact work per call."""

    spec: ProbeSpec
    launch: Callable[[], Any]
    flops: int
    bytes: int                  # at spec.level (for GEMMs: the minimum DRAM bytes, A + B + C once)
    working_set_bytes: int
    shape: dict[str, Any] = field(default_factory=dict)

    def analytic(self) -> dict[str, Any]:
        return {"flops": self.flops, "dram_bytes": self.bytes if self.spec.level == "dram" else None,
                "bytes": self.bytes, "level": self.spec.level, "precision": self.spec.precision,
                "working_set_bytes": self.working_set_bytes, "shape": self.shape}


_VOID, _INT, _LONG = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
_FUNCTIONS = {          # every launcher returns a cudaError and takes the stream last
    "aisp_copy_f4": ((_VOID, _VOID, _LONG, _INT, _INT, _VOID), _INT),
    "aisp_stream_l2": ((_VOID, _LONG, _INT, _VOID, _INT, _INT, _VOID), _INT),
    "aisp_stream_l1": ((_VOID, _INT, _INT, _VOID, _INT, _INT, _VOID), _INT),
    "aisp_fma_f32": ((ctypes.c_float, ctypes.c_float, _INT, _VOID, _INT, _INT, _VOID), _INT),
    "aisp_probe_chains": ((), _INT),
}


@functools.cache
def _library() -> Any:
    """probes.cu through the pairs' one ctypes binding (built on first use; GPU side only)."""
    from aisp_kernels.binding import CudaLibrary

    return CudaLibrary(CUDA_SOURCE, _FUNCTIONS, error_string="aisp_probe_error_string")


def _checked(name: str) -> Callable[..., None]:
    """`name` launched on torch's current stream; RuntimeError on a CUDA error."""
    library = _library()
    library.load()

    def call(*args: Any) -> None:
        import torch

        library.call(name, *args, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    return call


def build(name: str, sizes: dict[str, int] | None = None, seed: int = 0) -> Probe:
    """Allocate the probe's inputs on the current CUDA device and return its launch closure."""
    import torch

    spec = BY_NAME[name]
    sz = {**DEFAULT_SIZES, **(sizes or {})}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    gen = torch.Generator(device="cuda").manual_seed(seed)
    if name == "copy_dram":
        per_pass = sms * 8 * THREADS * UNROLL               # float4 per grid-wide unrolled step
        n4 = max(1, sz["copy_bytes"] // 16 // per_pass) * per_pass
        x = torch.randn(n4 * 4, device="cuda", generator=gen)
        y = torch.empty_like(x)
        call = _checked("aisp_copy_f4")
        blocks = sms * 8
        return Probe(spec, lambda: call(x.data_ptr(), y.data_ptr(), n4, blocks, THREADS), 0, 2 * 16 * n4,
                     2 * 16 * n4, {"float4": n4, "blocks": blocks, "threads": THREADS})
    if name == "copy_dram_memcpy":
        n = sz["copy_bytes"] // 4
        x = torch.randn(n, device="cuda", generator=gen)
        y = torch.empty_like(x)
        return Probe(spec, lambda: y.copy_(x), 0, 2 * 4 * n, 2 * 4 * n, {"float": n})
    if name == "stream_l2":
        blocks = sms * 4
        per_pass = blocks * THREADS * UNROLL
        n4 = max(1, sz["l2_target_bytes"] // 16 // per_pass) * per_pass
        reps = sz["l2_reps"]
        x = torch.randn(n4 * 4, device="cuda", generator=gen)
        out = torch.empty(blocks * THREADS, device="cuda")
        call = _checked("aisp_stream_l2")
        return Probe(spec, lambda: call(x.data_ptr(), n4, reps, out.data_ptr(), blocks, THREADS),
                     n4 * 4 * reps, 16 * n4 * reps, 16 * n4, {"float4": n4, "reps": reps, "blocks": blocks})
    if name == "stream_l1":
        blocks = sms * 4
        chunk4 = max(THREADS * UNROLL, sz["l1_chunk_bytes"] // 16 // (THREADS * UNROLL) * THREADS * UNROLL)
        reps = sz["l1_reps"]
        x = torch.randn(blocks * chunk4 * 4, device="cuda", generator=gen)
        out = torch.empty(blocks * THREADS, device="cuda")
        call = _checked("aisp_stream_l1")
        return Probe(spec, lambda: call(x.data_ptr(), chunk4, reps, out.data_ptr(), blocks, THREADS),
                     blocks * chunk4 * 4 * reps, 16 * blocks * chunk4 * reps, 16 * blocks * chunk4,
                     {"chunk_float4": chunk4, "reps": reps, "blocks": blocks})
    if name == "fma_fp32":
        chains = _library().fn("aisp_probe_chains")()
        blocks, iters = sms * 8, sz["fma_iters"]
        out = torch.empty(blocks * THREADS, device="cuda")
        call = _checked("aisp_fma_f32")
        threads_total = blocks * THREADS
        return Probe(spec, lambda: call(0.999, 1e-3, iters, out.data_ptr(), blocks, THREADS),
                     2 * chains * iters * threads_total, 4 * threads_total, 4 * threads_total,
                     {"chains": chains, "iters": iters, "threads": threads_total})
    if name.startswith("gemm_"):
        return _gemm(spec, sz, gen)
    raise KeyError(name)


def _gemm(spec: ProbeSpec, sz: dict[str, int], gen: Any) -> Probe:
    import torch

    prec = spec.precision.removeprefix("tensor_")
    n = sz["gemm_fp64"] if prec == "fp64" else sz["gemm"]
    flops = 2 * n * n * n
    shape = {"m": n, "n": n, "k": n}
    if prec in ("bf16", "fp16", "fp64"):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp64": torch.float64}[prec]
        a = torch.randn(n, n, device="cuda", generator=gen, dtype=dtype)
        b = torch.randn(n, n, device="cuda", generator=gen, dtype=dtype)
        out = torch.empty(n, n, device="cuda", dtype=dtype)
        size = a.element_size()
        return Probe(spec, lambda: torch.matmul(a, b, out=out), flops, 3 * n * n * size, 3 * n * n * size,
                     {**shape, "dtype": str(dtype)})
    if prec == "tf32":
        a = torch.randn(n, n, device="cuda", generator=gen)
        b = torch.randn(n, n, device="cuda", generator=gen)
        out = torch.empty(n, n, device="cuda")

        def tf32() -> Any:
            before = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                return torch.matmul(a, b, out=out)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = before
        return Probe(spec, tf32, flops, 3 * n * n * 4, 3 * n * n * 4, {**shape, "dtype": "float32 (tf32)"})
    if prec == "fp8":
        a = torch.randn(n, n, device="cuda", generator=gen).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda", generator=gen).to(torch.float8_e4m3fn).t()   # column-major
        one = torch.ones((), device="cuda", dtype=torch.float32)

        def fp8() -> Any:
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)
        return Probe(spec, fp8, flops, 2 * n * n + 2 * n * n, 2 * n * n + 2 * n * n,
                     {**shape, "dtype": "float8_e4m3fn -> bfloat16", "fast_accum": True})
    if prec == "int8":
        a = torch.randint(-128, 128, (n, n), device="cuda", generator=gen, dtype=torch.int8)
        b = torch.randint(-128, 128, (n, n), device="cuda", generator=gen, dtype=torch.int8)
        return Probe(spec, lambda: torch._int_mm(a, b), flops, 2 * n * n + 4 * n * n, 2 * n * n + 4 * n * n,
                     {**shape, "dtype": "int8 -> int32"})
    raise KeyError(spec.name)
