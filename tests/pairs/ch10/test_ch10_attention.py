"""ch10.attention: imports cleanly, formulas add up, both variants match the float64 reference on
a CPU (SDPA has a CPU flash kernel), the tolerance rejects a wrong scale and a dropped key block,
and (GPU only) both match at the small and the book's size, the dispatcher picks a fused backend,
and a call launches 4 kernels in the baseline and at most 3 in SDPA.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, device_events_per_call, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "attention.py"
NAME = "ch10.attention"
TINY = {"batch": 2, "heads": 2, "seq": 96, "head_dim": 32}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == ["baseline", "sdpa"]
    assert dict(pair.sizes) == {"batch": 16, "heads": 16, "seq": 1280, "head_dim": 64}   # the book's
    assert dict(pair.small_sizes) == {"batch": 2, "heads": 4, "seq": 256, "head_dim": 64}
    assert pair.requires.min_cc == (9, 0) and pair.tolerance == 3e-3
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=False) == ["baseline", "sdpa"]
    for text in ("5.60x", "dispatcher_choice", "4 -> 2", "Predicted profile", "5.03 GB"):
        assert text in mod.__doc__


def test_flops_and_bytes_formulas(mod):
    s = {"batch": 1, "heads": 2, "seq": 3, "head_dim": 4}
    assert mod.flops(s) == 4 * 2 * 9 * 4 == 288
    assert mod.bytes(s) == 4 * 2 * 3 * 4 * 2 == 192
    assert mod.baseline_bytes(s) == 192 + 6 * 2 * 9 * 2 == 408
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == 107_374_182_400                          # 107 GFLOP
    assert mod.bytes(d) == 167_772_160                              # Q, K, V, O: 168 MB
    assert mod.baseline_bytes(d) - mod.bytes(d) == 6 * 838_860_800  # six passes over 839 MB of scores
    assert mod.flops(d) / mod.baseline_bytes(d) < 25 and mod.flops(d) / mod.bytes(d) > 300


def test_make_inputs_is_seeded(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    for key in ("q", "k", "v"):
        assert a[key].dtype == torch.float16 and a[key].shape == (2, 2, 96, 32) and a[key].is_contiguous()
        assert torch.equal(a[key], b[key]) and not torch.equal(a[key], c[key])
    assert not torch.equal(a["q"], a["k"])


def test_reference_is_float64_softmax_attention(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == inputs["q"].shape
    q, k, v = (inputs[x].double() for x in "qkv")
    weights = torch.softmax(q @ k.transpose(-1, -2) / 32 ** 0.5, dim=-1)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 2, 96, dtype=torch.float64))
    assert torch.allclose(ref, weights @ v, rtol=0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [TINY, {"batch": 1, "heads": 3, "seq": 200, "head_dim": 64}])
def test_both_variants_pass_check_on_cpu(sizes):
    result = check.check_pair(pairs.find(NAME), sizes, device="cpu")
    check.raise_if_failed(result)
    assert {c.variant for c in result.checks} == {"baseline", "sdpa"}
    assert all(c.poisoned and c.unwritten_elements == 0 for c in result.checks)
    assert max(c.rel_err_vs_reference for c in result.checks) < 1e-3       # the docstring's ~5e-4


def test_variants_reuse_their_output(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    for factory in mod.PAIR.variants.values():
        launch = factory(inputs)
        assert launch() is launch()


def _wrong(kind):
    def factory(inputs):
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        out = torch.empty_like(q)
        F = torch.nn.functional

        def launch():
            if kind == "scale":                   # 1/D instead of 1/sqrt(D)
                out.copy_(F.scaled_dot_product_attention(q, k, v, scale=1.0 / q.shape[-1]))
            else:                                 # the last 16 keys never seen
                out.copy_(F.scaled_dot_product_attention(q, k[:, :, :-16], v[:, :, :-16]))
            return out
        return launch
    return factory


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["scale", "keys"])
def test_a_wrong_variant_is_rejected(mod, kind):
    bad = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": _wrong(kind)})
    result = check.check_pair(bad, TINY, device="cpu")
    assert result.failed_variants == ["wrong"]


def test_dispatcher_choice_names_a_backend(mod):
    assert mod.dispatcher_choice(mod.make_inputs(TINY, "cpu", 0)) in (
        "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(mod, which):
    result = check_on_gpu(NAME, which)
    assert len(result.checks) == 4


@pytest.mark.gpu
def test_dispatcher_picks_a_fused_backend_and_launches_drop(mod):
    inputs = mod.make_inputs(mod.SMALL_SIZES, "cuda", 0)
    choice = mod.dispatcher_choice(inputs)
    print(f"SDPA dispatcher on {torch.cuda.get_device_name()}: {choice}")
    assert choice in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION")
    base = device_events_per_call(mod.baseline(inputs))
    sdpa = device_events_per_call(mod.optimized_sdpa(inputs))
    print("baseline:", base, "\nsdpa:", sdpa)
    assert 4 <= len(base) <= 6                  # 4, plus any split-K reduction cuBLAS adds
    assert 1 < len(sdpa) <= 3 < len(base)
