"""ch10.warp_specialization_cutlass: imports cleanly, formulas and fp16 inputs are right, the float64
reference is A @ B^T and the tolerance is what the rounding predicts, CPU tensors are refused
before any build, and the CUDA source builds for sm_90a from the CUTLASS headers with SASS that
shows each schedule's mechanism: HGMMA fed by UTMALDG and stored by UTMASTG in every kernel, the
multicast TMA load and cluster barriers only in the 2x1-cluster cooperative kernel, setmaxnreg
only in the persistent (cooperative, ping-pong) kernels, and no wgmma serialization (-DNDEBUG).

The build needs nvcc and the CUTLASS headers, no GPU, and is SLOW (~2 minutes of nvcc for the
three kernels; built once per test session into the normal build cache, so later runs and the GPU
tests reuse it; AISP_SKIP_CUTLASS_BUILD=1 skips it); its tests are marked `build`, left out of the
default run and run by `pytest -m build` (pair_testing.cutlass_build). GPU only (marked `gpu`): every variant against
the float64 reference at ragged, multi-wave and the book's sizes.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, can_build_cutlass, cutlass_build, forbid_build,
                          have_nvcc, hide_cutlass_headers, import_fresh, opcode_counts, record_library_loads,
                          run_with_inputs_freed, runnable_variants, sass_functions)

torch = pytest.importorskip("torch")

from aisp_kernels import build  # noqa: E402
from aisp_prof import pairs  # noqa: E402
from aisp_prof import tools  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import ToolNotFoundError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "warp_specialization_cutlass.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.warp_specialization_cutlass"
VARIANTS = ["baseline", "cooperative_256x128_c2", "cooperative_256x128_c2_swizzle8", "pingpong_128x128", "cublas"]
CUTLASS_VARIANTS = VARIANTS[:-1]
SYMBOLS = ("aisp_ws_cutlass_gemm", "aisp_ws_cutlass_workspace_size", "aisp_ws_cutlass_config_count",
           "aisp_ws_cutlass_config_name", "aisp_ws_cutlass_config_persistent", "aisp_cuda_error_string")


# --- import, contract, formulas, inputs, reference ------------------------------------------

def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert pair.variants["baseline"].__name__ == "ws_128x128"
    assert dict(pair.sizes) == {"m": 16384, "n": 16384, "k": 2048}          # the book's size
    assert dict(pair.small_sizes) == {"m": 520, "n": 264, "k": 520}
    assert pair.tolerance == 2e-3
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert dict(pair.variant_needs) == {**{v: ("gpu", "nvcc", "cutlass") for v in CUTLASS_VARIANTS},
                                        "cublas": ("gpu",)}
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True, have_cutlass=True) == []
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False, have_cutlass=True) == VARIANTS
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False, have_cutlass=False) == ["cublas"]


def test_configs_name_the_books_schedules(mod):
    assert mod.CONFIGS == {"baseline": (0, 1), "cooperative_256x128_c2": (1, 1),
                           "cooperative_256x128_c2_swizzle8": (1, 8), "pingpong_128x128": (2, 1)}
    assert [mod.CONFIG_NAMES[c].split()[0] for c, _ in mod.CONFIGS.values()] == [
        "KernelTmaWarpSpecialized", "KernelTmaWarpSpecializedCooperative", "KernelTmaWarpSpecializedCooperative",
        "KernelTmaWarpSpecializedPingpong"]
    assert mod.EXTRA_FLAGS == ("--expt-relaxed-constexpr", "-DNDEBUG")
    source = CU_PATH.read_text()
    for name in mod.CONFIG_NAMES:                     # the Python names are the library's, in its order
        assert f'"{name}"' in source
    assert source.index(mod.CONFIG_NAMES[0]) < source.index(mod.CONFIG_NAMES[1]) < source.index(mod.CONFIG_NAMES[2])


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"m": 2, "n": 3, "k": 4}) == 48
    assert mod.bytes({"m": 2, "n": 3, "k": 4}) == 2 * (8 + 12 + 6)
    d = mod.DEFAULT_SIZES
    assert mod.flops(d) == 2 * 16384 * 16384 * 2048 == 1_099_511_627_776
    assert mod.bytes(d) == 2 * (2 * 16384 * 2048 + 16384**2) == 640 * 2**20
    assert 1600 < mod.flops(d) / mod.bytes(d) < 1700                      # compute bound


def test_make_inputs_are_seeded_k_major_fp16(mod):
    sizes = {"m": 5, "n": 24, "k": 64}
    x, y, z = (mod.make_inputs(sizes, "cpu", s) for s in (7, 7, 8))
    assert x["a"].shape == (5, 64) and x["b"].shape == (24, 64)          # both K-major: C = A B^T
    assert x["a"].dtype == x["b"].dtype == torch.float16
    for key in ("a", "b"):
        assert x[key].is_contiguous() and torch.equal(x[key], y[key]) and not torch.equal(x[key], z[key])
    big = mod.make_inputs({"m": 64, "n": 64, "k": 2048}, "cpu", 0)
    assert 0.8 < float(mod.reference(big).std()) < 1.2                    # C ~ N(0, 1): far from fp16 overflow
    assert 0.8 < float(big["b"].float().std()) < 1.2 and float(big["a"].float().std()) < 0.03


@pytest.mark.parametrize("sizes", [{"m": 4, "n": 12, "k": 16}, {"m": 4, "n": 16, "k": 20},
                                   {"m": 0, "n": 16, "k": 16}, {"m": 4, "n": 16, "k": 2**31}])
def test_sizes_are_validated(mod, sizes):
    with pytest.raises(ValueError, match="multiples of 8|must be in"):
        mod.make_inputs(sizes, "cpu", 0)


def test_reference_is_float64_a_times_b_transposed(mod):
    inputs = mod.make_inputs({"m": 6, "n": 16, "k": 40}, "cpu", 3)
    a, b, ref = inputs["a"], inputs["b"], mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (6, 16)
    assert float(ref[2, 7]) == pytest.approx(sum(float(a[2, i]) * float(b[7, i]) for i in range(40)), rel=1e-12)
    assert torch.equal(ref, a.double() @ b.double().t())


def test_tolerance_sits_between_fp16_rounding_and_a_real_bug(mod):
    """What a correct kernel's error is (fp32 accumulation, fp16 output) and what a dropped k-block
    or a transposed operand costs, measured on the CPU at the book's k."""
    inputs = mod.make_inputs({"m": 128, "n": 128, "k": 2048}, "cpu", 1)
    a, b, ref = inputs["a"].float(), inputs["b"].float(), mod.reference(inputs)

    def rel(out):
        return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))

    correct = rel((a @ b.t()).half())
    assert 1e-4 < correct < 5e-4                                       # ~2^-11 / sqrt(3) = 2.8e-4
    assert correct < mod.PAIR.tolerance / 4
    assert rel((a[:, :-64] @ b[:, :-64].t()).half()) > 50 * mod.PAIR.tolerance     # one k-block dropped
    assert rel((a @ b.t()).t().half()) > 500 * mod.PAIR.tolerance                   # C transposed


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"m": 4, "n": 16, "k": 16})


