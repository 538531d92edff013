"""torch settings the pairs change for one call and must give back."""
from __future__ import annotations

import contextlib
from typing import Iterator


@contextlib.contextmanager
def fp32_matmul_precision(mode: str) -> Iterator[None]:
    """Set cuBLAS's fp32 matmul precision ("ieee" or "tf32") for one block, then restore it.

    torch >= 2.9 has the per-backend `fp32_precision` (mixing it with the legacy `allow_tf32`
    flag makes torch raise); older torch gets `allow_tf32`. torch is imported here, on use,
    so importing this module needs no torch.
    """
    import torch

    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        previous = matmul.fp32_precision
        matmul.fp32_precision = mode
        try:
            yield
        finally:
            matmul.fp32_precision = previous
    else:  # pragma: no cover - torch < 2.9
        previous = matmul.allow_tf32
        matmul.allow_tf32 = mode == "tf32"
        try:
            yield
        finally:
            matmul.allow_tf32 = previous
