"""Correctness check: every variant of a pair must match the float64 reference and the baseline.

A fast kernel that is wrong is worse than a slow one, so this runs before anything is timed.
It guards against the usual ways a benchmark lies:
  - one lucky input: each trial draws fresh random inputs (seed + trial);
  - stale output: the output is poisoned with NaN between two calls, so elements the kernel
    never writes show up instead of passing with the previous call's values;
  - allocating in the timed closure: the second call must return the same tensor;
  - swallowed errors: a variant that raises is recorded as failed with its exception text.
A variant whose backend has no kernel for the shape (`no_kernel_reason`: a narrow list of the
refusals torch's SDPA and cuDNN give, and errors.NoKernelError from a pair's helper) cannot run at these sizes; it is not wrong: it is recorded as
skipped with the reason, never as a failure, and the others are checked as usual (a skipped
baseline leaves them checked against the reference only).
Beside each variant's result it records what the first call cost (`compiles`: the factory's and
the first two calls' wall times, and what torch.compile did, from `collect.code.dynamo`), since the
first call is where torch.compile, Triton's JIT and autotuning spend their time.
Environment problems (AispError: no GPU, no nvcc, no triton, a failed build) are not
correctness results; they propagate so the caller can skip or report them explicitly.

Two bounds, each variant's own (`KernelPair.tolerance_for`: an fp32 variant of a bf16 pair is held
to what fp32 can do):
  - the norm: ||out - ref|| / ||ref|| <= tolerance. At a bf16 pair's 2e-2..3e-2 a few entirely
    wrong rows pass it (k of R rows wrong by their own size add only sqrt(k / R) to it);
  - the rows: max over rows r of ||out_r - ref_r|| / max(||ref_r||, rms row norm) <= the row
    tolerance `row_tolerance` derives from the norm bound. A row is the last dimension (a GEMM's
    output row, an attention head's output vector); an output of 0 or 1 dimensions is checked
    element by element. Each row is measured against its own size, so a large row (causal
    attention's first query: one value vector, ~20x the typical row) is not held to the small
    ones' absolute error, and a row whose reference is near zero (cancellation) against the typical
    row's size instead of its own. An entirely wrong row errs by ~1; the row bound is 0.1-0.25 at
    the loosest norm bounds, so one wrong row in a million fails.
Against the baseline the norm bound is the looser of the two variants' (both within their own
bounds of the same math); the row bound is checked against the reference only.

torch is imported inside the functions so that `import aisp_prof.collect.correctness.check` works without it.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from ...errors import AispError, CorrectnessError, NoKernelError, UnknownTargetError
from ...pairs import KernelPair
from ..code.dynamo import CompileWatch, compile_row, stop_compile_workers

log = logging.getLogger(__name__)
# what a backend says when it has no kernel for the shape (RuntimeError's text): torch's
# scaled_dot_product_attention with every backend refusing, cuDNN's status and its frontend's
NO_KERNEL_MESSAGES = ("No available kernel", "CUDNN_STATUS_NOT_SUPPORTED", "No execution plans support the graph",
                      # flex_attention's Inductor template: head_dim under 16 is not implemented, and a head_dim
                      # whose every tile config overflows shared memory (1024+ on an H200) has none
                      "embedding dimension of the query, key, and value must be at least 16", "No valid triton configs")
_BASELINE_SKIPPED = object()     # the baseline had no kernel: the others are held to the reference only
ROW_SLACK = 4.0        # how much worse than the whole output's error one row may be (row_tolerance)
FALSE_ALARM = 1e-6     # chance that a correct kernel's worst row exceeds its bound, by the model


def row_tolerance(tolerance: float, rows: int, row_len: int) -> float:
    """The bound on the worst row's relative error, from the variant's norm bound.

    Model: a correct kernel's error is spread over the output like independent noise of the
    size the norm bound allows, so a row of n elements holds ~n of it and its norm concentrates
    (Gaussian concentration of a norm: ||g|| <= sqrt(n) + sqrt(2 ln(1/p)) with probability 1 - p;
    a union over R rows takes ln(R / p)): the worst of R rows is at most 1 + sqrt(2 ln(R / p) / n)
    times the typical row's error, p = FALSE_ALARM. ROW_SLACK = 4 on top allows rows whose own
    relative error is above the average one (rounding is relative to each element, accumulation
    lengths and magnitudes differ by row) without a model of each kernel. So 0 for an exact pair;
    ~7.5x the norm bound for rows of 64 (attention heads, R ~ 1e5), ~4.3x for rows of 8192, ~35x
    element by element (R ~ 1e8)."""
    spread = 1.0 + math.sqrt(2.0 * math.log(max(rows, 1) / FALSE_ALARM) / max(row_len, 1))
    return ROW_SLACK * tolerance * spread


@dataclass
class VariantCheck:
    """One variant on one trial's inputs. Relative errors are ||out - other|| / ||other||."""

    variant: str
    trial: int
    seed: int
    rel_err_vs_reference: float | None = None
    max_row_rel_err_vs_reference: float | None = None   # worst row's ||out_r - ref_r|| / max(||ref_r||, rms)
    rel_err_vs_baseline: float | None = None
    max_abs_diff_vs_baseline: float | None = None
    tolerance: float | None = None       # this variant's bound on rel_err_vs_reference
    row_tolerance: float | None = None   # its bound on max_row_rel_err_vs_reference (row_tolerance())
    skipped: bool = False                # the backend has no kernel for these sizes (message says why)
    unwritten_elements: int = 0          # still NaN after poisoning + a second call
    poisoned: bool = False               # the output was poisoned and the same tensor came back
    passed: bool = False
    message: str = ""


