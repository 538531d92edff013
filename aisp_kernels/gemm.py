"""The arithmetic every GEMM pair shares, C[m, n] = A[m, k] @ B[k, n] with sizes m, n, k."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aisp_prof.errors import RequirementError

INT_MAX = 2**31 - 1          # the CUDA entry points take int sizes


def flops(sizes: Mapping[str, int]) -> int:
    """2 m n k: one multiply and one add per (i, j, l) triple."""
    return 2 * sizes["m"] * sizes["n"] * sizes["k"]


def min_bytes(sizes: Mapping[str, int], element_bytes: int) -> int:
    """Minimum DRAM bytes: read A and B once, write C once, `element_bytes` each."""
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    return element_bytes * (m * k + k * n + m * n)


def reference(inputs: Mapping[str, Any]) -> Any:
    """float64 product of inputs["a"] and inputs["b"], on their device."""
    return inputs["a"].double() @ inputs["b"].double()


def validate_sizes(sizes: Mapping[str, int], multiple: int, why: str) -> tuple[int, int, int]:
    """(m, n, k), or ValueError: all in [1, 2^31), n and k multiples of `multiple` (`why` says
    which hardware rule asks for it); m is always free."""
    m, n, k = (int(sizes[key]) for key in ("m", "n", "k"))
    if min(m, n, k) < 1 or max(m, n, k) > INT_MAX:
        raise ValueError(f"m, n, k must be in [1, 2^31), got m={m} n={n} k={k}")
    if n % multiple or k % multiple:
        raise ValueError(f"n and k must be multiples of {multiple} ({why}), got n={n} k={k}; m is free")
    return m, n, k


def check_operands(pair: str, variant: str, operands: Mapping[str, Any], dtype: Any) -> None:
    """Refuse what a hand-written CUDA GEMM cannot take, before anything is built: CPU tensors
    (RequirementError, so the runner says "needs a GPU"), then a wrong dtype, a non-contiguous
    or not 2-D tensor, or an address that is not 16-byte aligned (ValueError)."""
    if not all(t.is_cuda for t in operands.values()):
        raise RequirementError(f"{pair} {variant} variant needs CUDA tensors (run on a GPU)")
    for name, t in operands.items():
        if t.dtype != dtype or t.dim() != 2 or not t.is_contiguous() or t.data_ptr() % 16:
            raise ValueError(f"{name} must be a contiguous, 16-byte aligned 2-D {dtype} tensor; got {t.dtype}, "
                             f"shape {tuple(t.shape)}, strides {t.stride()}, address {t.data_ptr():#x}")
