"""ch10.warp_specialized_pipeline: imports cleanly, formulas and inputs are right (integer tiles,
exact fp32 GEMMs), CPU tensors are refused before any build, the CUDA source builds for sm_90a
without local memory and refuses bad arguments, and the SASS shows each variant's mechanism:
synchronous LDG -> STS staging and no mbarrier in the baseline, cp.async (LDGSTS) tracked by the
pipeline's mbarrier and no LDG in the pipelined kernels, the same 64-FFMA multiply in all three.

GPU only (marked `gpu`): every variant exactly equal to the float64 reference at one tile, fewer
tiles than blocks, ragged and multi-tile-per-block sizes, and closures that own their inputs.
"""
from __future__ import annotations

import ctypes
import re

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, assert_every_variant_needs_gpu_and_nvcc,
                          assert_exports, by_variant, ptxas_entries, requires_nvcc, run_with_inputs_freed,
                          sass_opcodes)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "warp_specialized_pipeline.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.warp_specialized_pipeline"
VARIANTS = ["baseline", "pipelined", "pipelined_4compute"]
KERNELS = {"baseline": r"baseline_kernelE", "pipelined": r"pipelined_kernelILi1EE",
           "pipelined_4compute": r"pipelined_kernelILi4EE"}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"tiles": 512} and dict(pair.small_sizes) == {"tiles": 259}
    assert pair.tolerance == 0.0
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "nvcc" in pair.requires.needs
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {"aisp_wsp_gemm"}
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson
    doc = mod.__doc__
    for text in ("1.283x", "ONE cold launch", "cudaFuncAttributeMaxDynamicSharedMemorySize", "pipeline_role",
                 "LDGSTS", "Missing wait", "tiles = 259", "tolerance 0"):
        assert text in doc, text


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"tiles": 512}) == 2 * 64**3 * 512 == 268_435_456
    assert mod.bytes({"tiles": 512}) == 3 * 16384 * 512 == 24 << 20          # A, B, C: 8 MiB each
    assert mod.flops({"tiles": 1}) == 524_288 and mod.bytes({"tiles": 3}) == 3 * 3 * 16384


def test_make_inputs_are_seeded_integer_tiles(mod):
    a, b, c = (mod.make_inputs({"tiles": 40}, "cpu", s) for s in (3, 3, 4))
    assert a["a"].shape == a["b"].shape == (40, 64, 64) and a["a"].dtype == a["b"].dtype == torch.float32
    assert torch.equal(a["a"], b["a"]) and torch.equal(a["b"], b["b"]) and not torch.equal(a["a"], c["a"])
    assert not torch.equal(a["a"], a["b"])
    for t in (a["a"], a["b"]):
        assert torch.equal(t, t.round()) and float(t.min()) == -8.0 and float(t.max()) == 8.0
    for tiles in (0, -1):
        with pytest.raises(ValueError, match="tiles"):
            mod.make_inputs({"tiles": tiles}, "cpu", 0)


def test_reference_is_a_product_per_tile_and_exact_in_fp32(mod):
    inputs = mod.make_inputs({"tiles": 6}, "cpu", 1)
    a, b = inputs["a"], inputs["b"]
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (6, 64, 64)
    for t in (0, 5):
        assert torch.equal(ref[t], a[t].double() @ b[t].double())
    assert not torch.equal(ref[0], a[0].double() @ b[1].double())            # tiles are not mixed
    # the exactness claim: fp32 sums of these integer products, in any order, equal the float64 ones
    assert float(ref.abs().max()) < 2**24
    assert torch.equal(torch.bmm(a, b).double(), ref)
    rev = (a.flip(2).unsqueeze(3) * b.flip(1).unsqueeze(1)).cumsum(2)[:, :, -1, :]    # k summed backwards in fp32
    assert torch.equal(rev.double(), ref)


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"tiles": 2})


# --- the CUDA source ------------------------------------------------------------------------

@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_symbols_and_no_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert len(compiled) == 3
    assert frame_count == 3
    assert re.search(r"used 1 barriers, 49152 bytes smem", report)          # the baseline's 3 x 16 KiB
    assert_exports(library, ("aisp_wsp_gemm", "aisp_wsp_gemm_error_string"))


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built, mod):
    fn = ctypes.CDLL(str(built[0])).aisp_wsp_gemm
    fn.restype = ctypes.c_int
    fn.argtypes = mod.LIBRARY.functions["aisp_wsp_gemm"][0]
    invalid, misaligned = 1, 716           # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(3, 256, 512, 768, 4, None) == invalid        # no such variant
    assert fn(-1, 256, 512, 768, 4, None) == invalid
    assert fn(0, 256, 512, 768, 0, None) == invalid        # no tiles
    assert fn(1, None, 512, 768, 4, None) == invalid       # null A
    assert fn(2, 256, 512, 776, 4, None) == misaligned     # C not 16-byte aligned


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_sync_staging_in_the_baseline_and_cp_async_in_the_pipelined_kernels(built):
    sass = by_variant(sass_opcodes(built[0]), KERNELS)
    for variant, ops in sass.items():
        assert ops["LDL"] == ops["STL"] == 0, variant                       # no local memory
        assert ops["FFMA"] == 64, variant                                   # the same fully unrolled 64-term dot product
        assert ops["STG.E"] >= 1 and ops["STG.E.128"] == 0, variant         # the book's 4-byte store warp
    base = sass["baseline"]
    # baseline: 4-byte LDG -> STS by warp 0, three block barriers per tile, no cp.async, no mbarrier
    assert base["LDG.E.CONSTANT"] >= 16 and base["STS"] >= 16 and base["BAR.SYNC.DEFER_BLOCKING"] == 3
    assert not any(op.startswith(("LDGSTS", "SYNCS", "ARRIVES")) for op in base)
    for variant in ("pipelined", "pipelined_4compute"):
        ops = sass[variant]
        # cp.async of 16 bytes (L1 bypassed), no register round trip: no LDG at all, one STS (C)
        assert ops["LDGSTS.E.BYPASS.128"] >= 32 and not any(op.startswith("LDG.") for op in ops), variant
        assert ops["STS"] <= 1, variant
        # producer_commit: tx-count +1, the async LDGSTS arrive, the regular arrive; waits by phase parity
        assert ops["SYNCS.ARRIVE.TRANS64.RED.A0T1"] >= 1 and ops["ARRIVES.LDGSTSBAR.64.TRANSCNT"] >= 1, variant
        assert ops["SYNCS.ARRIVE.TRANS64.A1T0"] >= 1 and ops["SYNCS.PHASECHK.TRANS64.TRYWAIT"] >= 1, variant


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("tiles", [1, 3, 128, 259, 512, 1000])
def test_every_variant_is_exact_on_gpu(tiles):
    # 1: one block, one stage used; 3: fewer tiles than 128 blocks; 259: three blocks refill a
    # stage; 1000: ~8 tiles per block, every stage refilled several times
    result = check.check_pair(pairs.find(NAME), {"tiles": tiles}, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_and_repeats_on_gpu(mod, variant):
    (first, out), ref = run_with_inputs_freed(mod, variant, {"tiles": 300}, calls=2)
    assert torch.equal(first, out) and torch.equal(out.double(), ref)
