"""ch09.micro_tiling_matmul: imports cleanly, its formulas add up, its CUDA C++ builds for sm_90
with the C symbols the module calls, and ptxas keeps the micro-tiled kernels out of local memory.

CPU only, except the tests marked `gpu` (correctness of every variant and configuration against
the float64 reference), which skip cleanly without a GPU. The compile tests need nvcc, no GPU.
"""
from __future__ import annotations

import ctypes
import re

import pytest
from repo_paths import ROOT
from pair_testing import build_with_report, forbid_build, have_nvcc, import_fresh, requires_nvcc, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch09" / "micro_tiling_matmul.py"
CU_PATH = ROOT / "kernels" / "ch09" / "micro_tiling_matmul.cu"
SYMBOLS = ("aisp_sgemm_smem_tiled", "aisp_sgemm_micro_tiled", "aisp_sgemm_micro_tiled_config",
           "aisp_sgemm_config_count", "aisp_sgemm_config_name", "aisp_cuda_error_string")


requires_gpu = pytest.mark.gpu          # tests/conftest.py skips these where torch sees no GPU


def _import_fresh(name: str = "micro_tiling_matmul_under_test"):
    return import_fresh(PAIR_PATH, name)


@pytest.fixture(scope="module")
def mod():
    return _import_fresh()


# --- import, contract, formulas -------------------------------------------------------------

def test_pair_is_discovered_with_its_contract():
    pair = pairs.find("ch09.micro_tiling_matmul")
    assert pair.chapter == 9
    assert list(pair.variants) == ["baseline", "optimized", "cublas"]
    assert dict(pair.sizes) == {"m": 8192, "n": 8192, "k": 8192}
    assert pair.requires.min_cc == (9, 0) and "nvcc" in pair.requires.needs
    assert dict(pair.variant_needs) == {"baseline": ("gpu", "nvcc"), "optimized": ("gpu", "nvcc"),
                                        "cublas": ("gpu",)}
    assert pair.tolerance == 1e-5
    assert pair.lesson and "\n" not in pair.lesson
    assert pair.source.endswith("kernels/ch09/micro_tiling_matmul.py")
    # without a GPU nothing of this pair runs (every variant is compared with the CUDA baseline)
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == []
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == \
        ["baseline", "optimized", "cublas"]


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"m": 2, "n": 3, "k": 4}) == 48
    assert mod.bytes({"m": 2, "n": 3, "k": 4}) == 4 * (8 + 12 + 6) == 104
    d = {"m": 8192, "n": 8192, "k": 8192}
    assert mod.flops(d) == 2 * 8192**3 == 1_099_511_627_776
    assert mod.bytes(d) == 3 * 4 * 8192**2 == 805_306_368
    assert mod.flops(d) / mod.bytes(d) > 1000               # compute bound: far right of the ridge
    assert mod.flops({"m": 129, "n": 132, "k": 20}) == 2 * 129 * 132 * 20


def test_make_inputs_is_seeded_and_scaled(mod):
    sizes = {"m": 5, "n": 8, "k": 12}
    a = mod.make_inputs(sizes, "cpu", 7)
    b = mod.make_inputs(sizes, "cpu", 7)
    c = mod.make_inputs(sizes, "cpu", 8)
    assert a["a"].shape == (5, 12) and a["b"].shape == (12, 8)
    assert a["a"].dtype == a["b"].dtype == torch.float32
    assert a["a"].is_contiguous() and a["b"].is_contiguous()
    assert torch.equal(a["a"], b["a"]) and torch.equal(a["b"], b["b"]) and not torch.equal(a["a"], c["a"])
    big = mod.make_inputs({"m": 64, "n": 64, "k": 4096}, "cpu", 0)
    assert 0.8 < float((big["a"] @ big["b"]).std()) < 1.2          # C ~ N(0, 1)


@pytest.mark.parametrize("sizes", [{"m": 4, "n": 6, "k": 8}, {"m": 4, "n": 8, "k": 10},
                                   {"m": 0, "n": 8, "k": 8}, {"m": 4, "n": 8, "k": 2**31}])
def test_sizes_are_validated(mod, sizes):
    with pytest.raises(ValueError, match="multiples of 4|must be in"):
        mod.make_inputs(sizes, "cpu", 0)


def test_m_is_free(mod):
    assert mod.validate_sizes({"m": 129, "n": 132, "k": 20}) == (129, 132, 20)


@pytest.mark.parametrize("variant", ["baseline", "optimized", "cublas"])
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    forbid_build(monkeypatch)
    inputs = mod.make_inputs({"m": 4, "n": 8, "k": 8}, "cpu", 0)
    with pytest.raises(RequirementError, match="CUDA tensors"):
        mod.PAIR.variants[variant](inputs)
    with pytest.raises(RequirementError, match="CUDA tensors"):
        mod.config_variant(1)(inputs)


def test_reference_is_float64(mod):
    inputs = mod.make_inputs({"m": 6, "n": 8, "k": 12}, "cpu", 3)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (6, 8)
    assert torch.allclose(ref, inputs["a"].double() @ inputs["b"].double())


def test_with_configs_adds_variants(mod):
    pair = mod.with_configs(mod.PAIR, [0, 2])
    assert list(pair.variants) == ["baseline", "optimized", "cublas", "cfg0", "cfg2"]
    assert pair.variant_needs["cfg2"] == ("gpu", "nvcc")
    assert list(mod.PAIR.variants) == ["baseline", "optimized", "cublas"]      # unchanged