@dataclass
class CheckResult:
    pair: str
    sizes: dict[str, int]
    tolerance: float
    checks: list[VariantCheck] = field(default_factory=list)
    compiles: list[dict[str, Any]] = field(default_factory=list)   # `dynamo.compile_row`s, phase "check"

    @property
    def passed(self) -> bool:
        """Nothing wrong: every variant passed or was skipped (no kernel for these sizes)."""
        return bool(self.checks) and all(c.passed or c.skipped for c in self.checks)

    @property
    def failed_variants(self) -> list[str]:
        return list(dict.fromkeys(c.variant for c in self.checks if not (c.passed or c.skipped)))

    @property
    def skipped_variants(self) -> dict[str, str]:
        """{variant: why} for the variants whose backend has no kernel for these sizes."""
        return {c.variant: c.message for c in self.checks if c.skipped}

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (strict JSON: non-finite errors become None; the message keeps the text)."""
        d = asdict(self)
        for c in d["checks"]:
            for k, v in c.items():
                if isinstance(v, float) and not math.isfinite(v):
                    c[k] = None
        d["passed"] = self.passed
        d["failed_variants"] = self.failed_variants
        d["skipped_variants"] = self.skipped_variants
        return d


def check_pair(pair: KernelPair, sizes: Mapping[str, int] | None = None, device: str = "cuda",
               variants: Iterable[str] | None = None, trials: int = 2, seed: int = 0) -> CheckResult:
    """Run the selected variants on `trials` fresh inputs and compare each with the reference.

    The baseline always runs (and is reported) because every variant is compared with it.
    Does not check `pair.requires` (compute capability): the caller decides what runs here.
    """
    import torch

    sizes = dict(sizes if sizes is not None else pair.sizes)
    names = list(variants) if variants is not None else list(pair.variants)
    unknown = [n for n in names if n not in pair.variants]
    if unknown:
        raise UnknownTargetError(f"{pair.name} has no variant {', '.join(map(repr, unknown))}; "
                                 f"it has {', '.join(pair.variants)}")
    names = ["baseline"] + [n for n in names if n != "baseline"]
    result = CheckResult(pair=pair.name, sizes=sizes, tolerance=pair.tolerance)

    for trial in range(trials):
        trial_seed = seed + trial
        inputs = pair.make_inputs(sizes, device, trial_seed)
        ref = torch.as_tensor(pair.reference(inputs)).double()
        baseline_out = None
        for name in names:
            watch, walls = CompileWatch(), {}
            check = VariantCheck(variant=name, trial=trial, seed=trial_seed)
            check, out = _check_variant(pair, name, inputs, ref, baseline_out, check, walls)
            result.compiles.append(compile_row(name, 0, "check", watch.take(), trial=trial, **walls))
            if name == "baseline" and (check.passed or check.skipped):
                baseline_out = _BASELINE_SKIPPED if check.skipped else out
            result.checks.append(check)
            log.info("%s/%s trial %d: %s", pair.name, name, trial, check.message)
        del inputs, ref, baseline_out
    return result


def raise_if_failed(result: CheckResult) -> None:
    """CorrectnessError naming every failing variant and why, in one line."""
    if result.passed:
        return
    if not result.checks:
        raise CorrectnessError(f"{result.pair}: no variant was checked")
    reasons = {}
    for c in result.checks:
        if not (c.passed or c.skipped) and c.variant not in reasons:
            reasons[c.variant] = f"{c.variant} (trial {c.trial}, seed {c.seed}): {c.message}"
    raise CorrectnessError(f"{result.pair} failed the correctness check: " + "; ".join(reasons.values()))


def _two_calls(factory: Any, inputs: dict, check: VariantCheck, walls: dict[str, float]) -> tuple[Any, Any]:
    """Build the closure and call it twice, the output poisoned with NaN in between; `walls`
    receives the wall times (ns) of the factory and of each call (synchronized), as far as they
    got. (first, None) when the first call returned no tensor."""
    import torch

    began = time.perf_counter_ns()
    launch = factory(inputs)
    walls["factory_wall_ns"] = time.perf_counter_ns() - began
    stop_compile_workers()        # a compile's worker processes would slow every call after it
    began = time.perf_counter_ns()
    first = launch()              # warm-up: compiles, autotunes, fills caches
    if not isinstance(first, torch.Tensor):
        return first, None
    _synchronize(first)
    walls["first_call_wall_ns"] = time.perf_counter_ns() - began
    stop_compile_workers()
    check.poisoned = first.is_floating_point()
    if check.poisoned:
        first.fill_(float("nan"))
        _synchronize(first)
    began = time.perf_counter_ns()
    out = launch()
    _synchronize(out)
    walls["second_call_wall_ns"] = time.perf_counter_ns() - began
    return first, out


def _check_variant(pair: KernelPair, name: str, inputs: dict, ref: Any, baseline_out: Any,
                   check: VariantCheck, walls: dict[str, float]) -> tuple[VariantCheck, Any]:
    """The check of one variant (filling `check`); `walls` as in `_two_calls`."""
    import torch

    try:
        first, out = _two_calls(pair.variants[name], inputs, check, walls)
    except AispError:
        raise
    except Exception as exc:  # a correctness result, not a crash: record it, never hide it
        check.skipped = no_kernel_reason(exc) is not None
        check.message = no_kernel_reason(exc) or _one_line(f"raised {type(exc).__name__}: {exc}")
        log.debug("%s/%s raised", pair.name, name, exc_info=True)
        return check, None
    if not isinstance(first, torch.Tensor):
        check.message = f"returned {type(first).__name__}, expected a torch.Tensor"
        return check, None

    if not isinstance(out, torch.Tensor):
        check.message = f"returned {type(out).__name__} on the second call, expected a torch.Tensor"
        return check, None
    problems = []
    if not (out is first or _same_storage(out, first)):
        check.poisoned = False
        problems.append("returned a different tensor on the second call; allocate outputs in the "
                        "factory and return the same tensor from every call")
    if tuple(out.shape) != tuple(ref.shape):
        check.message = f"output shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}"
        return check, out

    out64 = out.detach().double()
    if check.poisoned:
        check.unwritten_elements = int(torch.isnan(out64).sum())
        if check.unwritten_elements:
            problems.append(f"{check.unwritten_elements} of {out.numel()} output elements were never "
                            "written (still NaN after poisoning)")
    problems += _against_reference(out64, ref.to(out64.device), pair.tolerance_for(name), check)
    if baseline_out is _BASELINE_SKIPPED:
        pass                                  # no baseline kernel at these sizes: the reference only
    elif baseline_out is not None and name != "baseline":
        base64 = baseline_out.detach().double().to(out64.device)
        check.rel_err_vs_baseline = _rel_err(out64, base64)
        check.max_abs_diff_vs_baseline = float((out64 - base64).abs().max()) if out.numel() else 0.0
        both = max(pair.tolerance_for(name), pair.tolerance_for("baseline"))
        if not _within(check.rel_err_vs_baseline, both):
            problems.append(f"rel_err_vs_baseline={check.rel_err_vs_baseline:.3g} > tolerance {both:g}")
    elif name != "baseline":
        problems.append("no baseline output to compare with (the baseline failed)")

    check.passed = not problems
    check.message = "; ".join(problems) if problems else (
        f"ok: rel_err_vs_reference={check.rel_err_vs_reference:.3g}, "
        f"max_row_rel_err_vs_reference={check.max_row_rel_err_vs_reference:.3g}")
    return check, out


def _against_reference(out64: Any, ref64: Any, tolerance: float, check: VariantCheck) -> list[str]:
    """Fill `check`'s errors against the reference and bounds (module docstring); the problems."""
    import torch

    diff = out64 - ref64
    rows = diff.reshape(-1, diff.shape[-1]) if diff.dim() >= 2 else diff.reshape(-1, 1)
    ref_rows = ref64.reshape(rows.shape)
    ref_norm = float(torch.linalg.vector_norm(ref64))
    check.rel_err_vs_reference = _ratio(float(torch.linalg.vector_norm(diff)), ref_norm)
    check.tolerance, check.row_tolerance = tolerance, row_tolerance(tolerance, rows.shape[0], rows.shape[1])
    if rows.numel():
        typical = ref_norm / math.sqrt(rows.shape[0]) or 1.0       # rms row norm; 1 (absolute) for a zero ref
        scale = torch.linalg.vector_norm(ref_rows, dim=1).clamp(min=typical)
        check.max_row_rel_err_vs_reference = float((torch.linalg.vector_norm(rows, dim=1) / scale).max())
    else:
        check.max_row_rel_err_vs_reference = 0.0
    problems = []
    if not _within(check.rel_err_vs_reference, tolerance):
        problems.append(f"rel_err_vs_reference={check.rel_err_vs_reference:.3g} > tolerance {tolerance:g}")
    if not _within(check.max_row_rel_err_vs_reference, check.row_tolerance):
        problems.append(f"max_row_rel_err_vs_reference={check.max_row_rel_err_vs_reference:.3g} > row "
                        f"tolerance {check.row_tolerance:.3g} (some rows are wrong)")
    return problems


