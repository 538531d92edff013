"""ch10.cooperative_persistent: imports cleanly, its map stays bounded and informative and fp32
stays well inside the tolerance, its CUDA C++ builds for sm_90a without local memory, the SASS
shows synchronous staging in the baseline, cp.async (LDGSTS) in the pipelined kernels and a grid
barrier only in the cooperative one, and (GPU only) every variant matches the float64 reference.
"""
from __future__ import annotations

import ctypes
import re

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, ptxas_entries, requires_nvcc,
                          runnable_variants, sass_opcodes)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "cooperative_persistent.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.cooperative_persistent"
VARIANTS = ["baseline", "async_pipeline", "cooperative"]
KERNELS = {"baseline": "sync_staged_kernel", "async_pipeline": "async_staged_kernel",
           "cooperative": "cooperative_kernel"}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"n": 1 << 24, "iters": 40}
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and mod.LIBRARY.arch == "sm_90a"
    assert pair.tolerance == 1e-5 and pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == VARIANTS
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == []
    for text in ("1.107x", "cudaLaunchCooperativeKernel", "grid.sync", "n=65536", "no\ncooperative launch"):
        assert text in mod.__doc__


def test_flops_and_bytes_formulas(mod):
    d = mod.DEFAULT_SIZES
    assert mod.flops(d) == 11 * (1 << 24) * 40
    assert mod.bytes(d) == 8 * (1 << 24) * 40 == 5_368_709_120     # 64 MiB in + out, 40 times
    assert mod.bytes({"n": 2048, "iters": 3}) == 8 * 2048 * 3


def test_make_inputs_are_seeded_and_sizes_checked(mod):
    a, b, c = (mod.make_inputs(mod.SMALL_SIZES, "cpu", s) for s in (1, 1, 2))
    assert a["x"].shape == (65536,) and a["x"].dtype == torch.float32 and a["iters"] == 40
    assert torch.equal(a["x"], b["x"]) and not torch.equal(a["x"], c["x"])
    assert mod.make_inputs({"n": 1024}, "cpu", 0)["iters"] == 40
    assert mod.make_inputs({"n": 1000, "iters": 3}, "cpu", 0)["x"].shape == (1000,)    # a tail, no whole tile
    for bad in ({"n": 0, "iters": 40}, {"n": 1024, "iters": 0}, {"n": 2**41, "iters": 1}):
        with pytest.raises(ValueError, match="must be >= 1|iters"):
            mod.make_inputs(bad, "cpu", 0)


@pytest.mark.slow
def test_map_is_bounded_informative_and_fp32_stays_inside_the_tolerance(mod):
    inputs = mod.make_inputs({"n": 1 << 18, "iters": 40}, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and float(ref.abs().max()) < 2.5        # bounded
    assert float(ref.std()) > 0.5                                               # not collapsed to a fixed point
    fewer = mod.reference({**inputs, "iters": 39})
    assert float((fewer - ref).norm() / ref.norm()) > 100 * mod.PAIR.tolerance  # 39 passes != 40 passes
    v = inputs["x"].clone()                                                     # the kernels' arithmetic, fp32
    for _ in range(40):
        v = mod.step(v)
    assert v.dtype == torch.float32
    assert float((v.double() - ref).norm() / ref.norm()) < mod.PAIR.tolerance / 20


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_refuse_cpu_tensors_before_building(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"n": 1024}, match="CUDA tensor")


# --- the CUDA source ----------------------------------------------------------------------------

def _by_variant(kernels: dict) -> dict:
    out = {}
    for variant, kernel in KERNELS.items():
        (name,) = [k for k in kernels if re.search(rf"\d{kernel}E", k)]
        out[variant] = kernels[name]
    return out


