"""ch10.warp_spec_pingpong: imports cleanly, formulas and seeded integer inputs are right, the
exactness claim holds (fp32 sqrt of every sum the inputs can make equals the float64 root rounded
to fp32), the CUDA source builds for sm_90a without local memory, and the SASS shows each
variant's hand-off and only its own: three block barriers per tile in the baseline; acquire/release
flag accesses, a CTA fence and NANOSLEEP in pingpong_flags; mbarrier arrive/try_wait in
pingpong_mbarrier; and the same producer load depth (8 LDG.128 issued before their STS.128) in all.

GPU only (marked `gpu`): every variant exactly equal to the reference at tiny, ragged, one-CTA and
multi-wave sizes; 2 CTAs per SM for the 96 KiB ring; the closure owns its inputs.
"""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, assert_every_variant_needs_gpu_and_nvcc,
                          assert_exports, assert_probe_gates, by_variant, ptxas_entries, requires_nvcc,
                          sass_functions, sass_opcodes)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "warp_spec_pingpong.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.warp_spec_pingpong"
VARIANTS = ["baseline", "pingpong_flags", "pingpong_mbarrier"]
KERNELS = {"baseline": "serialized_kernel", "pingpong_flags": "pingpong_flags_kernel",
           "pingpong_mbarrier": "pingpong_mbarrier_kernel"}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"n": 1 << 24, "grid": 0}
    assert dict(pair.small_sizes) == {"n": 13 * 4096 + 1001, "grid": 4}
    assert pair.tolerance == 0.0
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson
    for text in ("1.378x", "Little's law", "acquire", "racecheck", "Sanitizer size", "SYNCS.PHASECHK"):
        assert text in mod.__doc__, text


def test_flops_and_bytes_formulas(mod):
    assert mod.tiles(1 << 24) == 4096 and mod.tiles(4097) == 2 and mod.tiles(1) == 1
    assert mod.flops({"n": 1 << 24, "grid": 0}) == 4 * (1 << 24)
    assert mod.bytes({"n": 1 << 24, "grid": 0}) == 3 * 64 * 2**20          # 64 MiB per operand
    assert mod.bytes({"n": 5}) == 60


def test_make_inputs_are_seeded_integers_and_sizes_checked(mod):
    x, y, z = (mod.make_inputs({"n": 5000, "grid": 3}, "cpu", s) for s in (3, 3, 4))
    assert x["a"].dtype == x["b"].dtype == torch.float32 and x["a"].shape == x["b"].shape == (5000,)
    assert x["grid"] == 3 and mod.make_inputs({"n": 8}, "cpu", 0)["grid"] == 0
    assert torch.equal(x["a"], y["a"]) and torch.equal(x["b"], y["b"])
    assert not torch.equal(x["a"], z["a"]) and not torch.equal(x["a"], x["b"])
    big = mod.make_inputs({"n": 1 << 16}, "cpu", 1)["a"]
    assert torch.equal(big, big.round()) and float(big.min()) < -1900 and float(big.max()) > 1900
    assert float(big.abs().max()) <= 2048
    for sizes in ({"n": 0}, {"n": -4}):
        with pytest.raises(ValueError, match="n must be"):
            mod.make_inputs(sizes, "cpu", 0)
    with pytest.raises(ValueError, match="grid must be"):
        mod.make_inputs({"n": 64, "grid": -1}, "cpu", 0)


def test_reference_is_the_fp32_rounded_root(mod):
    inputs = mod.make_inputs({"n": 3 * 4096 + 5}, "cpu", 2)
    a, b, ref = inputs["a"], inputs["b"], mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (3 * 4096 + 5,)
    assert torch.equal(ref.float().double(), ref)                          # fp32 values
    assert torch.equal(ref, torch.sqrt(a.double() ** 2 + b.double() ** 2).float().double())
    # what the kernel computes, in fp32 on the CPU with numpy's IEEE (correctly rounded) sqrt:
    # equal, not close. (torch's own CPU fp32 sqrt is not correctly rounded: it misses on ~14% of
    # the integers below 2^23, so it cannot stand in for the kernel's sqrtf.)
    f32 = np.sqrt((a * a + b * b).numpy())
    assert f32.dtype == np.float32 and torch.equal(torch.from_numpy(f32).double(), ref)
    small = {"a": torch.tensor([3.0, -5.0, 0.0, -8.0, 1.0]), "b": torch.tensor([4.0, 12.0, 0.0, -15.0, 1.0]), "grid": 0}
    assert mod.reference(small).tolist() == [5.0, 13.0, 0.0, 17.0, float(torch.tensor(2.0).sqrt())]


