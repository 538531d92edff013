"""ch09.cublaslt_gemm: imports cleanly, its formulas add up, its inputs are fp8-exact, and its
CUDA C++ builds for sm_90 with the C symbols the module calls and no spills.

CPU only, except the tests marked `gpu` (every variant against the float64 reference), which
skip cleanly without a GPU. The compile tests need nvcc, no GPU.
"""
from __future__ import annotations

import ctypes
import re
import subprocess

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, have_nvcc, import_fresh, kept_build_dir,
                          requires_nvcc, run_nvcc, runnable_variants)

torch = pytest.importorskip("torch")

from aisp_kernels import build  # noqa: E402
from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof import tools  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch09" / "cublaslt_gemm.py"
CU_PATH = ROOT / "kernels" / "ch09" / "cublaslt_gemm.cu"
SYMBOLS = ("aisp_hgemm_mma_sync", "aisp_cuda_error_string")
VARIANTS = ["baseline", "cublaslt_fp16", "cublaslt_fp8"]

requires_gpu = pytest.mark.gpu          # tests/conftest.py skips these where torch sees no GPU


def _import_fresh(name: str = "cublaslt_gemm_under_test"):
    return import_fresh(PAIR_PATH, name)


@pytest.fixture(scope="module")
def mod():
    return _import_fresh()


# --- import, contract, formulas -------------------------------------------------------------

@pytest.mark.slow
def test_pair_is_discovered_with_its_contract():
    pair = pairs.find("ch09.cublaslt_gemm")
    assert pair.chapter == 9
    assert list(pair.variants) == VARIANTS
    assert pair.variants["baseline"].__name__ == "handwritten_fp16"
    assert dict(pair.sizes) == {"m": 8192, "n": 8192, "k": 8192}
    assert pair.requires.min_cc == (9, 0) and "nvcc" in pair.requires.needs
    assert dict(pair.variant_needs) == {"baseline": ("gpu", "nvcc"), "cublaslt_fp16": ("gpu",),
                                        "cublaslt_fp8": ("gpu",)}
    assert pair.lesson and "\n" not in pair.lesson
    assert pair.source.endswith("kernels/ch09/cublaslt_gemm.py")
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == []
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == VARIANTS


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"m": 2, "n": 3, "k": 4}) == 48
    assert mod.bytes({"m": 2, "n": 3, "k": 4}) == 2 * (8 + 12 + 6) == 52
    assert mod.bytes_fp8({"m": 2, "n": 3, "k": 4}) == 8 + 12 + 2 * 6 == 32
    d = {"m": 8192, "n": 8192, "k": 8192}
    assert mod.flops(d) == 2 * 8192**3 == 1_099_511_627_776
    assert mod.bytes(d) == 3 * 2 * 8192**2 == 402_653_184
    assert mod.bytes_fp8(d) == 4 * 8192**2 == 268_435_456
    assert mod.flops(d) / mod.bytes(d) > 2000               # compute bound
    assert mod.flops({"m": 129, "n": 144, "k": 48}) == 2 * 129 * 144 * 48


def test_make_inputs_is_seeded_fp8_exact_and_scaled(mod):
    sizes = {"m": 5, "n": 16, "k": 32}
    a, b, c = (mod.make_inputs(sizes, "cpu", s) for s in (7, 7, 8))
    assert a["a"].shape == (5, 32) and a["b"].shape == (32, 16)
    assert a["a8"].shape == (5, 32) and a["b8_t"].shape == (16, 32)
    assert a["a"].dtype == a["b"].dtype == torch.float16
    assert a["a8"].dtype == a["b8_t"].dtype == torch.float8_e4m3fn
    assert a["scale_a"].dtype == a["scale_b"].dtype == torch.float32 and a["scale_a"].dim() == 0
    for key in ("a", "b", "a8", "b8_t"):
        assert a[key].is_contiguous()
        assert torch.equal(a[key].float(), b[key].float())
    assert not torch.equal(a["a"], c["a"])
    big = mod.make_inputs({"m": 64, "n": 64, "k": 4096}, "cpu", 0)
    for q, s, x in ((big["a8"], big["scale_a"], big["a"]), (big["b8_t"].t(), big["scale_b"], big["b"])):
        # the fp16 operands are exactly the dequantized fp8 values; scales are powers of two
        assert torch.equal(q.double() * float(s), x.double())
        assert float(s) == 2.0 ** round(torch.log2(s).item())
        assert float(q.float().abs().max()) <= 448 and float(q.float().abs().max()) > 224   # range used
    assert 0.8 < float(mod.reference(big).std()) < 1.2          # C ~ N(0, 1)


