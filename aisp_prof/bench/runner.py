"""`aisp-prof bench run`: time whole chapters, compare with expectations, optionally update them.

Each pair goes through the same pipeline as `aisp-prof run` (check first, then CUDA-event
timing with L2 flushes and rotated inputs, then whatever profilers the level asks for), so a
benchmark result is an ordinary stored run that `history`, `summary` and reports can read.
Whether a pair can run here is `pairs.capabilities.runnable`'s answer, as for `run` and `list`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..collect.runner import RunOptions
from ..errors import AispError, NoGpuError
from ..naming import hardware_key, utc_now
from ..pairs import KernelPair
from ..pairs import capabilities
from ..pairs.capabilities import Machine, runnable
from ..parse.metric_table import DEFAULT_GROUPS
from ..paths import kernels_root
from . import expectations as exp

# --profile level -> (ncu, nsys, extra ncu metric groups)
PROFILE_LEVELS: dict[str, tuple[bool, bool, tuple[str, ...]]] = {
    "none": (False, False, ()),
    "minimal": (False, True, ()),
    "roofline": (True, False, ()),
    "full": (True, True, ("sol_breakdown", "stall_sampled")),
}


@dataclass(frozen=True)
class BenchOptions:
    """How `bench run` measures each pair."""

    profile: str = "none"
    repeats: int = 100
    update_expectations: bool = False
    profiles_dir: Path = Path("profiles")

    def run_options(self, pair: KernelPair) -> RunOptions:
        with_ncu, with_nsys, extra = PROFILE_LEVELS[self.profile]
        return RunOptions(pair=pair, profiles_dir=self.profiles_dir, label=f"bench:{self.profile}",
                          with_ncu=with_ncu, with_nsys=with_nsys, timing_repeats=self.repeats,
                          metric_groups=DEFAULT_GROUPS + extra)


@dataclass
class PairOutcome:
    pair: str
    run_id: str | None
    status: str                       # ok, failed_check, skipped, error
    message: str = ""
    verdicts: list[exp.Verdict] = field(default_factory=list)
    observed: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair, "run_id": self.run_id, "status": self.status, "message": self.message,
                "verdicts": [v.to_dict() for v in self.verdicts], "observed": self.observed}


def observed_entry(result: Any, pair: KernelPair) -> dict[str, Any] | None:
    """The run as an expectation entry (None when the check failed and nothing was timed)."""
    timings = result.data.timings
    if timings.empty:
        return None
    info, run = result.data.info, result.run
    stats = {r["variant"]: r for r in timings.to_dict("records")}
    sizes = info.get("sizes") or dict(pair.sizes)
    env = info.get("env", {})
    provenance = {
        "run_id": run["run_id"], "date": run.get("created_at"),
        "gpu_name": run.get("gpu_name"), "driver_version": run.get("driver_version"),
        "git_sha": run.get("git_sha"), "torch_version": env.get("torch_version"),
        "triton_version": env.get("triton_version"), "cuda_version": env.get("torch_cuda_version"),
        "ncu_version": run.get("ncu_version"), "nsys_version": run.get("nsys_version"),
        "nvcc_version": info.get("tools", {}).get("nvcc", {}).get("version"),
        "sizes": sizes,
    }
    return exp.pair_entry(pair.name, sizes, stats, pair.flops(sizes), pair.bytes(sizes), provenance)


def bench_one(pair: KernelPair, runs: Any, key: str, opts: BenchOptions,
              progress: Callable[[str], None] = lambda m: None, machine: Machine | None = None) -> PairOutcome:
    """Check, time (and profile) one pair into the RunDatabase `runs`; compare with its
    expectation; maybe record it. A pair that cannot run here is skipped with the reason."""
    answer = runnable(pair, machine or capabilities.detect_machine())
    if not answer.ok and answer.error is not NoGpuError:     # e.g. a pair that needs sm_100, on Hopper
        return PairOutcome(pair.name, None, "skipped", answer.reason)
    try:
        result = runs.profile(opts.run_options(pair), progress=progress)
    except AispError as e:                 # a profiler failed: the gate must fail too
        return PairOutcome(pair.name, None, "error", str(e),
                           [exp.Verdict(pair.name, "*", "run", None, None, None, None, "error")])
    correct = result.error is None
    observed = observed_entry(result, pair) if correct else None
    path = exp.expectations_path(kernels_root(), pair.chapter_key, key)
    expected = exp.load(path)["pairs"].get(pair.name)
    verdicts = exp.compare(expected, observed or {"pair": pair.name, "variants": {}}, correct)
    if opts.update_expectations and correct and observed:
        data = exp.load(path)
        data.setdefault("pairs", {})[pair.name] = observed
        data.update(hardware_key=key, chapter=pair.chapter_key, updated_at=utc_now())
        exp.save(path, data)
    return PairOutcome(pair.name, result.run["run_id"], "ok" if correct else "failed_check",
                       str(result.error or ""), verdicts, observed)


def current_hardware_key(machine: Machine | None = None) -> str:
    """The key of GPU 0 (NoGpuError without one: a benchmark needs a GPU)."""
    machine = machine or capabilities.detect_machine()
    if not machine.gpu:
        raise NoGpuError("no CUDA GPU found; `aisp-prof bench run` times pairs on a GPU machine")
    return hardware_key(machine.gpu_name, 1)