@pytest.mark.slow
def test_fp32_root_is_exact_for_every_sum_the_inputs_make(mod):
    # every integer s in [0, 2 * 2048^2] (a superset of the sums a^2 + b^2) is exact in fp32, and its
    # correctly rounded fp32 root equals the float64 root rounded to fp32 (no double-rounding miss)
    s = np.arange(0, 2 * mod.MAX_ABS**2 + 1, dtype=np.int64)
    assert s[-1] < 2**24 and np.array_equal(s.astype(np.float32).astype(np.int64), s)
    assert np.array_equal(np.sqrt(s.astype(np.float32)), np.sqrt(s.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"n": 64})


def test_library_is_declared_for_sm90a(mod):
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {"aisp_warp_spec_pingpong", "aisp_warp_spec_pingpong_smem_support",
                                          "aisp_warp_spec_pingpong_info"}


def test_too_little_shared_memory_is_a_requirement_error(monkeypatch, mod):
    assert_probe_gates(monkeypatch, mod, "aisp_warp_spec_pingpong_smem_support",
                       lambda: mod._require_smem("pingpong_mbarrier"), "96 KiB of shared memory",
                       require_on_error=lambda: mod._require_smem("pingpong_flags"))


# --- the CUDA source ------------------------------------------------------------------------

def _by_variant(kernels: dict) -> dict:
    return by_variant(kernels, {variant: rf"\d{kernel}E" for variant, kernel in KERNELS.items()})


@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_symbols_and_no_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert sorted(k for k in KERNELS.values() if any(re.search(rf"\d{k}E", c) for c in compiled)) == \
        sorted(KERNELS.values())
    assert frame_count == 3
    assert re.search(r"used 1 barriers, 16 bytes smem", report)     # the flags: state[2] + tile[2]
    assert re.search(r"used 1 barriers, 32 bytes smem", report)     # full[2] + empty[2] mbarriers
    assert_exports(library, ("aisp_warp_spec_pingpong", "aisp_warp_spec_pingpong_smem_support", "aisp_warp_spec_pingpong_info",
                 "aisp_warp_spec_pingpong_error_string"))


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_each_variants_hand_off(built):
    ops = _by_variant(sass_opcodes(built[0]))
    for name, c in ops.items():
        assert c["LDL"] == c["STL"] == 0, name
        assert c["MUFU.RSQ"] >= 1 and c["STG.E.128"] >= 1, name           # the same compute and store
    base, flags, mbar = ops["baseline"], ops["pingpong_flags"], ops["pingpong_mbarrier"]

    def has(c, prefix):
        return sum(v for k, v in c.items() if k.startswith(prefix))

    # baseline: three block barriers per tile and no other hand-off
    assert base["BAR.SYNC.DEFER_BLOCKING"] == 3
    for prefix in ("SYNCS", "NANOSLEEP", "MEMBAR", "LD.E.STRONG", "ST.E.STRONG"):
        assert has(base, prefix) == 0, prefix
    # flags: one barrier (flag init), acquire polls + release publishes at CTA scope, a fence, a sleep
    assert flags["BAR.SYNC.DEFER_BLOCKING"] == 1
    assert flags["LD.E.STRONG.SM"] >= 2 and flags["ST.E.STRONG.SM"] >= 2
    assert flags["MEMBAR.ALL.CTA"] >= 1 and flags["NANOSLEEP"] >= 1
    assert has(flags, "SYNCS") == 0 and has(flags, "MEMBAR.SC") == 0       # no mbarrier, not the book's fence
    # mbarrier: one barrier (init), hardware arrive and try_wait, no fence, no software spin
    assert mbar["BAR.SYNC.DEFER_BLOCKING"] == 1
    assert has(mbar, "SYNCS.ARRIVE.TRANS64") >= 2 and mbar["SYNCS.PHASECHK.TRANS64.TRYWAIT"] >= 2
    for prefix in ("NANOSLEEP", "MEMBAR", "LD.E.STRONG", "ST.E.STRONG"):
        assert has(mbar, prefix) == 0, prefix


