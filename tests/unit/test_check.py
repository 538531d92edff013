"""The correctness check must reject wrong "optimized" kernels, and say why.

A tiny row-L2-norm pair is built here on CPU with deliberately broken variants: wrong math,
outputs left half unwritten, a fresh tensor per call, an exception, a few wrong rows that the
norm bound alone lets through, an fp32 variant that rounds through bf16, and a correct one.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace

import pytest
from repo_paths import ROOT

torch = pytest.importorskip("torch")

from pair_testing import runnable_variants  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
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
    code = "import sys; sys.modules['torch'] = None; import aisp_prof.collect.correctness.check, aisp_prof.tools, aisp_kernels.build, aisp_kernels.binding"
    repo = ROOT
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# --- the row bound and per-variant tolerances (issue 28) ------------------------------------

def _rows_pair(**variants) -> KernelPair:
    """The l2norm pair at a bf16 pair's loose norm bound (3e-2), 4096 rows of 64."""
    return replace(_pair(**variants), sizes={"rows": 4096, "cols": 64}, tolerance=3e-2)


def _two_rows_zeroed(inputs):
    x = inputs["x"]
    y = torch.empty_like(x)

    def launch():
        torch.div(x, x.norm(dim=1, keepdim=True), out=y)
        y[7].zero_()                  # two tiles the "kernel" forgot: every other row is right
        y[2049].zero_()
        return y
    return launch


def test_a_few_wrong_rows_pass_the_norm_bound_and_fail_the_row_bound():
    result = check.check_pair(_rows_pair(bad=_two_rows_zeroed, good=_correct), device="cpu")
    assert result.failed_variants == ["bad"]
    for c in _only(result, "bad"):
        # what the check saw before the row bound: inside the norm tolerance, against both
        assert c.rel_err_vs_reference == pytest.approx(math.sqrt(2 / 4096)) and c.rel_err_vs_reference < 3e-2
        assert c.rel_err_vs_baseline < 3e-2 and c.unwritten_elements == 0
        assert c.max_row_rel_err_vs_reference == pytest.approx(1.0)      # a zeroed row errs by its whole size
        assert c.tolerance == 3e-2 and c.row_tolerance == pytest.approx(check.row_tolerance(3e-2, 4096, 64))
        assert 0.1 < c.row_tolerance < 0.25
        assert c.message.startswith("max_row_rel_err_vs_reference=1 > row tolerance 0.22")
    for c in _only(result, "good"):
        assert c.passed and c.max_row_rel_err_vs_reference < 1e-6
        assert "max_row_rel_err_vs_reference=" in c.message
    with pytest.raises(CorrectnessError, match="bad .*some rows are wrong"):
        check.raise_if_failed(result)


def test_one_wrong_element_of_a_vector_fails_the_elementwise_bound():
    """A 1-D output has no rows: each element is measured on its own (against its own size, or the
    typical element's where it is smaller)."""
    def make_inputs(sizes, device, seed):
        return {"x": torch.randn(sizes["n"], generator=torch.Generator(device=device).manual_seed(seed))}

    def twice(inputs, flip=False):
        x = inputs["x"]
        y = torch.empty_like(x)

        def launch():
            torch.mul(x, 2.0, out=y)
            if flip:
                y[y.abs().argmax()] *= -1          # one sign wrong, of 2M
            return y
        return launch

    pair = KernelPair("test.twice", 0, "", make_inputs, {"baseline": twice, "flip": lambda i: twice(i, True)},
                      lambda i: 2 * i["x"].double(), len, len, sizes={"n": 1 << 21}, tolerance=1e-2)
    result = check.check_pair(pair, device="cpu", trials=1)
    (base, flip) = result.checks
    assert base.passed and base.max_row_rel_err_vs_reference < 1e-12
    assert flip.rel_err_vs_reference < 1e-2 < flip.row_tolerance < 0.5          # the norm bound lets it through
    assert flip.max_row_rel_err_vs_reference == pytest.approx(2.0) and not flip.passed


