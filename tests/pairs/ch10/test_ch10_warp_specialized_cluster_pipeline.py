"""ch10.warp_specialized_cluster_pipeline: imports cleanly, formulas and inputs are right (the
kernels' fp32 chain of 4 x 96 terms is exact), the CUDA source builds for sm_90a with its symbols
and no local memory, and the SASS shows what each variant claims: the same cluster barriers
(UCGABAR), DSMEM reads (SR_SWINHI + generic LD.E) and FFMAs in all four; 32-bit LDG -> STS only in
the baseline, LDG.128 -> STS.128 only in vector_copy, LDGSTS (cp.async) only in the async variants,
no pipeline mbarriers anywhere, and in async_copy_pipeline alone a cp.async issued between the
barrier that publishes a tile and the compute (the prefetch).

GPU only (marked `gpu`): every variant exactly equal to the float64 reference at 1 tile per cluster
(the book's 8 tiles), ragged splits and several tiles per cluster; the grid is one resident wave.
"""
from __future__ import annotations

import ctypes
import re

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, assert_every_variant_needs_gpu_and_nvcc,
                          assert_exports, assert_probe_gates, ptxas_entries, requires_nvcc, sass_functions,
                          sass_opcodes)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "warp_specialized_cluster_pipeline.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.warp_specialized_cluster_pipeline"
VARIANTS = ["baseline", "vector_copy", "async_copy", "async_copy_pipeline"]
KERNEL_IDS = {f"cluster_pipeline_kernelILi{i}E": v for i, v in enumerate(VARIANTS)}   # template <int kMode>
SMEM_BYTES = (4 * 96 * 96 + 24 * 96) * 4                    # 2 stages of A and B + the band of C


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"tiles": 264, "clusters": 0}
    assert dict(pair.small_sizes) == {"tiles": 7, "clusters": 3}
    assert pair.tolerance == 0.0
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and "sm_90a" in pair.requires.note
    assert_every_variant_needs_gpu_and_nvcc(pair, VARIANTS)
    assert pair.lesson and "\n" not in pair.lesson
    for text in ("1.859x", "NEVER RUNS", "tiles=8", "tiles=7,clusters=3", "LDGSTS", "Missing wait", "UCGABAR",
                 "l1tex__m_xbar2l1tex_read_bytes_mem_dshared", "67 TFLOPS"):
        assert text in mod.__doc__, text


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"tiles": 1, "clusters": 0}) == 4 * 2 * 96**3 == 7_077_888
    assert mod.flops(mod.DEFAULT_SIZES) == 264 * 7_077_888
    assert mod.bytes({"tiles": 1}) == 3 * 96 * 96 * 4 == 110_592          # A, B in, C out
    assert mod.bytes(mod.BOOK_SIZES) == 8 * 110_592


def test_make_inputs_are_seeded_integers_and_sizes_checked(mod):
    a, b, c = (mod.make_inputs({"tiles": 3, "clusters": 2}, "cpu", s) for s in (3, 3, 4))
    assert a["a"].shape == a["b"].shape == (3, 96, 96) and a["a"].dtype == torch.float32
    assert a["clusters"] == 2 and mod.make_inputs({"tiles": 1}, "cpu", 0)["clusters"] == 0
    assert torch.equal(a["a"], b["a"]) and torch.equal(a["b"], b["b"]) and not torch.equal(a["a"], c["a"])
    assert not torch.equal(a["a"], a["b"])
    for t in (a["a"], a["b"]):
        assert torch.equal(t, t.round()) and float(t.min()) == -8.0 and float(t.max()) == 8.0
    for bad, match in (({"tiles": 0}, "tiles must be"), ({"tiles": -2}, "tiles must be"),
                       ({"tiles": 4, "clusters": -1}, "clusters must be")):
        with pytest.raises(ValueError, match=match):
            mod.make_inputs(bad, "cpu", 0)


def _kernel_chain(a: torch.Tensor, b: torch.Tensor, repeats: int = 4) -> torch.Tensor:
    """The kernels' arithmetic in fp32: each output one chain of repeats x 96 multiply-adds in k
    order (a rounded product and a rounded sum per term, never better than FFMA), times 1/4."""
    acc = torch.zeros(a.shape[0], 96, 96)
    for _ in range(repeats):
        for k in range(96):
            acc = acc + a[:, :, k:k + 1] * b[:, k:k + 1, :]
    return acc * 0.25


