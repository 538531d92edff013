"""One stored run, read once, its analyses computed from what was read: the summary rows, the
roofline (or only its points, where the verdict's bounds or a diff need no more), the verdict
and, for a multi-rank run, the rank report. `RunDatabase.open(run)` returns a `Run`; each of its
answers is computed on first use and kept, so a command asks the database once.

The module-level functions are the same computations for a RunData in hand (a run just
profiled, a test's fixture).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import AispError, ExportParseError
from ..model.run_data import RunData
from ..pairs.declared import declared

if TYPE_CHECKING:      # imported where used: `aisp-prof runs` should not pay for analysis
    from ..analyze.ranks.report import RankReport
    from ..analyze.roofline.build import RooflineResult, RunInput
    from ..analyze.roofline.points import Point

# what a summary reads (metrics: the device attributes the roofline of its verdict needs)
SUMMARY_TABLES = ("kernels", "ranges", "checks", "timings", "compiles", "timeline", "metrics", "range_levels", "ranks",
                  "samples")
NO_COUNTERS = ("no Nsight Compute kernel rows (an nsys-only import?); a roofline needs ncu's FLOP and byte "
               "counters: `aisp-prof run` the pair, or import an ncu export (.csv --page raw or .ncu-rep)")
Calibrations = Sequence[dict[str, Any]]


def roofline_input(run: RunData) -> RunInput:
    """What the roofline needs of a stored run."""
    from ..analyze.roofline.build import RunInput
    from ..analyze.timing.speedup import run_times
    from ..analyze.timeline.variant_ranges import variant_ranges

    ranges = variant_ranges(run.ranges, run.range_levels, run.run.get("pair"))
    return RunInput(run.run_id, run.info, run.kernels, run.device_attributes(), run.gpu_name,
                    run_times(None, run.kernels, ranges, run.timings))


def _inputs(runs: Sequence[RunData], calibrations: Calibrations) -> tuple[list[RunInput], Calibrations]:
    """The runs' roofline inputs and the calibrations, from which each card's is chosen."""
    inputs = [roofline_input(r) for r in runs]
    if all(i.kernels.empty for i in inputs):
        raise ExportParseError(f"{', '.join(r.run_id for r in runs)}: {NO_COUNTERS}")
    return inputs, calibrations


def roofline_of(runs: Sequence[RunData], calibrations: Calibrations, flop_basis: str = "auto") -> RooflineResult:
    """Ceilings, points, checks and warnings of runs; ExportParseError when none has ncu counters."""
    from ..analyze.roofline.build import build_roofline

    return build_roofline(*_inputs(runs, calibrations), flop_basis)


def points_of(runs: Sequence[RunData], calibrations: Calibrations, flop_basis: str = "auto") -> list[Point]:
    """The points of `roofline_of` alone (no checks, comparisons or warnings)."""
    from ..analyze.roofline.build import roofline_points_of

    return roofline_points_of(*_inputs(runs, calibrations), flop_basis)


def summary_records(run: RunData) -> list[dict[str, Any]]:
    """Per variant, baseline first: kernels, GPU time, speedup, correctness, bytes, FLOPs, stalls."""
    from ..analyze.records import clean_value
    from ..analyze.summary import summarize
    from ..analyze.timeline.variant_ranges import variant_ranges

    rows = summarize(run.info, run.kernels, variant_ranges(run.ranges, run.range_levels, run.run.get("pair")),
                     run.checks, run.timings, run.compiles)
    rank = {"rank": 0} if not run.ranks.empty else {}      # a multi-rank run's figures are rank 0's
    return [{**{k: clean_value(v) for k, v in s.items()}, **rank} for s in rows]


def _bound_points(run: RunData, calibrations: Calibrations | None) -> list[Point] | None:
    """The run's roofline points for the verdict's bounds (None: no calibrations asked, no counters)."""
    if calibrations is None or run.kernels.empty:
        return None
    try:
        return points_of([run], calibrations)
    except AispError:
        return None


def verdict_of(run: RunData, summary: list[dict[str, Any]], calibrations: Calibrations | None = None,
               points: list[Point] | None = None) -> dict[str, Any]:
    """The run's headline (best optimization, % of the reference), the verdict rules' findings and
    the verdict sentences (bounds from the run's roofline points: `points`, else computed when
    `calibrations` are given)."""
    from ..analyze.verdict.headline import headline, other_sizes
    from ..analyze.verdict.validity import withhold
    from ..analyze.verdict.rules import RuleInput, findings
    from ..analyze.verdict.text import bounds_of, verdict_sentences

    info = run.info
    points = points if points is not None else _bound_points(run, calibrations)
    roof = {"points": [p.to_dict() for p in points]} if points is not None else None
    found = findings(RuleInput(info, summary, run.timings, run.timeline, run.kernels, run.samples, run.compiles,
                                run.call_spread))
    comparison = bool(info.get("comparison"))
    sentences, per_rank = verdict_sentences(summary, bounds_of(roof), comparison), {}
    report = rank_report_of(run, calibrations or []) if not run.timeline.empty else None
    if report is not None:
        from ..analyze.ranks.report import rank_sentences
        from ..analyze.records import frame_records

        sentences += rank_sentences(report)
        per_rank = {"per_rank": frame_records(report.per_rank)}     # every rank (`aisp-prof ranks` has more)
    return {"headline": withhold(headline(summary, comparison, info.get("book"), other_sizes(info)), found, summary),
            "findings": [f.to_dict() for f in found], "verdict": sentences, **per_rank}


def rank_report_of(run: RunData, calibrations: Calibrations) -> RankReport | None:
    """A multi-rank run's rank report, its link judged against the calibrated bandwidth (None: one rank)."""
    if run.ranks.empty:
        return None
    from ..analyze.ranks.report import link_busbw, rank_report

    return rank_report(run.timeline, run.ranks, run.info, link_busbw(calibrations, run.gpu_name, len(run.ranks)))


