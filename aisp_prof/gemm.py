"""The arithmetic every GEMM pair shares, C[m, n] = A[m, k] @ B[k, n] with sizes m, n, k."""
from __future__ import annotations

from typing import Any, Mapping


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
