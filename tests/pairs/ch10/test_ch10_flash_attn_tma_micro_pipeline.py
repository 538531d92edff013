"""ch10.flash_attn_tma_micro_pipeline: imports cleanly, formulas and seeded inputs are right, the
float64 reference is the book's exp-weighted sum (clamp included, dot products exact), an fp32
emulation of the kernels' rounding sits well inside the tolerance while a dropped tile does not,
CPU tensors are refused before any build, a GPU without TMA is a RequirementError, the source
builds for sm_90a with no local memory, and SASS shows each variant's mechanism: LDG + STS tile
copies and no TMA in the baseline; UTMALDG + mbarrier (SYNCS) and no K/V loads from the SMs in
the three ring variants; four block barriers per key row in the book's two kernels; warp
shuffles and no per-key-row block barrier in the two new ones.

GPU only (marked `gpu`): every variant matches the reference at ragged, fewer-tiles-than-stages
and multi-wave sizes; the closure owns its inputs.
"""
from __future__ import annotations

import ctypes
import math
import re

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, assert_every_variant_needs_gpu_and_nvcc,
                          assert_exports, assert_probe_gates, by_variant, ptxas_entries, requires_nvcc, sass_opcodes)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "flash_attn_tma_micro_pipeline.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.flash_attn_tma_micro_pipeline"
VARIANTS = ["baseline", "tma_ring3", "tma_ring3_warp_reduce", "tma_ring3_rows8"]
KERNELS = {"baseline": r"15blocking_kernelE", "tma_ring3": r"16tma_ring3_kernelE",
           "tma_ring3_warp_reduce": r"21tma_ring3_warp_kernelILi1ELi4EE",
           "tma_ring3_rows8": r"21tma_ring3_warp_kernelILi2ELi1EE"}
LOG2E_F32 = 1.4426950216293335        # fp32(log2 e): __expf multiplies by it before ex2


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"seq": 4096, "d": 64} and dict(pair.small_sizes) == {"seq": 100, "d": 64}
    assert pair.tolerance == 5e-6
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson and "not softmax" in pair.lesson


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"seq": 4096, "d": 64}) == 4 * 64 * 4096**2 == 4_294_967_296
    assert mod.bytes({"seq": 4096, "d": 64}) == 16 * 64 * 4096 == 4 << 20      # q, k, v in, o out: 4 MiB
    assert mod.flops({"seq": 100}) == 4 * 64 * 100 * 100 and mod.bytes({"seq": 100}) == 16 * 64 * 100
    for bad, match in (({"seq": 64, "d": 128}, "d must be 64"), ({"seq": 0, "d": 64}, "seq must be"),
                       ({"seq": (1 << 24) + 1, "d": 64}, "seq must be")):
        with pytest.raises(ValueError, match=match):
            mod.flops(bad)
        with pytest.raises(ValueError, match=match):
            mod.make_inputs(bad, "cpu", 0)


def test_make_inputs_are_seeded_halves(mod):
    a, b, c = (mod.make_inputs({"seq": 300, "d": 64}, "cpu", s) for s in (3, 3, 4))
    assert set(a) == {"q", "k", "v"}
    for name in ("q", "k", "v"):
        t = a[name]
        assert t.dtype == torch.float32 and t.shape == (300, 64) and t.is_contiguous()
        assert torch.equal(t, b[name]) and not torch.equal(t, c[name])
        assert set((t * 2).unique().tolist()) == {-2.0, -1.0, 0.0, 1.0, 2.0}
    assert not torch.equal(a["q"], a["k"]) and not torch.equal(a["k"], a["v"])


def test_reference_is_the_clamped_exp_weighted_sum(mod):
    inputs = mod.make_inputs({"seq": 40, "d": 64}, "cpu", 1)
    q, k, v = (inputs[n].double() for n in ("q", "k", "v"))
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (40, 64)
    for i in (0, 17, 39):   # o[i] = sum_j exp(clamp(q_i . k_j)) * fp32(1e-3) * v_j, written out
        expected = sum(math.exp(min(max(float(q[i] @ k[j]), -10.0), 10.0)) * 0.0010000000474974513 * v[j]
                       for j in range(40))
        assert torch.allclose(ref[i], expected, rtol=1e-13, atol=1e-15)
    assert torch.equal(mod.reference(inputs, block_rows=7), ref)          # blocking changes nothing


