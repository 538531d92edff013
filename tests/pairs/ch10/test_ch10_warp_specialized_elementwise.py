"""ch10.warp_specialized_elementwise (the book's warp_specialized_pipeline_enhanced): imports
cleanly, formulas and inputs are right, the reference is exactly what a correctly rounded fp32
sqrt returns on these integer inputs, CPU tensors are refused before any build, the CUDA source
builds for sm_90a without local memory and refuses bad arguments, and the SASS shows synchronous
LDG -> STS staging (three barriers per tile, no mbarrier) in the baseline and block-collective
cp.async (LDGSTS) with the pipeline's mbarrier (one barrier per tile, no LDG) in the pipelined kernel.

GPU only (marked `gpu`): both variants exactly equal to the reference at one tile, fewer tiles
than blocks, ragged and multi-tile-per-block sizes, and closures that own their inputs.
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

PAIR_PATH = ROOT / "kernels" / "ch10" / "warp_specialized_elementwise.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.warp_specialized_elementwise"
VARIANTS = ["baseline", "pipelined"]
KERNELS = {"baseline": r"baseline_kernelE", "pipelined": r"pipelined_kernelE"}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"tiles": 4096} and dict(pair.small_sizes) == {"tiles": 600}
    assert pair.tolerance == 0.0
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "nvcc" in pair.requires.needs
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {"aisp_wsp_elementwise"}
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson
    doc = mod.__doc__
    for text in ("warp_specialized_pipeline_enhanced", "1.527x", "15.0 us", "LDGSTS", "Missing wait",
                 "tiles = 600", "tolerance 0"):
        assert text in doc, text


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"tiles": 4096}) == 4 * 1024 * 4096
    assert mod.bytes({"tiles": 4096}) == 12 * 1024 * 4096 == 48 << 20        # A, B, C: 16 MiB each
    assert mod.bytes({"tiles": 1}) == 12_288 and mod.flops({"tiles": 3}) == 12_288


def test_make_inputs_are_seeded_integer_tiles(mod):
    a, b, c = (mod.make_inputs({"tiles": 300}, "cpu", s) for s in (3, 3, 4))
    assert a["a"].shape == a["b"].shape == (300, 32, 32) and a["a"].dtype == a["b"].dtype == torch.float32
    assert torch.equal(a["a"], b["a"]) and torch.equal(a["b"], b["b"]) and not torch.equal(a["a"], c["a"])
    assert not torch.equal(a["a"], a["b"])
    for t in (a["a"], a["b"]):
        assert torch.equal(t, t.round()) and float(t.min()) == -2048.0 and float(t.max()) == 2048.0
    for tiles in (0, -1):
        with pytest.raises(ValueError, match="tiles"):
            mod.make_inputs({"tiles": tiles}, "cpu", 0)


def test_reference_is_the_correctly_rounded_fp32_root(mod):
    inputs = mod.make_inputs({"tiles": 300}, "cpu", 1)
    a, b = inputs["a"], inputs["b"]
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == a.shape
    assert torch.equal(ref.float().double(), ref)                     # representable in fp32
    # a^2 + b^2 is exact in fp32 (<= 2^23) and an IEEE fp32 sqrt rounds correctly: fp32 math gives
    # the reference. numpy's float32 sqrt is the IEEE one; torch's CPU float32 sqrt is not (it is
    # 1 ulp off on ~18% of these inputs), so it cannot stand in for the GPU's sqrtf here.
    np = pytest.importorskip("numpy")
    s32 = a * a + b * b
    assert float(s32.max()) <= 2**23 and torch.equal(s32.double(), a.double() ** 2 + b.double() ** 2)
    assert torch.equal(torch.from_numpy(np.sqrt(s32.numpy())).double(), ref)
    # and it is not the unrounded float64 root (rounding to fp32 is what makes tolerance 0 possible)
    exact = torch.sqrt(a.double() ** 2 + b.double() ** 2)
    assert not torch.equal(exact, ref) and float((exact - ref).abs().max()) <= 2.0 ** -24 * float(exact.max())
    # squares of perfect Pythagorean triples come out exact
    triple = {"a": torch.full((1, 32, 32), 3.0), "b": torch.full((1, 32, 32), 4.0)}
    assert torch.equal(mod.reference(triple), torch.full((1, 32, 32), 5.0, dtype=torch.float64))


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"tiles": 2})


# --- the CUDA source ------------------------------------------------------------------------

@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_symbols_and_no_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert len(compiled) == 2
    assert frame_count == 2
    smem = sorted(int(s) for s in re.findall(r"used 1 barriers, (\d+) bytes smem", report))
    assert smem[0] == 12288 and 24576 < smem[1] <= 24576 + 64          # 3 x 4 KiB; 2 stages + pipeline state
    assert_exports(library, ("aisp_wsp_elementwise", "aisp_wsp_elementwise_error_string"))


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built, mod):
    fn = ctypes.CDLL(str(built[0])).aisp_wsp_elementwise
    fn.restype = ctypes.c_int
    fn.argtypes = mod.LIBRARY.functions["aisp_wsp_elementwise"][0]
    invalid, misaligned = 1, 716           # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(2, 256, 512, 768, 4, None) == invalid        # no such variant
    assert fn(0, 256, 512, 768, 0, None) == invalid        # no tiles
    assert fn(1, 256, None, 768, 4, None) == invalid       # null B
    assert fn(1, 260, 512, 768, 4, None) == misaligned     # A not 16-byte aligned


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_sync_staging_in_the_baseline_and_cp_async_in_the_pipelined_kernel(built):
    sass = by_variant(sass_opcodes(built[0]), KERNELS)
    for variant, ops in sass.items():
        assert ops["LDL"] == ops["STL"] == 0, variant
        assert ops["MUFU.RSQ"] >= 1 and ops["MUFU.SQRT"] == 0, variant     # IEEE sqrtf, not the approximate one
        assert ops["STG.E"] >= 1 and ops["STG.E.128"] == 0, variant        # the book's 4-byte store warp
    base, pipe = sass["baseline"], sass["pipelined"]
    assert base["LDG.E.CONSTANT"] >= 16 and base["STS"] >= 16 and base["BAR.SYNC.DEFER_BLOCKING"] == 3
    assert not any(op.startswith(("LDGSTS", "SYNCS", "ARRIVES")) for op in base)
    # block-collective cp.async, 16 bytes each (L1 bypassed); no register round trip for A and B
    assert pipe["LDGSTS.E.BYPASS.128"] >= 1 and not any(op.startswith("LDG.") for op in pipe)
    assert pipe["SYNCS.ARRIVE.TRANS64.RED.A0T1"] >= 1 and pipe["ARRIVES.LDGSTSBAR.64.TRANSCNT"] >= 1
    assert pipe["SYNCS.ARRIVE.TRANS64.A1T0"] >= 1 and pipe["SYNCS.PHASECHK.TRANS64.TRYWAIT"] >= 1
    # one __syncthreads in make_pipeline, one per tile (the book's optimized has five per tile)
    assert pipe["BAR.SYNC.DEFER_BLOCKING"] == 2


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("tiles", [1, 255, 600, 4096, 10000])
def test_every_variant_is_exact_on_gpu(tiles):
    # 1: one block; 255: fewer tiles than blocks; 600: 88 blocks refill a stage; 4096: the book's
    # size (16 tiles a block); 10000: a ragged last round of tiles
    result = check.check_pair(pairs.find(NAME), {"tiles": tiles}, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_and_repeats_on_gpu(mod, variant):
    (first, out), ref = run_with_inputs_freed(mod, variant, {"tiles": 1500}, calls=2)
    assert torch.equal(first, out) and torch.equal(out.double(), ref)
