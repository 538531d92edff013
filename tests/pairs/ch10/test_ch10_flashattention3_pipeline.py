"""ch10.flashattention3_pipeline: imports cleanly, formulas add up (43 GB of score passes vs the
minimum), the chunked float64 reference is causal attention with the projections, baseline and the
FLASH_ATTENTION variant match it on a CPU, the GPU-only backends refuse CPU tensors, the bf16
tolerance rejects a missing mask and a wrong scale, and (GPU only) every variant matches at the
small and the book's size and each SDPA variant ran the backend it names.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, device_events_per_call, import_fresh, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "flashattention3_pipeline.py"
NAME = "ch10.flashattention3_pipeline"
VARIANTS = ["baseline", "flash", "efficient", "cudnn"]
TINY = {"batch": 2, "seq": 96, "hidden": 128, "heads": 4}
# a substring of the kernel each SDPA backend launches on Hopper (torch 2.11 / cuDNN 9)
BACKEND_KERNELS = {"flash": "flash_fwd", "efficient": "fmha", "cudnn": "cudnn"}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"batch": 4, "seq": 4096, "hidden": 2048, "heads": 32}   # the book's
    assert pair.small_sizes["seq"] < pair.sizes["seq"] and pair.tolerance == 2e-2
    assert dict(pair.variant_needs) == {"efficient": ("gpu",), "cudnn": ("gpu",)}
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=False) == VARIANTS
    for text in ("6.55x", "None of it", "FlashAttention-2", "USETMAXREG", "Predicted profile"):
        assert text in mod.__doc__


def test_flops_and_bytes_formulas(mod):
    s = {"batch": 1, "seq": 4, "hidden": 6, "heads": 2}
    assert mod.flops(s) == 8 * 4 * 36 + 2 * 16 * 6 == 1344
    assert mod.bytes(s) == 2 * (2 * 24 + 4 * 36) == 384
    assert mod.baseline_bytes(s) == 384 + 10 * 2 * 2 * 16
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == 549_755_813_888 + 274_877_906_944        # projections = 2 x attention
    assert mod.bytes(d) == 2 * (2 * 4 * 4096 * 2048 + 4 * 2048 ** 2) == 167_772_160
    assert round((mod.baseline_bytes(d) - mod.bytes(d)) / 1e9, 1) == 42.9   # 10 x 4.3 GB of scores


def test_make_inputs_is_seeded(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    for key, shape in {"x": (2, 96, 128), "wq": (128, 128), "wk": (128, 128), "wv": (128, 128),
                       "wo": (128, 128)}.items():
        assert a[key].dtype == torch.bfloat16 and a[key].shape == shape
        assert torch.equal(a[key].view(torch.int16), b[key].view(torch.int16))
        assert not torch.equal(a[key].view(torch.int16), c[key].view(torch.int16))
    assert 0.015 < float(a["wo"].float().std()) < 0.025                    # the book's N(0, 0.02^2)
    with pytest.raises(ValueError, match="multiple of heads"):
        mod.make_inputs({**TINY, "heads": 5}, "cpu", 0)


def test_reference_is_causal_multihead_attention_in_chunks(mod, monkeypatch):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (2, 96, 128)
    x = inputs["x"].double()
    mha = torch.nn.MultiheadAttention(128, 4, bias=False, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([inputs[w].double() for w in ("wq", "wk", "wv")]))
        mha.out_proj.weight.copy_(inputs["wo"].double())
        expected, _ = mha(x, x, x, attn_mask=torch.ones(96, 96, dtype=torch.bool).triu_(1), need_weights=False)
    assert torch.allclose(ref, expected, rtol=0, atol=1e-12)
    monkeypatch.setattr(mod, "REFERENCE_HEADS", 3)                          # chunks that do not divide 4
    assert torch.allclose(mod.reference(inputs), ref, rtol=0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [TINY, {"batch": 1, "seq": 200, "hidden": 256, "heads": 4}])
def test_baseline_and_flash_pass_check_on_cpu(sizes):
    result = check.check_pair(pairs.find(NAME), sizes, device="cpu", variants=["baseline", "flash"])
    check.raise_if_failed(result)
    assert all(c.poisoned and c.unwritten_elements == 0 for c in result.checks)
    assert max(c.rel_err_vs_reference for c in result.checks) < 6e-3     # the docstring's ~3.2e-3


def test_variants_reuse_their_output(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    for factory in (mod.baseline, mod.optimized_flash):
        launch = factory(inputs)
        assert launch() is launch()


@pytest.mark.parametrize("factory", ["optimized_efficient", "optimized_cudnn"])
def test_gpu_backends_refuse_cpu_tensors(mod, factory):
    with pytest.raises(RequirementError, match="CUDA"):
        getattr(mod, factory)(mod.make_inputs(TINY, "cpu", 0))


def _wrong(kind):
    def factory(inputs):
        proj = import_fresh(PAIR_PATH, "ch10_fa3_pipeline_wrong")._Projections(inputs)

        def launch():
            q, k, v = proj.qkv()
            if kind == "no_mask":
                o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            else:
                o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1 / q.shape[-1])
            return proj.output(o)
        return launch
    return factory


@pytest.mark.slow
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
def test_each_sdpa_variant_ran_its_backend(mod):
    inputs = mod.make_inputs(mod.SMALL_SIZES, "cuda", 0)
    for name, marker in BACKEND_KERNELS.items():
        kernels = device_events_per_call(mod.PAIR.variants[name](inputs))
        print(name, len(kernels), kernels)
        assert any(marker in k.lower() for k in kernels), (name, kernels)
        assert len(kernels) <= 6
    assert len(device_events_per_call(mod.baseline(inputs))) >= 12
