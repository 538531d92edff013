"""aisp_kernels.gemm's shared checks for the hand-written CUDA GEMM pairs: sizes and operands are
refused with messages that say which rule failed, before anything is built or launched."""
from __future__ import annotations

import pytest

from aisp_kernels import gemm
from aisp_prof.errors import RequirementError


class FakeTensor:
    """Just what check_operands looks at, so the GPU-only paths can be tested on a CPU."""

    def __init__(self, dtype="bf16", shape=(16, 16), contiguous=True, address=256, cuda=True):
        self.dtype, self.shape, self._contiguous, self._address, self.is_cuda = dtype, shape, contiguous, address, cuda

    def dim(self):
        return len(self.shape)

    def is_contiguous(self):
        return self._contiguous

    def data_ptr(self):
        return self._address

    def stride(self):
        return (self.shape[-1], 1)


def test_sizes_in_range_and_multiples():
    assert gemm.validate_sizes({"m": 3, "n": 16, "k": 8}, 8, "TMA rows") == (3, 16, 8)
    with pytest.raises(ValueError, match=r"multiples of 8 \(TMA rows\), got n=12 k=8; m is free"):
        gemm.validate_sizes({"m": 3, "n": 12, "k": 8}, 8, "TMA rows")
    with pytest.raises(ValueError, match="must be in"):
        gemm.validate_sizes({"m": 0, "n": 16, "k": 16}, 8, "x")
    with pytest.raises(ValueError, match="must be in"):
        gemm.validate_sizes({"m": 1, "n": 16, "k": 2**31}, 8, "x")


def test_operands_cpu_first_then_layout():
    ok = FakeTensor()
    gemm.check_operands("ch09.p", "v", {"a": ok, "b": ok}, "bf16")
    with pytest.raises(RequirementError, match="ch09.p v variant needs CUDA tensors"):
        gemm.check_operands("ch09.p", "v", {"a": ok, "b": FakeTensor(cuda=False, dtype="fp32")}, "bf16")
    for bad in (FakeTensor(dtype="fp16"), FakeTensor(contiguous=False), FakeTensor(address=8),
                FakeTensor(shape=(2, 4, 4))):
        with pytest.raises(ValueError, match="b must be a contiguous, 16-byte aligned 2-D bf16 tensor"):
            gemm.check_operands("ch09.p", "v", {"a": ok, "b": bad}, "bf16")
