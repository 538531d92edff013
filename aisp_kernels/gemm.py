"""The arithmetic every GEMM pair shares, C[m, n] = A[m, k] @ B[k, n] with sizes m, n, k."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aisp_prof.errors import RequirementError
from aisp_prof.pairs.size_rules import SizeRule

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


def size_rules(multiple: int, why: str) -> tuple[SizeRule, ...]:
    """What `validate_sizes(sizes, multiple, why)` holds a pair to, as its declared size rules
    (pairs.size_rules): checked before anything runs, shown by `list --json`, fuzzed inside."""
    return (SizeRule("m", maximum=INT_MAX),
            *(SizeRule(key, step=multiple, minimum=multiple, maximum=INT_MAX // multiple * multiple, why=why)
              for key in ("n", "k")))


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


# -- the K-major TN GEMM the wgmma pairs share: C[m, n] = A[m, k] @ B[n, k]^T -----------------

def kmajor_inputs(m: int, n: int, k: int, device: str, seed: int, dtype: Any) -> dict[str, Any]:
    """`a` [m, k] ~ N(0, 1/k) and `b` [n, k] ~ N(0, 1), drawn in fp32 then rounded to `dtype`,
    contiguous (both K-major): C ~ N(0, 1), so one tolerance fits every size."""
    import math

    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(m, k, generator=gen, device=device, dtype=torch.float32) / math.sqrt(k)
    b = torch.randn(n, k, generator=gen, device=device, dtype=torch.float32)
    return {"a": a.to(dtype), "b": b.to(dtype)}


def kmajor_operands(pair: str, variant: str, inputs: Mapping[str, Any], dtype: Any,
                    validate: Callable[[Mapping[str, int]], Any]) -> tuple[Any, Any, int, int, int]:
    """(a, b, m, n, k) of K-major operands, or why not (`check_operands`, then a k that differs,
    then the pair's own size rule `validate`)."""
    a, b = inputs["a"], inputs["b"]
    check_operands(pair, variant, {"a": a, "b": b}, dtype)      # CPU: RequirementError first
    (m, k), (n, k2) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"a is {m}x{k} and b is {n}x{k2}: both must be K-major with the same k")
    validate({"m": m, "n": n, "k": k})
    return a, b, m, n, k


def reference_tn(inputs: Mapping[str, Any]) -> Any:
    """float64 A @ B^T of the rounded operands, on their device."""
    return inputs["a"].double() @ inputs["b"].double().t()


def cublas_tn(operands: Callable[[Mapping[str, Any], str], tuple]) -> Callable[[Mapping[str, Any]], Callable[[], Any]]:
    """The `cublas` variant of a K-major pair: torch.mm(a, b.t(), out=c), cuBLAS's TN GEMM on the
    same operands (`operands(inputs, variant)` checks them), C preallocated in their dtype."""

    def cublas(inputs: Mapping[str, Any]) -> Callable[[], Any]:
        """torch.mm(a, b.t(), out=c): cuBLAS's TN GEMM on the same operands."""
        import torch

        a, b, m, n, _ = operands(inputs, "cublas")
        c = torch.empty(m, n, device=a.device, dtype=a.dtype)
        bt = b.t()

        def launch() -> Any:
            torch.mm(a, bt, out=c)
            return c

        return launch

    return cublas
