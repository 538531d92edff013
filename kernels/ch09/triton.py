"""Chapter 9: write the fusion in Triton, then verify what the compiler generated.

The operation, per row r of x[rows, cols] (fp32):  y[r] = exp(x[r] - max(x[r])) / sum(exp(...)).

Baseline (the "naive softmax" of PyTorch eager, 5 kernels, each a pass through DRAM):

    amax   reads x, writes rows maxima            1 read
    sub    reads x (+ maxima), writes z           1 read, 1 write
    exp    reads z, writes z                      1 read, 1 write
    sum    reads z, writes rows sums              1 read
    div    reads z (+ sums), writes y             1 read, 1 write

so 8 x N x 4 bytes for N = rows x cols; at the default 8192 x 8192 (256 MiB per tensor, ~5x the
L2) nothing survives in L2 between kernels.

torch_softmax: PyTorch's own fused softmax kernel (one launch) for comparison: a library
kernel written by hand in CUDA C++, ~2 passes through DRAM.

triton (30 lines of Python): one program per row holds the whole row in registers (8 warps,
32 floats per thread at cols = 8192), reduces max and sum with warp shuffles + shared memory,
writes y: 2 x N x 4 bytes, the minimum. Rows longer than 16384 take a chunked online-softmax
path (running max and rescaled sum, then a second read that mostly hits L2).

The chapter's second point is to check the compiler's output rather than trust it:
`compiled_artifacts(inputs)` returns the kernel's PTX and SASS with instruction counts
(aisp_prof.parse.code.ptx), registers, spills and shared memory. What it should show for the
default size on sm_90: 16-byte global loads and stores (ld.global.v4.b32 / st.global.v4.b32 in
PTX, LDG.E.128 / STG.E.128 in SASS: 8 of each per thread for 32 floats), butterfly shuffles
(shfl.sync.bfly) for the two reductions, ex2.approx.f32 (MUFU.EX2) for exp after a multiply by
log2(e), no local memory (no ld.local/st.local, no LDL/STL, 0 spills), ~50 registers, and a
few dozen bytes of shared memory for the cross-warp reduction (Triton's metadata.shared: 32;
cuobjdump -res-usage reports SHARED:1024 for the same cubin). Without a GPU, it compiles the
same kernel ahead of time for sm_90 (tests/fixtures/ch09_ptx/ holds that output, made by
scripts/ch09_ptx_fixtures.sh).

What should move in the profile, and why:
  - launches: 5 -> 1 (torch_softmax and triton);
  - DRAM bytes: ~2.1 GB -> ~0.54 GB (4x fewer);
  - duration: ~4x shorter, both DRAM-bound (H100 ~3 TB/s: ~0.75 ms -> ~0.19 ms; H200 4.3 TB/s:
    ~0.5 ms -> ~0.13 ms); triton within ~10% of torch_softmax;
  - arithmetic intensity: ~0.16 -> ~0.6 FLOP/byte by the analytic count (ncu counts less: it
    does not count max (FMNMX) or MUFU.EX2), still memory-bound.
"""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from aisp_kernels import triton_helpers
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

# NB: this file is kernels/ch09/triton.py; discovery loads it under another module name, so the
# `import triton` below is the package, not this file (don't put kernels/ch09 on sys.path).
try:
    import triton
    import triton.language as tl
except ImportError:  # the Triton variant then raises RequirementError when it is asked for
    triton = None
    tl = None

DEFAULT_SIZES = {"rows": 8192, "cols": 8192}
AOT_TARGET_CC = 90           # what compiled_artifacts compiles for without a GPU


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x ~ N(0, 2^2) (wide enough that exp spans several orders of magnitude) of shape [rows, cols]."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(sizes["rows"], sizes["cols"], generator=gen, device=device, dtype=torch.float32)
    return {"x": x.mul_(2.0)}


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """Naive softmax in eager PyTorch: five kernels, every intermediate through global memory."""
    x = inputs["x"]
    rows = x.shape[0]
    row_max = torch.empty(rows, 1, device=x.device, dtype=x.dtype)
    row_sum = torch.empty_like(row_max)
    z = torch.empty_like(x)
    y = torch.empty_like(x)

    def launch() -> torch.Tensor:
        torch.amax(x, dim=1, keepdim=True, out=row_max)
        torch.sub(x, row_max, out=z)
        torch.exp(z, out=z)
        torch.sum(z, dim=1, keepdim=True, out=row_sum)
        torch.div(z, row_sum, out=y)
        return y

    return launch


