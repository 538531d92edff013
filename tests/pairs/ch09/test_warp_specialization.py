"""ch09.warp_specialization_producer_consumer: imports cleanly, formulas add up, the CUDA source
builds for sm_90 with the symbols the module calls and no local memory, and (GPU only) every
variant matches the float64 reference.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, import_fresh, ptxas_entries, requires_nvcc,
                          run_nvcc, run_with_inputs_freed)

torch = pytest.importorskip("torch")

from aisp_kernels import build  # noqa: E402
from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof import tools  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch09" / "warp_specialization_producer_consumer.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch09.warp_specialization_producer_consumer"
VARIANTS = ("baseline", "pipelined", "warp_specialized", "direct", "warp_specialized_tma")




def _import_fresh(name: str = "warp_spec_under_test"):
    return import_fresh(PAIR_PATH, name)


@pytest.fixture(scope="module")
def mod():
    return _import_fresh()


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 9
    assert tuple(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"n": 1 << 26, "degree": 64, "blocks_per_sm": 0}
    assert pair.requires.min_cc == (9, 0)
    assert pair.variant_needs == {v: ("gpu", "nvcc") for v in VARIANTS}
    assert pair.tolerance == 1e-5
    assert pair.lesson and "\n" not in pair.lesson


def test_flops_and_bytes_formulas(mod):
    sizes = {"n": 1 << 26, "degree": 64}
    assert mod.flops(sizes) == 2 * 64 * (1 << 26) == 8_589_934_592        # 8.59 GFLOP
    assert mod.bytes(sizes) == 8 * (1 << 26) == 536_870_912                # 512 MiB: x in, y out
    assert mod.flops(sizes) / mod.bytes(sizes) == 16.0                     # FLOP per byte
    assert mod.flops({"n": 1_000_003, "degree": 16}) == 32_000_096
    assert mod.bytes({"n": 1_000_003, "degree": 16}) == 8_000_024


def test_default_size_sits_between_the_ridges(mod):
    # The measured ceilings of profiles/calibration/: neither term dominates by more than 30%.
    sizes = dict(mod.DEFAULT_SIZES)
    assert sizes["blocks_per_sm"] == 0                                    # as many blocks as fit
    for dram, fp32 in ((3.011e12, 60.49e12), (4.262e12, 60.10e12)):      # H100, H200
        t_mem, t_math = mod.bytes(sizes) / dram, mod.flops(sizes) / fp32
        assert 0.7 < t_math / t_mem < 1.3


def test_make_inputs_is_seeded_and_checks_degree(mod):
    a = mod.make_inputs({"n": 64, "degree": 16}, "cpu", 7)
    b = mod.make_inputs({"n": 64, "degree": 16}, "cpu", 7)
    c = mod.make_inputs({"n": 64, "degree": 16}, "cpu", 8)
    assert a["x"].dtype == torch.float32 and a["x"].shape == (64,) and a["coeffs"].shape == (17,)
    assert torch.equal(a["x"], b["x"]) and torch.equal(a["coeffs"], b["coeffs"])
    assert not torch.equal(a["x"], c["x"])
    assert float(a["x"].abs().max()) <= 1.0 and a["blocks_per_sm"] == 0
    assert mod.make_inputs({"n": 8, "degree": 16, "blocks_per_sm": 2}, "cpu", 0)["blocks_per_sm"] == 2
    with pytest.raises(ValueError, match="degree"):
        mod.make_inputs({"n": 64, "degree": 20}, "cpu", 0)
    with pytest.raises(ValueError, match="blocks_per_sm"):
        mod.make_inputs({"n": 64, "degree": 16, "blocks_per_sm": -1}, "cpu", 0)


def test_degrees_match_the_cuda_dispatch(mod):
    source = CU_PATH.read_text()
    instantiated = tuple(int(d) for d in re.findall(r"case (\d+): return kernel_for<\1>", source))
    assert instantiated == mod.DEGREES
    assert f"kMaxDegree = {max(mod.DEGREES)};" in source


def test_reference_is_float64_horner(mod):
    np = pytest.importorskip("numpy")
    inputs = mod.make_inputs({"n": 1000, "degree": 32}, "cpu", 3)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64
    expected = np.polynomial.polynomial.polyval(inputs["x"].double().numpy(), inputs["coeffs"].double().numpy())
    assert np.allclose(ref.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_fp32_horner_is_well_inside_the_tolerance(mod):
    # The kernels' arithmetic, emulated in fp32 on the CPU, stays 20x under the pair's tolerance (~1e-7).
    inputs = mod.make_inputs({"n": 100_000, "degree": 128}, "cpu", 1)
    x, c = inputs["x"], inputs["coeffs"].tolist()
    y = torch.full_like(x, c[-1])
    for ck in reversed(c[:-1]):
        y = y * x + ck
    ref = mod.reference(inputs)
    assert float((y.double() - ref).norm() / ref.norm()) < mod.PAIR.tolerance / 20


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_refuse_cpu_tensors_before_building(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"n": 16, "degree": 16}, match="CUDA tensor")


@pytest.mark.slow
@requires_nvcc
def test_cuda_source_builds_for_sm90_with_symbols_and_no_local_memory(tmp_path):
    # The exact command aisp_kernels.build uses, plus -Xptxas -v for the resource report.
    library = tmp_path / "warp_spec.so"
    cmd = build.nvcc_command(CU_PATH, library, "sm_90", nvcc=tools.find_nvcc())
    proc = run_nvcc(cmd[:-3] + ["-Xptxas", "-v"] + cmd[-3:], CU_PATH, library)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = proc.stderr + proc.stdout
    _, frame_count = ptxas_entries(report, arch="sm_90")
    names = "|".join(f"{v}_kernel" for v in VARIANTS)
    kernels = re.findall(rf"Compiling entry function '\S*?({names})ILi(\d+)", report)
    assert len(kernels) == len(VARIANTS) * 4                       # every schedule x 4 degrees
    assert {k for k, _ in kernels} == {f"{v}_kernel" for v in VARIANTS}
    assert frame_count == len(kernels)
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("needs nm (binutils) to list the library's symbols")
    symbols = subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True, text=True,
                             check=True).stdout
    for name in ("aisp_warp_spec_launch", "aisp_warp_spec_info", "aisp_warp_spec_error_string"):
        assert f" T {name}" in symbols


# --- GPU only --------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("sizes", [
    {"n": 1_000_003, "degree": 64, "blocks_per_sm": 0},      # partial last tile + 3-element tail
    {"n": 4096 * 130 + 5, "degree": 16, "blocks_per_sm": 0},
    {"n": 3, "degree": 32, "blocks_per_sm": 0},              # tail only, no tile
    {"n": 1 << 22, "degree": 128, "blocks_per_sm": 1},       # one block per SM: many trips round the stages
])
def test_all_variants_pass_check_on_gpu(sizes):
    check.raise_if_failed(check.check_pair(pairs.find(NAME), sizes, device="cuda", variants=list(VARIANTS)))


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_on_gpu(mod, variant):
    # bench.timing keeps only the closure; x must not be freed and recycled under the kernel.
    (out,), ref = run_with_inputs_freed(mod, variant, {"n": 1 << 20, "degree": 32})
    assert float((out.double() - ref).norm() / ref.norm()) < 1e-5


@pytest.mark.gpu
@requires_nvcc
def test_kernel_info_on_gpu(mod):
    for variant in VARIANTS:
        info = mod.kernel_info(variant, 64)
        assert info["threads"] == (288 if variant.startswith("warp_specialized") else 256)
        assert info["local_bytes"] == 0 and info["blocks_per_sm"] >= 1 and info["sm_count"] > 0
        assert mod.kernel_info(variant, 64, blocks_per_sm=1)["blocks_per_sm"] == 1