def test_library_is_built_for_sm90a_with_the_cutlass_headers(monkeypatch, tmp_path):
    util = tmp_path / "tools" / "util" / "include"
    monkeypatch.setattr(tools, "cutlass_include_dirs", lambda: [tmp_path / "include", util])
    loads = record_library_loads(monkeypatch)
    fresh = import_fresh(PAIR_PATH, "warp_specialization_cutlass_fake_library")
    fresh.LIBRARY.load()
    assert loads == [{"source": CU_PATH, "arch": "sm_90a", "include_dirs": [tmp_path / "include", util],
                      "extra_flags": ["--expt-relaxed-constexpr", "-DNDEBUG"], "parts": 3}]


def test_missing_headers_say_how_to_get_them(monkeypatch, tmp_path):
    hide_cutlass_headers(monkeypatch, tmp_path)
    forbid_build(monkeypatch)
    fresh = import_fresh(PAIR_PATH, "warp_specialization_cutlass_no_headers")
    with pytest.raises(ToolNotFoundError, match="pip install nvidia-cutlass.*AISP_CUTLASS_INCLUDE"):
        fresh.LIBRARY.load()


# --- the CUDA source: builds for sm_90a (SLOW), symbols, refusals, SASS ---------------------

@pytest.fixture(scope="module")
def library(mod) -> Path:
    """The library exactly as the pair builds it (same flags, same cache), built once per module."""
    if not can_build_cutlass():
        pytest.skip("needs nvcc and the CUTLASS headers")
    return mod.LIBRARY.build()


