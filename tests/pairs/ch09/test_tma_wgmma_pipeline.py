"""ch09.tma_wgmma_pipeline: imports cleanly, its formulas and inputs are right, its CUDA C++ builds
for sm_90a with the C symbols the module calls, refuses bad arguments before touching CUDA, and
its PTX really is TMA + wgmma (+ setmaxnreg, + cluster multicast) — the Hopper mechanisms the
pair exists to show.

CPU only, except the test marked `gpu` (every variant against the float64 reference at tile,
edge and multi-tile sizes), which skips cleanly without a GPU. The build tests need nvcc only
(a few seconds).
"""
from __future__ import annotations

import ctypes
import re
import subprocess

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, import_fresh, kept_build_dir,
                          record_library_loads, requires_nvcc, runnable_variants)

torch = pytest.importorskip("torch")

from aisp_kernels import build  # noqa: E402
from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof import tools  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch09" / "tma_wgmma_pipeline.py"
CU_PATH = ROOT / "kernels" / "ch09" / "tma_wgmma_pipeline.cu"
VARIANTS = ["baseline", "pipelined", "pipelined_cluster", "cublas"]
KERNEL_SYMBOLS = ("aisp_tma_wgmma_serial", "aisp_tma_wgmma_pipelined", "aisp_tma_wgmma_pipelined_cluster")


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find("ch09.tma_wgmma_pipeline")
    assert pair.chapter == 9 and list(pair.variants) == VARIANTS
    assert pair.variants["baseline"].__name__ == "serial"
    assert dict(pair.sizes) == {"m": 4096, "n": 4096, "k": 8192}
    # sm_90a code: Hopper only, with a note that says what to run elsewhere
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0)
    assert "tcgen05" in pair.requires.note and "nvcc" in pair.requires.needs
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True,
                                   have_cutlass=True) == []
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False,
                                   have_cutlass=False) == VARIANTS


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"m": 2, "n": 3, "k": 4}) == 48
    assert mod.bytes({"m": 2, "n": 3, "k": 4}) == 2 * (8 + 12 + 6)
    d = {"m": 4096, "n": 4096, "k": 8192}
    assert mod.flops(d) / mod.bytes(d) > 1500                  # compute bound


def test_make_inputs_are_seeded_k_major_bf16(mod):
    sizes = {"m": 5, "n": 16, "k": 64}
    a, b, c = (mod.make_inputs(sizes, "cpu", s) for s in (7, 7, 8))
    assert a["a"].shape == (5, 64) and a["b"].shape == (16, 64)      # B is [n, k]: K-major
    for key in ("a", "b"):
        assert a[key].dtype == torch.bfloat16 and a[key].is_contiguous()
        assert torch.equal(a[key], b[key])
    assert not torch.equal(a["a"], c["a"])
    ref = mod.reference(a)
    assert ref.dtype == torch.float64 and ref.shape == (5, 16)
    assert torch.equal(ref, a["a"].double() @ a["b"].double().t())
    big = mod.make_inputs({"m": 64, "n": 64, "k": 4096}, "cpu", 0)
    assert 0.8 < float(mod.reference(big).std()) < 1.2              # C ~ N(0, 1)


@pytest.mark.parametrize("sizes", [{"m": 4, "n": 12, "k": 16}, {"m": 4, "n": 16, "k": 20},
                                   {"m": 0, "n": 16, "k": 16}, {"m": 4, "n": 16, "k": 2**31}])
def test_sizes_are_validated(mod, sizes):
    with pytest.raises(ValueError, match="multiples of 8|must be in"):
        mod.make_inputs(sizes, "cpu", 0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"m": 4, "n": 16, "k": 16})


def test_library_is_built_for_sm90a(monkeypatch):
    loads = record_library_loads(monkeypatch)
    fresh = import_fresh(PAIR_PATH, "tma_wgmma_fake_library")          # its LIBRARY keeps the fake handle
    fresh.LIBRARY.load()
    # no include directories or extra flags: plain sm_90a
    assert loads == [{"source": CU_PATH, "arch": "sm_90a", "include_dirs": [], "extra_flags": []}]
    for name in KERNEL_SYMBOLS:
        assert fresh.LIBRARY.fn(name).argtypes[-1] is ctypes.c_void_p    # the stream


# --- the CUDA source ------------------------------------------------------------------------

@pytest.mark.slow
@requires_nvcc
def test_cu_builds_and_refuses_bad_arguments_before_any_cuda_call(monkeypatch, tmp_path, mod):
    monkeypatch.setenv("AISP_BUILD_DIR", str(kept_build_dir()))
    lib = ctypes.CDLL(str(build.build_shared_library(CU_PATH, arch=mod.ARCH)))
    invalid_value = 1                      # cudaErrorInvalidValue
    for name in KERNEL_SYMBOLS:
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
        assert fn(16, 16, 16, 4, 12, 16, None) == invalid_value      # n % 8 != 0
        assert fn(16, 16, 16, 4, 16, 12, None) == invalid_value      # k % 8 != 0
        assert fn(24, 16, 16, 4, 16, 16, None) == invalid_value      # A not 16-byte aligned
        assert fn(16, 16, 16, -1, 16, 16, None) == invalid_value     # negative m
        assert fn(16, 16, 16, 0, 16, 16, None) == 0                  # empty C: nothing to do
    lib.aisp_tma_wgmma_stages.restype = ctypes.c_int
    assert lib.aisp_tma_wgmma_stages() >= 2


@pytest.mark.slow
@requires_nvcc
def test_ptx_is_tma_plus_wgmma_with_the_hopper_mechanisms(tmp_path, mod):
    ptx = tmp_path / "k.ptx"
    subprocess.run([str(tools.find_nvcc()), "-std=c++17", "-ptx", "-arch=sm_90a", "-o", str(ptx), str(CU_PATH)],
                   check=True, capture_output=True)
    text = ptx.read_text()
    entries = re.split(r"\.entry\s+", text)[1:]
    by_name = {("serial" if "serial" in e[:200] else "cluster" if "ILi2E" in e[:200] else "pipelined"): e
               for e in entries}
    assert set(by_name) == {"serial", "pipelined", "cluster"}
    for body in by_name.values():
        assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in body
        assert "cp.async.bulk.tensor.2d" in body and "mbarrier.try_wait.parity" in body
    assert "setmaxnreg" not in by_name["serial"] and "bar.sync" in by_name["serial"]
    for name in ("pipelined", "cluster"):
        assert "setmaxnreg.dec" in by_name[name] and "setmaxnreg.inc" in by_name[name]
    assert "multicast::cluster" in by_name["cluster"] and "mapa" in by_name["cluster"]
    assert "multicast::cluster" not in by_name["pipelined"]


# --- on a GPU --------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [{"m": 128, "n": 256, "k": 64}, {"m": 300, "n": 264, "k": 200},
                                   {"m": 1, "n": 8, "k": 8}, {"m": 1000, "n": 1032, "k": 520}])
def test_every_variant_matches_the_float64_reference(sizes):
    if torch.cuda.get_device_capability()[:2] != (9, 0):
        pytest.skip("sm_90a kernels: Hopper only")
    result = check.check_pair(pairs.find("ch09.tma_wgmma_pipeline"), sizes, device="cuda", trials=1)
    assert result.passed, result.to_dict()