@pytest.mark.slow
@requires_nvcc
def test_every_producer_has_8_loads_in_flight(built):
    # In program order each load_tile is: 4 LDG.128 (first batch), the loop's 4 LDG.128 (next batch)
    # then 4 STS.128 (previous batch), and the last 4 STS.128: 8 LDG.128 issued before the first
    # STS.128 waits for data, in every variant (pingpong_flags inlines load_tile twice).
    for variant, body in _by_variant(sass_functions(built[0])).items():
        seq = "".join("L" if op.startswith("LDG") else "S"
                      for op in re.findall(r"\b(LDG\.E\.128\S*|STS\.128)\b", body))
        copies = 2 if variant == "pingpong_flags" else 1
        assert seq == "LLLLLLLLSSSSSSSS" * copies, (variant, seq)


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = lib.aisp_warp_spec_pingpong
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int,
                   ctypes.c_void_p]
    invalid, misaligned = 1, 716           # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(3, 16, 16, 16, 100, 0, None) == invalid        # no such variant
    assert fn(0, 16, 16, 16, 0, 0, None) == invalid          # n < 1
    assert fn(1, 16, 16, 16, 100, -1, None) == invalid       # grid < 0
    assert fn(2, 16, None, 16, 100, 0, None) == invalid      # null B
    assert fn(1, 16, 16, 24, 100, 0, None) == misaligned     # C not 16-byte aligned
    info = lib.aisp_warp_spec_pingpong_info
    info.restype = ctypes.c_int
    info.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_int, ctypes.c_void_p]
    assert info(0, 100, 0, None) == invalid and info(5, 100, 0, 16) == invalid


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("sizes", [
    {"n": 1, "grid": 0},                       # one short tile
    {"n": 4096, "grid": 0},                    # one full tile: one CTA, one consumer warp
    {"n": 13 * 4096 + 1001, "grid": 4},        # the sanitizer size: 3-4 tiles per CTA, short last tile
    {"n": 9 * 4096 + 3, "grid": 1},            # one CTA streams 10 tiles: each stage reused 5 times
    {"n": 601 * 4096 - 5, "grid": 0},          # more tiles than 2 x SMs CTAs, ragged
    {"n": 1 << 24, "grid": 0},                 # the book's size
])
def test_every_variant_is_exact_on_gpu(sizes):
    result = check.check_pair(pairs.find(NAME), sizes, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
def test_grid_and_occupancy_on_gpu(mod):
    for variant in VARIANTS:
        info = mod.kernel_info(variant)
        assert info["grid"] == min(2 * info["sm_count"], 4096) and info["local_bytes"] == 0
        assert mod.kernel_info(variant, 10 * 4096, 3)["grid"] == 3 and mod.kernel_info(variant, 4097)["grid"] == 2
    for variant in ("pingpong_flags", "pingpong_mbarrier"):
        info = mod.kernel_info(variant)
        assert info["dynamic_smem_bytes"] == 96 * 1024 and info["max_blocks_per_sm"] == 2   # the book's 2 x SMs fit
    base = mod.kernel_info("baseline")
    assert base["dynamic_smem_bytes"] == 48 * 1024 and base["max_blocks_per_sm"] >= 2


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_on_gpu(mod, variant):
    inputs = mod.make_inputs({"n": (1 << 20) + 77, "grid": 0}, "cuda", 5)
    ref = mod.reference(inputs)
    launch = mod.PAIR.variants[variant](inputs)
    del inputs
    junk = torch.full((1 << 22,), float("nan"), device="cuda")   # would reuse freed a, b
    out = launch()
    torch.cuda.synchronize()
    del junk
    assert torch.equal(out.double(), ref)
