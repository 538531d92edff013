"""ch10.double_buffered_pipeline: imports cleanly, its formulas, inputs and tolerance add up, its
CUDA C++ builds for sm_90a without local memory, the SASS shows what each variant claims (naive:
global loads only; tiled: LDG -> STS + barriers; double_buffered: LDGSTS = cp.async, no STS), and
(GPU only) every variant matches the float64 reference.
"""
from __future__ import annotations

import ctypes
import re
import subprocess

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, ptxas_entries, requires_nvcc,
                          runnable_variants, sass_opcodes)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "double_buffered_pipeline.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.double_buffered_pipeline"
VARIANTS = ["baseline", "tiled", "double_buffered"]
KERNELS = {"baseline": "naive_kernel", "tiled": "tiled_kernel", "double_buffered": "double_buffered_kernel"}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"m": 2048, "n": 2048, "k": 2048}
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert pair.tolerance == 1e-5 and pair.lesson and "\n" not in pair.lesson
    assert mod.LIBRARY.arch == "sm_90a"
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == VARIANTS
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == []
    for text in ("1.776x", "LDGSTS", "m=128,n=128,k=128", "ValueError"):
        assert text in mod.__doc__


def test_flops_and_bytes_formulas(mod):
    d = mod.DEFAULT_SIZES
    assert mod.flops(d) == 2 * 2048**3 == 17_179_869_184
    assert mod.bytes(d) == 4 * 3 * 2048**2 == 50_331_648              # 48 MiB: A, B in, C out
    assert mod.flops({"m": 64, "n": 128, "k": 192}) == 2 * 64 * 128 * 192
    assert mod.bytes({"m": 64, "n": 128, "k": 192}) == 4 * (64 * 192 + 192 * 128 + 64 * 128)


def test_make_inputs_are_seeded_and_sizes_checked(mod):
    a, b, c = (mod.make_inputs(mod.SMALL_SIZES, "cpu", s) for s in (3, 3, 4))
    assert a["a"].shape == (128, 128) and a["b"].shape == (128, 128) and a["a"].dtype == torch.float32
    assert torch.equal(a["a"], b["a"]) and torch.equal(a["b"], b["b"]) and not torch.equal(a["a"], c["a"])
    ref = mod.reference(a)
    assert ref.dtype == torch.float64 and torch.equal(ref, a["a"].double() @ a["b"].double())
    assert mod.make_inputs({"m": 1, "n": 3, "k": 5}, "cpu", 0)["a"].shape == (1, 5)     # edge twins take any size
    for bad in ({"m": 0, "n": 64, "k": 64}, {"m": 64, "n": 64, "k": 0}, {"m": mod.MAX_M + 1, "n": 64, "k": 64}):
        with pytest.raises(ValueError, match="must be >= 1"):
            mod.make_inputs(bad, "cpu", 0)


def test_fp32_sequential_accumulation_is_well_inside_the_tolerance(mod):
    # The kernels' arithmetic: each output summed over k in order in fp32 (here a rounded multiply
    # and a rounded add per term, worse than the kernels' FFMA). 16 rows at the default K = 2048.
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(16, 2048, generator=gen)
    b = torch.randn(2048, 256, generator=gen)
    acc = torch.zeros(16, 256)
    for k in range(2048):
        acc = acc + a[:, k:k + 1] * b[k:k + 1, :]
    ref = a.double() @ b.double()
    err = float((acc.double() - ref).norm() / ref.norm())
    assert 1e-7 < err < mod.PAIR.tolerance / 4


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_refuse_cpu_tensors_before_building(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, mod.SMALL_SIZES)


# --- the CUDA source: ptxas, exported symbols, argument checks, SASS --------------------------

def _by_variant(kernels: dict) -> dict:
    out = {}
    for variant, kernel in KERNELS.items():
        (name,) = [k for k in kernels if re.search(rf"\d{kernel}E", k)]
        out[variant] = kernels[name]
    return out


