"""aisp_kernels.sparse: refuses what cuSPARSELt cannot do, before touching the GPU."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from aisp_kernels import sparse  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402


def test_cpu_weights_are_a_requirement_error():
    w, b = torch.zeros(8, 16, dtype=torch.bfloat16), torch.zeros(16, 8, dtype=torch.bfloat16)
    with pytest.raises(RequirementError, match="CUDA tensors"):
        sparse.tuned_sparse_matmul(w, b)


def test_missing_cusparselt_says_what_is_needed(monkeypatch):
    class FakeCuda:             # a [64, 64] fp16 CUDA tensor as far as the helper asks, before cuSPARSELt
        is_cuda = True
        shape = (64, 64)

        def dim(self) -> int:
            return 2

        def element_size(self) -> int:
            return 2

    monkeypatch.setattr(sparse, "cusparselt_available", lambda: False)
    with pytest.raises(RequirementError, match="cuSPARSELt"):
        sparse.tuned_sparse_matmul(FakeCuda(), FakeCuda())


def test_cpu_torch_has_no_usable_cusparselt_or_reports_it_consistently():
    available = sparse.cusparselt_available()
    backend = getattr(torch.backends, "cusparselt", None)
    assert available == bool(backend is not None and backend.is_available()
                             and hasattr(torch, "_cslt_sparse_mm_search"))


@pytest.mark.gpu
def test_tuned_matmul_matches_dense_and_refuses_column_major_b():
    if not sparse.cusparselt_available():
        pytest.skip("torch without cuSPARSELt")
    gen = torch.Generator(device="cuda").manual_seed(0)
    w = torch.randn(256, 512, generator=gen, device="cuda")
    w = (w.reshape(-1, 4) * torch.tensor([1.0, 1.0, 0.0, 0.0], device="cuda")).reshape(256, 512)
    w, b = w.to(torch.bfloat16), torch.randn(512, 384, generator=gen, device="cuda").to(torch.bfloat16)
    matmul, alg_id = sparse.tuned_sparse_matmul(w, b)
    assert alg_id >= 0
    ref = w.double() @ b.double()
    got = matmul(b).double()
    assert float((got - ref).norm() / ref.norm()) < 5e-3
    with pytest.raises(ValueError, match="row-major"):
        sparse.tuned_sparse_matmul(w, b.t().contiguous().t())