@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_no_local_memory_and_refuses_bad_arguments(built, mod):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert len(compiled) == 4   # 3 variants + the tail
    assert frame_count == 4
    lib = ctypes.CDLL(str(library))
    fn = lib.aisp_coop_persistent
    fn.restype = ctypes.c_int
    fn.argtypes = mod.LIBRARY.functions["aisp_coop_persistent"][0]
    invalid_value, misaligned = 1, 716            # returned before any CUDA call
    assert fn(0, 256, 512, 0, 40, None) == invalid_value         # nothing to do
    assert fn(1, 256, 512, 1024, 0, None) == invalid_value       # no iterations
    assert fn(3, 256, 512, 1024, 40, None) == invalid_value      # no such variant
    assert fn(2, None, 512, 1024, 40, None) == invalid_value
    assert fn(2, 260, 512, 1024, 40, None) == misaligned


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_sync_staging_cp_async_and_the_grid_barrier(built):
    sass = _by_variant(sass_opcodes(built[0]))
    for ops in sass.values():
        assert ops["LDL"] == ops["STL"] == 0 and ops["STG.E.128"] >= 1
    base, pipe, coop = sass["baseline"], sass["async_pipeline"], sass["cooperative"]
    # baseline: LDG.128 -> STS.128, three block barriers per tile, no cp.async
    assert base["LDG.E.128.CONSTANT"] >= 1 and base["STS.128"] >= 1 and base["BAR.SYNC.DEFER_BLOCKING"] == 3
    assert not any(op.startswith("LDGSTS") for op in base)
    for ops in (pipe, coop):    # cp.async of 16 bytes (L1 bypassed) tracked by the pipeline's mbarrier
        assert ops["LDGSTS.E.BYPASS.128"] >= 1 and ops["ARRIVES.LDGSTSBAR.64.TRANSCNT"] >= 1
        assert ops["STS.128"] == 0 and ops["LDG.E.128.CONSTANT"] == 0
    # grid.sync(): a GPU-scope atomic on the grid barrier and an L1 invalidation, in the cooperative kernel only
    assert coop["ATOM.E.ADD.STRONG.GPU"] >= 1 and coop["CCTL.IVALL"] >= 1
    assert pipe["ATOM.E.ADD.STRONG.GPU"] == 0 and pipe["CCTL.IVALL"] == 0 and base["CCTL.IVALL"] == 0


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("sizes", [{"n": 65536, "iters": 40},      # 64 tiles: one per block
                                   {"n": 1024 * 1000, "iters": 7},  # tiles not a multiple of the grid
                                   {"n": 1024, "iters": 3},         # one block
                                   {"n": 1, "iters": 5},            # the tail kernel alone
                                   {"n": 1000, "iters": 40},        # less than a tile
                                   {"n": 65536 + 777, "iters": 40},  # whole tiles and a tail
                                   {"n": 1024 * 1000 + 3, "iters": 7}])
def test_all_variants_pass_check_on_gpu(sizes):
    check.raise_if_failed(check.check_pair(pairs.find(NAME), sizes, device="cuda"))


@pytest.mark.gpu
@requires_nvcc
def test_cooperative_grid_is_co_resident_on_gpu(mod):
    for variant in VARIANTS:
        info = mod.kernel_info(variant)
        assert info["local_bytes"] == 0 and info["grid"] == min(4 * info["sm_count"], (1 << 24) // 1024)
        assert info["max_blocks_per_sm"] >= 4                     # the 4 x SMs grid fits at once
    assert mod.kernel_info("cooperative", 65536)["grid"] == 64


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_input_and_repeats_on_gpu(mod, variant):
    inputs = mod.make_inputs({"n": 1 << 20, "iters": 40}, "cuda", 3)
    ref = mod.reference(inputs)
    launch = getattr(mod, variant)(inputs)
    del inputs
    junk = torch.full((1 << 21,), float("nan"), device="cuda")
    first = launch().clone()
    out = launch()                      # x untouched: the second call gives the same output
    torch.cuda.synchronize()
    del junk
    assert torch.equal(first, out)
    assert float((out.double() - ref).norm() / ref.norm()) < 1e-5
