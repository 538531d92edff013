"""ch10.warpgroup_specialization: a pair made of two sibling pairs' kernels (the hand-written
warp-specialized GEMM of ch10.warp_specialization, the CUTLASS cooperative 2x1 GEMM of
ch10.warp_specialization_cutlass). Imports without building or looking for headers, runs exactly
the siblings' kernels on the siblings' inputs, hashes the siblings' sources into its digest (a change
to their kernels is a change to this pair), and predicts its mechanism as data. The kernels' own
builds, SASS and sanitizer runs are the sibling pairs' tests; GPU only (marked `gpu`): every
variant against the float64 reference at ragged and multi-wave sizes.
"""
from __future__ import annotations


import pytest
from repo_paths import ROOT
from pair_testing import assert_cpu_tensors_refused_before_any_build, import_fresh, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof import tools  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.pairs.source import source_digest  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "warpgroup_specialization.py"
NAME = "ch10.warpgroup_specialization"
VARIANTS = ["baseline", "cutlass_cooperative_c2", "cutlass_cooperative_c2_swizzle8", "cublas"]


def test_pair_is_discovered_with_its_contract():
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"m": 16384, "n": 16384, "k": 2048}          # the book's size
    assert pair.roles == {"cublas": "reference"} and not pair.comparison
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0)
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False, have_cutlass=False) == \
        ["baseline", "cublas"]
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False, have_cutlass=True) == VARIANTS
    (dram,) = pair.expect
    assert (dram.metric, dram.change, dram.variants) == ("dram_bytes", "increase", ("cutlass_cooperative_c2",))


def test_variants_are_the_sibling_pairs_kernels(mod):
    """The same factories (same source lines and bytecode, the same configuration in their closures,
    the same library source): nothing re-implemented here."""

    def fingerprint(factory):
        code = factory.__code__
        cells = [c.cell_contents for c in factory.__closure__ or ()]
        return (code.co_filename, code.co_firstlineno, code.co_code, factory.__name__,
                [c for c in cells if isinstance(c, (int, str, tuple))])

    hand = pairs.find("ch10.warp_specialization")
    cut = pairs.find("ch10.warp_specialization_cutlass")
    pairs_of = {"baseline": (hand, "warp_specialized"), "cutlass_cooperative_c2": (cut, "cooperative_256x128_c2"),
                "cutlass_cooperative_c2_swizzle8": (cut, "cooperative_256x128_c2_swizzle8"),
                "cublas": (hand, "cublas")}
    for variant, (sibling, theirs) in pairs_of.items():
        assert fingerprint(mod.PAIR.variants[variant]) == fingerprint(sibling.variants[theirs]), variant
    assert mod._HAND.LIBRARY.source == hand.variants["warp_specialized"].__globals__["LIBRARY"].source
    assert mod._CUTLASS.LIBRARY.source == cut.variants["cooperative_256x128_c2"].__globals__["LIBRARY"].source


def test_inputs_reference_and_counts_are_the_siblings(mod):
    hand = import_fresh(ROOT / "kernels" / "ch10" / "warp_specialization.py", "ws_for_inputs_check")
    cut = import_fresh(ROOT / "kernels" / "ch10" / "warp_specialization_cutlass.py", "wsc_for_inputs_check")
    sizes = {"m": 6, "n": 16, "k": 40}
    ours = mod.make_inputs(sizes, "cpu", 3)
    for sibling in (hand, cut):
        theirs = sibling.make_inputs(sizes, "cpu", 3)
        assert all(torch.equal(ours[key], theirs[key]) for key in ("a", "b"))
    ref = mod.reference(ours)
    assert ref.dtype == torch.float64 and torch.equal(ref, ours["a"].double() @ ours["b"].double().t())
    for sizes in (mod.DEFAULT_SIZES, {"m": 2, "n": 3, "k": 4}):
        assert mod.flops(sizes) == hand.flops(sizes) == cut.flops(sizes) == 2 * sizes["m"] * sizes["n"] * sizes["k"]
        assert mod.bytes(sizes) == hand.bytes(sizes) == cut.bytes(sizes)
    assert mod.PAIR.tolerance == hand.PAIR.tolerance == cut.PAIR.tolerance
    assert mod.SMALL_SIZES == dict(cut.PAIR.small_sizes)
    with pytest.raises(ValueError, match="multiples of 8"):
        mod.make_inputs({"m": 4, "n": 12, "k": 16}, "cpu", 0)


def test_the_digest_covers_both_siblings_and_their_headers():
    files = source_digest(PAIR_PATH)["files"]
    assert files[0] == "warpgroup_specialization.py"
    for name in ("warp_specialization.py", "warp_specialization.cu", "warp_specialization_cutlass.py",
                 "warp_specialization_cutlass.cu", "../common/wgmma_tma.cuh"):
        assert name in files, name


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_tensors_are_a_requirement_error_before_any_build(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, {"m": 4, "n": 16, "k": 16})


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [
    {"m": 520, "n": 264, "k": 520},        # the small size: ragged M, N, K; every ring wraps
    {"m": 4096, "n": 4096, "k": 512},      # 256 to 512 tiles: several per persistent CTA
])
def test_every_variant_matches_the_float64_reference(sizes):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs sm_90 (the kernels are built for sm_90a)")
    if not tools.have_cutlass():
        pytest.skip("needs the CUTLASS headers")
    result = check.check_pair(pairs.find(NAME), sizes, device="cuda", trials=2)
    check.raise_if_failed(result)
    assert {c.variant for c in result.checks} >= set(VARIANTS)
    assert all(c.rel_err_vs_reference < 1e-3 for c in result.checks)        # fp16 rounding (~2e-4), nothing more
