"""ch14.sliding_window: imports cleanly, the window is real (band semantics, FLOPs of window vs causal
vs dense, flex's block count equal to torch's own block mask), the chunked float64 reference is
banded causal attention computed another way, the baseline, compiled FlexAttention and the
band-masked SDPA (on a CPU backend) pass the check at a ragged size, the tolerance rejects the
book's no-window causal attention and a window one key short, there is no silent fallback, and
(GPU only) every variant matches at the small and the book's size, launches drop, flex ran a
Triton kernel, and flex beats the dense band mask.
"""
from __future__ import annotations

import math
import sys
from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, device_events_per_call, dispatched_ops, import_fresh, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

KERNELS = ROOT / "kernels" / "ch14"
PAIR_PATH = KERNELS / "sliding_window.py"
NAME = "ch14.sliding_window"
VARIANTS = ["baseline", "flex", "sdpa_band_mask"]
TINY = {"batch": 2, "seq": 96, "embed": 64, "heads": 2, "window": 20}
RAGGED = {"batch": 2, "seq": 300, "embed": 128, "heads": 2, "window": 100}   # 3 ragged 128-blocks


@pytest.fixture(scope="module")
def cpu_check(mod):
    """baseline, flex (compiled here: ~10-30 s on a CPU) and the band-masked SDPA on the CPU's
    flash backend, checked at a ragged size with two batch entries."""
    pair = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "flex": mod.optimized_flex,
                                               "band_flash_cpu": lambda inputs: mod.sdpa_band(inputs, "FLASH_ATTENTION")})
    return check.check_pair(pair, RAGGED, device="cpu")


@pytest.mark.slow
def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"batch": 4, "seq": 4096, "embed": 1024, "heads": 16, "window": 512}
    assert pair.small_sizes["seq"] % mod.FLEX_BLOCK and pair.tolerance == 5e-3
    assert dict(pair.variant_needs) == {"flex": ("triton",), "sdpa_band_mask": ("gpu",)}
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=True) == VARIANTS
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=False) == ["baseline", "sdpa_band_mask"]
    for text in ("12.046x", "ch14.sliding_window_causal", "API compatibility", "Predicted profile",
                 "block mask", "150 of 1024"):
        assert text in mod.__doc__


