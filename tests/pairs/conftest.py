"""What the per-pair test files share: the pair module under test (the file's PAIR_PATH, imported
fresh as discovery does) and its CUDA library built once per file (the file's CU_PATH, for
sm_90a), as `mod` and `built`, and that library's SASS per kernel as `sass` and `ops` (the
file's `kernel_of` names each kernel). A file that needs another import or build defines its own."""
from __future__ import annotations

import pytest
from pair_testing import build_with_report, have_nvcc, import_fresh, opcodes_by_kernel, sass_by_kernel


@pytest.fixture(scope="module")
def mod(request):
    """The module at the test file's PAIR_PATH, imported fresh under its own name."""
    path = request.module.PAIR_PATH
    return import_fresh(path, f"{path.parent.name}_{path.stem}_under_test")


@pytest.fixture(scope="module")
def built(request, tmp_path_factory):
    """The test file's CU_PATH built exactly as aisp_kernels.build does for sm_90a, plus nvcc's
    -Xptxas -v report: (library, report). One nvcc run per file; skips without nvcc."""
    if not have_nvcc():
        pytest.skip("needs nvcc")
    source = request.module.CU_PATH
    return build_with_report(source, tmp_path_factory.mktemp(source.stem), "sm_90a")


@pytest.fixture(scope="module")
def sass(request, built):
    """{kernel: its SASS text} of the `built` library, each kernel named by the test file's
    `kernel_of(mangled name)`. A file whose kernels need more than a name defines its own."""
    return sass_by_kernel(built[0], request.module.kernel_of)


@pytest.fixture(scope="module")
def ops(request, built):
    """{kernel: Counter of its SASS opcodes}, named as `sass` names them."""
    return opcodes_by_kernel(built[0], request.module.kernel_of)
