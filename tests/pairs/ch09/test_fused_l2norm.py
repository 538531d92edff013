"""ch09.fused_l2norm: the pair imports cleanly, its variants are correct, its formulas add up.

CPU: the baseline and the Triton variant (TRITON_INTERPRET=1). GPU-only tests (the CUDA
variant, the default size) skip cleanly without one.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import ROOT
from pair_testing import forbid_build, hide_package, import_fresh, runnable_variants

torch = pytest.importorskip("torch")

from aisp_kernels import triton_helpers  # noqa: E402
from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch09" / "fused_l2norm.py"
requires_gpu = pytest.mark.gpu          # tests/conftest.py skips these where torch sees no GPU
requires_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton")


def _import_fresh(name: str = "fused_l2norm_under_test"):
    return import_fresh(PAIR_PATH, name)


@pytest.fixture(scope="module")
def mod():
    return _import_fresh()


def test_imports_without_triton(monkeypatch):
    hide_package(monkeypatch, "triton")                        # makes `import triton` fail
    module = _import_fresh("fused_l2norm_no_triton")
    inputs = module.make_inputs({"rows": 2, "cols": 8}, "cpu", 0)
    with pytest.raises(RequirementError, match="needs triton"):
        module.optimized_triton(inputs)


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find("ch09.fused_l2norm")
    assert pair.chapter == 9
    assert set(pair.variants) == {"baseline", "cuda", "triton"}
    assert dict(pair.sizes) == {"rows": 8192, "cols": 8192}
    assert pair.requires.min_cc == (9, 0)
    assert pair.variant_needs == {"cuda": ("gpu", "nvcc"), "triton": ("triton",)}
    assert pair.lesson and "\n" not in pair.lesson


def test_flops_and_bytes_formulas(mod):
    sizes = {"rows": 8192, "cols": 8192}
    assert mod.flops(sizes) == 3 * 8192 * 8192 + 2 * 8192 == 201_342_976
    assert mod.bytes(sizes) == 2 * 8192 * 8192 * 4 == 536_870_912      # 512 MiB: x in, y out
    assert mod.flops({"rows": 33, "cols": 100}) == 3 * 3300 + 66
    assert mod.bytes({"rows": 33, "cols": 100}) == 26_400


def test_make_inputs_is_seeded(mod):
    a = mod.make_inputs({"rows": 4, "cols": 16}, "cpu", 7)
    b = mod.make_inputs({"rows": 4, "cols": 16}, "cpu", 7)
    c = mod.make_inputs({"rows": 4, "cols": 16}, "cpu", 8)
    assert a["x"].dtype == torch.float32 and a["x"].shape == (4, 16)
    assert torch.equal(a["x"], b["x"]) and not torch.equal(a["x"], c["x"])
    assert a["eps"] == 1e-12


def test_baseline_reuses_its_output(mod):
    launch = mod.baseline(mod.make_inputs({"rows": 5, "cols": 12}, "cpu", 0))
    assert launch() is launch()


@pytest.mark.parametrize("sizes", [{"rows": 64, "cols": 256}, {"rows": 33, "cols": 100}])
def test_baseline_passes_check_on_cpu(sizes):
    result = check.check_pair(pairs.find("ch09.fused_l2norm"), sizes, device="cpu", variants=["baseline"])
    check.raise_if_failed(result)
    assert [c.variant for c in result.checks] == ["baseline", "baseline"]


_TRITON_CPU_SCRIPT = """
import json, sys
from aisp_prof import pairs
from aisp_prof.collect.correctness import check
pair = pairs.find("ch09.fused_l2norm")
results = [check.check_pair(pair, dict(rows=r, cols=c), device="cpu", variants=["triton"]).to_dict()
           for r, c in json.loads(sys.argv[1])]
