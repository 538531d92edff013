"""ch10.batch: imports cleanly, formulas add up (17 GB of weight rereads vs 0.15 GB), the CPU
variants match the float64 reference and leave the matmul precision as they found it, the CUDA
graph variant refuses CPU tensors, the tolerance rejects a dropped bias or a skipped micro-batch,
and (GPU only) every variant matches and a call launches 384 kernels in the baseline, 3 and 2 in
the one-batch variants, and none from the CPU in the graph replay.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "batch.py"
NAME = "ch10.batch"
VARIANTS = ["baseline", "micro_batches_graph", "one_batch", "one_batch_fused"]
CPU_VARIANTS = ["baseline", "one_batch", "one_batch_fused"]
TINY = {"micro_batches": 6, "micro_batch": 4, "hidden": 64, "ffn": 160}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"micro_batches": 128, "micro_batch": 4, "hidden": 2048, "ffn": 8192}
    assert pair.small_sizes["micro_batches"] > 1 and pair.tolerance == 5e-3
    assert dict(pair.variant_needs) == {"micro_batches_graph": ("gpu",)}
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=False) == VARIANTS
    for text in ("384 -> 3", "cudaGraphLaunch", "52.99x", "17.2 GB", "Predicted profile"):
        assert text in mod.__doc__


def test_flops_and_bytes_formulas(mod):
    s = {"micro_batches": 2, "micro_batch": 3, "hidden": 4, "ffn": 5}
    assert mod.flops(s) == 4 * 6 * 4 * 5 == 480
    weights = 4 * (2 * 4 * 5 + 5 + 4)
    assert mod.bytes(s) == weights + 2 * 4 * 6 * 4 == 388
    assert mod.baseline_bytes(s) == 2 * weights + 2 * 4 * 6 * 4
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == 34_359_738_368                        # 34.4 GFLOP
    assert mod.bytes(d) == 134_258_688 + 8_388_608               # weights once + x and y
    assert round(mod.baseline_bytes(d) / 1e9, 1) == 17.2        # weights 128 times
    assert mod.baseline_bytes(d) / mod.bytes(d) > 100


def test_make_inputs_is_seeded_and_tf32_exact(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    shapes = {"x": (24, 64), "w1": (160, 64), "b1": (160,), "w2": (64, 160), "b2": (64,)}
    for key, shape in shapes.items():
        assert a[key].dtype == torch.float32 and a[key].shape == shape
        assert torch.equal(a[key], b[key]) and not torch.equal(a[key], c[key])
        assert torch.equal(a[key], a[key].to(torch.bfloat16).float())     # exact in TF32 too
    assert a["micro_batch"] == 4


def test_reference_is_the_float64_mlp(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (24, 64)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 160), torch.nn.ReLU(), torch.nn.Linear(160, 64)).double()
    with torch.no_grad():
        for layer, w, b in ((mlp[0], "w1", "b1"), (mlp[2], "w2", "b2")):
            layer.weight.copy_(inputs[w])
            layer.bias.copy_(inputs[b])
        assert torch.allclose(mlp(inputs["x"].double()), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("sizes", [TINY, {"micro_batches": 5, "micro_batch": 3, "hidden": 40, "ffn": 72}])
def test_cpu_variants_pass_check(sizes):
    result = check.check_pair(pairs.find(NAME), sizes, device="cpu", variants=CPU_VARIANTS)
    check.raise_if_failed(result)
    assert {c.variant for c in result.checks} == set(CPU_VARIANTS)
    assert all(c.poisoned and c.unwritten_elements == 0 for c in result.checks)
    assert max(c.rel_err_vs_reference for c in result.checks) < 1e-5


def test_variants_reuse_their_output_and_restore_precision(mod):
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision if hasattr(matmul, "fp32_precision") else matmul.allow_tf32
    inputs = mod.make_inputs(TINY, "cpu", 0)
    for name in CPU_VARIANTS:
        launch = mod.PAIR.variants[name](inputs)
        assert launch() is launch()
    after = matmul.fp32_precision if hasattr(matmul, "fp32_precision") else matmul.allow_tf32
    assert after == before


def test_graph_variant_refuses_cpu_tensors(mod):
    with pytest.raises(RequirementError, match="CUDA"):
        mod.optimized_micro_batches_graph(mod.make_inputs(TINY, "cpu", 0))


def _drop_bias(inputs):
    x, w1t, b1, w2t = inputs["x"], inputs["w1"].t(), inputs["b1"], inputs["w2"].t()
    y = torch.empty(x.shape[0], w2t.shape[1])

    def launch():
        torch.mm(torch.relu(torch.addmm(b1, x, w1t)), w2t, out=y)
        return y
    return launch


def _skip_last_micro_batch(inputs):
    full = pairs.find(NAME).variants["one_batch"]({**inputs, "x": inputs["x"][:-inputs["micro_batch"]]})
    y = torch.empty(inputs["x"].shape[0], inputs["w2"].shape[0])

    def launch():
        rows = full()
        y[:rows.shape[0]] = rows
        return y
    return launch


@pytest.mark.slow
@pytest.mark.parametrize("wrong", [_drop_bias, _skip_last_micro_batch])
def test_a_wrong_variant_is_rejected(mod, wrong):
    bad = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": wrong})
    result = check.check_pair(bad, TINY, device="cpu")
    assert result.failed_variants == ["wrong"]


# --- GPU ------------------------------------------------------------------------------------

def _events_per_call(launch, cpu: bool = False) -> list[str]:
    """Names of the GPU activities (or, with cpu=True, also the runtime calls) one call issues."""
    from torch.profiler import ProfilerActivity, profile

    launch()
    torch.cuda.synchronize()
    activities = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if cpu else [])
    with profile(activities=activities) as prof:
        launch()
        torch.cuda.synchronize()
    if cpu:
        return [e.name for e in prof.events()]
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(which):
    result = check_on_gpu(NAME, which)
    assert {c.variant for c in result.checks} == set(VARIANTS)


@pytest.mark.gpu
def test_launches_per_call_drop_from_384_to_two_or_three(mod):
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    counts = {name: len(_events_per_call(mod.PAIR.variants[name](inputs))) for name in VARIANTS}
    print(f"GPU activities per call on {torch.cuda.get_device_name()}: {counts}")
    assert counts["baseline"] >= 384                                       # 3 per micro-batch, or more
    assert counts["one_batch_fused"] <= 3 and counts["one_batch"] <= 4      # the 2-3
    assert counts["one_batch_fused"] < counts["one_batch"]                 # bias + ReLU in the epilogue
    assert counts["micro_batches_graph"] == counts["baseline"]            # same kernels, replayed


@pytest.mark.gpu
def test_graph_replay_launches_nothing_per_kernel_from_the_cpu(mod):
    inputs = mod.make_inputs(mod.SMALL_SIZES, "cuda", 0)
    names = _events_per_call(mod.optimized_micro_batches_graph(inputs), cpu=True)
    assert any("GraphLaunch" in n for n in names), sorted(set(names))
    assert not [n for n in names if "LaunchKernel" in n]
    eager = _events_per_call(mod.baseline(inputs), cpu=True)
    assert len([n for n in eager if "LaunchKernel" in n]) >= 3 * mod.SMALL_SIZES["micro_batches"]
