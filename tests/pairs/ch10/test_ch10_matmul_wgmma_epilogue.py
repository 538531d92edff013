"""ch10.matmul_wgmma_epilogue: imports cleanly, formulas and inputs are right, sizes must be whole
tiles, the reference is silu(A @ B^T + bias) and the tolerance separates the fp16 roundings from a
missing or misplaced bias or SiLU, the baseline's torch epilogue is the book's four kernels (and
computes the same thing on the CPU), the CUDA source builds for sm_90a without warnings (no
C7510), with its symbols and no local memory, and the SASS shows the same TMA + wgmma GEMM in both
kernels with the bias load and the SiLU's exponential and reciprocal only in the fused one.

GPU only (marked `gpu`): both variants match the float64 reference at the book's, the sanitizer
and multi-wave sizes; the baseline launches 5 kernels and the fused variant 1; the closure owns
its operands.
"""
from __future__ import annotations

import ctypes
import re

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, assert_every_variant_needs_gpu_and_nvcc,
                          assert_exports, assert_support_probe, hopper_only, ptxas_entries, requires_nvcc)

torch = pytest.importorskip("torch")
F = torch.nn.functional

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "matmul_wgmma_epilogue.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.matmul_wgmma_epilogue"
VARIANTS = ["baseline", "fused_epilogue"]
KERNELS = ("gemm_store_kernel", "gemm_bias_silu_kernel")
ENTRY = "aisp_matmul_wgmma_epilogue"


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert pair.variants["baseline"].__name__ == "separate_epilogue"
    assert dict(pair.sizes) == {"m": 2048, "n": 2048, "k": 64}               # the book's size
    assert dict(pair.small_sizes) == {"m": 256, "n": 512, "k": 128}
    assert pair.tolerance == 2e-3
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson


def test_docstring_states_the_book_the_port_and_the_prediction(mod):
    doc = mod.__doc__
    for text in ("1.245x", "TMEM-resident", "no Hopper hardware", "Predicted profile", "Launches per call: 5 -> 1",
                 "lts__t_bytes", "MUFU.EX2", "C7510", "Sanitizer size", "(1e-2, 1e-2)"):
        assert text in doc, text


def test_flops_and_bytes_formulas(mod):
    d = {"m": 2048, "n": 2048, "k": 64}
    assert mod.flops(d) == 2 * 2048 * 2048 * 64 + 4 * 2048 * 2048
    assert mod.bytes(d) == 2 * (2048 * 64 * 2) + 4 * 2048 + 2 * 2048 * 2048     # 8.9 MB
    assert mod.bytes({"m": 2, "n": 3, "k": 4}) == 2 * (8 + 12) + 12 + 12
    assert 2 * 2048 * 2048 / mod.bytes(d) > 0.9                                  # the output is the bytes


def test_make_inputs_are_seeded_with_an_fp32_bias(mod):
    sizes = {"m": 128, "n": 256, "k": 64}
    a, b, c = (mod.make_inputs(sizes, "cpu", s) for s in (7, 7, 8))
    assert a["a"].shape == (128, 64) and a["b"].shape == (256, 64) and a["bias"].shape == (256,)
    assert a["a"].dtype == a["b"].dtype == torch.float16 and a["bias"].dtype == torch.float32
    for key in ("a", "b", "bias"):
        assert a[key].is_contiguous() and torch.equal(a[key], b[key]) and not torch.equal(a[key], c[key])
    big = mod.make_inputs({"m": 512, "n": 1024, "k": 64}, "cpu", 0)
    product = big["a"].double() @ big["b"].double().t()
    assert 0.9 < float(product.std()) < 1.1 and 0.8 < float(big["bias"].std()) < 1.2   # silu's argument ~ N(0, 2)


@pytest.mark.parametrize("sizes", [{"m": 0, "n": 256, "k": 64}, {"m": 128, "n": 0, "k": 64},
                                   {"m": 128, "n": 256, "k": 0}, {"m": 128, "n": 256, "k": 4},
                                   {"m": 128, "n": 256, "k": 100}, {"m": 2**31, "n": 256, "k": 64}])
