"""ch14.graph_break_control_flow: imports cleanly, formulas add up, both modules compute the float64
reference for both signs of b, Dynamo sees 2 graphs and 1 break in the book's baseline and 1 graph
and 0 breaks in tensor_branch (torch._dynamo.explain on the CPU), the factories' warm-up leaves no
compile for the timed calls (checked with the "eager" backend and fail_on_recompile), the
tolerance rejects a branch taken wrongly, and the variants refuse CPU tensors before compiling.
GPU tests: both variants match at the small and the book's size, the baseline copies the branch
condition to the host on every call and tensor_branch never does.
"""
from __future__ import annotations

import sys
from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch14" / "graph_break_control_flow.py"
NAME = "ch14.graph_break_control_flow"
TINY = {"batch": 24, "hidden": 40, "depth": 2}
EAGER = {"backend": "eager", "dynamic": False}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == ["baseline", "tensor_branch"]
    assert dict(pair.sizes) == {"batch": 1024, "hidden": 2048, "depth": 3}          # the book's
    assert dict(pair.small_sizes) == {"batch": 200, "hidden": 264, "depth": 2}
    assert pair.requires.min_cc == (9, 0) and pair.tolerance == 2e-2
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=True) == ["baseline", "tensor_branch"]
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == []
    for text in ("1.650x", "Predicted profile", "Device-to-Host", "launch.compiled", "explain",
                 "max-autotune", "compile_seconds"):
        assert text in mod.__doc__
    assert mod.COMPILE_OPTIONS == {"mode": "max-autotune", "dynamic": False}       # the book's


def test_flops_and_bytes_formulas(mod):
    s = {"batch": 2, "hidden": 3, "depth": 4}
    assert mod.flops(s) == 2 * 4 * 2 * 9 == 144
    assert mod.bytes(s) == 2 * (4 * (9 + 3) + 3 * 2 * 3) == 132
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == 25_769_803_776                          # 3 GEMMs of 1024 x 2048 x 2048
    assert mod.bytes(d) == 2 * (3 * (2048 * 2048 + 2048) + 3 * 1024 * 2048) == 37_761_024