@pytest.mark.parametrize("sizes", [{"m": 4, "n": 8, "k": 16}, {"m": 4, "n": 16, "k": 24},
                                   {"m": 0, "n": 16, "k": 16}, {"m": 4, "n": 16, "k": 2**31}])
def test_sizes_are_validated(mod, sizes):
    with pytest.raises(ValueError, match="multiples of 16|must be in"):
        mod.make_inputs(sizes, "cpu", 0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"m": 4, "n": 16, "k": 16})


def test_reference_is_float64_of_the_dequantized_operands(mod):
    inputs = mod.make_inputs({"m": 6, "n": 16, "k": 32}, "cpu", 3)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (6, 16)
    deq = ((inputs["a8"].double() * float(inputs["scale_a"]))
           @ (inputs["b8_t"].t().double() * float(inputs["scale_b"])))
    assert torch.equal(ref, deq)


# --- the CUDA source: builds for sm_90, exports its symbols, no spills ----------------------

@pytest.mark.slow
@requires_nvcc
def test_cu_builds_for_sm90_and_exports_the_c_symbols(monkeypatch, tmp_path):
    monkeypatch.setenv("AISP_BUILD_DIR", str(kept_build_dir()))
    library = build.build_shared_library(CU_PATH, arch="sm_90")
    lib = ctypes.CDLL(str(library))        # cudart is linked statically: loads without a GPU
    for name in SYMBOLS:
        assert hasattr(lib, name), name
    fn = lib.aisp_hgemm_mma_sync
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    invalid_value = 1                      # cudaErrorInvalidValue, refused before any CUDA call
    assert fn(16, 16, 16, 4, 12, 16, None) == invalid_value              # n % 8 != 0
    assert fn(16, 16, 16, 4, 16, 12, None) == invalid_value              # k % 8 != 0
    assert fn(24, 16, 16, 4, 16, 16, None) == invalid_value              # A not 16-byte aligned
    assert fn(None, 16, 16, 4, 16, 16, None) == invalid_value            # null pointer


@pytest.mark.slow
@requires_nvcc
def test_ptxas_reports_no_spills_and_sass_uses_hmma():
    nvcc = tools.find_nvcc()
    proc = subprocess.run([str(nvcc), "-O3", "-std=c++17", "-lineinfo", "-ptx",
                           "-gencode=arch=compute_90,code=compute_90", "-o", "-", str(CU_PATH)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in proc.stdout
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in proc.stdout
    assert "cp.async.cg.shared.global" in proc.stdout
    proc = run_nvcc([str(nvcc), "-O3", "-std=c++17", "-lineinfo", "-cubin", "-gencode=arch=compute_90,code=sm_90",
                     "-Xptxas", "-v", "-o", "/dev/null", str(CU_PATH)], CU_PATH, None)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    assert "hgemm_mma_sync" in text
    frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", text)
    regs = re.search(r"Used (\d+) registers", text)
    assert frame and regs, text
    assert frame.groups() == ("0", "0", "0"), text
    assert int(regs.group(1)) <= 128, text          # two 256-thread blocks per SM


# --- GPU only --------------------------------------------------------------------------------

@requires_gpu
@pytest.mark.skipif(not have_nvcc(), reason="needs nvcc")
@pytest.mark.parametrize("sizes", [{"m": 1, "n": 16, "k": 16},           # one row
                                   {"m": 129, "n": 144, "k": 48},       # partial tiles and slices
                                   {"m": 256, "n": 256, "k": 256},      # whole tiles
                                   {"m": 1000, "n": 1040, "k": 528}])
def test_all_variants_pass_check_on_gpu(sizes):
    pair = pairs.find("ch09.cublaslt_gemm")
    check.raise_if_failed(check.check_pair(pair, sizes, device="cuda"))


@requires_gpu
@pytest.mark.skipif(not have_nvcc(), reason="needs nvcc")
def test_default_size_passes_check_on_gpu():
    pair = pairs.find("ch09.cublaslt_gemm")
    check.raise_if_failed(check.check_pair(pair, device="cuda", trials=1))