def test_reference_is_the_batched_product_and_the_fp32_chain_is_exact(mod):
    inputs = mod.make_inputs({"tiles": 2}, "cpu", 1)
    a, b, ref = inputs["a"], inputs["b"], mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (2, 96, 96)
    assert torch.equal(ref[1], a[1].double() @ b[1].double())
    assert torch.equal(_kernel_chain(a, b).double(), ref)                 # tolerance 0 is earned
    worst = torch.full((1, 96, 96), 8.0)                                   # the largest partial sum: 24,576
    assert torch.equal(_kernel_chain(worst, -worst).double(), torch.full((1, 96, 96), -6144.0, dtype=torch.float64))
    # the bound is what makes it exact: with values ~2^16 x larger the sums pass 2^24 and round
    big = inputs["a"] * 65537 + 1
    assert not torch.equal(_kernel_chain(big, b).double(), torch.bmm(big.double(), b.double()))


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, mod.SMALL_SIZES)


def test_library_is_declared_for_sm90a(mod):
    assert mod.LIBRARY.arch == "sm_90a" and mod.LIBRARY.source == CU_PATH
    assert set(mod.LIBRARY.functions) == {"aisp_wscp", "aisp_wscp_cluster_support", "aisp_wscp_info"}


def test_clusters_that_cannot_be_resident_are_a_requirement_error(monkeypatch, mod):
    assert_probe_gates(monkeypatch, mod, "aisp_wscp_cluster_support",
                       lambda: mod._require_clusters("async_copy_pipeline"), "4-CTA thread-block clusters",
                       require_on_error=lambda: mod._require_clusters("baseline"))


# --- the CUDA source ------------------------------------------------------------------------

def _by_variant(per_kernel: dict) -> dict:
    return {KERNEL_IDS[k]: body for mangled, body in per_kernel.items() for k in KERNEL_IDS if k in mangled}


def _ordered_ops(body: str) -> list[str]:
    return [m.group(2) for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", body)
            if (m.group(1) or "").strip() != "@!PT"]


@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_with_symbols_and_no_local_memory(built, mod):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert sorted(KERNEL_IDS[k] for c in compiled for k in KERNEL_IDS if k in c) == sorted(VARIANTS)
    assert frame_count == 4
    assert len(re.findall(r"Used \d+ registers, used 1 barriers", report)) == 4
    assert_exports(library, (*mod.LIBRARY.functions, mod.LIBRARY.error_string))


@pytest.mark.slow
@requires_nvcc
def test_sass_shows_each_variants_mechanism(built):
    ops = _by_variant(sass_opcodes(built[0]))
    text = _by_variant(sass_functions(built[0]))
    assert set(ops) == set(VARIANTS)
    base, vec, asy, pipe = (ops[v] for v in VARIANTS)
    for name, o in ops.items():
        assert o["LDL"] == o["STL"] == 0, name                                  # no local memory
        assert o["UCGABAR_ARV"] == o["UCGABAR_WAIT"] == 2 and o["MEMBAR.ALL.GPU"] == 2, name   # 2 cluster.sync
        assert "SR_SWINHI" in text[name], name                                # DSMEM window (map_shared_rank)
        # the same compute and store in all four: DSMEM loads (A 16-byte, B 4-byte), FFMAs, 16-byte stores
        for op in ("FFMA", "LD.E.128", "LD.E", "STG.E.128", "LDS.128"):
            assert o[op] == base[op] > 0, (name, op)
        assert not any(op.startswith(("SYNCS", "ARRIVES", "ATOM", "RED")) for op in o), name   # no mbarrier pipeline
    # baseline: scalar synchronous staging, LDG.32 -> STS.32 (beyond the 72 STS of the band of C)
    assert base["LDG.E.CONSTANT"] > 0 and base["STS"] > asy["STS"] == 72
    assert not any(op.startswith(("LDG.E.128", "STS.128", "LDGSTS")) for op in base)
    # vector_copy: 16-byte synchronous staging
    assert vec["LDG.E.128.CONSTANT"] > 0 and vec["STS.128"] > 0 and vec["STS"] == 72
    assert vec["LDG.E.CONSTANT"] == 0 and not any(op.startswith("LDGSTS") for op in vec)
    # async variants: cp.async 16 bytes, L1 bypassed, per-thread groups (commit / wait), no LDG -> STS
    for o in (asy, pipe):
        assert o["LDGSTS.E.BYPASS.128"] > 0 and o["LDGDEPBAR"] >= 1 and o["DEPBAR.LE"] >= 1
        assert o["STS"] == 72 and o["STS.128"] == 0 and not any(op.startswith("LDG.") for op in o)
    # the pipeline issues in two places (prologue + prefetch), async_copy in one
    assert pipe["LDGDEPBAR"] == 2 * asy["LDGDEPBAR"] and pipe["LDGSTS.E.BYPASS.128"] > asy["LDGSTS.E.BYPASS.128"]
    for variant, prefetches in (("async_copy", False), ("async_copy_pipeline", True)):
        seq = _ordered_ops(text[variant])
        between = seq[seq.index("UCGABAR_WAIT"):seq.index("FFMA")]          # publish barrier -> compute
        assert any(op.startswith("LDGSTS") for op in between) == prefetches, variant


