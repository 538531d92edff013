"""ch14.model_compile_reduced_precision: imports cleanly, the parameter count is the book's 30.2 M,
formulas add up, the written-out float64 reference is the nn modules' forward, eager bf16 stays
inside the tolerance and the tolerance rejects a wrong attention scale; what Dynamo hands the
compiler (recorded with a custom backend on a CPU): with the fast path on, one graph holding one
opaque `_transformer_encoder_layer_fwd` per layer (why the book gains 1.01x), with it off, the
layers' own ops; the warm-up leaves nothing to compile for the timed calls and the fast-path flag
is restored; the compiled variants refuse CPU tensors before compiling. GPU tests: every variant
matches at the small size and at the book's, and the compiled variants never recompile.
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

PAIR_PATH = ROOT / "kernels" / "ch14" / "model_compile_reduced_precision.py"
NAME = "ch14.model_compile_reduced_precision"
TINY = {"batch": 2, "seq": 24, "d_model": 32, "heads": 2, "layers": 2, "d_ff": 48, "vocab": 50}


@pytest.mark.slow
def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == ["baseline", "compiled", "compiled_no_fastpath"]
    assert dict(pair.sizes) == {"batch": 24, "seq": 1536, "d_model": 512, "heads": 8, "layers": 6,
                                "d_ff": 2048, "vocab": 10000}                           # the book's
    assert pair.requires.min_cc == (9, 0) and pair.tolerance == 3e-2
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=True) == list(pair.variants)
    assert runnable_variants(pair, have_gpu=False, have_nvcc=False, have_triton=True) == ["baseline"]
    for text in ("1.014x", "3.74x", "_transformer_encoder_layer_fwd", "max-autotune-no-cudagraphs",
                 "Predicted profile", "compile_seconds", "explain"):
        assert text in mod.__doc__
    assert mod.COMPILE_OPTIONS == {"mode": "max-autotune-no-cudagraphs", "fullgraph": False, "dynamic": False}


def test_flops_bytes_and_parameters(mod):
    d = dict(mod.DEFAULT_SIZES)
    assert mod.parameters(d) == 30_212_880                                      # the book's ~30.2 M
    model = mod.make_inputs(TINY, "cpu", 0)["model"]
    assert mod.parameters(TINY) == sum(p.numel() for p in model.parameters())
    assert mod.flops(d) == 36864 * (6 * (8 * 512**2 + 4 * 512 * 2048 + 4 * 1536 * 512) + 2 * 512 * 10000)
    assert round(mod.flops(d) / 1e12, 3) == 2.465                                # ~2.5 TFLOP per call
    assert mod.bytes(d) == 2 * 30_212_880 + 8 * 36864 + 2 * 36864 * 10000
    assert mod.copy_bytes(d) == 4 * 36864 * 10000                               # the logits copy: 1.47 GB


def test_make_inputs_is_seeded_bf16_eval_and_leaves_the_global_rng_alone(mod):
    state = torch.random.get_rng_state()
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    assert torch.equal(state, torch.random.get_rng_state())
    pa, pb, pc = (dict(x["model"].named_parameters()) for x in (a, b, c))
    assert all(torch.equal(pa[k], pb[k]) for k in pa) and not torch.equal(pa["output.weight"], pc["output.weight"])
    assert torch.equal(a["ids"], b["ids"]) and a["ids"].shape == (2, 24) and int(a["ids"].max()) < 50
    assert all(p.dtype == torch.bfloat16 and not p.requires_grad for p in a["model"].parameters())
    assert not a["model"].training
    for bad in ({**TINY, "seq": 4096}, {**TINY, "heads": 3}, {**TINY, "heads": 8}, {**TINY, "layers": 0}):
        with pytest.raises(ValueError):
            mod.make_inputs(bad, "cpu", 0)


@pytest.mark.slow
def test_reference_is_the_modules_forward_in_float64(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (2, 24, 50)
    m64 = mod.SimpleTransformer(TINY).double().eval()
    m64.load_state_dict({k: v.double() for k, v in inputs["model"].state_dict().items()})
    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            assert torch.allclose(m64(inputs["ids"]), ref, rtol=0, atol=1e-10)
    finally:
        torch.backends.mha.set_fastpath_enabled(previous)


@pytest.mark.slow
def test_eager_bf16_stays_inside_the_tolerance(mod):
    result = check.check_pair(replace(pairs.find(NAME), variants={"baseline": mod.baseline}),
                              mod.SMALL_SIZES, device="cpu")
    check.raise_if_failed(result)
    assert max(c.rel_err_vs_reference for c in result.checks) < 1e-2          # the docstring's 5.3e-3


@pytest.mark.slow
def test_a_wrong_attention_scale_is_rejected(mod):
    def wrong(inputs):
        model, ids = inputs["model"], inputs["ids"]
        out = torch.empty(*ids.shape, model.output.out_features, dtype=torch.bfloat16)
        orig = torch.nn.functional.scaled_dot_product_attention
        dh = model.embedding.embedding_dim // model.layers[0].self_attn.num_heads

        def launch():
            previous = torch.backends.mha.get_fastpath_enabled()
            torch.backends.mha.set_fastpath_enabled(False)
            torch.nn.functional.scaled_dot_product_attention = lambda q, k, v, *a, **kw: orig(q, k, v, *a, **{**kw, "scale": 1 / dh})
            try:
                with torch.inference_mode():
                    out.copy_(model(ids))
            finally:
                torch.nn.functional.scaled_dot_product_attention = orig
                torch.backends.mha.set_fastpath_enabled(previous)
            return out
        return launch

    sizes = {**mod.DEFAULT_SIZES, "batch": 1, "seq": 64, "layers": 2}
    result = check.check_pair(replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": wrong}),
                              sizes, device="cpu", trials=1)
    assert result.failed_variants == ["wrong"]


def _recorded_graphs(mod, inputs, fastpath):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    launch = mod._compiled_launch(inputs, fastpath, {"backend": backend, "fullgraph": True, "dynamic": False})
    return launch, graphs


@pytest.mark.slow
@pytest.mark.parametrize("fastpath", [True, False])
def test_what_dynamo_hands_the_compiler(mod, fastpath):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    before = torch.backends.mha.get_fastpath_enabled()
    launch, graphs = _recorded_graphs(mod, inputs, fastpath)
    assert torch.backends.mha.get_fastpath_enabled() == before                 # restored after each call
    assert len(graphs) == 1                                                     # fullgraph: no break
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    opaque = sum("_transformer_encoder_layer_fwd" in t for t in targets)
    if fastpath:
        assert opaque == TINY["layers"] and len(targets) <= TINY["layers"] + 4   # embedding, add, output
    else:
        assert opaque == 0 and sum("layer_norm" in t for t in targets) == 2 * TINY["layers"]
        assert sum("multi_head_attention_forward" in t for t in targets) == TINY["layers"]
    assert launch.fastpath is fastpath and launch.example_args[0][0] is inputs["ids"]
    with torch.compiler.set_stance("fail_on_recompile"):
        out = launch()
        assert launch() is out
    ref = mod.reference(inputs)
    assert float((out.double() - ref).norm() / ref.norm()) < 1e-2


def test_compiled_variants_refuse_cpu_tensors_before_compiling(mod, monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiled before checking the device"))
    inputs = mod.make_inputs(TINY, "cpu", 0)
    for name in ("compiled", "compiled_no_fastpath"):
        with pytest.raises(RequirementError, match="CUDA tensors"):
            mod.PAIR.variants[name](inputs)


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(mod, which):
    result = check_on_gpu(NAME, which, trials=1 if which == "default" else 2)
    print({c.variant: round(c.rel_err_vs_reference, 5) for c in result.checks})


@pytest.mark.gpu
def test_compiled_variants_report_compile_time_and_never_recompile(mod):
    inputs = mod.make_inputs(mod.SMALL_SIZES, "cuda", 0)
    launches = [factory(inputs) for factory in (mod.optimized_compiled, mod.optimized_compiled_no_fastpath)]
    with torch.compiler.set_stance("fail_on_recompile"):         # raises if a timed call compiles
        for launch in launches:
            launch(), launch()
    for launch in launches:
        print(f"fastpath={launch.fastpath}: compile + warm-up {launch.compile_seconds:.1f} s")
    # explain() resets Dynamo (every compiled function recompiles on its next call): last
    explained = torch._dynamo.explain(launches[0].compiled._orig_mod)(*launches[0].example_args[0])
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
