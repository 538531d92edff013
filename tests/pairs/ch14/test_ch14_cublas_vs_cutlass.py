"""ch14.cublas_vs_cutlass: imports cleanly, formulas and fp16 inputs are right, the float64 reference
is A @ B and the tolerance sits between fp16 rounding and a real bug, CPU tensors are refused
before any build, and the CUDA source builds for sm_90a from the CUTLASS headers with -DNDEBUG:
ptxas reports no serialized wgmma (C7510) and no spills, and the SASS shows each kernel's
mechanism: HMMA.16816 (mma.sync), cp.async and ldmatrix and nothing of Hopper's in the book's Sm80
kernel; HGMMA fed by UTMALDG (B multicast), a TMA store, cluster barriers and setmaxnreg, and no
HMMA, in the Sm90 kernel.

The build needs nvcc and the CUTLASS headers, no GPU (~45 s of nvcc on 2 cores, once per test
module, with `-Xptxas -v` into a temporary folder so ptxas's report can be read; the pair's own
cached build is the same command without `-Xptxas -v`). AISP_SKIP_CUTLASS_BUILD=1 skips it; its
tests are marked `build`, left out of the default run and run by `pytest -m build`.
GPU only (marked `gpu`): every variant against the float64 reference at ragged, multi-wave and the
book's sizes.
"""
from __future__ import annotations

import ctypes
import math
import re
from pathlib import Path

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, can_build_cutlass, cutlass_build, forbid_build,
                          have_nvcc, hide_cutlass_headers, import_fresh, opcode_counts, record_library_loads,
                          run_nvcc, run_with_inputs_freed, runnable_variants, sass_functions)

torch = pytest.importorskip("torch")

from aisp_kernels import build
from aisp_prof import pairs
from aisp_prof import tools
from aisp_prof.collect.correctness import check
from aisp_prof.errors import ToolNotFoundError

PAIR_PATH = ROOT / "kernels" / "ch14" / "cublas_vs_cutlass.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch14.cublas_vs_cutlass"
VARIANTS = ["baseline", "cutlass_sm80", "cutlass_sm90"]
CUTLASS_VARIANTS = VARIANTS[1:]
SYMBOLS = ("aisp_cvc_gemm", "aisp_cvc_workspace_size", "aisp_cvc_variant_count", "aisp_cvc_variant_name",
           "aisp_cuda_error_string")
SM80_KERNEL = "4gemm6kernel4GemmI"                                   # CUTLASS 2.x cutlass::gemm::kernel::Gemm<...>
SM90_KERNEL = "35KernelTmaWarpSpecializedCooperative"               # the mangled 3.x schedule policy


# --- import, contract, formulas, inputs, reference ------------------------------------------

def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == VARIANTS
    assert pair.variants["baseline"].__name__ == "cublas"
    assert dict(pair.sizes) == {"m": 4096, "n": 4096, "k": 4096}              # the book's size
    assert dict(pair.small_sizes) == {"m": 520, "n": 264, "k": 520}
    assert pair.tolerance == 2e-3
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert dict(pair.variant_needs) == {"baseline": ("gpu",),
                                        **{v: ("gpu", "nvcc", "cutlass") for v in CUTLASS_VARIANTS}}
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True, have_cutlass=True) == []
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False, have_cutlass=True) == VARIANTS
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False, have_cutlass=False) == [
        "baseline"]


def test_kernels_name_the_two_cutlass_generations(mod):
    assert mod.KERNELS == {"cutlass_sm80": (0, 1), "cutlass_sm90": (1, 8)}
    assert mod.KERNEL_NAMES[0].startswith("Sm80 OpClassTensorOp 128x128x64 warp 64x64x64 mma 16x8x16")
    assert mod.KERNEL_NAMES[1] == "Sm90 KernelTmaWarpSpecializedCooperative 256x128x64 cluster2x1x1"
    assert mod.EXTRA_FLAGS == ("--expt-relaxed-constexpr", "-DNDEBUG") and mod.ARCH == "sm_90a"
    source = CU_PATH.read_text()
    for name in mod.KERNEL_NAMES:                     # the Python names are the library's, in its order
        assert f'"{name}"' in source
    assert source.index(mod.KERNEL_NAMES[0]) < source.index(mod.KERNEL_NAMES[1])
    # the book's kernel, as the spec reads it: CUTLASS 2.x, tensor op, Sm80, its three tile shapes
    for piece in ("cutlass::gemm::device::Gemm<", "cutlass::arch::OpClassTensorOp", "cutlass::arch::Sm80",
                  "GemmShape<128, 128, 64>", "GemmShape<64, 64, 64>", "GemmShape<16, 8, 16>"):
        assert piece in source, piece


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"m": 2, "n": 3, "k": 4}) == 48
    assert mod.bytes({"m": 2, "n": 3, "k": 4}) == 2 * (8 + 12 + 6)
    d = mod.DEFAULT_SIZES
    assert mod.flops(d) == 2 * 4096**3 == 137_438_953_472                  # the book's gemm.total_flops 1.374e11
    assert mod.bytes(d) == 6 * 4096**2 == 100_663_296                      # the book's gemm.total_bytes 1.007e8
    assert 1365 == round(mod.flops(d) / mod.bytes(d))                       # the book's arithmetic_intensity


