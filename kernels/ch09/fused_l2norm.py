"""Chapter 9: fuse a memory-bound row L2 norm so the tensor crosses DRAM once each way.

The operation, per row r of x[rows, cols] (fp32):  y[r] = x[r] / sqrt(sum_c x[r, c]^2 + eps).

Baseline (PyTorch eager, 5 kernels): square -> per-row sum -> add eps -> sqrt -> divide. Each
step is its own kernel, and each hands its result to the next through global memory:

    mul   reads x, writes x*x         2 x N x 4 bytes
    sum   reads x*x                   1 x N x 4 bytes  (+ rows x 4 written)
    add   / sqrt on rows values       negligible
    div   reads x, writes y           2 x N x 4 bytes

so about 5 x N x 4 bytes of DRAM traffic for N = rows x cols elements. At the default
8192 x 8192 (256 MiB, several times the 50-60 MB L2 of an H100/H200) none of it stays in L2.

Optimized (one kernel, CUDA C++ in fused_l2norm.cu or Triton): one block/program per row loads
the row once, reduces the sum of squares on chip (warp shuffles + shared memory), multiplies
by rsqrt(sum + eps) and stores y, so DRAM traffic drops to the minimum, 2 x N x 4 bytes.

What should move in the profile, and why:
  - DRAM bytes: ~5 x N x 4 -> 2 x N x 4 (the intermediates x*x and the norms never reach DRAM);
  - launches: 5 -> 1 (less launch overhead and no inter-kernel gaps in the nsys timeline);
  - duration: at least ~2.5x shorter, because both versions are DRAM-bandwidth bound and the
    fused one moves 2.5x fewer bytes (more in practice: the eager sum and divide kernels also
    run further below peak bandwidth than one streaming kernel does);
  - arithmetic intensity: ~0.15 -> ~0.375 FLOP/byte, still far left of the ridge point:
    fusion speeds up memory-bound work by moving fewer bytes, not by computing faster.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Callable, Mapping

import torch

from aisp_kernels import triton_helpers
from aisp_kernels.binding import CudaLibrary
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Mechanism, Requirements

try:
    import triton
    import triton.language as tl
except ImportError:  # the Triton variant then raises RequirementError when it is asked for
    triton = None
    tl = None

CUDA_SOURCE = Path(__file__).with_name("fused_l2norm.cu")
DEFAULT_SIZES = {"rows": 8192, "cols": 8192}
LIBRARY = CudaLibrary(CUDA_SOURCE, {   # built on first use, never on import
    "aisp_fused_l2norm": ((ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_float,
                           ctypes.c_void_p), ctypes.c_int),
})


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x ~ N(0, 1) of shape [rows, cols] in fp32, drawn from a generator seeded with `seed`."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(sizes["rows"], sizes["cols"], generator=gen, device=device, dtype=torch.float32)
    return {"x": x, "eps": 1e-12}


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Unfused eager pipeline; every intermediate is a full tensor in global memory."""
    x, eps = inputs["x"], inputs["eps"]
    rows = x.shape[0]
    squares = torch.empty_like(x)
    sums = torch.empty(rows, 1, device=x.device, dtype=x.dtype)
    norms = torch.empty_like(sums)
    y = torch.empty_like(x)

    def launch() -> torch.Tensor:
        torch.mul(x, x, out=squares)
        torch.sum(squares, dim=1, keepdim=True, out=sums)
        torch.add(sums, eps, out=norms)
        torch.sqrt(norms, out=norms)
        torch.div(x, norms, out=y)
        return y

    return launch