def optimized_torch_softmax(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """PyTorch's hand-written fused softmax kernel (one launch), for comparison with Triton's."""
    x = inputs["x"]
    y = torch.empty_like(x)

    def launch() -> torch.Tensor:
        torch.softmax(x, dim=1, out=y)
        return y

    return launch


# Plain function, jitted on first use (triton_helpers.jit); the tl.constexpr annotations stay
# unevaluated strings (PEP 563), so this module imports without triton.
def _softmax_rows(x_ptr, y_ptr, cols, stride_x, stride_y,
                  BLOCK: tl.constexpr, NUM_CHUNKS: tl.constexpr):
    """One program per row."""
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    y_row = y_ptr + row.to(tl.int64) * stride_y
    offsets = tl.arange(0, BLOCK)
    if NUM_CHUNKS == 1:
        mask = offsets < cols
        x = tl.load(x_row + offsets, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        inv = 1.0 / tl.sum(e, axis=0)
        tl.store(y_row + offsets, e * inv, mask=mask)
    else:
        # Online softmax per lane: running max m and sum s rescaled whenever m grows. The first
        # chunk is full (cols > BLOCK), so every lane's m is finite after it and the masked
        # lanes of the last chunk (x = -inf) add exp(-inf) = 0 without ever forming inf - inf.
        m = tl.full([BLOCK], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK], dtype=tl.float32)
        for chunk in range(NUM_CHUNKS):
            start = chunk * BLOCK
            mask = start + offsets < cols
            x = tl.load(x_row + start + offsets, mask=mask, other=-float("inf"))
            m_new = tl.maximum(m, x)
            s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
            m = m_new
        row_max = tl.max(m, axis=0)
        inv = 1.0 / tl.sum(s * tl.exp(m - row_max), axis=0)
        for chunk in range(NUM_CHUNKS):
            start = chunk * BLOCK
            mask = start + offsets < cols
            x = tl.load(x_row + start + offsets, mask=mask, other=-float("inf"))
            tl.store(y_row + start + offsets, tl.exp(x - row_max) * inv, mask=mask)


launch_config = triton_helpers.row_launch_config   # (BLOCK, NUM_CHUNKS, num_warps) of a row


def _check_triton_input(x: torch.Tensor) -> None:
    if triton is None:
        raise RequirementError("ch09.triton triton variant needs triton (pip install triton)")
    if x.dtype != torch.float32 or x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"x must be 2-D float32 with unit column stride, got {x.dtype}, {x.stride()}")


