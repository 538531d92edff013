"""ch10.tma_2d_pipeline: imports cleanly, formulas and inputs are right, the reference is the
kernels' two fp32 roundings (and an FMA would fail it), the CUDA source builds for sm_90a with its
symbols and no local memory, and SASS shows each variant's mechanism: scalar LDG/STG and nothing
asynchronous in the baseline; TMA loads and stores (UTMALDG/UTMASTG), mbarrier SYNCS instructions,
fence.proxy.async and bulk-group waits in both TMA kernels, with no LDG/STG of the data; a store
left in flight (wait_group.read 1) only in tma_hopper; no FFMA anywhere.

GPU only (marked `gpu`): every variant bit-exact against the reference at tiny, ragged,
multi-wave and book sizes; the closure owns its input.
"""
from __future__ import annotations

import ctypes
import re

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, assert_every_variant_needs_gpu_and_nvcc,
                          assert_exports, assert_probe_gates, ptxas_entries, requires_nvcc, run_with_inputs_freed)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "tma_2d_pipeline.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.tma_2d_pipeline"
VARIANTS = ["baseline", "tma_book_config", "tma_hopper"]
KERNELS = ("baseline_kernel", "tma_book_config_kernel", "tma_hopper_kernel")
TMA_KERNELS = ("tma_book_config_kernel", "tma_hopper_kernel")


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"m": 4096, "n": 4096}                   # the book's size
    assert dict(pair.small_sizes) == {"m": 300, "n": 388}
    assert pair.tolerance == 0.0
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"m": 4096, "n": 4096}) == 2 * 4096 * 4096
    assert mod.bytes({"m": 4096, "n": 4096}) == 128 * 2**20               # 64 MiB in, 64 MiB out
    assert mod.bytes({"m": 3, "n": 4}) == 96 and mod.flops({"m": 3, "n": 4}) == 24


def test_make_inputs_are_seeded_and_sizes_are_checked(mod):
    a, b, c = (mod.make_inputs({"m": 30, "n": 44}, "cpu", s)["x"] for s in (3, 3, 4))
    assert a.dtype == torch.float32 and a.shape == (30, 44) and a.is_contiguous()
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert 2.0 < float(a.std()) < 6.0                                       # N(0, 4^2)
    for sizes in ({"m": 8, "n": 6}, {"m": 8, "n": 0}, {"m": 8, "n": -4}):
        with pytest.raises(ValueError, match="multiple of 4"):
            mod.make_inputs(sizes, "cpu", 0)
    for m in (0, mod.MAX_M + 1):
        with pytest.raises(ValueError, match="m=.*between 1 and 8388480"):
            mod.make_inputs({"m": m, "n": 4}, "cpu", 0)


def test_constants_are_the_kernels_fp32_values(mod):
    f32 = torch.tensor([1.0001, 1e-4], dtype=torch.float32).double().tolist()
    assert [mod.SCALE, mod.SHIFT] == f32 and mod.SCALE != 1.0001
    source = CU_PATH.read_text()
    assert "kScale = 1.0001f" in source and "kShift = 1e-4f" in source
    assert "__fadd_rn(__fmul_rn(v, kScale), kShift)" in source


def test_reference_is_two_fp32_roundings_not_an_fma(mod):
    inputs = mod.make_inputs({"m": 300, "n": 388}, "cpu", 1)
    x, ref = inputs["x"], mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == x.shape
    # the product of two fp32 is exact in float64, and so is the sum at these magnitudes:
    # rounding each to fp32 is exactly RN(RN(x * a) + b)
    two_roundings = ((x.double() * mod.SCALE).float().double() + mod.SHIFT).float().double()
    assert torch.equal(ref, two_roundings)
    # one rounding (an FMA) differs by an ulp on many elements: tolerance 0 would catch it
    fused = (x.double() * mod.SCALE + mod.SHIFT).float().double()
    assert float((fused != ref).double().mean()) > 0.05
    assert check._rel_err(fused, ref) > 0.0
    # against the exact float64 value the error is at most half an ulp of the product plus half an
    # ulp of the result (a few ulps of the result where x * a nearly cancels -1e-4 ... never more)
    def ulp(t):
        t = t.float().abs()
        return torch.nextafter(t, torch.tensor(float("inf"))).double() - t.double()

    exact = x.double() * mod.SCALE + mod.SHIFT
    product = (x.double() * mod.SCALE).float()
    assert bool(((ref - exact).abs() <= 0.5 * ulp(product) + 0.5 * ulp(ref)).all())
    assert float(((ref - exact).abs() / ulp(ref)).max()) > 0.5    # not correctly rounded: no float64 tolerance


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"m": 8, "n": 8}, match="CUDA tensor")


def test_library_is_declared_for_sm90a(mod):
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {"aisp_tma_2d_pipeline", "aisp_tma_2d_pipeline_tma_support"}


def test_no_tma_support_is_a_requirement_error(monkeypatch, mod):
    assert_probe_gates(monkeypatch, mod, "aisp_tma_2d_pipeline_tma_support", lambda: mod._require_tma("tma_hopper"),
                       "needs TMA")


# --- the CUDA source ------------------------------------------------------------------------

def kernel_of(mangled: str) -> str:
    return next(k for k in KERNELS if re.search(rf"\d{k}E", mangled))


