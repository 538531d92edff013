"""collect -> store -> analyze for one pair: what `aisp-prof run` does."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import pairs as pairs_mod
from .collect import runner
from .errors import AispError
from .ingest import load_run_dir
from .parse.metric_table import DEFAULT_GROUPS
from .queries import run_summary
from .store import write_run


@dataclass
class RunResult:
    run: dict[str, Any]
    summary: list[dict[str, Any]]
    error: AispError | None = None     # set when the run was stored but must fail the command
    info: dict[str, Any] | None = None  # run.json as stored

    def as_dict(self) -> dict[str, Any]:
        return {"run": self.run, "summary": self.summary,
                "error": str(self.error) if self.error else None}


def run_and_store(pair: pairs_mod.KernelPair, *, db: Path, profiles_dir: Path,
                  variants: list[str] | None = None, sizes_text: str | None = None,
                  label: str | None = None, ncu: str | None = None, nsys: str | None = None,
                  with_ncu: bool = True, with_nsys: bool = True, nsys_iterations: int = 5,
                  extra_metric_groups: tuple[str, ...] = (), timing_repeats: int = 20, progress: runner.Progress = lambda m: None) -> RunResult:
    """Profile `pair`, store the run in one transaction, and summarize it.

    A run whose correctness check failed is still stored (status failed_check) so the failure
    is on record; `error` then carries the CorrectnessError for the caller's exit code. If
    storing fails, the run folder is removed too: profiles/ and the database stay in step.
    """
    opts = runner.RunOptions(
        pair=pair, profiles_dir=profiles_dir, sizes=pairs_mod.parse_sizes(sizes_text, pair.sizes),
        variants=list(variants or []), ncu=ncu, nsys=nsys, label=label, with_ncu=with_ncu,
        with_nsys=with_nsys, nsys_iterations=nsys_iterations, timing_repeats=timing_repeats,
        metric_groups=DEFAULT_GROUPS + tuple(g for g in extra_metric_groups if g not in DEFAULT_GROUPS))
    outcome = runner.collect(opts, progress)
    try:
        progress("parsing exports and storing the run")
        write_run(db, load_run_dir(outcome.run_dir))
    except BaseException:
        shutil.rmtree(outcome.run_dir, ignore_errors=True)
        raise
    result = run_summary(db, outcome.run_id)
    error = None
    try:
        runner.raise_if_failed_check(outcome.run_info, outcome.run_dir)
    except AispError as exc:
        error = exc
    return RunResult(result["run"], result["summary"], error, result["info"])
