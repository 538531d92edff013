"""The correctness check must reject wrong "optimized" kernels, and say why.

A tiny row-L2-norm pair is built here on CPU with deliberately broken variants: wrong math,
outputs left half unwritten, a fresh tensor per call, an exception, and a correct one.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from pair_testing import runnable_variants  # noqa: E402
from aisp_prof.collect import check  # noqa: E402
from aisp_prof.errors import CorrectnessError, RequirementError, UnknownTargetError  # noqa: E402
from aisp_prof.pairs import KernelPair, Requirements  # noqa: E402

SIZES = {"rows": 16, "cols": 32}


def _make_inputs(sizes, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(sizes["rows"], sizes["cols"], generator=gen, device=device)}


def _reference(inputs):
    x = inputs["x"].double()
    return x / x.norm(dim=1, keepdim=True)


def _correct(inputs):
    x = inputs["x"]
    y = torch.empty_like(x)

    def launch():
        torch.div(x, x.norm(dim=1, keepdim=True), out=y)
        return y
    return launch


def _divides_by_sum(inputs):
    x = inputs["x"]
    y = torch.empty_like(x)

    def launch():
        torch.div(x, (x * x).sum(dim=1, keepdim=True), out=y)   # forgot the sqrt
        return y
    return launch


def _half_rows(inputs):
    x = inputs["x"]
    y = torch.zeros_like(x)
    half = x.shape[0] // 2

    def launch():
        torch.div(x[:half], x[:half].norm(dim=1, keepdim=True), out=y[:half])  # "grid too small"
        return y
    return launch


def _fresh_tensor(inputs):
    x = inputs["x"]

    def launch():
        return x / x.norm(dim=1, keepdim=True)     # right values, but allocates in the timed closure
    return launch


def _raises(inputs):
    def launch():
        raise ValueError("illegal memory access\nat line 3")
    return launch


def _needs_gpu(inputs):
    raise RequirementError("needs a CUDA tensor")


def _pair(**variants) -> KernelPair:
    return KernelPair(
        name="test.l2norm", chapter=0, lesson="test pair", make_inputs=_make_inputs,
        variants={"baseline": _correct, **variants}, reference=_reference,
        flops=lambda s: 3 * s["rows"] * s["cols"], bytes=lambda s: 8 * s["rows"] * s["cols"],
        sizes=SIZES, tolerance=1e-5,
        variant_needs={"needs_gpu": ("gpu",), "triton": ("triton",), "cuda": ("gpu", "nvcc")},
    )


def _only(result, variant):
    checks = [c for c in result.checks if c.variant == variant]
    assert len(checks) == 2, "one check per trial"
    return checks


def test_correct_variant_passes():
    result = check.check_pair(_pair(good=_correct), device="cpu")
    assert result.passed and result.failed_variants == []
    for c in _only(result, "good"):
        assert c.poisoned and c.unwritten_elements == 0
        assert c.rel_err_vs_reference < 1e-6 and c.rel_err_vs_baseline < 1e-6
        assert c.max_abs_diff_vs_baseline < 1e-6
    check.raise_if_failed(result)


def test_wrong_math_is_rejected():
    result = check.check_pair(_pair(bad=_divides_by_sum), device="cpu")
    assert not result.passed and result.failed_variants == ["bad"]
    for c in _only(result, "bad"):
        assert not c.passed and c.rel_err_vs_reference > 1e-2
        assert "rel_err_vs_reference" in c.message and "rel_err_vs_baseline" in c.message
    with pytest.raises(CorrectnessError, match=r"bad \(trial 0, seed 0\): rel_err_vs_reference="):
        check.raise_if_failed(result)


def test_unwritten_output_is_caught_by_poisoning():
    # The zero-filled rows of the first call would be caught anyway; poisoning makes the count
    # exact and catches rows that merely kept the previous call's (correct) values.
    result = check.check_pair(_pair(half=_half_rows), device="cpu")
    for c in _only(result, "half"):
        assert c.poisoned and not c.passed
        assert c.unwritten_elements == SIZES["rows"] // 2 * SIZES["cols"]
        assert "256 of 512 output elements were never written" in c.message
    with pytest.raises(CorrectnessError, match="half"):
        check.raise_if_failed(result)


def test_stale_but_correct_output_is_caught():
    # Computes once, then "launches" nothing: the values stay right unless the output is poisoned.
    def lazy(inputs):
        y = _correct(inputs)()

        def launch():
            return y
        return launch

    result = check.check_pair(_pair(lazy=lazy), device="cpu")
    assert result.failed_variants == ["lazy"]
    assert all(c.unwritten_elements == 512 for c in _only(result, "lazy"))


def test_fresh_tensor_per_call_is_rejected():
    result = check.check_pair(_pair(fresh=_fresh_tensor), device="cpu")
    for c in _only(result, "fresh"):
        assert not c.poisoned and not c.passed
        assert c.rel_err_vs_reference < 1e-6          # values are right; the contract is not
        assert "different tensor on the second call" in c.message
    with pytest.raises(CorrectnessError, match="fresh.*different tensor"):
        check.raise_if_failed(result)


def test_exception_is_recorded_not_swallowed():
    result = check.check_pair(_pair(boom=_raises), device="cpu")
    for c in _only(result, "boom"):
        assert not c.passed
        assert c.message == "raised ValueError: illegal memory access at line 3"
    with pytest.raises(CorrectnessError) as info:
        check.raise_if_failed(result)
    assert "\n" not in str(info.value) and "boom" in str(info.value)


def test_requirement_error_propagates():
    with pytest.raises(RequirementError, match="needs a CUDA tensor"):
        check.check_pair(_pair(needs_gpu=_needs_gpu), device="cpu")


def test_variants_selects_and_baseline_always_runs():
    result = check.check_pair(_pair(good=_correct, needs_gpu=_needs_gpu), device="cpu",
                              variants=["good"], trials=1)
    assert [c.variant for c in result.checks] == ["baseline", "good"]
    with pytest.raises(UnknownTargetError, match="no variant 'nope'"):
        check.check_pair(_pair(), device="cpu", variants=["nope"])


def test_each_trial_draws_fresh_inputs():
    seeds = []

    def make_inputs(sizes, device, seed):
        seeds.append(seed)
        return _make_inputs(sizes, device, seed)

    pair = _pair(good=_correct)
    pair = replace(pair, make_inputs=make_inputs)
    result = check.check_pair(pair, device="cpu", trials=3, seed=10)
    assert seeds == [10, 11, 12]
    assert [(c.trial, c.seed) for c in result.checks if c.variant == "good"] == [(0, 10), (1, 11), (2, 12)]


def test_non_finite_output_never_passes():
    def inf_out(inputs):
        y = torch.empty_like(inputs["x"])

        def launch():
            return y.fill_(float("inf"))
        return launch

    result = check.check_pair(_pair(inf=inf_out), device="cpu", trials=1)
    (c,) = [c for c in result.checks if c.variant == "inf"]
    assert not c.passed and c.unwritten_elements == 0
    assert json.dumps(result.to_dict(), allow_nan=False)      # strict JSON despite inf/nan errors


def test_to_dict_is_json():
    result = check.check_pair(_pair(good=_correct, bad=_divides_by_sum), device="cpu", trials=1)
    d = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert d["pair"] == "test.l2norm" and d["sizes"] == SIZES and d["tolerance"] == 1e-5
    assert d["passed"] is False and d["failed_variants"] == ["bad"]
    assert {c["variant"] for c in d["checks"]} == {"baseline", "good", "bad"}


def test_runnable_variants():
    pair = _pair(needs_gpu=_needs_gpu, triton=_correct, cuda=_correct)
    assert runnable_variants(pair, have_gpu=False, have_nvcc=False, have_triton=True) == ["baseline", "triton"]
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=False) == ["baseline", "needs_gpu"]
    assert runnable_variants(pair, True, True, True) == ["baseline", "needs_gpu", "triton", "cuda"]
    strict = replace(pair, requires=Requirements(needs=("triton",)))
    assert runnable_variants(strict, True, True, False) == []


def test_import_does_not_need_torch():
    code = "import sys; sys.modules['torch'] = None; import aisp_prof.collect.check, aisp_prof.collect.tools, aisp_kernels.build, aisp_kernels.binding"
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