print(json.dumps(results))
"""


@pytest.mark.slow
@requires_triton
def test_triton_passes_check_under_interpreter():
    # triton reads TRITON_INTERPRET when a function is decorated with triton.jit, and it
    # decorates its own library (tl.sum, ...) on import (checked with triton 3.9), so the flag
    # must be set before triton is first imported: a fresh interpreter is the only reliable way.
    sizes = [(64, 256), (33, 100), (3, 20000)]          # 20000 > 16384: the chunked loop
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", _TRITON_CPU_SCRIPT, json.dumps(sizes)], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for (rows, cols), result in zip(sizes, results):
        assert result["passed"], (rows, cols, result)
        triton_checks = [c for c in result["checks"] if c["variant"] == "triton"]
        assert len(triton_checks) == 2
        assert all(c["poisoned"] and c["unwritten_elements"] == 0 for c in triton_checks)


@requires_triton
def test_triton_interpreter_set_too_late_is_a_requirement_error(monkeypatch, mod):
    import triton.language as tl

    if type(tl.sum).__name__ == "InterpretedFunction":
        pytest.skip("triton was imported with TRITON_INTERPRET=1 in this process")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(RequirementError, match="before starting Python"):
        mod.optimized_triton(mod.make_inputs({"rows": 2, "cols": 8}, "cpu", 0))


@requires_triton
def test_triton_launch_config(mod):
    assert triton_helpers.row_launch_config(8192) == (8192, 1, 8)
    assert triton_helpers.row_launch_config(100) == (128, 1, 1)
    assert triton_helpers.row_launch_config(16384) == (16384, 1, 16)
    assert triton_helpers.row_launch_config(20000) == (4096, 5, 4)


@requires_triton
def test_triton_on_cpu_without_interpreter_is_a_requirement_error(monkeypatch, mod):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(RequirementError, match="TRITON_INTERPRET"):
        mod.optimized_triton(mod.make_inputs({"rows": 2, "cols": 8}, "cpu", 0))


def test_cuda_variant_on_cpu_is_a_requirement_error(monkeypatch, mod):
    forbid_build(monkeypatch)
    with pytest.raises(RequirementError, match="CUDA tensor"):
        mod.optimized_cuda(mod.make_inputs({"rows": 2, "cols": 8}, "cpu", 0))


def test_reference_is_float64_and_unit_norm(mod):
    ref = mod.reference(mod.make_inputs({"rows": 6, "cols": 50}, "cpu", 3))
    assert ref.dtype == torch.float64
    assert torch.allclose(ref.norm(dim=1), torch.ones(6, dtype=torch.float64))


# --- GPU only --------------------------------------------------------------------------

@requires_gpu
@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                    reason="needs nvcc")
@pytest.mark.parametrize("sizes", [{"rows": 64, "cols": 256},     # float4, row in registers
                                   {"rows": 33, "cols": 100},     # float4, partial last item
                                   {"rows": 7, "cols": 1001},     # scalar fallback (cols % 4 != 0)
                                   {"rows": 5, "cols": 65540},    # float4, too long: re-read path
                                   {"rows": 70000, "cols": 16}])  # more rows than blocks: grid stride
def test_cuda_and_triton_pass_check_on_gpu(sizes):
    pair = pairs.find("ch09.fused_l2norm")
    variants = ["cuda"] + (["triton"] if importlib.util.find_spec("triton") else [])
    check.raise_if_failed(check.check_pair(pair, sizes, device="cuda", variants=variants))


@requires_gpu
def test_cuda_variant_handles_misaligned_pointers(mod):
    # A view starting one float in is not 16-byte aligned: the kernel must take the scalar path.
    base = mod.make_inputs({"rows": 9, "cols": 257}, "cuda", 0)["x"]
    x = base.view(-1)[1:1 + 8 * 256].view(8, 256)
    assert x.data_ptr() % 16 != 0
    inputs = {"x": x, "eps": 1e-12}
    y = mod.optimized_cuda(inputs)()
    ref = mod.reference(inputs)
    assert float((y.double() - ref).norm() / ref.norm()) < 1e-5


@requires_gpu
def test_default_size_passes_check_on_gpu():
    pair = pairs.find("ch09.fused_l2norm")
    have_triton = importlib.util.find_spec("triton") is not None
    names = runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=have_triton)
    check.raise_if_failed(check.check_pair(pair, device="cuda", variants=names, trials=1))
