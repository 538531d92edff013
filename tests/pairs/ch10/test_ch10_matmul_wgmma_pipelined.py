"""ch10.matmul_wgmma_pipelined: imports cleanly, formulas and inputs are right, sizes must be whole
tiles, the tolerance is what the fp16 output rounding needs (and a wrong product fails it), the
CUDA source builds for sm_90a without warnings (no C7510: the wgmmas are not serialized), with its
symbols and no local memory, and the SASS shows the two schedules: both kernels HGMMA fed by
UTMALDG through mbarrier expect_tx + try-wait; the single-stage kernel waits for every wgmma group
(WARPGROUP.DEPBAR gsb0, 0x0 only) with one mbarrier and a block barrier per k-tile; the ring keeps
one group in flight in its loop (gsb0, 0x1), has 8 mbarriers, releases stages with a plain arrive
and has no block barrier in its loop.

GPU only (marked `gpu`): every variant matches the float64 reference at k-tile counts below, at
and above the ring's depth, at the sanitizer size and at multi-wave sizes; the ring is clearly
faster than one stage; the closure owns its operands.
"""
from __future__ import annotations

import ctypes
import re

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, assert_exports, assert_support_probe,
                          hopper_only, ptxas_entries, requires_nvcc, runnable_variants)
from wgmma_gemm_checks import (assert_descriptor_bugs_are_caught, assert_reference_within_rounding,
                               assert_seeded_k_major_fp16)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "matmul_wgmma_pipelined.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.matmul_wgmma_pipelined"
VARIANTS = ["baseline", "pipelined", "cublas"]
KERNELS = ("single_stage_kernel", "pipelined_kernel")
ENTRY = "aisp_matmul_wgmma_pipelined"


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert pair.variants["baseline"].__name__ == "single_stage"
    assert dict(pair.sizes) == {"m": 12288, "n": 12288, "k": 12288}          # the book's size
    assert dict(pair.small_sizes) == {"m": 256, "n": 768, "k": 576}          # 9 k-tiles: the ring wraps twice
    assert pair.tolerance == 2e-3
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert pair.variants["pipelined"].__name__ == "pipelined"
    assert pair.variant_needs == {"baseline": ("gpu", "nvcc"), "pipelined": ("gpu", "nvcc"), "cublas": ("gpu",)}
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == []
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == VARIANTS


def test_docstring_states_the_book_the_port_and_the_prediction(mod):
    doc = mod.__doc__
    for text in ("2.534x", "umma_arrive", "TMEM", "Predicted profile", "WARPGROUP.DEPBAR.LE gsb0, 0x1",
                 "long_scoreboard", "Sanitizer size", "% of cuBLAS", ">= 90% of cuBLAS", "warp_specialization"):
        assert text in doc, text


def test_flops_and_bytes_formulas(mod):
    d = {"m": 12288, "n": 12288, "k": 12288}
    assert mod.flops(d) == 2 * 12288**3                                      # 3.71 TFLOP
    assert mod.bytes(d) == 3 * 2 * 12288**2                                  # A, B read and C written once
    assert mod.bytes({"m": 2, "n": 3, "k": 4}) == 2 * (8 + 12 + 6)
    assert mod.flops(d) / mod.bytes(d) == 4096                               # compute-bound


def test_stages_constant_is_the_kernels(mod):
    source = CU_PATH.read_text()
    assert mod.STAGES == 4 and f"constexpr int kStages = {mod.STAGES};" in source


def test_make_inputs_are_seeded_k_major_fp16(mod):
    assert_seeded_k_major_fp16(mod, {"m": 128, "n": 256, "k": 128})


@pytest.mark.parametrize("sizes", [{"m": 0, "n": 256, "k": 64}, {"m": 128, "n": 0, "k": 64},
                                   {"m": 128, "n": 256, "k": 0}, {"m": 128, "n": 256, "k": 4},
                                   {"m": 128, "n": 256, "k": 100}, {"m": 2**31, "n": 256, "k": 64}])
def test_sizes_outside_the_tma_limit_are_refused(mod, sizes):
    with pytest.raises(ValueError, match=r"m, n >= 1 and k a positive multiple of 8 \(TMA needs 16-byte row pitches\)"):
        mod.make_inputs(sizes, "cpu", 0)