@pytest.fixture(scope="module")
def sass(library) -> dict[str, str]:
    """{schedule: SASS of its kernel}, one GemmUniversal instantiation per configuration."""
    out = {}
    for mangled, body in sass_functions(library).items():
        for schedule in ("KernelTmaWarpSpecializedCooperative", "KernelTmaWarpSpecializedPingpong",
                         "KernelTmaWarpSpecialized"):
            if f"{len(schedule)}{schedule}E" in mangled:               # the mangled policy name
                assert schedule not in out, mangled
                out[schedule] = body
                break
        else:
            raise AssertionError(f"unexpected kernel {mangled[:120]}")
    return out


@cutlass_build
def test_builds_with_its_symbols_and_refuses_bad_arguments_before_any_cuda_call(library, mod):
    lib = ctypes.CDLL(str(library))        # cudart is linked statically: loads without a GPU
    for name in SYMBOLS:
        assert hasattr(lib, name), name
    lib.aisp_ws_cutlass_config_count.restype = ctypes.c_int
    lib.aisp_ws_cutlass_config_name.restype = ctypes.c_char_p
    lib.aisp_ws_cutlass_config_persistent.restype = ctypes.c_int
    count = lib.aisp_ws_cutlass_config_count()
    assert [lib.aisp_ws_cutlass_config_name(i).decode() for i in range(count)] == list(mod.CONFIG_NAMES)
    assert lib.aisp_ws_cutlass_config_name(count) == b"" and lib.aisp_ws_cutlass_config_name(-1) == b""
    assert [lib.aisp_ws_cutlass_config_persistent(i) for i in range(-1, count + 1)] == [-1, 0, 1, 1, -1]
    fn = lib.aisp_ws_cutlass_gemm
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int] * 4 + \
        [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p]
    good = dict(config=1, a=16, b=32, d=48, m=4, n=16, k=16, swizzle=1, workspace=None, workspace_bytes=0)

    def call(**changes):
        return fn(*{**good, **changes}.values(), None)

    invalid = 1                            # cudaErrorInvalidValue
    assert call(config=count) == invalid and call(config=-1) == invalid
    assert call(n=12) == invalid and call(k=20) == invalid           # not multiples of 8
    assert call(m=0) == invalid and call(n=0) == invalid and call(k=0) == invalid
    assert call(a=24) == invalid and call(d=40) == invalid           # not 16-byte aligned
    assert call(b=None) == invalid and call(d=None) == invalid
    assert call(workspace_bytes=-1) == invalid
    for swizzle in (0, 3, 16):                                        # CUTLASS would round these silently
        assert call(swizzle=swizzle) == invalid
    assert call(config=0, swizzle=8) == invalid                       # the non-persistent grid has no order