def test_make_inputs_is_seeded_and_b_neg_flips_b_pos(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    assert a["a"].dtype == torch.bfloat16 and a["a"].shape == (24, 40)
    assert len(a["weights"]) == len(a["biases"]) == 2 and a["weights"][0].shape == (40, 40)
    assert torch.equal(a["a"], b["a"]) and not torch.equal(a["a"], c["a"])
    assert all(torch.equal(x, y) for x, y in zip(a["weights"], b["weights"]))
    assert bool((a["b_pos"] > 0).all()) and torch.equal(a["b_neg"], -a["b_pos"])
    assert float(a["b_pos"].float().sum()) > 0 > float(a["b_neg"].float().sum())
    with pytest.raises(ValueError, match="depth"):
        mod.make_inputs({"batch": 2, "hidden": 3, "depth": 0}, "cpu", 0)


def _double(inputs):
    return {k: ([t.double() for t in v] if isinstance(v, list) else v.double()) for k, v in inputs.items()}


@pytest.mark.parametrize("cls", ["PythonBranch", "TensorBranch"])
def test_modules_compute_the_reference_for_both_signs(mod, cls):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (24, 40)
    d = _double(inputs)
    module = getattr(mod, cls)(d["weights"], d["biases"])
    for b in (d["b_pos"], d["b_neg"]):
        assert torch.allclose(module(d["a"], b), ref, rtol=0, atol=1e-12)
    # the sign rule really matters: x * b_neg is -ref
    x = module.mlp(d["a"])
    assert torch.allclose(x * d["b_neg"], -ref, rtol=0, atol=1e-12)


def test_bf16_modules_stay_inside_the_tolerance(mod):
    inputs = mod.make_inputs(mod.SMALL_SIZES, "cpu", 0)
    ref = mod.reference(inputs)
    for cls in (mod.PythonBranch, mod.TensorBranch):
        module = cls(inputs["weights"], inputs["biases"])
        for b in (inputs["b_pos"], inputs["b_neg"]):
            err = float((module(inputs["a"], b).double() - ref).norm() / ref.norm())
            assert 1e-3 < err < 5e-3                                 # the docstring's 4.0e-3


@pytest.mark.slow
def test_dynamo_sees_a_break_in_the_baseline_and_one_graph_in_tensor_branch(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    args = (inputs["a"], inputs["b_neg"])
    python = torch._dynamo.explain(mod.PythonBranch(inputs["weights"], inputs["biases"]))(*args)
    tensor = torch._dynamo.explain(mod.TensorBranch(inputs["weights"], inputs["biases"]))(*args)
    assert (python.graph_count, python.graph_break_count) == (2, 1)
    assert (tensor.graph_count, tensor.graph_break_count) == (1, 0)
    reason = str(python.break_reasons[0].reason)
    assert "generic_jump" in reason or "data-dependent" in reason.lower(), reason


def test_the_baseline_cannot_be_one_graph(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    args = (inputs["a"], inputs["b_pos"])
    with pytest.raises(Exception, match="(?i)data.dependent|generic_jump|jump"):
        torch.compile(mod.PythonBranch(inputs["weights"], inputs["biases"]), backend="eager", fullgraph=True)(*args)
    one = torch.compile(mod.TensorBranch(inputs["weights"], inputs["biases"]), backend="eager", fullgraph=True)
    assert one(*args).shape == (24, 40)


@pytest.mark.slow
@pytest.mark.parametrize("cls,fullgraph", [("PythonBranch", False), ("TensorBranch", True)])
def test_warm_up_leaves_nothing_to_compile_in_timed_calls(mod, cls, fullgraph):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    launch = mod._compiled_launch(inputs, getattr(mod, cls), {**EAGER, "fullgraph": fullgraph})
    assert launch.compile_options == {**EAGER, "fullgraph": fullgraph} and launch.compile_seconds > 0
    assert [b is inputs["b_pos"] for _, b in launch.example_args] == [True, False]
    assert launch.compiled._orig_mod.__class__.__name__ == cls
    ref = mod.reference(inputs)
    with torch.compiler.set_stance("fail_on_recompile"):      # raises if a timed call compiles
        outs = [launch() for _ in range(4)]
    assert all(o is outs[0] for o in outs)
    assert float((outs[0].double() - ref).norm() / ref.norm()) < 5e-3


@pytest.mark.slow
def test_explain_resets_dynamo_so_it_runs_after_the_timed_calls(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    launch = mod._compiled_launch(inputs, mod.TensorBranch, {**EAGER, "fullgraph": True})
    torch._dynamo.explain(launch.compiled._orig_mod)(*launch.example_args[0])
    with torch.compiler.set_stance("fail_on_recompile"), pytest.raises(Exception, match="(?i)recompil"):
        launch()


def test_factories_refuse_cpu_tensors_before_compiling(mod, monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiled before checking the device"))
    inputs = mod.make_inputs(TINY, "cpu", 0)
    for factory in mod.PAIR.variants.values():
        with pytest.raises(RequirementError, match="CUDA tensors"):
            factory(inputs)


@pytest.mark.slow
def test_the_check_rejects_a_branch_taken_wrongly(mod, monkeypatch):
    # Dynamo looks up sys.modules[fn.__module__] for a function inlined from another module than
    # the compiled frame's (here mod._Layers.mlp under this file's forward); discovery does not
    # register pair modules, so the pair keeps each compiled region in its own module.
    monkeypatch.setitem(sys.modules, mod.__name__, mod)

    class WrongBranch(mod._Layers):
        def forward(self, a, b):
            return self.mlp(a) * b

    def factory(cls, fullgraph):
        return lambda inputs: mod._compiled_launch(inputs, cls, {**EAGER, "fullgraph": fullgraph})

    pair = replace(pairs.find(NAME), variants={"baseline": factory(mod.PythonBranch, False),
                                               "tensor_branch": factory(mod.TensorBranch, True),
                                               "wrong": factory(WrongBranch, True)})
    result = check.check_pair(pair, TINY, device="cpu")
    assert result.failed_variants == ["wrong"]
    wrong = [c for c in result.checks if c.variant == "wrong"]
    assert all(abs(c.rel_err_vs_reference - 2.0) < 0.05 for c in wrong)    # the second call takes b_neg


# --- GPU ------------------------------------------------------------------------------------

def _device_events(launch) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        launch()
        launch()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(mod, which):
    result = check_on_gpu(NAME, which)
    assert len(result.checks) == 4


@pytest.mark.gpu
def test_baseline_syncs_every_call_and_tensor_branch_never(mod):
    inputs = mod.make_inputs(mod.SMALL_SIZES, "cuda", 0)
    base, fused = mod.baseline(inputs), mod.optimized_tensor_branch(inputs)
    print(f"compile: baseline {base.compile_seconds:.1f} s, tensor_branch {fused.compile_seconds:.1f} s")
    with torch.compiler.set_stance("fail_on_recompile"):         # raises if a timed call compiles
        base_events, fused_events = _device_events(base), _device_events(fused)
    print("baseline:", base_events, "\ntensor_branch:", fused_events)
    # explain() resets Dynamo (every compiled function recompiles on its next call): last
    for launch, graphs, breaks in ((base, 2, 1), (fused, 1, 0)):
        explained = torch._dynamo.explain(launch.compiled._orig_mod)(*launch.example_args[1])
        assert (explained.graph_count, explained.graph_break_count) == (graphs, breaks)
    d2h = [e for e in base_events if "DtoH" in e or "Device -> Pageable" in e or "Device -> Pinned" in e]
    assert len(d2h) == 2                                          # one per call: the branch's bool
    assert not [e for e in fused_events if "DtoH" in e or "Device -> Pageable" in e]