def test_reference_and_tolerance(mod):
    a, b, ref = assert_reference_within_rounding(mod, {"m": 128, "n": 256, "k": 512})
    assert_descriptor_bugs_are_caught(mod, a, b, ref)


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"m": 128, "n": 256, "k": 64})


def test_library_is_declared_for_sm90a(mod):
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {ENTRY, f"{ENTRY}_support"}
    assert not mod.LIBRARY.include_dirs and not mod.LIBRARY.extra_flags          # plain sm_90a, self-contained


def test_unsupported_gpu_is_a_requirement_error(monkeypatch, mod):
    assert_support_probe(monkeypatch, mod, f"{ENTRY}_support", "baseline")


# --- the CUDA source ------------------------------------------------------------------------

def kernel_of(mangled: str) -> str:
    return next(k for k in KERNELS if re.search(rf"\d{k}E", mangled))


@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_without_warnings_or_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert sorted(kernel_of(c) for c in compiled) == sorted(KERNELS)
    assert frame_count == 2
    # static shared memory: one mbarrier (single stage); 4 full + 4 empty (the ring; stages are dynamic)
    assert sorted(map(int, re.findall(r"used 1 barriers, (\d+) bytes smem", report))) == [16, 64]
    assert_exports(library, (ENTRY, f"{ENTRY}_support", f"{ENTRY}_error_string"))


def _count(counts, prefix: str) -> int:
    return sum(n for op, n in counts.items() if op.startswith(prefix))


@pytest.mark.slow
@requires_nvcc
@pytest.mark.parametrize("kernel", KERNELS)
def test_sass_both_kernels_are_tma_plus_wgmma(sass, ops, kernel):
    body, k = sass[kernel], ops[kernel]
    # (sass_opcodes stops at the lowercase x of 64x256x16: the shape is read from the text)
    assert len(re.findall(r"HGMMA\.64x256x16\.F32 R", body)) == 4          # 4 k-steps of 16 per 64-wide k-tile
    assert _count(k, "HGMMA") == 4 and len(re.findall(r"HGMMA.*gsb0 ;", body)) == 1   # one group per k-tile
    assert k["WARPGROUP.ARRIVE"] == 1                                      # wgmma.fence once per k-tile
    assert k["UTMALDG.2D"] >= 2 and k["SYNCS.ARRIVE.TRANS64"] >= 1        # TMA + expect_tx
    assert k["SYNCS.PHASECHK.TRANS64.TRYWAIT"] >= 1                        # mbarrier try-wait
    assert _count(k, "STL") == 0 and _count(k, "LDL") == 0                 # no local memory
    assert _count(k, "LDG") == 0 and _count(k, "LDS") == 0                 # operands by TMA only
    assert k["STG.E"] == 64                                                # fp16x2 stores straight from registers
    assert _count(k, "USETMAXREG") == 0                                    # no warp specialization in either
    assert k["WARPGROUP.DEPBAR.LE"] <= 2                                   # not one wait per HGMMA (no C7510)