def test_scores_are_exact_in_fp32_and_the_clamp_matters(mod):
    inputs = mod.make_inputs({"seq": 1024, "d": 64}, "cpu", 2)
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    exact = q.double() @ k.double().t()
    assert torch.equal((q @ k.t()).double(), exact)                       # fp32 dot products, no rounding
    assert torch.equal((q.flip(1) @ k.flip(1).t()).double(), exact)       # in any order
    clamped = float(((exact > 10) | (exact < -10)).double().mean())
    assert 0.002 < clamped < 0.05 and float(exact.max()) > 10 and float(exact.min()) < -10
    unclamped = (torch.exp(exact) * mod.SCALE) @ v.double()
    ref = mod.reference(inputs)
    assert float((unclamped - ref).norm() / ref.norm()) > 1000 * mod.PAIR.tolerance


def _fp32_weights(scores: torch.Tensor, scale: float) -> torch.Tensor:
    """__expf(clamp(s)) * 1e-3f as the kernels round it: fp32(s * fp32(log2 e)), ex2 rounded to
    fp32, times fp32(1e-3) rounded to fp32 (ex2.approx's own ~2 ulp are not modelled)."""
    arg = (scores.clamp(-10, 10).float() * torch.tensor(LOG2E_F32, dtype=torch.float32)).double()
    return (torch.exp2(arg).float() * torch.tensor(scale, dtype=torch.float32)).float()


def test_fp32_emulation_is_well_inside_the_tolerance_and_a_dropped_tile_is_not(mod):
    # 64 query rows at the default seq 4096: the weights as the kernels round them, each output
    # summed key by key with one rounding per term (an FFMA), in the baseline's order and in
    # warp_reduce's (four interleaved partial sums added at the end).
    inputs = mod.make_inputs({"seq": 4096, "d": 64}, "cpu", 0)
    q, k, v = inputs["q"][:64], inputs["k"], inputs["v"]
    ref = mod.reference({"q": q, "k": k, "v": v})
    w = _fp32_weights(q.double() @ k.double().t(), mod.SCALE).double()
    v64 = v.double()
    partial = [torch.zeros(64, 64, dtype=torch.float32) for _ in range(4)]
    sequential = torch.zeros(64, 64, dtype=torch.float32)
    for j in range(4096):
        term = w[:, j:j + 1] * v64[j]                     # exact in float64 (v is a multiple of 1/2)
        sequential = (sequential.double() + term).float()
        partial[j % 4] = (partial[j % 4].double() + term).float()
    split = ((partial[0] + partial[1]) + partial[2]) + partial[3]
    for out in (sequential, split):
        err = float((out.double() - ref).norm() / ref.norm())
        assert 1e-8 < err < mod.PAIR.tolerance / 2
    dropped = mod.reference({"q": q, "k": k[:-32], "v": v[:-32]})     # the last tile never loaded
    assert float((dropped - ref).norm() / ref.norm()) > 100 * mod.PAIR.tolerance


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"seq": 64, "d": 64})


def test_library_is_declared_for_sm90a(mod):
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {"aisp_micro_attention", "aisp_micro_attention_tma_support"}
    assert mod.LIBRARY.error_string == "aisp_micro_attention_error_string"


def test_no_tma_is_a_requirement_error(monkeypatch, mod):
    assert_probe_gates(monkeypatch, mod, "aisp_micro_attention_tma_support", lambda: mod._require_tma("tma_ring3"),
                       "needs TMA")


# --- the CUDA source ------------------------------------------------------------------------