def no_kernel_reason(exc: BaseException) -> str | None:
    """"skipped: no kernel for these sizes (...)" when `exc` is a backend saying it has no kernel
    for the shape (errors.NoKernelError, or a RuntimeError holding one of NO_KERNEL_MESSAGES), else None."""
    text = str(exc)
    if isinstance(exc, NoKernelError) or (isinstance(exc, RuntimeError) and any(m in text for m in NO_KERNEL_MESSAGES)):
        return _one_line(f"skipped: the backend has no kernel for these sizes ({type(exc).__name__}: {text})")[:500]
    return None


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else num


def _rel_err(out64: Any, ref64: Any) -> float:
    import torch

    num = float(torch.linalg.vector_norm(out64 - ref64))
    den = float(torch.linalg.vector_norm(ref64))
    return num / den if den > 0 else num


def _within(err: float | None, tolerance: float) -> bool:
    return err is not None and math.isfinite(err) and err <= tolerance


def _same_storage(a: Any, b: Any) -> bool:
    return (a.device == b.device and a.data_ptr() == b.data_ptr()
            and a.shape == b.shape and a.stride() == b.stride())


def _synchronize(t: Any) -> None:
    import torch

    if t.is_cuda:
        torch.cuda.synchronize(t.device)


def _one_line(text: str) -> str:
    return " ".join(text.split())