@pytest.mark.slow
@requires_nvcc
def test_sass_only_the_ring_keeps_a_wgmma_group_in_flight(sass, ops):
    single, ring = sass["single_stage_kernel"], sass["pipelined_kernel"]
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x0" in single and "WARPGROUP.DEPBAR.LE gsb0, 0x1" not in single
    assert ops["single_stage_kernel"]["WARPGROUP.DEPBAR.LE"] == 1
    # the ring: wait_group 1 in the loop, then wait_group 0 once, after it
    assert ring.index("WARPGROUP.DEPBAR.LE gsb0, 0x1") < ring.index("WARPGROUP.DEPBAR.LE gsb0, 0x0")
    assert ops["pipelined_kernel"]["WARPGROUP.DEPBAR.LE"] == 2
    assert ops["single_stage_kernel"]["SYNCS.EXCH.64"] == 1               # one mbarrier
    assert ops["pipelined_kernel"]["SYNCS.EXCH.64"] == 8                  # full[4] + empty[4]
    assert ops["pipelined_kernel"]["SYNCS.ARRIVE.TRANS64.A1T0"] == 1      # a warp releases a stage (plain arrive)
    assert ops["single_stage_kernel"]["SYNCS.ARRIVE.TRANS64.A1T0"] == 0
    assert ops["pipelined_kernel"]["SYNCS.PHASECHK.TRANS64.TRYWAIT"] > ops["single_stage_kernel"][
        "SYNCS.PHASECHK.TRANS64.TRYWAIT"]                                  # waits on full and on empty
    assert ops["pipelined_kernel"]["UTMALDG.2D"] == 4                      # prologue + refill
    # block barriers: after init and before every refill in the single stage; after init only in the ring
    assert ops["single_stage_kernel"]["BAR.SYNC.DEFER_BLOCKING"] == 2
    assert ops["pipelined_kernel"]["BAR.SYNC.DEFER_BLOCKING"] == 1


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = getattr(lib, ENTRY)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    invalid, misaligned = 1, 716          # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(2, 16, 16, 16, 128, 256, 64, None) == invalid       # no such variant
    assert fn(-1, 16, 16, 16, 128, 256, 64, None) == invalid
    assert fn(0, None, 16, 16, 128, 256, 64, None) == invalid     # null A
    assert fn(0, 16, 16, 16, 128, 256, 4, None) == invalid         # k not a multiple of 8 (TMA row pitch)
    assert fn(0, 16, 16, 16, 128, 0, 64, None) == invalid          # no columns
    assert fn(0, 16, 16, 16, 128, 256, 100, None) == invalid       # k not a multiple of 8
    assert fn(0, 16, 16, 16, 0, 256, 64, None) == invalid         # empty
    assert fn(0, 16, 16, 24, 128, 256, 64, None) == misaligned    # C not 16-byte aligned


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("sizes", [{"m": 128, "n": 256, "k": 64}, {"m": 128, "n": 256, "k": 128},
                                   {"m": 128, "n": 256, "k": 192}, {"m": 256, "n": 256, "k": 256},
                                   {"m": 128, "n": 512, "k": 320}, {"m": 256, "n": 768, "k": 576},
                                   {"m": 3072, "n": 4096, "k": 1024}, {"m": 4096, "n": 2048, "k": 8192},
                                   # edge tiles: one partial tile; ragged m, n and k; odd n; k-tiles < stages
                                   {"m": 1, "n": 1, "k": 8}, {"m": 200, "n": 300, "k": 72},
                                   {"m": 1000, "n": 777, "k": 1000}, {"m": 300, "n": 520, "k": 136}])
def test_every_variant_matches_the_float64_reference(sizes):
    # k-tiles 1, 2, 3 (= stages - 1: the prologue alone), 4 (= stages), 5 (one refill after a
    # wrap); the sanitizer size (9: two wraps); 384 tiles in 2.9 waves; 256 tiles x 128 k-tiles
    hopper_only()
    result = check.check_pair(pairs.find(NAME), sizes, device="cuda", variants=VARIANTS, trials=1)
    check.raise_if_failed(result)
    # the hand-written kernels: the fp16 rounding, nothing more (cuBLAS may split k and reduce in
    # fp16, torch's default: it is held to the pair's tolerance only)
    assert all(c.rel_err_vs_reference < 5e-4 for c in result.checks if c.variant != "cublas")


@pytest.mark.gpu
@requires_nvcc
def test_the_ring_is_clearly_faster_than_one_stage(mod):
    hopper_only()
    inputs = mod.make_inputs({"m": 4096, "n": 4096, "k": 4096}, "cuda", 0)
    times = {}
    for name in ("baseline", "pipelined"):
        launch = mod.PAIR.variants[name](inputs)
        launch()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for _ in range(10):
            start.record()
            launch()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        times[name] = sorted(samples)[5]
    # predicted ~1.8-2x; 1.4x leaves room for clocks and noise, not for a ring that waits on its math
    assert times["baseline"] > 1.4 * times["pipelined"], times


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", ["baseline", "pipelined"])
def test_closure_owns_its_operands_on_gpu(mod, variant):
    hopper_only()
    inputs = mod.make_inputs({"m": 512, "n": 512, "k": 512}, "cuda", 5)
    ref = mod.reference(inputs)
    launch = mod.PAIR.variants[variant](inputs)
    del inputs
    junk = torch.full((1 << 22,), float("nan"), device="cuda", dtype=torch.float16)   # would reuse freed operands
    out = launch()
    torch.cuda.synchronize()
    del junk
    assert check._rel_err(out.double(), ref) < 5e-4