def test_a_scalar_output_is_one_row():
    def make_inputs(sizes, device, seed):
        return {"x": torch.randn(1000, generator=torch.Generator(device=device).manual_seed(seed))}

    def total(inputs):
        y = torch.empty((), dtype=torch.float32)

        def launch():
            return torch.sum(inputs["x"], dim=0, out=y)
        return launch

    pair = KernelPair("test.sum", 0, "", make_inputs, {"baseline": total}, lambda i: i["x"].double().sum(),
                      len, len, tolerance=1e-5)
    (c,) = check.check_pair(pair, device="cpu", trials=1).checks
    assert c.passed and c.max_row_rel_err_vs_reference == pytest.approx(c.rel_err_vs_reference)


def test_each_row_is_measured_against_its_own_size():
    """A row 1000x the others (causal attention's first query row) is held to its own relative error,
    not to the small rows' absolute one; a row whose reference is zero, to the typical row's size."""
    ref = torch.ones(4, 8, dtype=torch.float64)
    ref[0] *= 1000
    ref[3] = 0
    out = ref * (1 + 1e-3)
    out[3] = 1e-3 * float(ref.norm()) / 2 / math.sqrt(8)     # an absolute error of 1e-3 x the rms row norm
    c = check.VariantCheck("v", 0, 0)
    assert check._against_reference(out, ref, 2e-3, c) == []
    assert c.max_row_rel_err_vs_reference == pytest.approx(1e-3)    # rows 0 and 3 alike, neither inflated
    assert c.rel_err_vs_reference < 2e-3


def test_row_tolerance_follows_the_norm_bound_and_the_row_length():
    assert check.row_tolerance(0.0, 1000, 64) == 0.0                      # exact pairs stay exact
    t = 1e-3
    assert 7 * t < check.row_tolerance(t, 10**5, 64) < 8 * t             # attention heads
    assert 4 * t < check.row_tolerance(t, 8192, 8192) < 4.5 * t          # GEMM rows
    assert 30 * t < check.row_tolerance(t, 10**8, 1) < 40 * t            # element by element
    assert check.row_tolerance(t, 10**6, 64) > check.row_tolerance(t, 10**3, 64)


def _bf16_rounded(inputs):
    x = inputs["x"]
    y = torch.empty_like(x)

    def launch():
        torch.div(x, x.norm(dim=1, keepdim=True), out=y)
        return y.copy_(y.bfloat16())              # an "fp32" kernel that stores through bf16: ~1.5e-3
    return launch


def test_a_variant_is_held_to_its_own_tolerance():
    loose = replace(_pair(rounded=_bf16_rounded), tolerance=5e-3)
    assert check.check_pair(loose, device="cpu").passed                   # at the pair's bf16 bound
    strict = replace(loose, variant_tolerance={"rounded": 1e-4})
    assert strict.tolerance_for("rounded") == 1e-4 and strict.tolerance_for("baseline") == 5e-3
    result = check.check_pair(strict, device="cpu", trials=1)
    base, rounded = result.checks
    assert base.passed and base.tolerance == 5e-3
    assert not rounded.passed and rounded.tolerance == 1e-4
    assert "rel_err_vs_reference=" in rounded.message and "> tolerance 0.0001" in rounded.message
    d = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert {c["variant"]: c["tolerance"] for c in d["checks"]} == {"baseline": 5e-3, "rounded": 1e-4}
    assert all(c["row_tolerance"] > c["tolerance"] for c in d["checks"])


def test_against_the_baseline_the_looser_of_the_two_bounds_applies():
    """An fp32 baseline held to 1e-4 and a bf16 variant to 5e-3 differ by the bf16 rounding."""
    pair = replace(_pair(rounded=_bf16_rounded), tolerance=5e-3, variant_tolerance={"baseline": 1e-4})
    result = check.check_pair(pair, device="cpu", trials=1)
    assert result.passed
    (rounded,) = [c for c in result.checks if c.variant == "rounded"]
    assert 1e-4 < rounded.rel_err_vs_baseline < 5e-3


def test_bad_tolerances_are_refused():
    with pytest.raises(ValueError, match="tolerance of 'good' must be >= 0"):
        replace(_pair(good=_correct), variant_tolerance={"good": -1.0})
