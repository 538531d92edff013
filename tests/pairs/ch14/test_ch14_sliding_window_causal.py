"""ch14.sliding_window_causal (the book's sliding_window as it runs: no window): imports cleanly,
shares ch14.sliding_window's inputs for the same seed, its reference is that pair's with every
earlier key visible (plain causal), both variants pass the check on a CPU, the tolerance rejects a
512-token window (what the windowed pair computes) and a missing mask, and (GPU only) both match at
the small and the book's size, launches drop, and the dispatcher picks a fused backend.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, device_events_per_call, import_fresh, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

KERNELS = ROOT / "kernels" / "ch14"
PAIR_PATH = KERNELS / "sliding_window_causal.py"
NAME = "ch14.sliding_window_causal"
VARIANTS = ["baseline", "causal_sdpa_no_window"]
TINY = {"batch": 2, "seq": 96, "embed": 64, "heads": 2}


@pytest.fixture(scope="module")
def windowed():
    return import_fresh(KERNELS / "sliding_window.py", "ch14_sliding_window_beside_causal")


@pytest.mark.slow
def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"batch": 4, "seq": 4096, "embed": 1024, "heads": 16}      # the book's
    assert pair.tolerance == pairs.find("ch14.sliding_window").tolerance == 5e-3
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=False) == VARIANTS
    for text in ("12.046x", "API compatibility", "own causal reference", "Predicted profile"):
        assert text in mod.__doc__


def test_inputs_are_the_windowed_pairs_with_a_causal_window(mod, windowed):
    ours = mod.make_inputs(TINY, "cpu", 3)
    theirs = windowed.make_inputs({**TINY, "window": 512}, "cpu", 3)
    for key in ("x", "w_qkv", "w_out"):
        assert torch.equal(ours[key], theirs[key])
    assert ours["window"] == TINY["seq"] - 1


def test_formulas_are_causal(mod, windowed):
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == windowed.causal_flops({**d, "window": 512}) == 137_438_953_472 + 137_472_507_904
    assert mod.bytes(d) == 75_497_472 and round((mod.baseline_bytes(d) - mod.bytes(d)) / 1e9, 1) == 17.2


def test_reference_is_plain_causal_attention(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    x, w_qkv, w_out = (inputs[k].double() for k in ("x", "w_qkv", "w_out"))
    q, k, v = (x @ w_qkv.t()).view(2, 96, 3, 2, 32).permute(2, 0, 3, 1, 4)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = o.transpose(1, 2).reshape(2, 96, 64) @ w_out.t()
    assert torch.allclose(mod.reference(inputs), expected, rtol=0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [TINY, {"batch": 1, "seq": 300, "embed": 128, "heads": 2}])
def test_both_variants_pass_check_on_cpu(sizes):
    result = check.check_pair(pairs.find(NAME), sizes, device="cpu")
    check.raise_if_failed(result)
    assert {c.variant for c in result.checks} == set(VARIANTS)
    assert all(c.poisoned and c.unwritten_elements == 0 for c in result.checks)
    assert max(c.rel_err_vs_reference for c in result.checks) < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["window_512", "no_mask"])
def test_a_wrong_variant_is_rejected(mod, windowed, kind):
    def wrong(inputs):
        if kind == "window_512":                            # the windowed pair's function
            return windowed.sdpa_band({**inputs, "window": 512}, "FLASH_ATTENTION")
        proj = windowed._Projections(inputs)
        return lambda: proj.output(torch.nn.functional.scaled_dot_product_attention(*proj.qkv_heads()))

    bad = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": wrong})
    result = check.check_pair(bad, {"batch": 1, "seq": 1024, "embed": 128, "heads": 2}, device="cpu")
    assert result.failed_variants == ["wrong"]          # ~0.2 and ~0.8 vs 5e-3


def test_dispatcher_choice_names_a_backend(mod):
    assert mod.dispatcher_choice(mod.make_inputs(TINY, "cpu", 0)) in (
        "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(which):
    result = check_on_gpu(NAME, which)
    assert {c.variant for c in result.checks} == set(VARIANTS)


@pytest.mark.gpu
def test_fused_backend_and_launches_drop(mod):
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    choice = mod.dispatcher_choice(inputs)
    base = device_events_per_call(mod.baseline(inputs))
    sdpa = device_events_per_call(mod.optimized_causal_sdpa_no_window(inputs))
    print(f"{torch.cuda.get_device_name()}: dispatcher {choice}\nbaseline: {base}\nsdpa: {sdpa}")
    assert choice in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION")   # H100, torch 2.11: cuDNN
    kernels = lambda names: [n for n in names if not n.startswith("Memset")]          # noqa: E731
    # both sides run the two projections (nvjet GEMMs); the fused side adds one attention kernel
    assert len(kernels(sdpa)) <= 4 and len(kernels(base)) >= len(kernels(sdpa)) + 3
    assert any(k in n for n in sdpa for k in ("flash", "fmha", "cudnn", "efficient"))
