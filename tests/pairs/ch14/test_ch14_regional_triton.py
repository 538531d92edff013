"""ch14.regional_triton: imports cleanly, formulas add up, the written-out float64 reference is the
nn block's forward at every length, eager bf16 stays inside the tolerance and the tolerance
rejects a block without attention or without LayerNorm2; what Dynamo hands the compiler (recorded
with a custom backend on a CPU): the whole block as one graph whose attention is Python ops
(projections + SDPA, not the eager fast-path op), the regional MLP as one graph of linear, GELU,
linear; one graph serves all four lengths (dynamic=True, no recompiles after the warm-up); a call
runs the four lengths into one output; the compiled variants refuse CPU tensors before compiling.
What AOTAutograd hands Inductor (aten ops, recorded on a CPU): the book's whole block computes the
in-projection as a batched matmul over a stride-0 expanded weight, the baseline as one GEMM.
GPU tests: every variant matches at the small and the book's size, no recompiles while timed.
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

PAIR_PATH = ROOT / "kernels" / "ch14" / "regional_triton.py"
NAME = "ch14.regional_triton"
TINY = {"batch": 2, "hidden": 32, "heads": 2, "mlp_hidden": 40, "seq_step": 5, "seq_count": 4}


@pytest.mark.slow
def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == ["baseline", "regional", "eager", "book_baseline"]
    assert pair.role("book_baseline") == "control" and pair.role("eager") == "reference"
    assert pair.book.variant == "regional" and pair.book.ratio_b200 == 2.471
    assert dict(pair.sizes) == {"batch": 8, "hidden": 1536, "heads": 12, "mlp_hidden": 12288,
                                "seq_step": 128, "seq_count": 4}                           # the book's
    assert mod.sequence_lengths(pair.sizes) == [128, 256, 384, 512]
    assert pair.requires.min_cc == (9, 0) and pair.tolerance == 2e-2
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=True) == [
        "baseline", "regional", "eager", "book_baseline"]
    assert runnable_variants(pair, have_gpu=False, have_nvcc=False, have_triton=True) == ["eager"]
    for text in ("2.471x", "Predicted profile", "_native_multi_head_attention", "_is_make_fx_tracing",
                 "one timed call runs all four lengths", "compile_seconds"):
        assert text in mod.__doc__
    assert mod.COMPILE_OPTIONS == {"backend": "inductor", "mode": "max-autotune", "fullgraph": False, "dynamic": True}


def test_flops_and_bytes_formulas(mod):
    s = {"batch": 1, "hidden": 2, "heads": 1, "mlp_hidden": 3, "seq_step": 1, "seq_count": 2}
    assert mod.flops(s) == (1 * (32 + 24) + 8) + (2 * (32 + 24) + 32) == 208
    assert mod.weight_bytes(s) == 2 * (8 + 18 + 6 + 9 + 8) == 98     # LNs, in_proj, out_proj, fc1, fc2
    assert mod.bytes(s) == 2 * 98 + 4 * 3 * 2 == 220
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == 990_526_832_640                       # ~0.99 TFLOP per call (4 forwards)
    assert mod.weight_bytes(d) == 94_424_064
    assert mod.bytes(d) == 4 * 94_424_064 + 4 * 10240 * 1536


def test_make_inputs_is_seeded_and_leaves_the_global_rng_alone(mod):
    state = torch.random.get_rng_state()
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    assert torch.equal(state, torch.random.get_rng_state())
    assert [x.shape for x in a["xs"]] == [(2, 5, 32), (2, 10, 32), (2, 15, 32), (2, 20, 32)]
    assert all(x.dtype == torch.bfloat16 for x in a["xs"]) and 0.07 < float(a["xs"][3].float().std()) < 0.13
    assert all(torch.equal(a["state"][k], b["state"][k]) for k in a["state"])
    assert not torch.equal(a["state"]["mlp.fc1.weight"], c["state"]["mlp.fc1.weight"])
    assert torch.equal(a["xs"][0], b["xs"][0]) and not torch.equal(a["xs"][0], c["xs"][0])
    for bad in ({**TINY, "heads": 3}, {**TINY, "seq_count": 0}):
        with pytest.raises(ValueError):
            mod.make_inputs(bad, "cpu", 0)


def test_reference_is_the_blocks_forward_in_float64(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (2 * 50, 32)
    block = mod.TinyTransformerBlock(32, 2, 40).double().eval()
    block.load_state_dict({k: v.double() for k, v in inputs["state"].items()})
    with torch.no_grad():
        expected = torch.cat([block(x.double()).reshape(-1, 32) for x in inputs["xs"]])
    assert torch.allclose(ref, expected, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_a_call_runs_the_four_lengths_into_one_output(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    launch = mod.optimized_eager(inputs)
    out = launch()
    assert out.shape == (100, 32) and launch() is out
    block = mod._block(inputs)
    with torch.inference_mode():
        assert torch.equal(out[10:30].view(2, 10, 32), block(inputs["xs"][1]))     # rows after 2 x 5 of the first


def _missing(mod, missing: str):
    """The block without its attention or without LayerNorm2: a variant the tolerance must reject."""
    def wrong(inputs):
        block = mod._block(inputs)

        def forward(x):
            h = block.ln1(x)
            if missing != "attention":
                x = x + block.attn(h, h, h, need_weights=False)[0]
            return x + block.mlp(x if missing == "ln2" else block.ln2(x))
        return mod._launch(inputs, forward)
    return wrong


@pytest.fixture(scope="module")
def eager_check(mod):
    """One check on the CPU of eager bf16 (as the baseline) and the two wrong blocks beside it: each
    variant is compared with the float64 reference on its own, so one check serves the three tests."""
    variants = {"baseline": mod.optimized_eager, "no_attention": _missing(mod, "attention"),
                "no_ln2": _missing(mod, "ln2")}
    return check.check_pair(replace(pairs.find(NAME), variants=variants), mod.SMALL_SIZES, device="cpu")


@pytest.mark.slow
def test_eager_passes_check_on_cpu(eager_check):
    eager = [c for c in eager_check.checks if c.variant == "baseline"]
    assert eager and all(c.passed for c in eager)
    assert max(c.rel_err_vs_reference for c in eager) < 7e-3           # the docstring's 4.5e-3


@pytest.mark.slow
@pytest.mark.parametrize("missing", ["attention", "ln2"])
def test_a_block_missing_a_part_is_rejected(eager_check, missing):
    assert f"no_{missing}" in eager_check.failed_variants
    assert eager_check.failed_variants == ["no_attention", "no_ln2"]


def _recorded(mod, inputs, region):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    launch = mod._compiled(inputs, region, {"backend": backend, "fullgraph": True, "dynamic": True})
    return launch, graphs


@pytest.mark.slow
@pytest.mark.parametrize("region", ["block", "book_block", "mlp"])
def test_what_dynamo_hands_the_compiler(mod, region):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    launch, graphs = _recorded(mod, inputs, region)
    assert len(graphs) == 1                                         # one graph for all four lengths
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert not any("_native_multi_head_attention" in t for t in targets)
    if region == "mlp":
        assert [t.split(" at ")[0] for t in targets] == ["<built-in function linear>", "<built-in function gelu>",
                                                         "<built-in function linear>"]
    else:
        assert sum("layer_norm" in t for t in targets) == 2
        assert sum("multi_head_attention_forward" in t for t in targets) == 1   # the Python path, not the fast one
    with torch.compiler.set_stance("fail_on_recompile"):
        out = launch()
        assert launch() is out
    ref = mod.reference(inputs)
    assert float((out.double() - ref).norm() / ref.norm()) < 1e-2
    assert type(launch.compiled).__name__ == "OptimizedModule"
    assert all(a[0] is x for a, x in zip(launch.example_args, inputs["xs"]))


def _in_projection_ops(mod, region):
    """The aten ops AOTAutograd hands Inductor for the whole block's graph (recorded on a CPU):
    (matmul ops, whether the in-projection weight reaches a bmm through a stride-0 expand)."""
    from torch._dynamo.backends.common import aot_autograd

    graphs = []
    backend = aot_autograd(fw_compiler=lambda gm, example_inputs: graphs.append(gm) or gm.forward)
    torch._dynamo.reset()
    launch = mod._compiled(mod.make_inputs(TINY, "cpu", 0), region, {"backend": backend, "dynamic": True})
    (graph,) = graphs
    calls = [n for n in graph.graph.nodes if n.op == "call_function"]
    matmuls = [str(n.target) for n in calls
               if str(n.target) in ("aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.baddbmm.default")]
    expanded = [n for n in calls if str(n.target) == "aten.expand.default"
                and any(str(u.target) == "aten.bmm.default" for v in n.users for u in (v, *v.users))]
    return launch, matmuls, bool(expanded)


@pytest.mark.slow
def test_the_books_whole_block_batches_its_in_projection_over_a_stride0_weight(mod):
    """Issue 28: compiled whole as the book writes it, attention's in-projection is a linear on the
    transposed [seq, batch, hidden] view, which aten's matmul cannot fold into one GEMM: it expands
    the weight with stride 0 along the sequence and runs a bmm of `seq` GEMMs of `batch` rows. Fed
    sequence-first (the baseline here), the same module's in-projection is one addmm like the others."""
    _, book, book_expands = _in_projection_ops(mod, "book_block")
    assert "aten.bmm.default" in book and book_expands
    launch, ours, ours_expands = _in_projection_ops(mod, "block")
    assert "aten.bmm.default" not in ours and not ours_expands
    assert ours.count("aten.addmm.default") == 4                     # QKV, out-projection, fc1, fc2
    ref = mod.reference(mod.make_inputs(TINY, "cpu", 0))
    assert float((launch().double() - ref).norm() / ref.norm()) < 1e-2   # the same block, the same math


def test_compiled_variants_refuse_cpu_tensors_before_compiling(mod, monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiled before checking the device"))
    inputs = mod.make_inputs(TINY, "cpu", 0)
    for name in ("baseline", "regional", "book_baseline"):
        with pytest.raises(RequirementError, match="CUDA tensors"):
            mod.PAIR.variants[name](inputs)


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(mod, which):
    result = check_on_gpu(NAME, which, trials=1 if which == "default" else 2)
    print({c.variant: round(c.rel_err_vs_reference, 5) for c in result.checks})


@pytest.mark.gpu
def test_no_recompiles_while_timed_and_compile_times(mod):
    inputs = mod.make_inputs(mod.SMALL_SIZES, "cuda", 0)
    for factory in (mod.baseline, mod.optimized_regional):
        launch = factory(inputs)
        print(factory.__name__, f"compile + warm-up {launch.compile_seconds:.1f} s")
        with torch.compiler.set_stance("fail_on_recompile"):
            launch(), launch()