def test_make_inputs_are_seeded_row_major_fp16(mod):
    sizes = {"m": 5, "n": 24, "k": 64}
    x, y, z = (mod.make_inputs(sizes, "cpu", s) for s in (7, 7, 8))
    assert x["a"].shape == (5, 64) and x["b"].shape == (64, 24)            # C = A B, both row-major
    assert x["a"].dtype == x["b"].dtype == torch.float16
    for key in ("a", "b"):
        assert x[key].is_contiguous() and torch.equal(x[key], y[key]) and not torch.equal(x[key], z[key])
    big = mod.make_inputs({"m": 64, "n": 64, "k": 4096}, "cpu", 0)
    assert 0.8 < float(mod.reference(big).std()) < 1.2                     # C ~ N(0, 1): far from fp16 overflow
    assert 0.8 < float(big["b"].float().std()) < 1.2 and float(big["a"].float().std()) < 0.03


@pytest.mark.parametrize("sizes", [{"m": 4, "n": 12, "k": 16}, {"m": 4, "n": 16, "k": 20},
                                   {"m": 0, "n": 16, "k": 16}, {"m": 4, "n": 16, "k": 2**31}])
def test_sizes_are_validated(mod, sizes):
    with pytest.raises(ValueError, match="multiples of 8|must be in"):
        mod.make_inputs(sizes, "cpu", 0)


def test_reference_is_float64_a_times_b(mod):
    inputs = mod.make_inputs({"m": 6, "n": 16, "k": 40}, "cpu", 3)
    a, b, ref = inputs["a"], inputs["b"], mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (6, 16)
    assert float(ref[2, 7]) == pytest.approx(sum(float(a[2, i]) * float(b[i, 7]) for i in range(40)), rel=1e-12)
    assert torch.equal(ref, a.double() @ b.double())


def test_tolerance_sits_between_fp16_rounding_and_a_real_bug(mod):
    """A correct kernel's error (fp32 accumulation, fp16 output) and what a dropped k-block or a
    transposed output costs, measured on the CPU at the book's k."""
    inputs = mod.make_inputs({"m": 128, "n": 128, "k": 4096}, "cpu", 1)
    a, b, ref = inputs["a"].float(), inputs["b"].float(), mod.reference(inputs)

    def rel(out):
        return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))

    assert rel(a @ b) < 2e-6                                            # fp32 accumulation alone
    correct = rel((a @ b).half())
    assert 1e-4 < correct < 2**-11 / math.sqrt(3)                      # fp16 rounding of C, <= 2.8e-4
    assert correct < mod.PAIR.tolerance / 5
    assert rel((a[:, :-64] @ b[:-64]).half()) > 50 * mod.PAIR.tolerance      # one k-block of 64 dropped
    assert rel((a @ b).t().half()) > 500 * mod.PAIR.tolerance                # C transposed


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"m": 4, "n": 16, "k": 16})


def test_library_is_built_for_sm90a_with_ndebug_and_the_cutlass_headers(monkeypatch, tmp_path):
    util = tmp_path / "tools" / "util" / "include"
    monkeypatch.setattr(tools, "cutlass_include_dirs", lambda: [tmp_path / "include", util])
    loads = record_library_loads(monkeypatch)
    fresh = import_fresh(PAIR_PATH, "ch14_cublas_vs_cutlass_fake_library")
    fresh.LIBRARY.load()
    assert loads == [{"source": CU_PATH, "arch": "sm_90a", "include_dirs": [tmp_path / "include", util],
                      "extra_flags": ["--expt-relaxed-constexpr", "-DNDEBUG"]}]


def test_missing_headers_say_how_to_get_them(monkeypatch, tmp_path):
    hide_cutlass_headers(monkeypatch, tmp_path)
    forbid_build(monkeypatch)
    fresh = import_fresh(PAIR_PATH, "ch14_cublas_vs_cutlass_no_headers")
    with pytest.raises(ToolNotFoundError, match="pip install nvidia-cutlass.*AISP_CUTLASS_INCLUDE"):
        fresh.LIBRARY.load()


