"""ch10.dsmem_reduction: imports cleanly, formulas and inputs are right (exact integer sums), the
CUDA source builds for sm_90a with its symbols, no local memory, and SASS that shows each variant's
mechanism: REDG global atomics only in block_atomic, cluster barriers (UCGABAR) and DSMEM atomics
(ATOM.E into the shared window) only in the cluster variants, a DSMEM load without atomics in the
leader-read variant, float4 loads only where claimed.

GPU only (marked `gpu`): every variant exactly equal to the float64 reference at small, ragged
and multi-segment sizes.
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

PAIR_PATH = ROOT / "kernels" / "ch10" / "dsmem_reduction.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.dsmem_reduction"
VARIANTS = ["baseline", "block_atomic", "cluster4_dsmem_atomic", "cluster2_leader_read", "cluster4_dims",
            "cluster4_warp_specialized"]
KERNELS = ("partials_kernel", "combine_kernel", "block_atomic_kernel", "cluster4_atomic_kernel",
           "cluster2_leader_read_kernel", "cluster4_dims_kernel", "cluster4_vec4_kernel")


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"n": 1 << 26}
    assert pair.tolerance == 0.0
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson


def test_flops_and_bytes_formulas(mod):
    assert mod.segments(1 << 26) == 4096 and mod.segments(16385) == 2 and mod.segments(1) == 1
    assert mod.flops({"n": 1 << 26}) == 1 << 26
    assert mod.bytes({"n": 1 << 26}) == 4 * (1 << 26) + 4 * 4096            # 256 MiB in, 16 KiB out
    assert mod.bytes({"n": 16385}) == 4 * 16385 + 8


def test_make_inputs_are_seeded_integers(mod):
    a, b, c = (mod.make_inputs({"n": 5000}, "cpu", s)["x"] for s in (3, 3, 4))
    assert a.dtype == torch.float32 and a.shape == (5000,)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(a, a.round()) and float(a.min()) == 0.0 and float(a.max()) == 3.0
    for n in (0, -5):
        with pytest.raises(ValueError, match="n must be"):
            mod.make_inputs({"n": n}, "cpu", 0)


def test_reference_sums_segments_and_a_short_tail(mod):
    inputs = mod.make_inputs({"n": 3 * 16384 + 5}, "cpu", 1)
    x, ref = inputs["x"].double(), mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (4,)
    for g in range(4):
        assert float(ref[g]) == float(x[g * 16384:(g + 1) * 16384].sum())
    # the exactness claim: fp32 sums in any order equal the float64 ones (all < 2^24)
    x32 = inputs["x"]
    assert torch.equal(x32[:3 * 16384].view(12, 4096).sum(1).view(3, 4).sum(1).double(), ref[:3])
    assert 3 * 16384 < 2**24


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"n": 64}, match="CUDA tensor")


def test_library_is_declared_for_sm90a(mod):
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {"aisp_dsmem_reduction", "aisp_dsmem_reduction_cluster_support"}


def test_no_cluster_support_is_a_requirement_error(monkeypatch, mod):
    assert_probe_gates(monkeypatch, mod, "aisp_dsmem_reduction_cluster_support",
                       lambda: mod._require_clusters("cluster4_dsmem_atomic"), "thread-block clusters")


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
    assert_exports(library, ("aisp_dsmem_reduction", "aisp_dsmem_reduction_cluster_support", "aisp_dsmem_reduction_error_string"))


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_each_variants_mechanism(sass):
    assert set(sass) == set(KERNELS)
    for name, body in sass.items():
        assert "STL" not in body and "LDL" not in body, name              # no local memory
    cluster = ("cluster4_atomic_kernel", "cluster4_dims_kernel", "cluster4_vec4_kernel", "cluster2_leader_read_kernel")
    plain = ("partials_kernel", "combine_kernel", "block_atomic_kernel")
    for name in cluster:   # cluster.sync(): release + cluster barrier arrive/wait; DSMEM via the shared window
        assert "UCGABAR_ARV" in sass[name] and "UCGABAR_WAIT" in sass[name] and "SR_SWINHI" in sass[name], name
        assert "REDG" not in sass[name], name                              # no global atomics
    for name in plain:
        assert "UCGABAR" not in sass[name] and "SR_SWINHI" not in sass[name] and "ATOM" not in sass[name], name
    for name in ("cluster4_atomic_kernel", "cluster4_dims_kernel", "cluster4_vec4_kernel"):
        assert "ATOM.E.ADD.F32" in sass[name], name                        # the DSMEM atomicAdd
    leader = sass["cluster2_leader_read_kernel"]
    assert "ATOM" not in leader and re.search(r"\bLD\.E\b", leader)        # a DSMEM load, no atomics
    assert "REDG.E.ADD.F32" in sass["block_atomic_kernel"]                 # one global atomic per block
    assert not re.search(r"\bRED", sass["partials_kernel"] + sass["combine_kernel"])
    assert "LDG.E.128" in sass["cluster4_vec4_kernel"]                     # float4 loads
    for name in ("partials_kernel", "block_atomic_kernel", "cluster4_atomic_kernel", "cluster4_dims_kernel"):
        assert "LDG.E.128" not in sass[name], name                         # scalar loads, as in the book


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = lib.aisp_dsmem_reduction
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    invalid, misaligned = 1, 716           # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(6, 16, 100, 16, 16, None) == invalid         # no such variant
    assert fn(1, 16, 0, 16, 16, None) == invalid           # n < 1
    assert fn(1, None, 100, 16, 16, None) == invalid       # null x
    assert fn(1, 20, 100, 16, 16, None) == misaligned      # x not 16-byte aligned
    assert fn(0, 16, 100, 16, None, None) == invalid       # the baseline needs its scratch


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("n", [1, 4096, 65536, 65541, 3 * 16384 + 4097, 1 << 22])
def test_every_variant_is_exact_on_gpu(n):
    result = check.check_pair(pairs.find(NAME), {"n": n}, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_on_gpu(mod, variant):
    (out,), ref = run_with_inputs_freed(mod, variant, {"n": 1 << 20})
    assert torch.equal(out.double(), ref)
