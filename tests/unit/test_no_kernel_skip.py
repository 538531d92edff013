"""A variant whose backend has no kernel for the shape is skipped with the reason, never a wrong
result: the check goes on with the others, the run records it and its summary says so."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from aisp_prof.analyze.rule_input import RuleInput  # noqa: E402
from aisp_prof.analyze.verdict.rules import findings  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.pairs import KernelPair  # noqa: E402

SIZES = {"n": 33}


def _inputs(sizes, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(sizes["n"], generator=gen, device=device)}


def _double(inputs):
    x, y = inputs["x"], torch.empty_like(inputs["x"])

    def launch():
        torch.mul(x, 2, out=y)
        return y
    return launch


def _no_kernel(inputs):
    def launch():
        raise RuntimeError("No available kernel. Aborting execution.")
    return launch


def _broken(inputs):
    def launch():
        raise RuntimeError("illegal memory access")
    return launch


def _pair(**variants):
    return KernelPair(name="t.skip", chapter=0, lesson="", make_inputs=_inputs, variants=variants,
                      reference=lambda i: i["x"].double() * 2, flops=lambda s: 0, bytes=lambda s: 0, sizes=SIZES)


def test_a_variant_without_a_kernel_is_skipped_not_failed():
    result = check.check_pair(_pair(baseline=_double, flash=_no_kernel, fast=_double), device="cpu")
    assert result.passed and result.failed_variants == []
    assert list(result.skipped_variants) == ["flash"]
    assert "no kernel for these sizes" in result.skipped_variants["flash"]
    assert "No available kernel" in result.skipped_variants["flash"]
    check.raise_if_failed(result)                   # not a correctness failure (no exit 7)
    d = result.to_dict()
    assert d["passed"] and d["skipped_variants"] == result.skipped_variants
    assert [c["passed"] for c in d["checks"] if c["variant"] == "fast"] == [True, True]


def test_another_runtime_error_is_still_a_failure():
    result = check.check_pair(_pair(baseline=_double, bad=_broken), device="cpu")
    assert not result.passed and result.failed_variants == ["bad"] and result.skipped_variants == {}


def test_a_skipped_baseline_leaves_the_others_held_to_the_reference():
    result = check.check_pair(_pair(baseline=_no_kernel, fast=_double), device="cpu")
    assert result.passed and list(result.skipped_variants) == ["baseline"]
    fast = [c for c in result.checks if c.variant == "fast"]
    assert all(c.passed and c.rel_err_vs_baseline is None for c in fast)


def test_the_summary_and_report_say_which_variant_was_skipped():
    info = {"skipped_variants": {"flash": "skipped: the backend has no kernel for these sizes (...)"}}
    found = [f for f in findings(RuleInput(info, [])) if f.rule == "skipped"]
    assert len(found) == 1 and found[0].variant == "flash" and found[0].severity == "info"
    assert found[0].message.startswith("flash was not run at these sizes")


def test_a_run_drops_the_skipped_variant_and_records_why(tmp_path):
    from aisp_prof.collect.process.runner import _Plan, _without_skipped
    from aisp_prof.collect.process.steps import StepContext
    from aisp_prof.errors import RequirementError

    pair, said = _pair(baseline=_double, flash=_no_kernel, fast=_double), []
    info = {"variants": ["baseline", "flash", "fast"], "roles": {"baseline": "baseline", "flash": "optimization",
                                                                   "fast": "optimization"}}
    ctx = StepContext(tmp_path, info, progress=said.append)
    plan = _without_skipped(ctx, _Plan(pair, ["baseline", "flash", "fast"], dict(SIZES), None, None), {"flash": "why"})
    assert plan.variants == ["baseline", "fast"] and info["variants"] == ["baseline", "fast"]
    assert info["skipped_variants"] == {"flash": "why"} and "flash" not in info["roles"] and said == ["      flash why"]
    with pytest.raises(RequirementError, match="the baseline cannot run at these sizes"):
        _without_skipped(ctx, plan, {"baseline": "why"})


@pytest.mark.parametrize("text", [
    # flex's variant at head_dim 8 and at 1368/1024, ch14.flex_attention_sparse under `check --fuzz 20` on an H200
    "LoweringException: NotImplementedError: NYI: embedding dimension of the query, key, and value must be at "
    "least 16 but got E=8 and Ev=8 target: flex_attention",
    "RuntimeError: No valid triton configs. OutOfMemoryError: out of resource: triton_tem_fused_flex_attention_0 "
    "Required: 329728 Hardware limit:232448 Reducing block sizes or `num_stages` may help."])
def test_flex_attention_without_a_kernel_for_the_head_dim_is_a_skip(text):
    from aisp_prof.collect.correctness.check import no_kernel_reason

    assert no_kernel_reason(RuntimeError(text)).startswith("skipped: the backend has no kernel for these sizes")
    assert no_kernel_reason(RuntimeError("illegal memory access")) is None