# --- the CUDA source: builds for sm_90a, ptxas report, symbols, refusals, SASS ---------------

@pytest.fixture(scope="module")
def built(mod, tmp_path_factory) -> tuple[Path, str]:
    """(library, nvcc + ptxas output): the pair's own build command (aisp_kernels.build's flags, the
    pair's arch, include folders and extra flags) plus `-Xptxas -v`, built once per module."""
    if not can_build_cutlass():
        pytest.skip("needs nvcc and the CUTLASS headers")
    library = tmp_path_factory.mktemp("cublas_vs_cutlass") / "cublas_vs_cutlass.so"
    cmd = build.nvcc_command(CU_PATH, library, mod.ARCH, nvcc=tools.find_nvcc(),
                             include_dirs=tools.cutlass_include_dirs(),
                             extra_flags=(*mod.EXTRA_FLAGS, "-Xptxas", "-v"))
    proc = run_nvcc(cmd, CU_PATH, library)
    assert proc.returncode == 0, (proc.stderr + proc.stdout)[-3000:]
    return library, proc.stderr + proc.stdout


@pytest.fixture(scope="module")
def sass(built) -> dict[str, str]:
    """{"sm80" | "sm90": SASS of that kernel}; exactly one kernel of each."""
    out = {}
    for mangled, body in sass_functions(built[0]).items():
        kind = "sm90" if SM90_KERNEL in mangled else "sm80" if SM80_KERNEL in mangled else None
        assert kind is not None, f"unexpected kernel {mangled[:120]}"
        assert kind not in out, mangled
        out[kind] = body
    return out


def ptxas_entries(report: str) -> dict[str, str]:
    """{mangled entry function: its ptxas lines (properties, registers, spills)} from `-Xptxas -v`."""
    parts = re.split(r"ptxas info\s*: Compiling entry function '(\w+)'", report)
    return dict(zip(parts[1::2], parts[2::2]))


@cutlass_build
def test_ptxas_reports_no_serialized_wgmma_and_no_spills(built):
    report = built[1]
    # -DNDEBUG: no CuTe assert calls, so ptxas keeps the wgmma pipeline (without it: "(C7510)
    # Potential Performance Loss: wgmma.mma_async instructions are serialized ... at a function call")
    assert "C7510" not in report and "serialized" not in report, report[-2000:]
    assert not re.search(r"\bwarning\b", report, re.IGNORECASE), report[-2000:]
    entries = ptxas_entries(report)
    assert sorted(SM90_KERNEL in e for e in entries) == [False, True]           # one Sm80, one Sm90 kernel
    assert any(SM80_KERNEL in e for e in entries)
    for entry, lines in entries.items():
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in lines, entry[:100]
        registers = int(re.search(r"Used (\d+) registers", lines).group(1))
        assert registers <= 255, entry[:100]


@cutlass_build
def test_builds_with_its_symbols_and_refuses_bad_arguments_before_any_cuda_call(built, mod):
    lib = ctypes.CDLL(str(built[0]))        # cudart is linked statically: loads without a GPU
    for name in SYMBOLS:
        assert hasattr(lib, name), name
    lib.aisp_cvc_variant_count.restype = ctypes.c_int
    lib.aisp_cvc_variant_name.restype = ctypes.c_char_p
    count = lib.aisp_cvc_variant_count()
    assert [lib.aisp_cvc_variant_name(i).decode() for i in range(count)] == list(mod.KERNEL_NAMES)
    assert lib.aisp_cvc_variant_name(count) == b"" and lib.aisp_cvc_variant_name(-1) == b""
    fn = lib.aisp_cvc_gemm
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 4 + \
        [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p]
    good = {"variant": 1, "a": 16, "b": 32, "d": 48, "m": 4, "n": 16, "k": 16, "swizzle": 1, "workspace": None,
            "workspace_bytes": 0}

    def call(**changes):
        return fn(*{**good, **changes}.values(), None)

    invalid = 1                            # cudaErrorInvalidValue
    assert call(variant=count) == invalid and call(variant=-1) == invalid
    assert call(n=12) == invalid and call(k=20) == invalid           # not multiples of 8
    assert call(m=0) == invalid and call(n=0) == invalid and call(k=0) == invalid
    assert call(a=24) == invalid and call(b=40) == invalid and call(d=40) == invalid   # not 16-byte aligned
    assert call(a=None) == invalid and call(d=None) == invalid
    assert call(workspace_bytes=-1) == invalid
    for swizzle in (0, 3, 16):                                        # CUTLASS would round these silently
        assert call(swizzle=swizzle) == invalid
    assert call(variant=0, swizzle=8) == invalid                      # the Sm80 grid order is fixed
    lib.aisp_cvc_workspace_size.restype = ctypes.c_longlong
    lib.aisp_cvc_workspace_size.argtypes = [ctypes.c_int] * 5
    assert lib.aisp_cvc_workspace_size(0, 64, 64, 64, 8) == -1 and lib.aisp_cvc_workspace_size(1, 64, 12, 64, 1) == -1


