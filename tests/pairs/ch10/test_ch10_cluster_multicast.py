"""ch10.cluster_multicast: imports cleanly, formulas and inputs are right (exact integer GEMM), the
CUDA source builds for sm_90a with its symbols, no local memory, and SASS that shows each variant's
mechanism: the B tile by plain LDG + STS only in the baseline, one multicast TMA load
(UTMALDG.2D.MULTICAST) plus cluster barriers (UCGABAR) only in multicast, a per-CTA TMA load
(UTMALDG.2D) without cluster barriers in tma_no_multicast, the mbarrier (SYNCS) in both TMA
variants, and the same inner product (512 FFMA, 160 LDS.128) in all three. A GPU without clusters
of the asked width is a RequirementError (a skip).

GPU only (marked `gpu`): every variant exactly equal to the float64 reference at small, ragged and
multi-wave sizes and at every cluster width; the real probes accept every width on Hopper.
"""
from __future__ import annotations

import ctypes

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, assert_every_variant_needs_gpu_and_nvcc,
                          assert_exports, assert_probe_gates, fake_library, opcode_counts, ptxas_entries,
                          requires_nvcc, run_with_inputs_freed, sass_functions)

torch = pytest.importorskip("torch")

from aisp_kernels.binding import CUDA_ERROR_NOT_SUPPORTED  # noqa: E402
from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "cluster_multicast.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.cluster_multicast"
VARIANTS = ["baseline", "multicast", "tma_no_multicast"]
KERNELS = {"ILi0E": "baseline", "ILi1E": "multicast", "ILi2E": "tma_no_multicast"}   # template argument -> variant
PROBES = [f"aisp_cluster_multicast_cluster{c}_support" for c in (2, 4, 8, 16)]


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"m": 4096, "n": 4096, "k": 4096, "cluster": 16}     # the book's size
    assert dict(pair.small_sizes) == {"m": 102, "n": 260, "k": 300, "cluster": 16}
    assert pair.tolerance == 0.0
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"m": 4096, "n": 4096, "k": 4096, "cluster": 16}) == 2 * 4096**3
    assert mod.flops({"m": 3, "n": 8, "k": 5}) == 240
    assert mod.bytes({"m": 4096, "n": 4096, "k": 4096, "cluster": 16}) == 3 * 4 * 4096**2   # 192 MiB
    assert mod.bytes({"m": 3, "n": 8, "k": 5}) == 4 * (15 + 40 + 24)
    assert mod.SMEM_BYTES == 65536 + 2048 + 8


def test_make_inputs_are_seeded_integers(mod):
    sizes = {"m": 37, "n": 132, "k": 301, "cluster": 8}
    x, y, z = (mod.make_inputs(sizes, "cpu", s) for s in (3, 3, 4))
    assert x["a"].shape == (37, 301) and x["b"].shape == (301, 132) and x["cluster"] == 8
    assert x["a"].dtype == x["b"].dtype == torch.float32
    assert torch.equal(x["a"], y["a"]) and torch.equal(x["b"], y["b"])
    assert not torch.equal(x["a"], z["a"]) and not torch.equal(x["b"], z["b"])
    assert not torch.equal(x["a"][:, :132], x["b"][:37])                   # A and B are different draws
    for t in (x["a"], x["b"]):
        assert torch.equal(t, t.round()) and float(t.min()) == -2.0 and float(t.max()) == 2.0
    assert mod.make_inputs({"m": 4, "n": 4, "k": 4}, "cpu", 0)["cluster"] == 16     # the default width


