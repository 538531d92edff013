"""ch10.cluster_group: imports cleanly, formulas and inputs are right (exact integer stats), the CUDA
source builds for sm_90a with its symbols, no local memory, and SASS that shows each variant's
mechanism: per-element REDG global atomics only in the baseline, cluster barriers (UCGABAR) and
DSMEM loads through the shared window only in cluster2_dsmem, float4 loads only in
single_cta_float4, no atomics in any optimization.

GPU only (marked `gpu`): every variant exactly equal to the float64 reference at small, ragged
and multi-wave sizes.
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

PAIR_PATH = ROOT / "kernels" / "ch10" / "cluster_group.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.cluster_group"
VARIANTS = ["baseline", "cluster2_dsmem", "block_reduce", "single_cta_float4"]
KERNELS = ("atomics_kernel", "cluster2_dsmem_kernel", "block_reduce_kernel", "single_cta_float4_kernel")


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"n": 1 << 24}
    assert pair.tolerance == 0.0
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson


def test_flops_and_bytes_formulas(mod):
    assert mod.chunks(1 << 24) == 8192 and mod.chunks(2049) == 2 and mod.chunks(1) == 1
    assert mod.flops({"n": 1 << 24}) == 3 * (1 << 24)
    assert mod.bytes({"n": 1 << 24}) == 4 * (1 << 24) + 8 * 8192              # 64 MiB in, 64 KiB out
    assert mod.bytes({"n": 2049}) == 4 * 2049 + 16


def test_make_inputs_are_seeded_integers(mod):
    a, b, c = (mod.make_inputs({"n": 5000}, "cpu", s)["x"] for s in (3, 3, 4))
    assert a.dtype == torch.float32 and a.shape == (5000,)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(a, a.round()) and float(a.min()) == -2.0 and float(a.max()) == 2.0
    for n in (0, -5):
        with pytest.raises(ValueError, match="n must be"):
            mod.make_inputs({"n": n}, "cpu", 0)


def test_reference_is_sum_and_sum_of_squares_per_chunk(mod):
    inputs = mod.make_inputs({"n": 3 * 2048 + 5}, "cpu", 1)
    x, ref = inputs["x"].double(), mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (4, 2)
    for c in range(4):
        chunk = x[c * 2048:(c + 1) * 2048]
        assert float(ref[c, 0]) == float(chunk.sum()) and float(ref[c, 1]) == float((chunk * chunk).sum())
    # the exactness claim: fp32 stats in any order equal the float64 ones (|values| <= 8192 < 2^24)
    rows = inputs["x"][:3 * 2048].view(3, 2048)
    assert torch.equal(rows.flip(1).sum(1).double(), ref[:3, 0]) and torch.equal((rows * rows).sum(1).double(), ref[:3, 1])


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"n": 64}, match="CUDA tensor")


def test_library_is_declared_for_sm90a(mod):
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {"aisp_cluster_group", "aisp_cluster_group_cluster_support"}


def test_no_cluster_support_is_a_requirement_error(monkeypatch, mod):
    assert_probe_gates(monkeypatch, mod, "aisp_cluster_group_cluster_support",
                       lambda: mod._require_clusters("cluster2_dsmem"), "thread-block clusters")


# --- the CUDA source ------------------------------------------------------------------------

def kernel_of(mangled: str) -> str:
    """The name in KERNELS of a mangled kernel name (the `sass` fixture keys by it)."""
    return next(k for k in KERNELS if re.search(rf"\d{k}E", mangled))


@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_symbols_and_no_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert sorted(k for k in KERNELS if any(re.search(rf"\d{k}E", c) for c in compiled)) == sorted(KERNELS)
    assert frame_count == len(KERNELS)
    assert re.search(r"Used \d+ registers, used 1 barriers, 8224 bytes smem", report)   # the 8 KiB tile
    assert_exports(library, ("aisp_cluster_group", "aisp_cluster_group_cluster_support", "aisp_cluster_group_error_string"))


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_each_variants_mechanism(sass):
    assert set(sass) == set(KERNELS)
    for name, body in sass.items():
        assert "STL" not in body and "LDL" not in body, name              # no local memory
    atomics = sass["atomics_kernel"]
    assert len(re.findall(r"REDG\.E\.ADD\.F32", atomics)) >= 2             # 2 global atomics per element
    assert "UCGABAR" not in atomics and "BAR.SYNC" not in atomics
    dsmem = sass["cluster2_dsmem_kernel"]
    assert "UCGABAR_ARV" in dsmem and "UCGABAR_WAIT" in dsmem             # cluster.sync()
    assert dsmem.count("UCGABAR_WAIT") >= 2                                # two barriers per chunk
    assert "SR_SWINHI" in dsmem and re.search(r"\bLD\.E\b", dsmem)        # tile read through the DSMEM window
    for name in ("cluster2_dsmem_kernel", "block_reduce_kernel", "single_cta_float4_kernel"):
        assert not re.search(r"\bRED|\bATOM", sass[name]), name           # no atomics in any optimization
    for name in ("atomics_kernel", "block_reduce_kernel", "single_cta_float4_kernel"):
        assert "UCGABAR" not in sass[name] and "SR_SWINHI" not in sass[name], name
    assert "LDG.E.128" in sass["single_cta_float4_kernel"]                 # float4 loads
    for name in ("atomics_kernel", "cluster2_dsmem_kernel", "block_reduce_kernel"):
        assert "LDG.E.128" not in sass[name], name


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = lib.aisp_cluster_group
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p]
    invalid, misaligned = 1, 716           # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(4, 16, 100, 16, None) == invalid             # no such variant
    assert fn(0, 16, 0, 16, None) == invalid               # n < 1
    assert fn(0, 16, 100, None, None) == invalid           # null out
    assert fn(3, 16, 100, 24, None) == misaligned          # out not 16-byte aligned


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("n", [1, 2048, 65536, 65541, 2048 * 4000 + 3, 1 << 22])
def test_every_variant_is_exact_on_gpu(n):
    # 2048 * 4000 chunks exceed 4 x SMs: block_reduce's blocks loop over several chunks
    result = check.check_pair(pairs.find(NAME), {"n": n}, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_on_gpu(mod, variant):
    (out,), ref = run_with_inputs_freed(mod, variant, {"n": 1 << 20})
    assert torch.equal(out.double(), ref)