@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_no_local_memory_and_refuses_bad_sizes(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert len(compiled) == 5   # 3 + 2 edge twins
    assert frame_count == 5
    lib = ctypes.CDLL(str(library))
    fn = lib.aisp_db_gemm
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    invalid_value = 1                                                # cudaErrorInvalidValue, before any CUDA call
    assert fn(1, 256, 256, 256, 0, 64, 64, None) == invalid_value    # no rows
    assert fn(2, 256, 256, 256, 64, 64, 0, None) == invalid_value    # no k
    assert fn(0, 256, 256, 256, 65535 * 32 + 1, 64, 64, None) == invalid_value   # past the naive grid's height
    assert fn(3, 256, 256, 256, 64, 64, 64, None) == invalid_value   # no such variant
    assert fn(0, None, 256, 256, 64, 64, 64, None) == invalid_value


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_each_variants_mechanism(built):
    sass = _by_variant(sass_opcodes(built[0]))
    for ops in sass.values():
        assert ops["LDL"] == ops["STL"] == 0 and ops["FFMA"] > 0
    naive, tiled, double = sass["baseline"], sass["tiled"], sass["double_buffered"]
    # naive: straight from global memory, no shared memory, no barriers
    assert naive["LDG.E.CONSTANT"] > 0 and not any(op.startswith(("LDS", "STS", "BAR", "LDGSTS")) for op in naive)
    # tiled: synchronous staging, LDG.128 -> STS.128, two barriers per chunk, no cp.async
    assert tiled["LDG.E.128.CONSTANT"] == 4 and tiled["STS.128"] == 4 and tiled["BAR.SYNC.DEFER_BLOCKING"] == 2
    assert not any(op.startswith("LDGSTS") for op in tiled)
    # double buffered: cp.async (16-byte LDGSTS, L1 bypassed), no register round trip into STS
    assert double["LDGSTS.E.BYPASS.128"] > 0 and double["STS.128"] == 0 and double["LDG.E.128.CONSTANT"] == 0
    # the same inner loop: the same FFMAs and shared loads per chunk
    assert double["FFMA"] == tiled["FFMA"] and double["LDS.128"] == tiled["LDS.128"]


@pytest.mark.slow
@requires_nvcc
def test_library_exports_the_symbols_the_module_calls(built, mod):
    nm = subprocess.run(["nm", "-D", "--defined-only", str(built[0])], capture_output=True, text=True, check=False)
    if nm.returncode != 0:
        pytest.skip("needs nm (binutils)")
    for name in (*mod.LIBRARY.functions, mod.LIBRARY.error_string):
        assert f" T {name}" in nm.stdout


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("sizes", [{"m": 128, "n": 128, "k": 128}, {"m": 64, "n": 192, "k": 320},
                                   {"m": 320, "n": 64, "k": 64},
                                   # the edge twins: one element; ragged m, n, k; k below one chunk;
                                   # whole tiles but k off the chunk grid
                                   {"m": 1, "n": 1, "k": 1}, {"m": 100, "n": 130, "k": 77},
                                   {"m": 65, "n": 63, "k": 5}, {"m": 128, "n": 128, "k": 100},
                                   {"m": 1000, "n": 999, "k": 1001}])
def test_all_variants_pass_check_on_gpu(sizes):
    check.raise_if_failed(check.check_pair(pairs.find(NAME), sizes, device="cuda"))


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_on_gpu(mod, variant):
    inputs = mod.make_inputs({"m": 256, "n": 256, "k": 512}, "cuda", 5)
    ref = mod.reference(inputs)
    launch = getattr(mod, variant)(inputs)
    del inputs
    junk = torch.full((1 << 20,), float("nan"), device="cuda")     # would reuse freed inputs
    out = launch()
    torch.cuda.synchronize()
    del junk
    assert float((out.double() - ref).norm() / ref.norm()) < 1e-5