def test_optimized_config_comes_from_the_environment(monkeypatch, mod):
    monkeypatch.delenv(mod.CONFIG_ENV, raising=False)
    assert mod.optimized_config() == 0
    monkeypatch.setenv(mod.CONFIG_ENV, "3")
    assert mod.optimized_config() == 3
    monkeypatch.setenv(mod.CONFIG_ENV, "fast")
    with pytest.raises(ValueError, match="configuration index"):
        mod.optimized_config()


def test_fp32_precision_is_restored(mod):
    matmul = torch.backends.cuda.matmul
    attr = "fp32_precision" if hasattr(matmul, "fp32_precision") else "allow_tf32"
    before = getattr(matmul, attr)
    with mod.fp32_matmul_precision("ieee"):
        assert getattr(matmul, attr) in ("ieee", False)
    assert getattr(matmul, attr) == before


# --- the CUDA source: builds for sm_90, exports its symbols, no spills ----------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The library built exactly as aisp_kernels.build does, plus the -Xptxas -v report: one nvcc
    run (~13 s) for the symbol and the spill tests."""
    if not have_nvcc():
        pytest.skip("needs nvcc")
    return build_with_report(CU_PATH, tmp_path_factory.mktemp("micro_tiling"), "sm_90")


@pytest.mark.slow
@requires_nvcc
def test_cu_builds_for_sm90_and_exports_the_c_symbols(built):
    lib = ctypes.CDLL(str(built[0]))        # cudart is linked statically: loads without a GPU
    for name in SYMBOLS:
        assert hasattr(lib, name), name
    # host-only entry points: callable without a GPU
    lib.aisp_sgemm_config_count.restype = ctypes.c_int
    lib.aisp_sgemm_config_name.restype = ctypes.c_char_p
    lib.aisp_sgemm_config_name.argtypes = [ctypes.c_int]
    count = lib.aisp_sgemm_config_count()
    names = [lib.aisp_sgemm_config_name(i).decode() for i in range(count)]
    assert count >= 2 and all(names) and len(set(names)) == count
    assert lib.aisp_sgemm_config_name(count) == b""
    # bad arguments are refused before any CUDA call
    fn = lib.aisp_sgemm_micro_tiled_config
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    invalid_value = 1                      # cudaErrorInvalidValue
    assert fn(count, 16, 16, 16, 4, 4, 4, None) == invalid_value          # no such config
    assert fn(0, 16, 16, 16, 4, 6, 4, None) == invalid_value              # n % 4 != 0
    assert fn(0, 16, 16, 16, 4, 4, 6, None) == invalid_value              # k % 4 != 0
    assert fn(0, 20, 16, 16, 4, 4, 4, None) == invalid_value              # A not 16-byte aligned
    assert fn(0, None, 16, 16, 4, 4, 4, None) == invalid_value            # null pointer


def _ptxas_report(text: str) -> dict[str, dict[str, int]]:
    """{mangled kernel name: {registers, spill_stores, spill_loads, stack}} from nvcc -Xptxas -v."""
    report = {}
    for block in re.split(r"Compiling entry function '", text)[1:]:
        name = block.split("'")[0]
        frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", block)
        regs = re.search(r"Used (\d+) registers", block)
        assert frame and regs, block
        report[name] = {"stack": int(frame.group(1)), "spill_stores": int(frame.group(2)),
                        "spill_loads": int(frame.group(3)), "registers": int(regs.group(1))}
    return report


def _optimized_config_mangled() -> str:
    """The MicroConfig<...> of kConfigs[0] (what `optimized` runs), as it appears mangled."""
    source = CU_PATH.read_text()
    table = source[source.index("constexpr Entry kConfigs[] = {"):]
    first = re.search(r"launch_micro<(\w+)>", table).group(1)
    params = re.search(rf"using {first} = MicroConfig<([\d,\s]+)>;", source).group(1)
    return "MicroConfig" + "".join(f"ILi{p.strip()}E" if i == 0 else f"Li{p.strip()}E"
                                   for i, p in enumerate(params.split(",")))


@pytest.mark.slow
@requires_nvcc
def test_ptxas_reports_no_spills(built):
    report = _ptxas_report(built[1])
    micro = {name: r for name, r in report.items() if "sgemm_micro_tiled" in name}
    assert len(micro) >= 2 and any("sgemm_smem_tiled" in name for name in report)
    optimized = [r for name, r in micro.items() if _optimized_config_mangled() in name]
    assert len(optimized) == 1, (_optimized_config_mangled(), list(micro))
    opt = optimized[0]
    assert opt["spill_stores"] == opt["spill_loads"] == opt["stack"] == 0, opt
    assert opt["registers"] <= 255
    for name, r in report.items():          # every configuration of the sweep, and the baseline
        assert r["spill_stores"] == r["spill_loads"] == 0, (name, r)


# --- GPU only --------------------------------------------------------------------------------

@requires_gpu
@pytest.mark.skipif(not have_nvcc(), reason="needs nvcc")
@pytest.mark.parametrize("sizes", [{"m": 1, "n": 4, "k": 4},            # one row: every edge
                                   {"m": 129, "n": 132, "k": 20},       # partial tiles and slices
                                   {"m": 256, "n": 256, "k": 256},      # whole tiles
                                   {"m": 1000, "n": 1028, "k": 516}])
def test_all_variants_and_configs_pass_check_on_gpu(mod, sizes):
    pair = mod.with_configs(pairs.find("ch09.micro_tiling_matmul"), list(range(len(mod.config_names()))))
    check.raise_if_failed(check.check_pair(pair, sizes, device="cuda"))


@requires_gpu
@pytest.mark.skipif(not have_nvcc(), reason="needs nvcc")
def test_default_size_passes_check_on_gpu():
    pair = pairs.find("ch09.micro_tiling_matmul")
    check.raise_if_failed(check.check_pair(pair, device="cuda", trials=1))
