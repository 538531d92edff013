"""Work that measures on this machine's GPU: a pair profiled and stored, the GPU's ceilings and link
calibrated, the gate run; and stored runs recorded as the gate's evidence."""
from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import arguments as arg
from ..errors import ArgumentError
from ..model.run_data import RunData
from ..pairs.declared import declared
from ..store import db as store_db
from ..store.ingest import load_run_dir
from .run import Run, RunResult

if TYPE_CHECKING:      # imported where used: `aisp-prof runs` should not pay for the GPU's tools
    from ..bench.gate import Gate
    from ..bench.runner import PairOutcome
    from ..calibrate.run import CalibrateOutcome
    from ..collect.process.runner import RunOptions

Progress = Callable[[str], None]


class Measuring:
    """`RunDatabase`'s GPU work; it stores into `self.path` and calls its `run` and `calibrations`."""

    path: Path

    # ------------------------------------------------------------------ calibrating and the gate (GPU)
    def calibrate(self, options: dict[str, Any], progress: Progress = lambda m: None) -> CalibrateOutcome:
        """Measure this GPU's ceilings and store them (`calibrate.run`; `options`: CalibrateOptions' fields)."""
        from ..calibrate.run import CalibrateOptions, calibrate

        return calibrate(CalibrateOptions(db=self.path, **arg.fields(options, CalibrateOptions, "options", ("db",))),
                         progress)

    def calibrate_link(self, gpus: int, write_json: Path | None = None) -> tuple[dict[str, Any], Path | None]:
        """Measure `gpus` GPUs' link per collective and store it; (record, JSON file written)."""
        from ..calibrate.run import calibrate_link

        return calibrate_link(self.path, gpus, write_json)

    def bench(self, targets: Sequence[str], options: dict[str, Any], progress: Progress = lambda m: None,
              tick: Callable[[], None] = lambda: None) -> Gate:
        """`bench run`: every pair of `targets` checked, timed and judged against its recorded
        evidence (`bench.gate.run_gate`; `options`: BenchOptions' fields). `progress` hears each pair's
        start, steps and outcome, so a log of a cut-off gate says how far it got; Ctrl-C (or `tick`
        raising KeyboardInterrupt) stops it with the finished pairs' outcomes and the rest "not run"."""
        from ..bench.gate import run_gate

        return run_gate(self, targets, options, progress, tick)

    def bench_record(self, runs: Sequence[str], expectations: Path | None = None,
                     force: bool = False) -> list[PairOutcome]:
        """Stored runs added as sessions of their pairs' recorded evidence (`bench.runner.record_runs`)."""
        from ..bench.runner import record_runs

        return record_runs([self.run(r) for r in arg.texts(runs, "runs")], expectations, force)   # one str: one run

    # ------------------------------------------------------------------ profiling (GPU)
    def profile(self, opts: RunOptions, progress: Progress = lambda m: None,
                annotate: Callable[[RunData], None] | None = None) -> RunResult:
        """Check and profile a pair (`aisp-prof run`), store the run in one transaction, summarize.

        `annotate(data)` may add to the run before it is stored (the bench's verdicts). A run
        whose check failed is still stored (status failed_check) so the failure is on record;
        `error` then carries the CorrectnessError. If storing fails, the run folder is removed
        too: profiles/ and the database stay in step.
        """
        from ..collect.process import runner

        if not isinstance(opts, runner.RunOptions):
            raise ArgumentError("profile takes a RunOptions (aisp_prof.collect.process.runner; api.profiling."
                                f"profile_targets builds them), not {type(opts).__name__}")
        if not callable(progress):
            raise ArgumentError(f"progress takes a function of one message, not {type(progress).__name__}")
        outcome = runner.collect(opts, progress)
        try:
            progress("parsing exports and storing the run")
            data = load_run_dir(outcome.run_dir)
            if annotate is not None:
                annotate(data)
            store_db.write_run(self.path, data)
        except BaseException:
            shutil.rmtree(outcome.run_dir, ignore_errors=True)
            raise
        stored = Run(declared(data), self.calibrations())
        summary = stored.result()
        return RunResult(summary["run"], summary["summary"], data,
                         runner.failed_check_error(outcome.run_info, outcome.run_dir),
                         {k: summary[k] for k in ("headline", "findings", "verdict")}, stored.warnings)