@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_symbols_and_no_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert len(compiled) == 4 and all(any(re.search(p, c) for c in compiled) for p in KERNELS.values())
    assert frame_count == 4
    # the baseline's static K and V tiles (2 x 8 KiB) + the reduction array; the ring is dynamic
    assert re.search(r"used 1 barriers, 16896 bytes smem", report)
    assert_exports(library, ("aisp_micro_attention", "aisp_micro_attention_tma_support", "aisp_micro_attention_error_string"))


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_each_variants_mechanism(built):
    sass = by_variant(sass_opcodes(built[0]), KERNELS)
    for name, ops in sass.items():
        assert ops["LDL"] == ops["STL"] == 0, name                         # q and o in registers
        assert ops["MUFU.EX2"] > 0, name                                   # __expf
    base, ring = sass["baseline"], sass["tma_ring3"]
    # baseline: the tile copy from the SMs (LDG -> STS), no TMA, no mbarrier
    assert base["LDG.E.CONSTANT"] >= 8 and base["STS"] >= 8
    assert not any(op.startswith(("UTMA", "SYNCS", "UBLKCP", "LDGSTS")) for op in base)
    for name in ("tma_ring3", "tma_ring3_warp_reduce", "tma_ring3_rows8"):
        ops = sass[name]
        assert ops["UTMALDG.2D"] >= 2, name                                # K and V boxes by TMA
        assert ops["SYNCS.ARRIVE.TRANS64"] >= 1 and ops["SYNCS.PHASECHK.TRANS64.TRYWAIT"] >= 1, name   # expect_tx, wait
        loads = sum(n for op, n in ops.items() if op.startswith("LDG"))
        assert 1 <= loads <= 2, name                                       # only q comes through LDG
        assert not any(op.startswith(("UBLKCP", "LDGSTS")) for op in ops), name
        assert not any(op.startswith("LD.") for op in ops), name           # stages read as shared (LDS), not generic
    # the book's per-key-row step: four __syncthreads per key row, a shared-memory tree, no shuffles
    for name, ops in (("baseline", base), ("tma_ring3", ring)):
        assert ops["BAR.SYNC.DEFER_BLOCKING"] >= 4 and ops["SHFL.BFLY"] == 0, name
    # the new kernels: 5-step xor shuffles, no block barrier per key row, and no WARPSYNC.COLLECTIVE
    # (the shuffles are not under a branch the compiler cannot prove warp-uniform)
    # per tile, a warp of warp_reduce takes 8 key rows for 1 query row, one of rows8 32 for 2
    for name, key_rows, query_rows in (("tma_ring3_warp_reduce", 8, 1), ("tma_ring3_rows8", 32, 2)):
        ops = sass[name]
        assert ops["SHFL.BFLY"] == 5 * key_rows * query_rows, name         # the tile loop fully unrolled
        assert ops["LDS.64"] >= 2 * key_rows, name                          # a float2 of k and of v per key row
        assert ops["BAR.SYNC.DEFER_BLOCKING"] <= 3 and ops["WARPSYNC.COLLECTIVE"] == 0, name


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = lib.aisp_micro_attention
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 4 + [ctypes.c_int, ctypes.c_void_p]
    invalid, misaligned = 1, 716           # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(4, 16, 16, 16, 16, 100, None) == invalid               # no such variant
    assert fn(-1, 16, 16, 16, 16, 100, None) == invalid
    assert fn(1, 16, 16, 16, 16, 0, None) == invalid                 # seq < 1
    assert fn(1, 16, 16, 16, 16, (1 << 24) + 1, None) == invalid     # seq > 2^24
    assert fn(2, 16, None, 16, 16, 100, None) == invalid             # null k
    assert fn(3, 16, 16, 24, 16, 100, None) == misaligned            # v not 16-byte aligned


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("seq", [1, 33, 64, 100, 1000, 4096, 5003])
def test_every_variant_matches_the_reference_on_gpu(seq):
    # 1 and 33: fewer tiles than ring stages; 100, 1000, 5003: a ragged last tile and a ragged last
    # rows8 block; 4096 and 5003: several waves of blocks for every variant
    result = check.check_pair(pairs.find(NAME), {"seq": seq, "d": 64}, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference <= 5e-6 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_on_gpu(mod, variant):
    inputs = mod.make_inputs({"seq": 520, "d": 64}, "cuda", 5)
    ref = mod.reference(inputs)
    launch = mod.PAIR.variants[variant](inputs)
    del inputs
    junk = torch.full((1 << 22,), float("nan"), device="cuda")   # would reuse freed q, k, v
    out = launch()
    torch.cuda.synchronize()
    del junk
    assert float((out.double() - ref).norm() / ref.norm()) <= 5e-6
