"""What every Triton variant of a pair needs, in one place.

- `require_triton`: a clear RequirementError when Triton is missing, when a CPU tensor is given
  without the interpreter, or when TRITON_INTERPRET=1 was set too late (triton jits its own
  library, tl.sum and friends, at import, so the flag must be set before the first import).
- `jit`: triton.jit picks compiler or interpreter when it decorates, so kernels are decorated
  on first use, once per mode, never at import.
- `row_launch_config`: the one-program-per-row shape the row kernels share.
"""
from __future__ import annotations

import functools
import os
from typing import Any, Callable

from aisp_prof.errors import RequirementError

try:
    import triton
    import triton.language as tl
except ImportError:  # the pairs still import; their Triton variants say what is missing
    triton = None
    tl = None

MAX_ROW_BLOCK = 16384   # widest row one program holds in registers; longer rows loop in chunks


def interpreting() -> bool:
    """Whether Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1)."""
    knobs = getattr(triton, "knobs", None)
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def require_triton(x: Any, pair: str) -> None:
    """Raise RequirementError unless a Triton kernel can run on tensor `x` here."""
    try:
        import triton as _  # noqa: F401  (asked now, not at import: it may have gone since)
    except ImportError:
        raise RequirementError(f"{pair} triton variant needs triton (pip install triton)") from None
    if not x.is_cuda and not interpreting():
        raise RequirementError(f"{pair} triton variant needs a CUDA tensor, "
                               "or TRITON_INTERPRET=1 for CPU tensors")
    if interpreting() and type(tl.sum).__name__ != "InterpretedFunction":
        raise RequirementError("TRITON_INTERPRET=1 was set after triton was imported; "
                               "set it in the environment before starting Python")


@functools.cache
def jit(fn: Callable[..., Any], interpret: bool) -> Any:
    """triton.jit(fn), made once per (function, interpreter mode)."""
    return triton.jit(fn)


def row_launch_config(cols: int) -> tuple[int, int, int]:
    """(BLOCK, NUM_CHUNKS, num_warps): 8 warps and 32 floats per thread for an 8192-wide row."""
    block = triton.next_power_of_2(max(cols, 1))
    if block > MAX_ROW_BLOCK:
        block = 4096
    num_warps = max(1, min(16, block // 1024))
    return block, triton.cdiv(max(cols, 1), block), num_warps