def run_summary(run: RunData, calibrations: Calibrations | None = None) -> dict[str, Any]:
    """What `aisp-prof summary --json` prints: the `runs` row, the per-variant summary, run.json,
    the headline, the verdict rules' findings, the verdict sentences and the compile warnings; of
    a multi-rank run also `per_rank` (per variant and rank), its summary rows being rank 0's (`rank`)."""
    return Run(declared(run), calibrations).result()


@dataclass
class Run:
    """A stored run as read (`data`, once) with the calibrations read beside it; every analysis of
    it is computed on first use and kept. `calibrations` None: the verdict states no bounds."""

    data: RunData
    calibrations: Calibrations | None = None
    _points: list[Point] | None = field(default=None, init=False, repr=False)

    @property
    def run_id(self) -> str:
        return self.data.run_id

    @cached_property
    def summary(self) -> list[dict[str, Any]]:
        """Per variant, baseline first (`summary_records`)."""
        return summary_records(self.data)

    @cached_property
    def roofline(self) -> RooflineResult:
        """The run's roofline; ExportParseError when it has no ncu counters."""
        roof = roofline_of([self.data], self.calibrations or [])
        self._points = roof.points
        return roof

    @property
    def points(self) -> list[Point]:
        """The roofline's points (those of `roofline` once built); [] without ncu counters."""
        if self._points is None:
            self._points = _bound_points(self.data, self.calibrations or []) or []
        return self._points

    def points_frame(self) -> pd.DataFrame:
        """One row per roofline point (empty without counters), as `RunDatabase.roofline_points`."""
        return pd.DataFrame([p.to_dict() for p in self.points])

    @cached_property
    def verdict(self) -> dict[str, Any]:
        """Headline, findings, verdict sentences (and per_rank of a multi-rank run)."""
        points = self.points if self.calibrations is not None and not self.data.kernels.empty else None
        return verdict_of(self.data, self.summary, self.calibrations, points)

    @cached_property
    def ranks(self) -> RankReport | None:
        """A multi-rank run's rank report (None: one rank)."""
        return rank_report_of(self.data, self.calibrations or [])

    @cached_property
    def warnings(self) -> list[dict[str, Any]]:
        """What the summary's numbers need said beside them (compile cost that dominates, ...), and
        a variant whose point lies above its theoretical roof: the roofline's warning, said here too,
        as the verdict states no bound or headroom for it (issue 31)."""
        from ..analyze.code.compiled import compile_warnings
        from ..analyze.roofline.caveats import point_warnings

        above = [{"severity": w.severity, "code": w.code, "message": w.message}
                 for w in point_warnings([p for p in self.points if p.kernel is None]) if w.code == "above_roof"]
        return compile_warnings(self.summary, self.data.info) + above

    @cached_property
    def headline_timer(self) -> str | None:
        """The timer of the headline's speedup (`analyze.verdict.headline`; of a comparison run, the
        first row's that has one), whether or not the validity rules withhold the headline."""
        from ..analyze.verdict.headline import headline, other_sizes

        info = self.data.info
        lead = headline(self.summary, bool(info.get("comparison")), info.get("book"), other_sizes(info))
        return lead["speedup_timer"] or next((r["speedup_timer"] for r in self.summary if r.get("speedup_timer")), None)

    def sample_groups(self, variants: Sequence[str] = (), kind: str | None = None) -> pd.DataFrame:
        """Per variant (the summary's order, reference kernels last) and kind of time: its samples'
        count, processes, median_ns, p10_ns, p90_ns, min_ns, max_ns, and `headline` where the headline's
        speedup is the median of that kind (`analyze.timing.rounds.sample_groups`). Only `variants`'
        and `kind`'s where given: one the run lacks is UnknownTargetError naming what it has."""
        from ..analyze.timing.rounds import sample_frame, sample_groups, select_samples, timer_kind

        from ..arguments import optional_text, texts

        frame = select_samples(sample_frame(self.data.samples), texts(variants, "variants"),
                               optional_text(kind, "kind"), self.run_id)
        return sample_groups(frame, [r["variant"] for r in self.summary], timer_kind(self.headline_timer))

    def result(self) -> dict[str, Any]:
        """What `aisp-prof summary --json` prints (`run_summary`)."""
        run = self.data
        return {"run": {k: v for k, v in run.run.items() if k != "info_json"}, "summary": self.summary,
                "info": run.info, **self.verdict, "warnings": self.warnings}


@dataclass
class RunResult:
    """A profiled and stored run: its `runs` row, per-variant summary and stored data."""

    run: dict[str, Any]
    summary: list[dict[str, Any]]
    data: RunData
    error: AispError | None = None     # set when the run was stored but must fail the command
    verdict: dict[str, Any] = field(default_factory=dict)    # headline and findings (verdict_of)
    warnings: list[dict[str, Any]] = field(default_factory=list)    # the summary's (Run.warnings)

    def as_dict(self) -> dict[str, Any]:
        """What `aisp-prof run --json` prints."""
        return {"run": self.run, "summary": self.summary, "error": str(self.error) if self.error else None,
                **self.verdict}

    def summary_dict(self) -> dict[str, Any]:
        """`as_dict` with the summary's warnings: what the terminal summary shows."""
        return {**self.as_dict(), "warnings": self.warnings}