@pytest.mark.parametrize("sizes, match", [
    ({"m": 0, "n": 128, "k": 128}, "m=0"),
    ({"m": 4, "n": 130, "k": 128}, "multiple of 4"),
    ({"m": 4, "n": 0, "k": 128}, "multiple of 4"),
    ({"m": 4, "n": 65536 * 128, "k": 128}, "multiple of 4"),
    ({"m": 4, "n": 128, "k": 0}, "k=0"),
    ({"m": 4, "n": 128, "k": (1 << 22) + 1}, "exact"),
    ({"m": 4, "n": 128, "k": 128, "cluster": 3}, "one of 2, 4, 8, 16"),
    ({"m": 4, "n": 128, "k": 128, "cluster": 32}, "one of 2, 4, 8, 16"),
])
def test_make_inputs_refuses_sizes_the_kernels_do_not_take(mod, sizes, match):
    with pytest.raises(ValueError, match=match):
        mod.make_inputs(sizes, "cpu", 0)


def test_reference_is_the_exact_product(mod):
    inputs = mod.make_inputs({"m": 9, "n": 20, "k": 333, "cluster": 2}, "cpu", 1)
    a, b, ref = inputs["a"], inputs["b"], mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (9, 20)
    assert float(ref[2, 7]) == sum(float(a[2, i]) * float(b[i, 7]) for i in range(333))
    # the exactness claim: an fp32 product in any summation order equals the float64 one
    assert torch.equal((a @ b).double(), ref)
    assert torch.equal((a.flip(1) @ b.flip(0)).double(), ref)


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"m": 8, "n": 128, "k": 64})


def test_library_is_declared_for_sm90a(mod):
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {"aisp_cluster_multicast", "aisp_cluster_multicast_encode_b", *PROBES}


@pytest.mark.parametrize("cluster", [2, 4, 8, 16])
def test_missing_cluster_width_is_a_requirement_error(monkeypatch, mod, cluster):
    error = assert_probe_gates(monkeypatch, mod, f"aisp_cluster_multicast_cluster{cluster}_support",
                               lambda: mod._require_cluster("multicast", cluster), f"clusters of {cluster} CTAs")
    assert ("non-portable" in str(error)) == (cluster == 16)


# --- the CUDA source ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sass(built) -> dict[str, str]:
    """`cuobjdump -sass` of the library, one entry per variant's kernel instantiation."""
    out = {}
    for mangled, body in sass_functions(built[0]).items():
        variants = [v for tag, v in KERNELS.items() if "cluster_gemm_kernel" + tag in mangled]
        assert len(variants) == 1, mangled
        out[variants[0]] = body
    return out