def test_band_is_causal_with_window_keys_before(mod):
    expected = torch.tensor([[1, 0, 0, 0, 0],
                             [1, 1, 0, 0, 0],
                             [1, 1, 1, 0, 0],
                             [0, 1, 1, 1, 0],
                             [0, 0, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(mod.band(5, 2, "cpu"), expected)
    assert torch.equal(mod.band(5, 9, "cpu"), torch.ones(5, 5, dtype=torch.bool).tril())     # = causal
    mask_mod = mod.band_mask_mod(2)
    i = torch.arange(5)
    assert torch.equal(mask_mod(0, 0, i[:, None], i[None, :]), expected)
    assert mod.band_mask_mod(2) is mask_mod                 # one object per window: no recompiles


@pytest.mark.parametrize("seq,window", [(5, 2), (300, 100), (600, 200), (64, 63), (64, 500), (7, 0)])
def test_visible_pairs_counts_the_band(mod, seq, window):
    assert mod.visible_pairs(seq, window) == int(mod.band(seq, window, "cpu").sum())


def test_flops_of_window_causal_and_dense(mod):
    d = dict(mod.DEFAULT_SIZES)
    assert mod.projection_flops(d) == 137_438_953_472
    assert mod.flops(d) - mod.projection_flops(d) == 16384 * 1_969_920 == 32_275_169_280
    assert mod.causal_flops(d) - mod.projection_flops(d) == 16384 * 4096 * 4097 // 2 == 137_472_507_904
    assert mod.dense_flops(d) - mod.projection_flops(d) == 274_877_906_944
    assert mod.flex_block_pairs(4096, 512) == (150, 2_457_600)
    assert mod.flex_flops(d) - mod.projection_flops(d) == 40_265_318_400
    attention = {k: f(d) - mod.projection_flops(d) for k, f in
                 (("window", mod.flops), ("causal", mod.causal_flops), ("flex", mod.flex_flops))}
    assert round(attention["causal"] / attention["window"], 1) == 4.3           # the lesson's 1/4.3
    assert round(attention["flex"] / attention["window"], 2) == 1.25
    assert mod.bytes(d) == 2 * (2 * 4 * 4096 * 1024 + 4 * 1024 ** 2) == 75_497_472
    assert round((mod.baseline_bytes(d) - mod.bytes(d)) / 1e9, 1) == 17.2          # 8 x 2.15 GB


@pytest.mark.slow
@pytest.mark.parametrize("seq,window", [(4096, 512), (600, 200), (300, 100)])
def test_flex_block_count_is_torchs_block_mask(mod, seq, window):
    _, create_block_mask = mod.flex_api()
    bm = create_block_mask(mod.band_mask_mod(window), None, None, seq, seq, device="cpu",
                           BLOCK_SIZE=mod.FLEX_BLOCK)
    blocks = int(bm.kv_num_blocks.sum() + bm.full_kv_num_blocks.sum())
    assert blocks == mod.flex_block_pairs(seq, window)[0]
    n = -(-seq // 128)
    padded = torch.zeros(n * 128, n * 128, dtype=torch.bool)
    padded[:seq, :seq] = mod.band(seq, window, "cpu")
    brute = int(padded.view(n, 128, n, 128).any(dim=3).any(dim=1).sum())
    assert brute == blocks


def test_make_inputs_is_seeded_and_validated(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    for key, shape in {"x": (2, 96, 64), "w_qkv": (192, 64), "w_out": (64, 64)}.items():
        assert a[key].dtype == torch.float16 and a[key].shape == shape
        assert torch.equal(a[key], b[key]) and not torch.equal(a[key], c[key])
    assert a["heads"] == 2 and a["window"] == 20
    assert 0.9 < float(a["w_qkv"].float().std()) * math.sqrt(64) < 1.1          # N(0, 1/E)
    with pytest.raises(ValueError, match="multiple of 8"):
        mod.make_inputs({**TINY, "heads": 3}, "cpu", 0)
    with pytest.raises(ValueError, match="window"):
        mod.make_inputs({**TINY, "window": -1}, "cpu", 0)


@pytest.mark.slow
def test_reference_is_banded_attention_key_by_key(mod, monkeypatch):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (2, 96, 64)
    x, w_qkv, w_out = (inputs[k].double() for k in ("x", "w_qkv", "w_out"))
    heads, d, w = 2, 32, inputs["window"]
    for b in range(2):
        q, k, v = (x[b] @ w_qkv.t()).split(64, dim=-1)
        o = torch.empty(96, 64, dtype=torch.float64)
        for i in range(96):
            keys = slice(max(0, i - w), i + 1)                  # the window, no mask involved
            for h in range(heads):
                cols = slice(h * d, (h + 1) * d)
                p = torch.softmax(k[keys, cols] @ q[i, cols] / math.sqrt(d), dim=0)
                o[i, cols] = p @ v[keys, cols]
        assert torch.allclose(ref[b], o @ w_out.t(), rtol=0, atol=1e-12)
    monkeypatch.setattr(mod, "REFERENCE_HEADS", 1)                 # chunking changes nothing
    assert torch.allclose(mod.reference(inputs), ref, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_variants_pass_check_on_cpu_at_a_ragged_size(cpu_check):
    check.raise_if_failed(cpu_check)
    assert {c.variant for c in cpu_check.checks} == {"baseline", "flex", "band_flash_cpu"}
    assert all(c.poisoned and c.unwritten_elements == 0 for c in cpu_check.checks)
    assert max(c.rel_err_vs_reference for c in cpu_check.checks) < 1e-3        # the docstring's ~5e-4


@pytest.mark.slow
def test_flex_keeps_its_compiled_callable_and_block_mask(mod):
    inputs = mod.make_inputs(RAGGED, "cpu", 0)
    launch = mod.optimized_flex(inputs)                 # the cpu_check's compiled graph: no recompile
    assert launch() is launch()
    assert launch.compiled is mod.compiled_flex()
    assert launch.block_mask.BLOCK_SIZE == (128, 128)
    bm = launch.block_mask
    assert int(bm.kv_num_blocks.sum() + bm.full_kv_num_blocks.sum()) == 5 == mod.flex_block_pairs(300, 100)[0]


def test_additive_band_is_aligned_and_matches_the_band(mod):
    bias = mod.additive_band(100, 30, "cpu", torch.float16)
    assert bias.shape == (1, 1, 100, 100) and bias.stride(-2) == 112 and bias.stride(-2) % mod.MASK_ALIGN == 0
    inside = mod.band(100, 30, "cpu")
    assert torch.all(bias[0, 0][inside] == 0) and torch.all(bias[0, 0][~inside] == float("-inf"))


def test_baseline_materializes_the_scores(mod):
    seen = dispatched_ops(mod.baseline(mod.make_inputs(TINY, "cpu", 0)))
    assert seen.count("bmm") == 2 and seen.count("masked_fill_") == 1 and "_softmax" in seen


def test_gpu_only_backend_and_missing_flex_are_requirement_errors(mod, monkeypatch):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    with pytest.raises(RequirementError, match="CUDA tensors"):
        mod.optimized_sdpa_band_mask(inputs)
    monkeypatch.setitem(sys.modules, "torch.nn.attention.flex_attention", None)     # a torch without it
    with pytest.raises(RequirementError, match="never fall back"):
        mod.optimized_flex(inputs)


def _window_variant(mod, window_of):
    def factory(inputs):
        return mod.sdpa_band({**inputs, "window": window_of(inputs)}, "FLASH_ATTENTION")
    return factory


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["causal_no_window", "one_key_short"])
def test_a_wrong_window_is_rejected(mod, kind):
    window_of = (lambda i: i["x"].shape[1]) if kind == "causal_no_window" else (lambda i: i["window"] - 1)
    bad = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": _window_variant(mod, window_of)})
    result = check.check_pair(bad, {"batch": 1, "seq": 1024, "embed": 128, "heads": 2, "window": 512}, device="cpu")
    assert result.failed_variants == ["wrong"]          # ~0.2 and ~1.6e-2 vs 5e-3


# --- GPU ------------------------------------------------------------------------------------

def _ms_per_call(launch, calls: int = 20) -> float:
    launch()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        launch()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(which):
    result = check_on_gpu(NAME, which)
    assert {c.variant for c in result.checks} == set(VARIANTS)


@pytest.mark.gpu
def test_launches_and_kernels_per_variant(mod):
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    events = {name: device_events_per_call(factory(inputs)) for name, factory in mod.PAIR.variants.items()}
    print(torch.cuda.get_device_name(), events)
    kernels = {v: [n for n in names if not n.startswith("Memset")] for v, names in events.items()}
    # every variant runs the QKV and output projections (2 GEMMs); the attention itself differs
    assert any(n.startswith("triton_tem") for n in kernels["flex"])                                 # no eager fallback
    assert not any("softmax" in n for n in kernels["flex"])
    assert any("fmha" in n or "efficient" in n for n in kernels["sdpa_band_mask"])
    assert len(kernels["flex"]) <= 6 and len(kernels["sdpa_band_mask"]) <= 6
    assert len(kernels["baseline"]) > len(kernels["flex"])


@pytest.mark.gpu
def test_flex_window_beats_the_dense_band_mask_and_is_compared_with_causal_sdpa(mod):
    causal = import_fresh(KERNELS / "sliding_window_causal.py", "ch14_sliding_window_causal_for_timing")
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    ms = {name: _ms_per_call(factory(inputs)) for name, factory in mod.PAIR.variants.items()}
    ms["causal_sdpa_no_window"] = _ms_per_call(causal.optimized_causal_sdpa_no_window(inputs))
    print(torch.cuda.get_device_name(), {k: round(v, 3) for k, v in ms.items()})
    assert ms["flex"] < 0.9 * ms["sdpa_band_mask"] < ms["baseline"]