@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_symbols_and_no_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert sorted(kernel_of(c) for c in compiled) == sorted(KERNELS)
    assert frame_count == len(KERNELS)
    smem = re.findall(r"used 1 barriers, (\d+) bytes smem", report)
    # ring: 4 mbarriers (its stages are dynamic); the [32][64] chunk; the 32 KiB stage + its mbarrier
    assert sorted(map(int, smem)) == [32, 8192, 32768 + 16]
    assert_exports(library, ("aisp_tma_2d_pipeline", "aisp_tma_2d_pipeline_tma_support", "aisp_tma_2d_pipeline_error_string"))


def _count(counts, prefix: str) -> int:
    return sum(n for op, n in counts.items() if op.startswith(prefix))


@pytest.mark.slow
@requires_nvcc
def test_sass_baseline_is_plain_loads_and_stores(ops):
    assert set(ops) == set(KERNELS)
    base = ops["baseline_kernel"]
    assert _count(base, "LDG.E") >= 1 and _count(base, "STG.E") >= 1      # the data, by threads
    assert _count(base, "LDS") >= 1 and _count(base, "STS") >= 1          # through the [32][64] chunk
    for prefix in ("UTMA", "UBLKCP", "SYNCS", "FENCE.VIEW.ASYNC", "DEPBAR", "LDGSTS"):
        assert _count(base, prefix) == 0, prefix                            # nothing asynchronous
    # the book's runtime-stride loops are not unrolled: one LDG per iteration, then its STS
    assert _count(base, "LDG.E") <= 2, base


@pytest.mark.slow
@requires_nvcc
@pytest.mark.parametrize("kernel", TMA_KERNELS)
def test_sass_tma_kernels_move_data_only_by_tma(ops, kernel):
    k = ops[kernel]
    assert k["UTMALDG.2D"] >= 1 and k["UTMASTG.2D"] >= 1                  # 2-D tensor load and store
    assert k["UTMACMDFLUSH"] >= 1                                          # cp.async.bulk.commit_group
    assert k["SYNCS.ARRIVE.TRANS64"] >= 1                                  # mbarrier expect-tx
    assert _count(k, "SYNCS.PHASECHK.TRANS64") >= 1                        # mbarrier try-wait
    assert k["FENCE.VIEW.ASYNC.S"] >= 1                                    # fence.proxy.async before the store
    assert k["DEPBAR.LE"] >= 2                                             # wait_group(.read) before reuse and exit
    assert k["LDS.128"] >= 1 and k["STS.128"] >= 1                         # float4 compute in shared memory
    for prefix in ("LDG", "STG", "LD.E", "ST.E", "LDGSTS", "ATOM", "RED"):
        assert _count(k, prefix) == 0, (kernel, prefix)                    # no thread moves the data


@pytest.mark.slow
@requires_nvcc
def test_sass_only_the_ring_keeps_a_store_in_flight(sass, ops):
    hopper, book = sass["tma_hopper_kernel"], sass["tma_book_config_kernel"]
    assert "DEPBAR.LE SB0, 0x1" in hopper                                  # wait_group.read 1: one store left in flight
    assert "DEPBAR.LE SB0, 0x1" not in book and "DEPBAR.LE SB0, 0x0" in book   # the book waits for every store
    assert ops["tma_hopper_kernel"]["SYNCS.EXCH.64"] >= 4                  # one mbarrier per ring stage
    assert ops["tma_book_config_kernel"]["SYNCS.EXCH.64"] == 1             # one stage, one barrier


@pytest.mark.slow
@requires_nvcc
def test_sass_two_roundings_everywhere(ops):
    for name, k in ops.items():
        assert k["FFMA"] == 0, name                                        # __fmul_rn/__fadd_rn: never contracted
        assert k["FMUL"] >= 1 and k["FADD"] >= 1, name


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = lib.aisp_tma_2d_pipeline
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    invalid, misaligned = 1, 716           # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(3, 16, 16, 8, 8, None) == invalid              # no such variant
    assert fn(-1, 16, 16, 8, 8, None) == invalid
    assert fn(0, 16, 16, 0, 8, None) == invalid              # M < 1
    assert fn(0, 16, 16, 8, 6, None) == invalid              # N not a multiple of 4
    assert fn(1, 16, 16, 65535 * 128 + 1, 8, None) == invalid   # too many 128-row tiles
    assert fn(2, None, 16, 8, 8, None) == invalid            # null x
    assert fn(2, 16, 24, 8, 8, None) == misaligned           # y not 16-byte aligned


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("m,n", [(1, 4), (5, 8), (300, 388), (2000, 1028), (4096, 4096), (8192, 4100)])
def test_every_variant_is_exact_on_gpu(m, n):
    # (1, 4): boxes far larger than the matrix; (300, 388): the sanitizer size, ragged everywhere;
    # (2000, 1028): 567 ring tiles over 71 CTAs (7 or 8 each, not a multiple of the 4 stages);
    # (4096, 4096): the book's size, 1024 book-config CTAs (1.3 waves); (8192, 4100): 2 baseline waves
    result = check.check_pair(pairs.find(NAME), {"m": m, "n": n}, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_on_gpu(mod, variant):
    (out,), ref = run_with_inputs_freed(mod, variant, {"m": 1024, "n": 1024})
    assert torch.equal(out.double(), ref)