@cutlass_build
def test_sass_shows_each_schedules_mechanism(sass):
    assert set(sass) == {"KernelTmaWarpSpecialized", "KernelTmaWarpSpecializedCooperative",
                         "KernelTmaWarpSpecializedPingpong"}
    ops = {schedule: opcode_counts(body) for schedule, body in sass.items()}
    for schedule, body in sass.items():
        c = ops[schedule]
        hgmma = sum(n for op, n in c.items() if op.startswith("HGMMA"))
        assert hgmma >= 8 and "HGMMA.64x128x16.F32" in body, schedule          # fp16 wgmma, fp32 accumulators
        assert c["UTMALDG.3D"] >= 1 and c["UTMASTG.3D"] >= 1, schedule          # TMA in, TMA store out
        assert not any(op.startswith(("CALL", "STL", "LDL")) for op in c), schedule   # no assert calls, no spills
        # -DNDEBUG: the wgmma pipeline is not serialized (a DEPBAR per HGMMA when it is, ptxas C7510)
        assert c["WARPGROUP.DEPBAR.LE"] < hgmma / 2, schedule
    ws, coop, ping = (ops[s] for s in ("KernelTmaWarpSpecialized", "KernelTmaWarpSpecializedCooperative",
                                       "KernelTmaWarpSpecializedPingpong"))
    # the 2x1 cluster: B multicast (one CTA's half lands in both), A per CTA, cluster barriers
    assert coop["UTMALDG.3D.MULTICAST"] >= 1 and any(op.startswith("UCGABAR") for op in coop)
    for c in (ws, ping):                                                       # 1x1x1: no multicast, no cluster sync
        assert c["UTMALDG.3D.MULTICAST"] == 0 and c["UTMALDG.3D"] >= 2
        assert not any(op.startswith("UCGABAR") for op in c)
    # register reallocation from the producer warpgroup only in the 384-thread persistent kernels
    for c in (coop, ping):
        assert any(op.startswith("USETMAXREG.DEALLOC") for op in c) and any(op.startswith("USETMAXREG.TRY_ALLOC")
                                                                            for op in c)
    assert not any(op.startswith("USETMAXREG") for op in ws)


# --- GPU only --------------------------------------------------------------------------------

def _require_hopper_and_cutlass() -> None:
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs sm_90 (the kernels are built for sm_90a)")
    if not (have_nvcc() and tools.have_cutlass()):
        pytest.skip("needs nvcc and the CUTLASS headers")


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [
    {"m": 1, "n": 8, "k": 8},              # one partial tile everywhere, one partial k-block
    {"m": 520, "n": 264, "k": 520},        # the sanitizer size: ragged M, N, K; the ring wraps
    {"m": 1000, "n": 1032, "k": 1016},     # ragged, an odd number of 256-row tiles (a half-empty cluster)
    {"m": 4096, "n": 4096, "k": 512},      # 256 to 1024 tiles: several per persistent CTA
])
def test_every_variant_matches_the_float64_reference(sizes):
    _require_hopper_and_cutlass()
    result = check.check_pair(pairs.find(NAME), sizes, device="cuda", trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference < 1e-3 for c in result.checks)        # fp16 rounding (~2e-4), nothing more


@pytest.mark.gpu
def test_the_books_size_passes(mod):
    """16384 x 16384 x 2048: 1.1 TFLOP per variant and a 2 GiB float64 reference (~10 GiB in all)."""
    _require_hopper_and_cutlass()
    result = check.check_pair(mod.PAIR, mod.DEFAULT_SIZES, device="cuda", trials=1)
    check.raise_if_failed(result)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs(mod, variant):
    _require_hopper_and_cutlass()
    (out,), ref = run_with_inputs_freed(mod, variant, {"m": 512, "n": 512, "k": 384})
    err = float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))
    assert err < mod.PAIR.tolerance


@pytest.mark.gpu
def test_library_lists_the_configs_and_refuses_a_bad_swizzle_on_gpu(mod):
    _require_hopper_and_cutlass()
    assert mod.config_names() == list(mod.CONFIG_NAMES)
    ws = mod.LIBRARY.fn("aisp_ws_cutlass_workspace_size")
    assert ws(0, 512, 512, 512, 1) >= 0 and ws(1, 512, 512, 512, 8) >= 0
    assert ws(0, 512, 512, 512, 8) == -1 and ws(2, 512, 512, 512, 5) == -1
