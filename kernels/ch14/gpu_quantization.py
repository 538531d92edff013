"""Chapter 14: quantize on the GPU instead of round-tripping each chunk through the CPU.

The book calls this pair `nccl_quantization`; it uses no NCCL and no collective (a multi-GPU
version, quantize-then-all-gather, is issue 15), so it is named for what it does. The operation,
per row r of x [rows, cols] fp32 (symmetric abs-max int8 quantization, then dequantization):

    amax_r = max(max_j |x_rj|, 1e-6)
    q_rj   = clamp(round(x_rj * (127 / amax_r)), -127, 127)        int8
    y_rj   = q_rj * (amax_r / 127)                                  fp32, the output

What the book's code really does (`ch14/{baseline,optimized}_nccl_quantization.py`, 16 x 16384
fp32, 100 timed calls): the baseline loops over the 16 rows; per row it copies the row into a
pinned host buffer (a synchronous device-to-host copy), runs ~12 CPU torch ops (abs, amax,
clamp, the scale, multiply, round, clamp, int8 cast, dequantize, a `float(sum)`), and copies the
dequantized row back into the same GPU tensor (a synchronous host-to-device copy): 16 D2H + 16 H2D
copies and 32 waits per call. Because it writes in place, every call after the first quantizes
the previous call's output. The optimized side runs the same math as ~11 eager kernels over all
rows at once on a side CUDA stream that the current stream then waits on; the side stream never
waits for the current one, so it races with whatever wrote x, and it overlaps with nothing.
It dequantizes as q / scale, the baseline as q * (amax / 127).

This port changes: the output goes to its own tensor (x is never overwritten, so every call does
the same work); all variants use one rule (q * (amax / 127)) and one rounding (torch.round: ties
to even, IEEE roundTiesToEven, on the CPU and on CUDA); the GPU variants run on the current stream
(the side stream bought nothing). Variants:
  baseline      the book's host round trip, row by row (pinned buffers, synchronous copies).
  gpu           the book's optimized ops, eager: abs, amax, clamp_, div, mul, round, clamp_, int8
                copy, div, float copy, mul_: 11 kernels over 1 MB tensors.
  gpu_compiled  the same function under torch.compile(fullgraph=True, dynamic=False, default
                mode: no CUDA graphs, no autotuning): Inductor fuses the row amax and everything
                after it into 1-3 Triton kernels (one per row block, or a split reduction first)
                that write q, the scales and y straight into the factory's buffers. It asks
                Inductor for IEEE division (`eager_numerics.division_rounding`): Triton's own fp32
                `/` is div.full.f32, within 2 ulp, and a scale one ulp under 2^-k moves the .5
                ties of the exact check below (eager CUDA divides with IEEE rounding). The factory
                compiles and warms it (2 calls; a few seconds cold); `launch.compiled`,
                `launch.compile_options`, `launch.example_args` and `launch.compile_seconds` are
                there for the tool.
The GPU variants also leave q (int8) and the per-row dequantization scales on the device, the
payload a collective would send; the baseline keeps them on the host, as the book does.

Predicted profile (what must move in nsys / ncu):
  - copies and syncs: baseline 16 `[CUDA memcpy Device-to-Host]` + 16 `[CUDA memcpy
    Host-to-Device]` rows of cols x 4 B = 64 KB each, pinned host memory, 32 synchronous copies
    (each a stream synchronize) and 0 kernels; gpu and gpu_compiled: 0 copies, 0 syncs;
  - kernels per call: 0 -> 11 (gpu) -> 1-3 (gpu_compiled);
  - DRAM bytes: ~9 MB minimum (x read, q, y, scales written: 9 B per element); the eager chain
    moves ~54 B per element (14 MB) but every 1 MB intermediate stays in the 50 MB L2, so DRAM
    traffic stays near the minimum: no variant is bandwidth-bound;
  - time: the baseline pays ~2 x 16 PCIe round trips (~10-20 us each) plus ~16 x 12 CPU ops:
    ~1-2 ms; gpu is bounded by the CPU issuing 11 launches (~30-60 us); gpu_compiled by one
    compiled call's guards and launches (~15-25 us). Expect gpu ~20-50x over the baseline; the
    book's B200 ratio is 11.334x.

FLOPs: 4 per element (the |x| compare for amax, the scale, the round, the rescale).
Minimum DRAM bytes: x read (4 B), q (1 B) and y (4 B) written per element, plus the scales.

Correctness, exact: make_inputs draws each row on a 1/8 grid scaled by a power of two,
x_rj = (m_rj / 8) * 2^k_r with integer |m_rj| <= 1016 and one |m| = 1016 per row, so amax_r = 127 *
2^k_r, 127 / amax_r = 2^-k_r and amax_r / 127 = 2^k_r are exact in fp32, x * scale = m / 8 is exact,
and so is y = q * 2^k_r. The float64 reference and every variant then agree bit for bit: tolerance
0. One element in 8 sits exactly on a .5 tie, so rounding half away from zero (C's roundf,
floor(v + 0.5)) fails the check, and so does a global instead of a per-row scale (k_r runs over
-3..3). The sanitizer size (small_sizes) is 5 x 1000.
"""
from __future__ import annotations

