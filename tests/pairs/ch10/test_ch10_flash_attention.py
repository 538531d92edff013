"""ch10.flash_attention: imports cleanly, formulas add up, the reference is causal attention with
the projections, baseline and the FLASH_ATTENTION variant match it on a CPU, the cuDNN variant
refuses CPU tensors, the tolerance rejects a missing mask and a wrong scale, and (GPU only) every
variant matches at the small and the book's size, each SDPA variant ran the backend it names, and
a call launches ~14 kernels in the baseline and 5-6 with a fused kernel.
"""
from __future__ import annotations

import math
from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, device_events_per_call, import_fresh, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "flash_attention.py"
NAME = "ch10.flash_attention"
VARIANTS = ["baseline", "flash", "cudnn"]
TINY = {"batch": 2, "seq": 80, "hidden": 64, "heads": 2}
# a substring of the kernel each SDPA backend launches on Hopper (torch 2.11 / cuDNN 9)
BACKEND_KERNELS = {"flash": "flash_fwd", "cudnn": "cudnn"}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"batch": 4, "seq": 1024, "hidden": 512, "heads": 8}    # the book's
    assert pair.small_sizes["seq"] < pair.sizes["seq"] and pair.tolerance == 5e-3
    assert dict(pair.variant_needs) == {"cudnn": ("gpu",)}
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=False) == VARIANTS
    for text in ("1.966x", "FLASH_ATTENTION", "FlashAttention-2", "~14 -> 5", "Predicted profile"):
        assert text in mod.__doc__


def test_flops_and_bytes_formulas(mod):
    s = {"batch": 1, "seq": 4, "hidden": 6, "heads": 2}
    assert mod.flops(s) == 8 * 4 * 36 + 2 * 16 * 6 == 1344
    assert mod.bytes(s) == 2 * (2 * 24 + 4 * 36) == 384
    assert mod.fused_bytes(s) == 384 + 8 * 2 * 24
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == 8_589_934_592 + 4_294_967_296           # projections + causal attention
    assert mod.bytes(d) == 2 * (2 * 4 * 1024 * 512 + 4 * 512 * 512) == 10_485_760


def test_make_inputs_is_seeded(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    for key, shape in {"x": (2, 80, 64), "wq": (64, 64), "wk": (64, 64), "wv": (64, 64), "wo": (64, 64)}.items():
        assert a[key].dtype == torch.float16 and a[key].shape == shape
        assert torch.equal(a[key], b[key]) and not torch.equal(a[key], c[key])
    assert a["heads"] == 2
    assert 0.7 < float(a["wq"].float().std()) * math.sqrt(64) < 1.3       # keeps Q ~ N(0, 1)
    with pytest.raises(ValueError, match="multiple of heads"):
        mod.make_inputs({**TINY, "heads": 3}, "cpu", 0)


def test_reference_is_causal_multihead_attention(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (2, 80, 64)
    x = inputs["x"].double()
    mha = torch.nn.MultiheadAttention(64, 2, bias=False, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([inputs[w].double() for w in ("wq", "wk", "wv")]))
        mha.out_proj.weight.copy_(inputs["wo"].double())
        mask = torch.ones(80, 80, dtype=torch.bool).triu_(1)
        expected, _ = mha(x, x, x, attn_mask=mask, need_weights=False)
    assert torch.allclose(ref, expected, rtol=0, atol=1e-10)
    # token t depends on tokens <= t only
    changed = dict(inputs, x=inputs["x"].clone())
    changed["x"][:, 50:] = 0
    assert torch.equal(mod.reference(changed)[:, :50], ref[:, :50])


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [TINY, {"batch": 1, "seq": 200, "hidden": 128, "heads": 2}])
def test_baseline_and_flash_pass_check_on_cpu(sizes):
    result = check.check_pair(pairs.find(NAME), sizes, device="cpu", variants=["baseline", "flash"])
    check.raise_if_failed(result)
    assert all(c.poisoned and c.unwritten_elements == 0 for c in result.checks)
    assert max(c.rel_err_vs_reference for c in result.checks) < 1.5e-3   # the docstring's ~6e-4


def test_variants_reuse_their_output(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    for factory in (mod.baseline, mod.optimized_flash):
        launch = factory(inputs)
        assert launch() is launch()


def test_cudnn_refuses_cpu_tensors(mod):
    with pytest.raises(RequirementError, match="CUDA"):
        mod.optimized_cudnn(mod.make_inputs(TINY, "cpu", 0))


def test_flash_engines_present_names_the_books_engines(mod):
    present = mod.flash_engines_present()
    assert set(present) == {"fa3", "fa2"} and all(isinstance(v, bool) for v in present.values())


def _wrong(kind):
    def factory(inputs):
        proj = import_fresh(PAIR_PATH, "ch10_flash_attention_wrong")._Projections(inputs)

        def launch():
            q, k, v = proj.qkv()
            if kind == "no_mask":
                o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            else:
                o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1 / q.shape[-1])
            return proj.output(o)
        return launch
    return factory


@pytest.mark.parametrize("kind", ["no_mask", "scale"])
def test_a_wrong_variant_is_rejected(mod, kind):
    bad = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": _wrong(kind)})
    result = check.check_pair(bad, TINY, device="cpu")
    assert result.failed_variants == ["wrong"]


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(which):
    result = check_on_gpu(NAME, which)
    assert {c.variant for c in result.checks} == set(VARIANTS)


@pytest.mark.gpu
def test_each_variant_ran_its_backend_and_launches_drop(mod):
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    print(f"{torch.cuda.get_device_name()}: external engines present {mod.flash_engines_present()}")
    kernels = {name: device_events_per_call(factory(inputs)) for name, factory in mod.PAIR.variants.items()}
    for name, names in kernels.items():
        print(name, len(names), names)
    assert 10 <= len(kernels["baseline"]) <= 16
    for name, marker in BACKEND_KERNELS.items():
        assert any(marker in k.lower() for k in kernels[name]), (name, kernels[name])
        assert 5 <= len(kernels[name]) <= 7
