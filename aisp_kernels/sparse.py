"""2:4 structured sparsity for the structured-sparsity pairs: the pruning rule both pairs use,
and cuSPARSELt GEMMs with a tuned algorithm.

torch.sparse.to_sparse_semi_structured always runs cuSPARSELt's default algorithm (alg_id 0),
which on Hopper gains little over a dense cuBLAS GEMM (or loses, at smaller shapes), while the
algorithm cuSPARSELt's own search picks is clearly faster (kernels/ch09/README.md has the H200
probe). The search times the candidate kernels once for one operand shape, the way a deployment
would at load time, so it runs in the factory, outside the timed call.

Layout matters as much: cuSPARSELt is fast for C = W @ B with B row-major ([k, n] contiguous);
a column-major B (e.g. x.t() for F.linear's x @ W^T) is much slower (same probe). The SwiGLU
pair therefore works in feature-major layout (activations stored [features, tokens]).

torch exposes this only through private ops (torch._cslt_compress, torch._cslt_sparse_mm,
torch._cslt_sparse_mm_search); this module is the one place that calls them, and it says so
when they are missing.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from aisp_prof.errors import NoKernelError, RequirementError


def _torch() -> Any:
    import torch

    return torch


def prune_2_4(w: Any) -> Any:
    """Zero the 2 smallest |w| in every group of 4 consecutive elements along the last dimension.

    Deterministic: a stable sort keeps the lower index on ties, so the dense and the sparse
    variants (and the float64 reference) see exactly the same pruned weights. The last
    dimension must be a multiple of 4.
    """
    torch = _torch()
    if w.shape[-1] % 4:
        raise ValueError(f"2:4 pruning needs the last dimension to be a multiple of 4, got {tuple(w.shape)}")
    groups = w.reshape(-1, 4)
    keep = torch.argsort(groups.abs(), dim=1, descending=True, stable=True)[:, :2]
    mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(1, keep, True)
    return (groups * mask).reshape(w.shape)


def is_2_4_sparse(w: Any) -> bool:
    """True if every group of 4 consecutive elements along the last dimension has <= 2 nonzeros."""
    return bool(((w.reshape(-1, 4) != 0).sum(dim=1) <= 2).all())


def cusparselt_available() -> bool:
    """True when torch was built with cuSPARSELt and exposes the private 2:4 ops."""
    torch = _torch()
    backend = getattr(torch.backends, "cusparselt", None)
    return bool(backend is not None and backend.is_available()
                and all(hasattr(torch, op) for op in ("_cslt_compress", "_cslt_sparse_mm", "_cslt_sparse_mm_search")))


def search_algorithm(packed: Any, dense: Any) -> int:
    """The cuSPARSELt algorithm id its own search finds fastest for packed @ dense."""
    torch = _torch()
    with warnings.catch_warnings():
        # deprecated in favour of torch._C._cusparselt.mm_search, whose return value changed
        # shape across versions; the old op still returns the plain alg_id
        warnings.simplefilter("ignore")
        return int(torch._cslt_sparse_mm_search(packed, dense))


def tuned_sparse_matmul(w: Any, dense_example: Any) -> tuple[Callable[[Any], Any], int]:
    """Compress the 2:4-sparse W [m, k] once and search the algorithm for W @ B with B shaped and
    laid out like `dense_example` ([k, n], row-major). Returns (matmul, alg_id): matmul(B) runs
    the sparse GEMM with that algorithm and returns a new [m, n] tensor. A B whose rows are not a
    multiple of 16 bytes has no cuSPARSELt kernel (NoKernelError: the check skips the variant there,
    with the reason; H200 fuzzing met it at n = 1, 29, 2049, 8594, ...)."""
    torch = _torch()
    if w.dim() != 2 or dense_example.dim() != 2 or w.shape[1] != dense_example.shape[0]:
        raise ValueError(f"W must be [m, k] and B [k, n]; got {tuple(w.shape)} and {tuple(dense_example.shape)}")
    if dense_example.shape[1] * dense_example.element_size() % 16:
        raise NoKernelError(f"cuSPARSELt has no kernel for a row-major dense B with n={dense_example.shape[1]}: a row "
                            "must be a multiple of 16 bytes (n a multiple of 8 in fp16/bf16); "
                            "torch.sparse.to_sparse_semi_structured pads B, this tuned variant does not")
    if not w.is_cuda:
        raise RequirementError("2:4 semi-structured sparsity needs CUDA tensors (run on a GPU)")
    if not cusparselt_available():
        raise RequirementError("this torch has no cuSPARSELt (torch.backends.cusparselt); "
                               "the tuned 2:4 variant needs a CUDA build of torch with it")
    if not dense_example.is_contiguous():
        raise ValueError("B must be row-major (contiguous): cuSPARSELt's column-major path is ~2x slower")
    packed = torch._cslt_compress(w)
    alg_id = search_algorithm(packed, dense_example)

    def matmul(dense: Any) -> Any:
        # packed is referenced here, so the closure keeps the compressed weights alive
        return torch._cslt_sparse_mm(packed, dense, alg_id=alg_id)

    return matmul, alg_id