def test_sizes_outside_the_tma_limit_are_refused(mod, sizes):
    with pytest.raises(ValueError, match=r"m, n >= 1 and k a positive multiple of 8 \(TMA needs 16-byte row pitches\)"):
        mod.make_inputs(sizes, "cpu", 0)


def test_reference_and_tolerance(mod):
    inputs = mod.make_inputs({"m": 256, "n": 512, "k": 128}, "cpu", 3)
    a, b, bias = inputs["a"], inputs["b"], inputs["bias"]
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (256, 512)
    v = a.double() @ b.double().t() + bias.double()
    assert torch.allclose(ref, v / (1 + torch.exp(-v)), rtol=1e-12, atol=1e-12)
    # what a correct kernel can be off by: the fused rounding once, the baseline's path twice
    acc = a.float() @ b.float().t()
    fused = F.silu(acc + bias).half().double()
    separate = F.silu(acc.half().float() + bias).half().double()
    assert check._rel_err(fused, ref) < mod.PAIR.tolerance / 5
    assert check._rel_err(separate, ref) < mod.PAIR.tolerance / 4
    # what a wrong one is off by
    no_bias = F.silu(acc).double()
    no_silu = (acc + bias).double()
    bias_per_row = F.silu(acc + bias[:256, None]).double()
    for wrong in (no_bias, no_silu, bias_per_row):
        assert check._rel_err(wrong, ref) > 0.1


def test_baseline_epilogue_is_the_books_four_kernels_on_cpu(mod):
    # the torch half of the baseline, run on the CPU on a stand-in for the GEMM's fp16 output:
    # the same ops as .float() + bias -> silu -> .half(), in place in preallocated buffers
    inputs = mod.make_inputs({"m": 128, "n": 256, "k": 64}, "cpu", 1)
    c = (inputs["a"].float() @ inputs["b"].float().t()).half()
    book = F.silu(c.float() + inputs["bias"]).to(torch.float16)
    c32, out = torch.empty(c.shape, dtype=torch.float32), torch.empty_like(c)
    c32.copy_(c)
    c32.add_(inputs["bias"])
    F.silu(c32, inplace=True)
    out.copy_(c32)
    assert torch.equal(out, book)
    source = PAIR_PATH.read_text()
    body = source[source.index("def separate_epilogue"):source.index("def fused_epilogue")]
    launch = body[body.index("def launch"):]
    assert [ln.split("#")[0].strip() for ln in launch.splitlines()[1:6]] == [
        "run_gemm()", "c32.copy_(c)", "c32.add_(bias)", "F.silu(c32, inplace=True)", "out.copy_(c32)"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"m": 128, "n": 256, "k": 64})


def test_library_is_declared_for_sm90a(mod):
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {ENTRY, f"{ENTRY}_support"}
    assert not mod.LIBRARY.include_dirs and not mod.LIBRARY.extra_flags


def test_unsupported_gpu_is_a_requirement_error(monkeypatch, mod):
    assert_support_probe(monkeypatch, mod, f"{ENTRY}_support", "fused_epilogue")


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
    assert re.findall(r"used 1 barriers, (\d+) bytes smem", report) == ["16", "16"]   # one mbarrier each
    assert_exports(library, (ENTRY, f"{ENTRY}_support", f"{ENTRY}_error_string"))


def _count(counts, prefix: str) -> int:
    return sum(n for op, n in counts.items() if op.startswith(prefix))


@pytest.mark.slow
@requires_nvcc
@pytest.mark.parametrize("kernel", KERNELS)
def test_sass_both_kernels_are_the_single_stage_gemm(sass, ops, kernel):
    body, k = sass[kernel], ops[kernel]
    # (sass_opcodes stops at the lowercase x of 64x256x16: the shape is read from the text)
    assert len(re.findall(r"HGMMA\.64x256x16\.F32 R", body)) == 4 and _count(k, "HGMMA") == 4
    assert k["UTMALDG.2D"] == 2 and k["SYNCS.EXCH.64"] == 1 and k["SYNCS.ARRIVE.TRANS64"] == 1
    assert k["SYNCS.PHASECHK.TRANS64.TRYWAIT"] >= 1                        # the mbarrier try-wait
    assert k["WARPGROUP.DEPBAR.LE"] == 1 and "WARPGROUP.DEPBAR.LE gsb0, 0x0" in body   # not serialized
    assert k["STG.E"] == 64 and k["F2FP.F16.F32.PACK_AB"] == 64 + 128     # fp16x2 stores from registers, and
    assert k["STG.E.U16"] == 128                                           # an edge tile's guarded fp16 ones
    assert _count(k, "STL") == 0 and _count(k, "LDL") == 0                 # no local memory
    assert _count(k, "CALL") == 0                                          # no subroutine (C7510's cause)