@cutlass_build
def test_sass_sm80_kernel_is_mma_sync_with_nothing_of_hopper(sass):
    c = opcode_counts(sass["sm80"])
    # 64x64x64 warp tile of 16x8x16 mma.sync: 4 x 8 x 4 = 128 HMMA per k-block of 64
    assert c["HMMA.16816.F32"] >= 128
    assert any(op.startswith("LDGSTS") for op in c) and any(op.startswith("LDSM") for op in c)   # cp.async, ldmatrix
    assert not any(op.startswith(("HGMMA", "UTMA", "WARPGROUP", "USETMAXREG", "UCGABAR", "SYNCS")) for op in c)
    assert not any(op.startswith(("CALL", "STL", "LDL")) for op in c)         # no assert calls, no local memory


@cutlass_build
def test_sass_sm90_kernel_is_tma_and_wgmma_with_no_mma_sync(sass):
    body = sass["sm90"]
    c = opcode_counts(body)
    hgmma = sum(n for op, n in c.items() if op.startswith("HGMMA"))
    assert hgmma >= 8 and "HGMMA.64x128x16.F32" in body                    # fp16 wgmma, fp32 accumulators
    assert ".tnspB" in body                                                 # B is N-major (row-major k x n)
    assert not any(op.startswith("HMMA") for op in c)
    assert c["UTMALDG.3D"] >= 1 and c["UTMALDG.3D.MULTICAST"] >= 1          # A per CTA, B multicast to the pair
    assert c["UTMASTG.3D"] >= 1                                             # TMA store epilogue
    assert any(op.startswith("UCGABAR") for op in c)                        # 2x1 cluster barriers
    assert any(op.startswith("USETMAXREG.DEALLOC") for op in c) and any(
        op.startswith("USETMAXREG.TRY_ALLOC") for op in c)                  # producer gives registers away
    assert not any(op.startswith(("CALL", "STL", "LDL")) for op in c)
    # -DNDEBUG: the wgmma pipeline is not serialized (a DEPBAR per HGMMA when it is, ptxas C7510)
    assert c["WARPGROUP.DEPBAR.LE"] < hgmma / 2


# --- GPU only --------------------------------------------------------------------------------

def _require_hopper_and_cutlass() -> None:
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs sm_90 (the kernels are built for sm_90a)")
    if not (have_nvcc() and tools.have_cutlass()):
        pytest.skip("needs nvcc and the CUTLASS headers")


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [
    {"m": 1, "n": 8, "k": 8},              # one partial tile everywhere, one partial k-block
    {"m": 520, "n": 264, "k": 520},        # the sanitizer size: ragged M, N, K; both rings wrap
    {"m": 1000, "n": 1032, "k": 1016},     # ragged, an odd number of 256-row tiles (a half-empty cluster)
    {"m": 4096, "n": 2048, "k": 512},      # multi-wave: 512 Sm80 CTAs (~2 waves), ~2 tiles per Sm90 CTA
])
def test_every_variant_matches_the_float64_reference(sizes):
    _require_hopper_and_cutlass()
    result = check.check_pair(pairs.find(NAME), sizes, device="cuda", trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference < 1e-3 for c in result.checks)        # fp16 rounding (~2e-4), nothing more


@pytest.mark.gpu
def test_the_books_size_passes(mod):
    """4096^3: 137 GFLOP per variant and a 128 MiB float64 reference."""
    _require_hopper_and_cutlass()
    result = check.check_pair(mod.PAIR, mod.DEFAULT_SIZES, device="cuda", trials=1)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference < 1e-3 for c in result.checks)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs(mod, variant):
    _require_hopper_and_cutlass()
    (out,), ref = run_with_inputs_freed(mod, variant, {"m": 512, "n": 512, "k": 384})
    err = float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))
    assert err < mod.PAIR.tolerance


@pytest.mark.gpu
def test_library_lists_its_kernels_and_refuses_a_bad_swizzle_on_gpu(mod):
    _require_hopper_and_cutlass()
    assert mod.kernel_names() == list(mod.KERNEL_NAMES)
    ws = mod.LIBRARY.fn("aisp_cvc_workspace_size")
    assert ws(0, 512, 512, 512, 1) >= 0 and ws(1, 512, 512, 512, 8) >= 0
    assert ws(0, 512, 512, 512, 8) == -1 and ws(1, 512, 512, 512, 5) == -1