def optimized_triton(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The fused softmax in Triton (runs on CPU tensors under TRITON_INTERPRET=1)."""
    x = inputs["x"]
    _check_triton_input(x)
    triton_helpers.require_triton(x, "ch09.triton")
    rows, cols = x.shape
    kernel = triton_helpers.jit(_softmax_rows, triton_helpers.interpreting())
    block, num_chunks, num_warps = launch_config(cols)
    y = torch.empty_like(x)

    def launch() -> torch.Tensor:
        kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0),
                        BLOCK=block, NUM_CHUNKS=num_chunks, num_warps=num_warps)
        return y

    return launch


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 softmax over each row, on x's device."""
    return torch.softmax(inputs["x"].double(), dim=1)


def flops(sizes: Mapping[str, int]) -> int:
    """5 per element (max compare, subtract, exp, add to the sum, scale by 1/sum) + 1 per row (1/sum)."""
    rows, cols = sizes["rows"], sizes["cols"]
    return 5 * rows * cols + rows


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes: read x once, write y once, fp32 (the naive baseline moves 4x this)."""
    return 2 * sizes["rows"] * sizes["cols"] * 4


# --- verify the compiler's output ------------------------------------------------------------

def compiled_artifacts(inputs: Inputs) -> dict[str, Any]:
    """The Triton kernel as compiled for the `triton` variant's launch on `inputs`, summarized.

    With x on a GPU: launches once and reads the CompiledKernel that launch used (what really
    ran, for this GPU). Otherwise: compiles ahead of time for sm_90 with the same constants and
    the 16-byte divisibility specialization a launch would get (no GPU needed; SASS and the
    register count need the cuobjdump bundled with triton). Returns the PTX and SASS text, the
    summaries of aisp_prof.parse.code.ptx, and registers / spills / shared memory.
    """
    from aisp_prof.parse.code import ptx as ptx_analysis

    x = inputs["x"]
    _check_triton_input(x)
    rows, cols = x.shape
    block, num_chunks, num_warps = launch_config(cols)
    constants = {"BLOCK": block, "NUM_CHUNKS": num_chunks}
    if x.is_cuda:
        if triton_helpers.interpreting():
            raise RequirementError("compiled_artifacts needs the Triton compiler; unset TRITON_INTERPRET")
        y = torch.empty_like(x)
        compiled = triton_helpers.jit(_softmax_rows, False)[(rows,)](x, y, cols, x.stride(0), y.stride(0),
                                                  num_warps=num_warps, **constants)
        torch.cuda.synchronize(x.device)
        source = "launch"
        registers, spills = getattr(compiled, "n_regs", None), getattr(compiled, "n_spills", None)
    else:
        compiled = _compile_ahead_of_time(x, cols, constants, num_warps)
        source = f"aot_sm{AOT_TARGET_CC}"
        registers = spills = None
    asm = compiled.asm
    ptx_text = asm["ptx"]
    sass_text = _try(lambda: asm["sass"])
    res_usage = None
    if registers is None:
        res_usage = _try(lambda: _cuobjdump_res_usage(asm["cubin"]))
        if res_usage:
            usage = next(iter(res_usage.values()))
            registers = usage.get("registers")
    metadata = compiled.metadata
    return {
        "source": source,
        "kernel": getattr(metadata, "name", "_softmax_rows"),
        "target": str(getattr(metadata, "target", "")),
        "triton_version": triton.__version__,
        "num_warps": num_warps,
        "constants": constants,
        "registers": registers,
        "spills": spills,
        "shared_bytes": getattr(metadata, "shared", None),
        "ptx": ptx_text,
        "sass": sass_text,
        "ptx_summary": ptx_analysis.summarize_ptx(ptx_text),
        "sass_summary": ptx_analysis.summarize_sass(sass_text) if sass_text else None,
        "res_usage": res_usage,
    }


def _compile_ahead_of_time(x: torch.Tensor, cols: int, constants: dict[str, int], num_warps: int) -> Any:
    if triton is None:
        raise RequirementError("compiled_artifacts needs triton (pip install triton)")
    if triton_helpers.interpreting():
        raise RequirementError("compiled_artifacts needs the Triton compiler; unset TRITON_INTERPRET")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    args = {"x_ptr": "*fp32", "y_ptr": "*fp32", "cols": cols, "stride_x": x.stride(0),
            "stride_y": cols}
    signature: dict[str, str] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    for i, (name, value) in enumerate(args.items()):
        if isinstance(value, str):          # a pointer: torch allocations are 16-byte aligned
            signature[name] = value
            attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            signature[name] = "i32" if -2**31 <= value < 2**31 else "i64"
            if value % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    signature.update({k: "constexpr" for k in constants})
    src = ASTSource(fn=triton.jit(_softmax_rows), signature=signature, constexprs=dict(constants),
                    attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", AOT_TARGET_CC, 32),
                          options={"num_warps": num_warps})


def _cuobjdump_res_usage(cubin: bytes) -> dict[str, dict[str, int]]:
    from aisp_prof.parse.code.ptx import parse_res_usage

    try:
        tool = triton.knobs.nvidia.cuobjdump.path
    except AttributeError:  # triton < 3.4
        from triton.tools.disasm import path_to_cuobjdump

        tool = path_to_cuobjdump()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        out = subprocess.run([tool, "-res-usage", str(path)], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    return parse_res_usage(out)


def _try(fn: Callable[[], Any]) -> Any:
    """fn(), or None when an optional tool (cuobjdump) is missing or fails."""
    try:
        return fn()
    except (OSError, subprocess.SubprocessError, RuntimeError, KeyError):
        return None


PAIR = KernelPair(
    name="ch09.triton",
    chapter=9,
    lesson="A row softmax fused in 30 lines of Triton replaces 5 eager kernels (4x fewer DRAM "
           "bytes); compiled_artifacts() checks its PTX/SASS for 16-byte loads, shuffles, no spills.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "torch_softmax": optimized_torch_softmax,
              "triton": optimized_triton},
    roles={"torch_softmax": "reference"},   # PyTorch's own fused kernel, "for comparison"
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    tolerance=1e-5,      # fp32 with ex2.approx and a reciprocal: ~1e-7 relative
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90) or newer"),
    variant_needs={"triton": ("triton",)},
    book=Book("triton", 1.71, "spec §3.1 triton",
              off_reason="the book's Triton pair is elementwise (0.25 FLOP/byte, 0.09 -> 0.05 ms on its B200); "
                         "this one fuses a 5-kernel eager softmax into one pass, 4x fewer DRAM bytes"),
)