@pytest.mark.slow
@requires_nvcc
def test_sass_only_the_fused_kernel_reads_bias_and_computes_silu(ops):
    fused, plain = ops["gemm_bias_silu_kernel"], ops["gemm_store_kernel"]
    assert fused["LDG.E.64.CONSTANT"] == 32                                # a float2 of bias per column pair,
    assert fused["LDG.E.CONSTANT"] == 128                                  # and one float per edge-tile element
    assert fused["MUFU.EX2"] == 2 * 128 and fused["MUFU.RCP"] >= 2 * 128   # e^-x and 1 / (1 + e^-x) per element
                                                                           # (whole tile, edge tile)
    assert _count(plain, "LDG") == 0 and plain["MUFU.EX2"] == 0            # nothing but the GEMM
    assert _count(fused, "LDS") == 0 and _count(plain, "LDS") == 0         # operands by TMA, epilogue in registers


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = getattr(lib, ENTRY)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 4 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    invalid, misaligned = 1, 716          # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(2, 16, 16, 16, 16, 128, 256, 64, None) == invalid       # no such variant
    assert fn(1, 16, 16, None, 16, 128, 256, 64, None) == invalid     # the fused kernel needs a bias
    assert fn(0, 16, 16, 16, None, 128, 256, 64, None) == invalid     # null C
    assert fn(0, 16, 16, 16, 16, 128, 256, 4, None) == invalid         # k not a multiple of 8 (TMA row pitch)
    assert fn(0, 16, 16, 16, 16, 128, 0, 64, None) == invalid          # no columns
    assert fn(0, 16, 16, 16, 16, 128, 256, 100, None) == invalid       # k not a multiple of 8
    assert fn(1, 16, 16, 24, 16, 128, 256, 64, None) == misaligned    # bias not 16-byte aligned


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("sizes", [{"m": 128, "n": 256, "k": 64}, {"m": 256, "n": 512, "k": 128},
                                   {"m": 2048, "n": 2048, "k": 64}, {"m": 4096, "n": 2560, "k": 320},
                                   # edge tiles: one partial tile; ragged m, n and k; odd n (bias per column)
                                   {"m": 1, "n": 1, "k": 8}, {"m": 200, "n": 300, "k": 72},
                                   {"m": 1000, "n": 777, "k": 1000}])
def test_every_variant_matches_the_float64_reference(sizes):
    # one tile; the sanitizer size; the book's size (128 tiles, one wave); 320 tiles x 5 k-tiles
    hopper_only()
    result = check.check_pair(pairs.find(NAME), sizes, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference < 6e-4 for c in result.checks)       # the fp16 roundings, nothing more


@pytest.mark.gpu
@requires_nvcc
def test_launches_per_call_are_five_then_one(mod):
    hopper_only()
    from torch.profiler import ProfilerActivity, profile

    inputs = mod.make_inputs({"m": 2048, "n": 2048, "k": 64}, "cuda", 0)
    counts = {}
    for variant in VARIANTS:
        launch = mod.PAIR.variants[variant](inputs)
        launch()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            launch()
            torch.cuda.synchronize()
        counts[variant] = sum(e.count for e in prof.key_averages() if e.device_type.name == "CUDA")
    assert counts == {"baseline": 5, "fused_epilogue": 1}, counts


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_operands_on_gpu(mod, variant):
    hopper_only()
    inputs = mod.make_inputs({"m": 512, "n": 512, "k": 128}, "cuda", 5)
    ref = mod.reference(inputs)
    launch = mod.PAIR.variants[variant](inputs)
    del inputs
    junk = torch.full((1 << 22,), float("nan"), device="cuda")   # would reuse freed operands
    out = launch()
    torch.cuda.synchronize()
    del junk
    assert check._rel_err(out.double(), ref) < 6e-4
