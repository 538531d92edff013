"""`aisp-prof bench run`: time whole chapters, compare with expectations, optionally update them.

Each pair goes through the same pipeline as `aisp-prof run` (check first, then CUDA-event
timing with L2 flushes and rotated inputs, then whatever profilers the level asks for), so a
benchmark result is an ordinary stored run that `history`, `summary` and reports can read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from .. import pairs as pairs_mod
from ..errors import AispError, RequirementError
from ..hardware import hardware_key
from ..pipeline import RunResult, run_and_store
from ..store import read_table
from . import expectations as exp

# --profile level -> (ncu, nsys, extra ncu metric groups)
PROFILE_LEVELS: dict[str, tuple[bool, bool, tuple[str, ...]]] = {
    "none": (False, False, ()),
    "minimal": (False, True, ()),
    "roofline": (True, False, ()),
    "full": (True, True, ("sol_breakdown", "stall_sampled")),
}


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


def observed_entry(db: Path, result: RunResult, pair: pairs_mod.KernelPair) -> dict[str, Any] | None:
    """The run as an expectation entry (None when the check failed and nothing was timed)."""
    timings = read_table(db, "timings", result.run["run_id"])
    if timings.empty:
        return None
    info = result.info or {}
    stats = {r["variant"]: r for r in timings.to_dict("records")}
    sizes = info.get("sizes") or dict(pair.sizes)
    env = info.get("env", {})
    provenance = {
        "run_id": result.run["run_id"], "date": result.run.get("created_at"),
        "gpu_name": result.run.get("gpu_name"), "driver_version": result.run.get("driver_version"),
        "git_sha": result.run.get("git_sha"), "torch_version": env.get("torch_version"),
        "triton_version": env.get("triton_version"), "cuda_version": env.get("torch_cuda_version"),
        "ncu_version": result.run.get("ncu_version"), "nsys_version": result.run.get("nsys_version"),
        "nvcc_version": info.get("tools", {}).get("nvcc", {}).get("version"),
        "sizes": sizes,
    }
    return exp.pair_entry(pair.name, sizes, stats, pair.flops(sizes), pair.bytes(sizes), provenance)


def bench_one(pair: pairs_mod.KernelPair, *, key: str, db: Path, profiles_dir: Path,
              profile: str = "none", update_expectations: bool = False, repeats: int = 100,
              progress: Callable[[str], None] = lambda m: None) -> PairOutcome:
    """Check, time (and profile) one pair; compare with its expectation; maybe record it."""
    with_ncu, with_nsys, extra = PROFILE_LEVELS[profile]
    try:
        result = run_and_store(pair, db=db, profiles_dir=profiles_dir, label=f"bench:{profile}",
                               with_ncu=with_ncu, with_nsys=with_nsys, extra_metric_groups=extra,
                               timing_repeats=repeats, progress=progress)
    except RequirementError as e:          # e.g. a pair that needs sm_100, on Hopper: skipped
        return PairOutcome(pair.name, None, "skipped", str(e))
    except AispError as e:                 # a profiler failed: the gate must fail too
        return PairOutcome(pair.name, None, "error", str(e),
                           [exp.Verdict(pair.name, "*", "run", None, None, None, None, "error")])
    correct = result.error is None
    observed = observed_entry(db, result, pair) if correct else None
    path = exp.expectations_path(pairs_mod.kernels_root(), pair.chapter_key, key)
    expected = exp.load(path)["pairs"].get(pair.name)
    verdicts = exp.compare(expected, observed or {"pair": pair.name, "variants": {}}, correct)
    if update_expectations and correct and observed:
        data = exp.load(path)
        data.setdefault("pairs", {})[pair.name] = observed
        data.update(hardware_key=key, chapter=pair.chapter_key,
                    updated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        exp.save(path, data)
    return PairOutcome(pair.name, result.run["run_id"], "ok" if correct else "failed_check",
                       str(result.error or ""), verdicts, observed)


def current_hardware_key() -> str:
    """The key of GPU 0 (NoGpuError without one: a benchmark needs a GPU)."""
    from ..collect.runner import _gpu_capability

    _gpu_capability()
    import torch

    return hardware_key(torch.cuda.get_device_name(0), 1)