def optimized_cuda(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The fused CUDA C++ kernel (fused_l2norm.cu), called through ctypes on torch's stream."""
    x, eps = inputs["x"], float(inputs["eps"])
    if not x.is_cuda:
        raise RequirementError("ch09.fused_l2norm cuda variant needs a CUDA tensor (run on a GPU)")
    if x.dtype != torch.float32 or not x.is_contiguous():
        raise ValueError(f"x must be contiguous float32, got {x.dtype}, strides {x.stride()}")
    rows, cols = x.shape
    if max(rows, cols) >= 2**31:
        raise ValueError(f"{rows}x{cols}: rows and cols must fit the kernel's 32-bit ints")
    LIBRARY.load()                     # build here, outside the timed call
    y = torch.empty_like(x)

    def launch() -> torch.Tensor:
        # x and y are referenced here (not only their addresses) so the closure keeps them
        # alive: a caller that drops `inputs` must not leave the kernel reading freed memory.
        # The stream is read per call so the launch follows torch's current stream.
        LIBRARY.call("aisp_fused_l2norm", x.data_ptr(), y.data_ptr(), rows, cols, eps,
                     torch.cuda.current_stream().cuda_stream)
        return y

    return launch


# Plain function, jitted on first use; its tl.constexpr annotations stay unevaluated strings
# (PEP 563), so this module imports without triton.
def _l2norm_rows(x_ptr, y_ptr, cols, stride_x, stride_y, eps,
                 BLOCK: tl.constexpr, NUM_CHUNKS: tl.constexpr):
    """One program per row; a row of one chunk stays in registers between the two passes."""
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    y_row = y_ptr + row.to(tl.int64) * stride_y
    offsets = tl.arange(0, BLOCK)
    if NUM_CHUNKS == 1:
        mask = offsets < cols
        x = tl.load(x_row + offsets, mask=mask, other=0.0)
        scale = tl.rsqrt(tl.sum(x * x, axis=0) + eps)
        tl.store(y_row + offsets, x * scale, mask=mask)
    else:
        # Too long for registers: sum, then re-read (mostly from L2) and scale. NUM_CHUNKS is a
        # host-side constant, not range(0, cols, BLOCK): the triton 3.6 interpreter cannot take
        # a runtime scalar as a range bound.
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for chunk in range(NUM_CHUNKS):
            start = chunk * BLOCK
            mask = start + offsets < cols
            x = tl.load(x_row + start + offsets, mask=mask, other=0.0)
            acc += x * x
        scale = tl.rsqrt(tl.sum(acc, axis=0) + eps)
        for chunk in range(NUM_CHUNKS):
            start = chunk * BLOCK
            mask = start + offsets < cols
            x = tl.load(x_row + start + offsets, mask=mask, other=0.0)
            tl.store(y_row + start + offsets, x * scale, mask=mask)


def optimized_triton(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The same fusion in Triton (runs on CPU tensors under TRITON_INTERPRET=1)."""
    x, eps = inputs["x"], float(inputs["eps"])
    triton_helpers.require_triton(x, "ch09.fused_l2norm")
    if x.dtype != torch.float32 or x.stride(1) != 1:
        raise ValueError(f"x must be float32 with unit column stride, got {x.dtype}, {x.stride()}")
    rows, cols = x.shape
    kernel = triton_helpers.jit(_l2norm_rows, triton_helpers.interpreting())
    block, num_chunks, num_warps = triton_helpers.row_launch_config(cols)
    y = torch.empty_like(x)

    def launch() -> torch.Tensor:
        kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), eps,
                        BLOCK=block, NUM_CHUNKS=num_chunks, num_warps=num_warps)
        return y

    return launch


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 math on x's device: the answer both baseline and optimized are checked against."""
    x = inputs["x"].double()
    return x / torch.sqrt((x * x).sum(dim=1, keepdim=True) + inputs["eps"])


def flops(sizes: Mapping[str, int]) -> int:
    """FLOPs of one call: 3 per element + 2 per row.

    Per element: 1 multiply (square), 1 add (accumulate the sum), 1 multiply/divide (scale).
    Per row: 1 add (eps) and 1 sqrt/rsqrt. (The reduction has cols-1 adds per row; counting cols
    matches the fused kernel, which accumulates into a zero with one FMA per element.)
    """
    rows, cols = sizes["rows"], sizes["cols"]
    return 3 * rows * cols + 2 * rows


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes of one call: read x once and write y once, fp32."""
    return 2 * sizes["rows"] * sizes["cols"] * 4


PAIR = KernelPair(
    name="ch09.fused_l2norm",
    chapter=9,
    lesson="Fusing square/sum/sqrt/divide into one kernel cuts DRAM traffic from ~5 to 2 passes over the tensor.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "cuda": optimized_cuda, "triton": optimized_triton},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    tolerance=1e-5,
    requires=Requirements(min_cc=(9, 0)),
    variant_needs={"cuda": ("gpu", "nvcc"), "triton": ("triton",)},
    expect=(Mechanism("dram_bytes", "decrease", factor=2.0, why="~5N -> 2N x 4 bytes: the intermediates never reach DRAM"),
            Mechanism("kernels_per_call", "decrease", why="5 launches -> 1")),
    book=Book("cuda", 2.44, "spec §3.1 fused_l2norm_cuda",
              off_reason="both sides are DRAM-bound: the ratio is the bytes saved (5 -> 2 passes) and how far "
                         "below peak bandwidth the five eager kernels run on each GPU"),
)
