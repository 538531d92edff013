"""ch14.flex_attention_sparse: imports cleanly, the formulas (dense vs band vs flex's 63 blocks) add
up, the reference is 129-key causal-window attention computed another way, the baseline (which
negates the mask every call, as the book's does) and compiled FlexAttention pass the check on a CPU
at a ragged size, the bf16 tolerance rejects causal attention and a window one key short, missing
flex_attention is a RequirementError (no fallback), and (GPU only) both match at the small and the
book's size and a call launches ~9 kernels against 3, one of them the Triton flex kernel.
"""
from __future__ import annotations

import sys
from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, device_events_per_call, dispatched_ops, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch14" / "flex_attention_sparse.py"
NAME = "ch14.flex_attention_sparse"
TINY = {"batch": 2, "seq": 96, "embed": 64, "heads": 2, "window": 20}
RAGGED = {"batch": 1, "seq": 300, "embed": 128, "heads": 2, "window": 100}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == ["baseline", "flex"]
    assert dict(pair.sizes) == {"batch": 1, "seq": 4096, "embed": 1024, "heads": 16, "window": 128}
    assert pair.small_sizes["seq"] % 128 and pair.tolerance == 2e-2
    assert dict(pair.variant_needs) == {"flex": ("triton",)}
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=True) == ["baseline", "flex"]
    for text in ("3.330x", "no SDPA fallback", "63 of\n    1024", "Predicted profile", "128 x 256 corner"):
        assert text in mod.__doc__


def test_flops_and_bytes_formulas(mod):
    d = dict(mod.DEFAULT_SIZES)
    projections = 8 * 4096 * 1024 ** 2
    assert projections == 34_359_738_368
    assert mod.flops(d) - projections == 4096 * (129 * 4096 - 128 * 129 // 2) == 2_130_444_288
    assert mod.flex_flops(d) - projections == 4096 * 63 * 128 * 128 == 4_227_858_432
    assert mod.dense_flops(d) - projections == 4096 * 4096 ** 2
    assert mod.bytes(d) == 2 * (2 * 4096 * 1024 + 4 * 1024 ** 2) == 25_165_824
    assert mod.baseline_bytes(d) - mod.bytes(d) == 8 * 2 * 16 * 4096 ** 2 + 2 * 4096 ** 2   # 4.3 GB + ~mask


def test_make_inputs_is_seeded_bf16(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    for key, shape in {"x": (2, 96, 64), "w_qkv": (192, 64), "w_out": (64, 64)}.items():
        assert a[key].dtype == torch.bfloat16 and a[key].shape == shape
        assert torch.equal(a[key].view(torch.int16), b[key].view(torch.int16))
        assert not torch.equal(a[key].view(torch.int16), c[key].view(torch.int16))
    assert a["window"] == 20 and a["heads"] == 2


def test_reference_is_windowed_causal_attention(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    x, w_qkv, w_out = (inputs[k].double() for k in ("x", "w_qkv", "w_out"))
    q, k, v = (x @ w_qkv.t()).view(2, 96, 3, 2, 32).permute(2, 0, 3, 1, 4)
    i = torch.arange(96)
    allowed = (i[:, None] >= i[None, :]) & (i[:, None] - i[None, :] <= 20)        # the book's predicate
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    expected = o.transpose(1, 2).reshape(2, 96, 64) @ w_out.t()
    assert torch.allclose(mod.reference(inputs), expected, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_both_variants_pass_check_on_cpu_at_a_ragged_size(mod):
    result = check.check_pair(pairs.find(NAME), RAGGED, device="cpu")       # flex compiles here (~10-30 s)
    check.raise_if_failed(result)
    assert {c.variant for c in result.checks} == {"baseline", "flex"}
    assert all(c.poisoned and c.unwritten_elements == 0 for c in result.checks)
    assert max(c.rel_err_vs_reference for c in result.checks) < 8e-3         # the docstring's ~4.8e-3


@pytest.mark.slow
def test_baseline_negates_the_mask_every_call(mod):
    seen = dispatched_ops(mod.baseline(mod.make_inputs(TINY, "cpu", 0)))
    assert seen.count("bmm") == 2 and seen.count("masked_fill_") == 1
    assert seen.count("bitwise_not") + seen.count("logical_not") == 1


def test_missing_flex_attention_is_a_requirement_error(mod, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.nn.attention.flex_attention", None)     # a torch without it
    with pytest.raises(RequirementError, match="never fall back"):
        mod.optimized_flex(mod.make_inputs(TINY, "cpu", 0))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["causal", "one_key_short"])
def test_a_wrong_window_is_rejected(mod, kind):
    def wrong(inputs):
        window = inputs["x"].shape[1] if kind == "causal" else inputs["window"] - 1
        return mod._SW.sdpa_band({**inputs, "window": window}, "FLASH_ATTENTION")

    bad = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": wrong})
    result = check.check_pair(bad, {"batch": 1, "seq": 1024, "embed": 128, "heads": 2, "window": 128}, device="cpu")
    assert result.failed_variants == ["wrong"]          # ~0.6 and ~7e-2 vs 2e-2


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(which):
    result = check_on_gpu(NAME, which)
    assert {c.variant for c in result.checks} == {"baseline", "flex"}


@pytest.mark.gpu
def test_launches_drop_and_flex_is_one_triton_kernel(mod):
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    events = {}
    for name, factory in mod.PAIR.variants.items():
        launch = factory(inputs)
        events[name] = device_events_per_call(launch)
    print(torch.cuda.get_device_name(), events)
    assert 7 <= len(events["baseline"]) <= 12
    assert len(events["flex"]) <= 4 and sum(n.startswith("triton_tem") for n in events["flex"]) == 1
    assert not any("softmax" in n for n in events["flex"])                  # no eager (dense) fallback
