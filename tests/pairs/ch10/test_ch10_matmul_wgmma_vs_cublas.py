"""ch10.matmul_wgmma_vs_cublas: imports cleanly, formulas and inputs are right, sizes must be whole
tiles, the tolerance is what the fp16 output rounding needs (and a wrong product fails it), the
CUDA source builds for sm_90a without warnings (no C7510: the wgmmas are not serialized), with its
symbols and no local memory, and the SASS is the single-stage TMA + wgmma schedule: HGMMA fed by
UTMALDG, an mbarrier expect_tx + try-wait, and a wgmma wait that leaves nothing in flight.

GPU only (marked `gpu`): both variants match the float64 reference at one tile, the sanitizer
size, multi-wave and book sizes; the closure owns its operands.
"""
from __future__ import annotations

import ctypes
import re

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, assert_exports, assert_support_probe,
                          ptxas_entries, requires_nvcc, runnable_variants, sass_functions, sass_opcodes)
from wgmma_gemm_checks import (assert_descriptor_bugs_are_caught, assert_reference_within_rounding,
                               assert_seeded_k_major_fp16)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "matmul_wgmma_vs_cublas.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.matmul_wgmma_vs_cublas"
VARIANTS = ["baseline", "cublas"]
ENTRY = "aisp_matmul_wgmma_vs_cublas"


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert pair.variants["baseline"].__name__ == "single_stage"
    assert dict(pair.sizes) == {"m": 8192, "n": 8192, "k": 8192}             # the book's size
    assert dict(pair.small_sizes) == {"m": 384, "n": 512, "k": 192}
    assert pair.tolerance == 2e-3
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert pair.variant_needs == {"baseline": ("gpu", "nvcc"), "cublas": ("gpu",)}
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == []
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == VARIANTS


def test_docstring_states_the_book_the_port_and_the_prediction(mod):
    doc = mod.__doc__
    for text in ("4.317x", ".to(float16)", "TMEM", "Predicted profile", "WARPGROUP.DEPBAR.LE gsb0, 0x0",
                 "long_scoreboard", "Sanitizer size", "% of cuBLAS"):
        assert text in doc, text


def test_flops_and_bytes_formulas(mod):
    d = {"m": 8192, "n": 8192, "k": 8192}
    assert mod.flops(d) == 2 * 8192**3
    assert mod.bytes(d) == 3 * 2 * 8192**2                                   # A, B read and C written once
    assert mod.bytes({"m": 2, "n": 3, "k": 4}) == 2 * (8 + 12 + 6)
    assert mod.flops(d) / mod.bytes(d) > 2700                                 # compute-bound


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

@pytest.fixture(scope="module")
def sass(built):
    (body,) = [b for name, b in sass_functions(built[0]).items() if "single_stage_kernel" in name]
    return body


@pytest.fixture(scope="module")
def ops(built):
    (counts,) = [c for name, c in sass_opcodes(built[0]).items() if "single_stage_kernel" in name]
    return counts


@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_without_warnings_or_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert len(compiled) == 1 and "single_stage_kernel" in compiled[0]
    assert frame_count == 1
    assert re.search(r"used 1 barriers, 16 bytes smem", report)            # the mbarrier (+ dynamic 49 KiB)
    assert_exports(library, (ENTRY, f"{ENTRY}_support", f"{ENTRY}_error_string"))


def _count(counts, prefix: str) -> int:
    return sum(n for op, n in counts.items() if op.startswith(prefix))


@pytest.mark.slow
@requires_nvcc
def test_sass_is_single_stage_tma_plus_wgmma(sass, ops):
    # (sass_opcodes stops at the lowercase x of 64x256x16: the shape is read from the text)
    assert len(re.findall(r"HGMMA\.64x256x16\.F32 R", sass)) == 4         # 4 k-steps of 16 per 64-wide k-tile
    assert _count(ops, "HGMMA") == 4                                       # fp16 (no .BF16), one shape
    assert ops["UTMALDG.2D"] == 2                                          # A's and B's box per k-tile
    assert ops["SYNCS.EXCH.64"] == 1                                       # one mbarrier: one stage
    assert ops["SYNCS.ARRIVE.TRANS64"] == 1                                # expect_tx
    assert ops["SYNCS.PHASECHK.TRANS64.TRYWAIT"] >= 1                      # the mbarrier try-wait
    assert ops["WARPGROUP.ARRIVE"] == 1                                    # wgmma.fence once per k-tile
    # wait_group 0 after every k-tile: nothing left in flight, and not one wait per HGMMA (no C7510)
    assert ops["WARPGROUP.DEPBAR.LE"] == 1 and "WARPGROUP.DEPBAR.LE gsb0, 0x0" in sass
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" not in sass
    assert ops["BAR.SYNC.DEFER_BLOCKING"] >= 2                             # after init, before each refill
    assert _count(ops, "STL") == 0 and _count(ops, "LDL") == 0             # no local memory
    assert _count(ops, "LDG") == 0 and _count(ops, "LDS") == 0 and _count(ops, "LDSM") == 0   # operands by TMA only
    assert ops["STG.E"] == 64                                              # fp16x2 stores straight from registers
    assert _count(ops, "USETMAXREG") == 0                                  # no warp specialization


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = getattr(lib, ENTRY)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    invalid, misaligned = 1, 716          # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(1, 16, 16, 16, 128, 256, 64, None) == invalid       # no such variant
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
@pytest.mark.parametrize("sizes", [{"m": 128, "n": 256, "k": 64}, {"m": 384, "n": 512, "k": 192},
                                   {"m": 1024, "n": 768, "k": 4096}, {"m": 3072, "n": 4096, "k": 512},
                                   {"m": 8192, "n": 8192, "k": 8192},
                                   # edge tiles: one partial tile; ragged m, n and k; odd n (unpaired half2)
                                   {"m": 1, "n": 1, "k": 8}, {"m": 200, "n": 300, "k": 72},
                                   {"m": 1000, "n": 777, "k": 1000}])
def test_every_variant_matches_the_float64_reference(sizes):
    # one tile and one k-tile; the sanitizer size; 24 tiles x 64 k-tiles; 384 tiles (2.9 waves of
    # 132 SMs, 3 groups of 8 row tiles); the book's size
    if torch.cuda.get_device_capability()[:2] != (9, 0):
        pytest.skip("sm_90a kernels: Hopper only")
    result = check.check_pair(pairs.find(NAME), sizes, device="cuda", variants=VARIANTS, trials=1)
    check.raise_if_failed(result)
    # the hand-written kernels: the fp16 rounding, nothing more (cuBLAS may split k and reduce in
    # fp16, torch's default: it is held to the pair's tolerance only)
    assert all(c.rel_err_vs_reference < 5e-4 for c in result.checks if c.variant != "cublas")


@pytest.mark.gpu
@requires_nvcc
def test_closure_owns_its_operands_on_gpu(mod):
    if torch.cuda.get_device_capability()[:2] != (9, 0):
        pytest.skip("sm_90a kernels: Hopper only")
    inputs = mod.make_inputs({"m": 512, "n": 512, "k": 256}, "cuda", 5)
    ref = mod.reference(inputs)
    launch = mod.PAIR.variants["baseline"](inputs)
    del inputs
    junk = torch.full((1 << 22,), float("nan"), device="cuda", dtype=torch.float16)   # would reuse freed operands
    out = launch()
    torch.cuda.synchronize()
    del junk
    assert check._rel_err(out.double(), ref) < 5e-4