@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_symbols_and_no_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert sorted(tag for tag in KERNELS if any("cluster_gemm_kernel" + tag in c for c in compiled)) == sorted(KERNELS)
    assert frame_count == len(KERNELS)
    assert "bytes smem" not in report                     # all shared memory is dynamic (67,592 bytes)
    assert_exports(library, ("aisp_cluster_multicast", "aisp_cluster_multicast_encode_b", "aisp_cluster_multicast_error_string",
                 *PROBES))


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_each_variants_mechanism(sass):
    assert set(sass) == set(VARIANTS)
    ops = {v: opcode_counts(body) for v, body in sass.items()}
    for v, body in sass.items():
        assert "STL" not in body and "LDL" not in body, v                  # no local memory
        # the same inner product everywhere: 128 k x 4 columns of FFMA, 128 + 32 LDS.128, one float4 store
        assert ops[v]["FFMA"] == 512 and ops[v]["LDS.128"] == 160 and ops[v]["STG.E.128"] == 1, v

    base, mc, tma = ops["baseline"], ops["multicast"], ops["tma_no_multicast"]
    # baseline: the B tile by plain loads (8 per unrolled step) + the 4 A loads, stored with STS; no TMA
    assert sum(n for op, n in base.items() if op.startswith("LDG")) >= 12 and base["STS"] >= 12
    assert not any(op.startswith(("UTMALDG", "SYNCS", "UCGABAR")) for op in base)
    # multicast: one multicast TMA load, armed and awaited on an mbarrier, cluster barriers around it
    assert mc["UTMALDG.2D.MULTICAST"] == 1 and mc["UTMALDG.2D"] == 0
    assert mc["SYNCS.ARRIVE.TRANS64"] >= 1 and any(op.startswith("SYNCS.PHASECHK.TRANS64") for op in mc)
    assert mc["UCGABAR_ARV"] == 2 and mc["UCGABAR_WAIT"] == 2             # one per k step + one before exit
    # tma_no_multicast: a per-CTA TMA load on the same mbarrier protocol, no cluster barrier
    assert tma["UTMALDG.2D"] == 1 and tma["UTMALDG.2D.MULTICAST"] == 0
    assert tma["SYNCS.ARRIVE.TRANS64"] >= 1 and any(op.startswith("SYNCS.PHASECHK.TRANS64") for op in tma)
    assert not any(op.startswith("UCGABAR") for op in tma)
    for v in ("multicast", "tma_no_multicast"):                           # only A by plain loads
        assert sum(n for op, n in ops[v].items() if op.startswith("LDG")) == 4, v
        assert ops[v]["STS"] == 4, v


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = lib.aisp_cluster_multicast
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    enc = lib.aisp_cluster_multicast_encode_b
    enc.restype = ctypes.c_int
    enc.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    invalid, misaligned = 1, 716           # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    good = dict(variant=1, map_b=256, a=16, b=32, c=48, m=8, n=128, k=64, cluster=16)

    def call(**changes):
        args = {**good, **changes}
        return fn(*args.values(), None)

    assert call(variant=3) == invalid                      # no such variant
    assert call(n=130) == invalid                          # N not a multiple of 4
    assert call(m=0) == invalid and call(k=0) == invalid
    assert call(cluster=3) == invalid and call(cluster=32) == invalid
    assert call(map_b=None) == invalid                     # a TMA variant without its tensor map
    assert call(c=None) == invalid
    assert call(b=24) == misaligned                        # B not 16-byte aligned
    assert call(n=65536 * 128) == invalid                  # more column tiles than grid.y holds
    buf = ctypes.create_string_buffer(128)
    assert enc(16, 64, 130, buf) == invalid and enc(16, 0, 128, buf) == invalid and enc(16, 64, 128, None) == invalid
    assert enc(24, 64, 128, buf) == misaligned


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("sizes", [
    {"m": 4, "n": 4, "k": 1},                   # one tile, one ragged k step, 15 padding CTAs
    {"m": 102, "n": 260, "k": 300},             # the sanitizer size: ragged in M, N and K
    {"m": 64, "n": 128, "k": 128},              # exactly one cluster, one k step
    {"m": 1030, "n": 388, "k": 1000},           # several clusters per strip, ragged everywhere
    {"m": 4096, "n": 1024, "k": 512},           # 8,192 CTAs: many waves of clusters
])
def test_every_variant_is_exact_on_gpu(sizes):
    result = check.check_pair(pairs.find(NAME), {**sizes, "cluster": 16}, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_every_cluster_width_is_exact_on_gpu(cluster):
    result = check.check_pair(pairs.find(NAME), {"m": 514, "n": 260, "k": 257, "cluster": cluster}, device="cuda",
                              variants=VARIANTS, trials=1)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
def test_hopper_takes_every_cluster_width(mod):
    for cluster in mod.CLUSTERS:                            # the real probes, 16 included
        mod._require_cluster("multicast", cluster)


@pytest.mark.gpu
@requires_nvcc
def test_a_refused_width_skips_the_variant_before_it_allocates(monkeypatch, mod):
    inputs = mod.make_inputs({"m": 64, "n": 128, "k": 128, "cluster": 16}, "cuda", 0)
    monkeypatch.setattr(mod, "LIBRARY", fake_library("aisp_cluster_multicast_cluster16_support",
                                                     CUDA_ERROR_NOT_SUPPORTED))
    for variant in VARIANTS:
        with pytest.raises(RequirementError, match="clusters of 16 CTAs"):
            mod.PAIR.variants[variant](inputs)


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_on_gpu(mod, variant):
    (out,), ref = run_with_inputs_freed(mod, variant, {"m": 512, "n": 512, "k": 384, "cluster": 16})
    assert torch.equal(out.double(), ref)