import time
from typing import Callable, Mapping

import torch

from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

NAME = "ch14.gpu_quantization"
DEFAULT_SIZES = {"rows": 16, "cols": 16384}
SMALL_SIZES = {"rows": 5, "cols": 1000}
QMAX = 127.0
AMAX_FLOOR = 1e-6          # the book's clamp: an all-zero row gets scale 127e6, not inf
GRID = 8                   # values on a 1/8 grid: exact products, and ties at .5
# Triton lowers fp32 `/` to div.full.f32 (<= 2 ulp): 127 / amax could land an ulp under 2^-k and
# flip the ties; eager CUDA divides with IEEE rounding, and so does Inductor with this option
COMPILE_OPTIONS = {"fullgraph": True, "dynamic": False, "options": {"eager_numerics.division_rounding": True}}


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x [rows, cols] fp32: row r is (m / 8) * 2^k_r, integer |m| <= 1016 with one |m| = 1016."""
    rows, cols = sizes["rows"], sizes["cols"]
    if rows < 1 or cols < 1:
        raise ValueError(f"rows and cols must be >= 1, got {dict(sizes)}")
    gen = torch.Generator(device=device).manual_seed(seed)
    z = torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float64)
    steps = QMAX * GRID
    m = torch.round(z * (steps / z.abs().amax(dim=1, keepdim=True)))          # max |m| = 1016 exactly
    k = (torch.arange(rows, device=device, dtype=torch.float64) % 7 - 3).unsqueeze(1)
    return {"x": (m / GRID * torch.exp2(k)).float()}


def _quantize_into(x: torch.Tensor, q: torch.Tensor, dscale: torch.Tensor, y: torch.Tensor) -> None:
    """The math as one function of whole tensors (what gpu_compiled compiles)."""
    amax = x.abs().amax(dim=1, keepdim=True).clamp(min=AMAX_FLOOR)
    q_int = torch.clamp(torch.round(x * (QMAX / amax)), -QMAX, QMAX).to(torch.int8)
    q.copy_(q_int)
    dscale.copy_(amax / QMAX)
    y.copy_(q_int.float() * (amax / QMAX))


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The book's host round trip: per row, D2H copy, quantize and dequantize on the CPU, H2D copy."""
    x = inputs["x"]
    rows, cols = x.shape
    pinned = x.is_cuda
    host = {name: torch.empty(cols, dtype=torch.float32, pin_memory=pinned) for name in ("x", "abs", "qf", "y")}
    host_q = torch.empty(cols, dtype=torch.int8, pin_memory=pinned)
    amax, scale, dscale = (torch.empty((), dtype=torch.float32) for _ in range(3))
    y = torch.empty_like(x)

    def launch() -> torch.Tensor:
        for r in range(rows):
            host["x"].copy_(x[r])                                   # D2H, synchronous
            torch.abs(host["x"], out=host["abs"])
            torch.amax(host["abs"], dim=0, out=amax)
            amax.clamp_(min=AMAX_FLOOR)
            torch.div(QMAX, amax, out=scale)
            torch.mul(host["x"], scale, out=host["qf"])
            torch.round(host["qf"], out=host["qf"])
            host["qf"].clamp_(-QMAX, QMAX)
            host_q.copy_(host["qf"])
            torch.div(amax, QMAX, out=dscale)
            host["y"].copy_(host_q)
            host["y"].mul_(dscale)
            y[r].copy_(host["y"])                                   # H2D, synchronous
        return y

    return launch


