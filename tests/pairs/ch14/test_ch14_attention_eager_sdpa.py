"""ch14.attention_eager_sdpa: imports cleanly, formulas add up, both variants match the float64
reference on a CPU (torch has a CPU flash kernel), the tolerance rejects a wrong scale and dropped
keys, the baseline dispatches 4 ops a head (64 at the book's size) and SDPA one attention op and a
copy, no host sync in either closure; and (GPU only) both match at the small and the book's size,
the optimized side really ran FlashAttention, and a call launches ~64 kernels against 2.
"""
from __future__ import annotations

import collections
from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, device_events_per_call, runnable_variants

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch14" / "attention_eager_sdpa.py"
NAME = "ch14.attention_eager_sdpa"
TINY = {"seq": 96, "heads": 2, "head_dim": 32}
# aten ops that only make views: no kernel behind them
VIEW_OPS = ("aten.select", "aten.transpose", "aten.t.", "aten.view", "aten.unsqueeze", "aten.permute",
            "aten.expand", "aten.slice", "aten.as_strided", "aten._unsafe_view", "aten.alias", "aten.detach")


class _CountOps(TorchDispatchMode):
    """The aten ops one call dispatches, views left out: on a GPU, one kernel each (or more)."""

    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if not name.startswith(VIEW_OPS):
            self.ops[name.rsplit(".", 1)[0]] += 1
        return func(*args, **(kwargs or {}))


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == ["baseline", "sdpa_flash"]
    assert dict(pair.sizes) == {"seq": 1024, "heads": 16, "head_dim": 64}          # the book's
    assert dict(pair.small_sizes) == {"seq": 200, "heads": 3, "head_dim": 64}
    assert pair.requires.min_cc == (9, 0) and pair.tolerance == 1.5e-2
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=False) == ["baseline", "sdpa_flash"]
    for text in ("6.426x", "float(out.sum())", "64 -> 2", "Predicted profile", "L2 traffic, not DRAM"):
        assert text in mod.__doc__


def test_flops_and_bytes_formulas(mod):
    s = {"seq": 3, "heads": 2, "head_dim": 4}
    assert mod.flops(s) == 4 * 2 * 9 * 4 == 288
    assert mod.bytes(s) == 4 * 3 * 2 * 4 * 2 == 192
    assert mod.baseline_score_bytes(s) == 6 * 2 * 9 * 2 == 216
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == 4_294_967_296                            # 4.3 GFLOP
    assert mod.bytes(d) == 8_388_608                                # Q, K, V, O: 8 MB
    assert mod.baseline_score_bytes(d) == 201_326_592               # 16 heads x 6 x 2 MB, in L2
    assert d["seq"] ** 2 * 2 * 2 < 50 * 2 ** 20 // 10               # S and P of one head: < 1/10 of L2


def test_make_inputs_is_seeded_and_validated(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    for key in ("q", "k", "v"):
        assert a[key].dtype == torch.bfloat16 and a[key].shape == (96, 2, 32) and a[key].is_contiguous()
        assert torch.equal(a[key].view(torch.int16), b[key].view(torch.int16))
        assert not torch.equal(a[key].view(torch.int16), c[key].view(torch.int16))
    with pytest.raises(ValueError, match="multiple of 8"):
        mod.make_inputs({**TINY, "head_dim": 20}, "cpu", 0)


def test_reference_is_float64_per_head_attention(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (96, 2, 32)
    for h in range(2):
        q, k, v = (inputs[x][:, h].double() for x in "qkv")
        weights = torch.softmax(q @ k.t() / 32 ** 0.5, dim=-1)
        assert torch.allclose(weights.sum(-1), torch.ones(96, dtype=torch.float64))
        assert torch.allclose(ref[:, h], weights @ v, rtol=0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [TINY, {"seq": 200, "heads": 3, "head_dim": 64}])
def test_both_variants_pass_check_on_cpu(sizes):
    result = check.check_pair(pairs.find(NAME), sizes, device="cpu")
    check.raise_if_failed(result)
    assert {c.variant for c in result.checks} == {"baseline", "sdpa_flash"}
    assert all(c.poisoned and c.unwritten_elements == 0 for c in result.checks)
    errs = {c.variant: c.rel_err_vs_reference for c in result.checks}
    assert errs["baseline"] < 7e-3 and errs["sdpa_flash"] < 4e-3            # the docstring's ~4e-3, ~2e-3


def test_variants_reuse_their_output(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    for factory in mod.PAIR.variants.values():
        launch = factory(inputs)
        assert launch() is launch()


@pytest.mark.slow
def test_ops_per_call_four_a_head_against_one_attention_op(mod):
    inputs = mod.make_inputs(mod.SMALL_SIZES, "cpu", 0)
    counts = {}
    for name, factory in mod.PAIR.variants.items():
        launch = factory(inputs)
        launch()
        with _CountOps() as c:
            launch()
        counts[name] = c.ops
    heads = mod.SMALL_SIZES["heads"]
    assert counts["baseline"] == {"aten.mm": 2 * heads, "aten.mul_": heads, "aten.softmax": heads}
    flash = [op for op in counts["sdpa_flash"] if "flash_attention" in op]
    assert len(flash) == 1 and counts["sdpa_flash"][flash[0]] == 1
    assert sum(counts["sdpa_flash"].values()) == 2                          # + the copy into the output
    # no host sync in the timed closures (the book's float(out.sum()) is dropped): no reduction, no item
    for ops in counts.values():
        assert not [op for op in ops if op.startswith(("aten.sum", "aten._local_scalar_dense"))]


def _wrong(kind):
    def factory(inputs):
        q, k, v = (inputs[x].unsqueeze(0).transpose(1, 2) for x in "qkv")
        out = torch.empty_like(inputs["q"])
        F = torch.nn.functional

        def launch():
            if kind == "scale":                   # 1/D instead of 1/sqrt(D)
                o = F.scaled_dot_product_attention(q, k, v, scale=1.0 / q.shape[-1])
            else:                                 # the last 16 keys never seen
                o = F.scaled_dot_product_attention(q, k[:, :, :-16], v[:, :, :-16])
            out.copy_(o[0].transpose(0, 1))
            return out
        return launch
    return factory


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["scale", "keys"])
def test_a_wrong_variant_is_rejected(mod, kind):
    bad = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": _wrong(kind)})
    result = check.check_pair(bad, {"seq": 1024, "heads": 2, "head_dim": 64}, device="cpu")
    assert result.failed_variants == ["wrong"]          # errors ~0.7 and ~0.12 vs 1.5e-2


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(which):
    result = check_on_gpu(NAME, which)
    assert len(result.checks) == 4


@pytest.mark.gpu
def test_launches_drop_from_64_to_2_and_flash_ran(mod):
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    base = device_events_per_call(mod.baseline(inputs))
    sdpa = device_events_per_call(mod.optimized_sdpa_flash(inputs))
    print(f"{torch.cuda.get_device_name()}\nbaseline ({len(base)}):", collections.Counter(base), "\nsdpa:", sdpa)
    assert 64 <= len(base) <= 80                # 4 a head, plus any split-K reduction cuBLAS adds
    assert 2 <= len(sdpa) <= 3 and sum("flash" in name for name in sdpa) == 1     # flash + the copy