@pytest.mark.slow
@requires_nvcc
def test_bad_arguments_are_refused_before_any_cuda_call(built):
    lib = ctypes.CDLL(str(built[0]))
    fn = lib.aisp_wscp
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                   ctypes.c_void_p]
    invalid, misaligned = 1, 716           # cudaErrorInvalidValue, cudaErrorMisalignedAddress
    assert fn(4, 16, 32, 48, 8, 0, None) == invalid          # no such variant
    assert fn(-1, 16, 32, 48, 8, 0, None) == invalid
    assert fn(0, 16, 32, 48, 0, 0, None) == invalid          # tiles < 1
    assert fn(0, 16, 32, 48, 8, -1, None) == invalid         # clusters < 0
    assert fn(0, None, 32, 48, 8, 0, None) == invalid        # null A
    assert fn(3, 16, 32, 56, 8, 0, None) == misaligned       # C not 16-byte aligned
    info = lib.aisp_wscp_info
    info.restype = ctypes.c_int
    info.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    assert info(0, 8, 0, None) == invalid and info(4, 8, 0, 16) == invalid


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("sizes", [{"tiles": 1, "clusters": 0}, {"tiles": 8, "clusters": 0},
                                   {"tiles": 7, "clusters": 3}, {"tiles": 5, "clusters": 1},
                                   {"tiles": 264, "clusters": 0}, {"tiles": 301, "clusters": 0}])
def test_every_variant_is_exact_on_gpu(sizes):
    # 8 tiles: one per cluster (the book); 7/3 and 5/1: several tiles per cluster, both buffers,
    # ragged; 264 and 301: the default and a ragged split over a full resident wave
    result = check.check_pair(pairs.find(NAME), sizes, device="cuda", variants=VARIANTS, trials=2)
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
@requires_nvcc
def test_grid_is_one_resident_wave_with_several_tiles_per_cluster(mod):
    infos = {v: mod.kernel_info(v) for v in VARIANTS}
    resident = infos["baseline"]["max_active_clusters"]
    assert 1 <= resident <= infos["baseline"]["sm_count"] // 4
    for info in infos.values():                    # every variant: the same grid and footprint
        assert info["max_active_clusters"] == resident and info["clusters"] == min(264, resident)
        assert info["dynamic_smem_bytes"] == SMEM_BYTES and info["local_bytes"] == 0
        assert info["max_tiles_per_cluster"] == -(-264 // info["clusters"])
    if infos["baseline"]["sm_count"] <= 132:
        assert infos["baseline"]["max_tiles_per_cluster"] >= 8     # the prefetch runs at the default size
    book = mod.kernel_info("async_copy_pipeline", tiles=8)
    assert book["clusters"] == 8 and book["max_tiles_per_cluster"] == 1   # the book: it never runs
    small = mod.kernel_info("async_copy_pipeline", tiles=7, clusters=3)
    assert small["clusters"] == 3 and small["max_tiles_per_cluster"] == 3


@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("variant", VARIANTS)
def test_closure_owns_its_inputs_on_gpu(mod, variant):
    inputs = mod.make_inputs({"tiles": 40, "clusters": 6}, "cuda", 5)
    ref = mod.reference(inputs)
    launch = mod.PAIR.variants[variant](inputs)
    del inputs
    junk = torch.full((1 << 22,), float("nan"), device="cuda")   # would reuse freed a and b
    out = launch()
    torch.cuda.synchronize()
    del junk
    assert torch.equal(out.double(), ref)