def _device_buffers(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows = x.shape[0]
    return (torch.empty_like(x, dtype=torch.int8),
            torch.empty(rows, 1, device=x.device, dtype=torch.float32), torch.empty_like(x))


def optimized_gpu(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The book's optimized ops, eager, on the current stream: 11 kernels, no copies, no syncs."""
    x = inputs["x"]
    q, dscale, y = _device_buffers(x)
    absx, qf = torch.empty_like(x), torch.empty_like(x)
    amax, scale = torch.empty_like(dscale), torch.empty_like(dscale)

    def launch() -> torch.Tensor:
        torch.abs(x, out=absx)
        torch.amax(absx, dim=1, keepdim=True, out=amax)
        amax.clamp_(min=AMAX_FLOOR)
        torch.div(QMAX, amax, out=scale)
        torch.mul(x, scale, out=qf)
        torch.round(qf, out=qf)
        qf.clamp_(-QMAX, QMAX)
        q.copy_(qf)
        torch.div(amax, QMAX, out=dscale)
        y.copy_(q)
        y.mul_(dscale)
        return y

    launch.quantized, launch.scales = q, dscale
    return launch


def optimized_gpu_compiled(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The same math compiled by Inductor into 1-3 Triton kernels (compiled and warmed here)."""
    x = inputs["x"]
    if not x.is_cuda:
        raise RequirementError(f"{NAME} gpu_compiled needs CUDA tensors: Inductor generates Triton kernels")
    q, dscale, y = _device_buffers(x)
    compiled = torch.compile(_quantize_into, **COMPILE_OPTIONS)

    def launch() -> torch.Tensor:
        compiled(x, q, dscale, y)
        return y

    start = time.perf_counter()
    launch()
    launch()
    torch.cuda.synchronize(x.device)
    launch.compile_seconds = time.perf_counter() - start
    launch.compiled, launch.compile_options = compiled, dict(COMPILE_OPTIONS)
    launch.example_args = ((x, q, dscale, y),)
    launch.quantized, launch.scales = q, dscale
    return launch


def reference(inputs: Inputs) -> torch.Tensor:
    """The same quantize/dequantize in float64 (exactly equal to fp32 on make_inputs' grid)."""
    x = inputs["x"].double()
    amax = x.abs().amax(dim=1, keepdim=True).clamp(min=AMAX_FLOOR)
    q = torch.clamp(torch.round(x * (QMAX / amax)), -QMAX, QMAX)
    return q * (amax / QMAX)


def flops(sizes: Mapping[str, int]) -> int:
    """4 per element: the |x| compare for amax, the scale, the round, the rescale."""
    return 4 * sizes["rows"] * sizes["cols"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes: x read (4 B), q (1 B) and y (4 B) written per element, fp32 scales."""
    return 9 * sizes["rows"] * sizes["cols"] + 4 * sizes["rows"]


def pcie_bytes(sizes: Mapping[str, int]) -> int:
    """What the baseline moves over PCIe per call: each row down and its dequantized copy up."""
    return 8 * sizes["rows"] * sizes["cols"]


PAIR = KernelPair(
    name=NAME,
    chapter=14,
    lesson="Quantizing row by row on the CPU costs 32 synchronous PCIe copies per call; the same "
           "int8 abs-max math on the GPU needs no copy and no sync (11 eager kernels), and "
           "torch.compile fuses it into 1-3.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "gpu": optimized_gpu, "gpu_compiled": optimized_gpu_compiled},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    tolerance=0.0,       # exact: power-of-two scales on a 1/8 grid (see docstring)
    timer="latency",     # the baseline waits for its copies: one call, host and GPU, as the book times it
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90) or newer"),
    variant_needs={"gpu_compiled": ("gpu", "triton")},
    book=Book("gpu", 11.334, "spec §3.3 nccl_quantization",
              off_reason="the baseline's time is the host's (16 row round trips over PCIe, ~190 CPU ops per "
                         "call), so the ratio measures the host CPU and PCIe latency, not the GPU"),
)
