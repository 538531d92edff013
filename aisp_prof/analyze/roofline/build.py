"""The roofline of one or more runs: ceilings, points, the two FLOP counts, comparisons, warnings.

`build_roofline` is the one entry point of the analysis: a pure function of the runs' stored data
(`RunInput`: run.json and tidy ncu kernel rows) and the calibration records. It takes each card's
ceilings from `ceilings` (runs from two GPUs: each run's points against its own card's roofs,
`card_ceilings`), one point per kernel launch and per variant from `points`, checks
counted FLOPs against the pair's formula, pairs baseline and optimized aggregates as the chart's
arrows (`Comparison`), and collects what would make any of it mislead from `caveats`.
The result (`RooflineResult`) is what the chart, the terminal table and the report draw.

It opens nothing: `aisp_prof.api` reads the runs and the calibrations and hands them in; the
calibration of each card is chosen here (`analyze.calibration`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

from ...errors import ArgumentError
from ...naming import card_name, hardware_key
from ..calibration import calibration_for_runs
from .ceilings import Ceilings, theoretical_ceilings, with_measured
from ..kernels.ncu_command import ncu_settings
from .compare import FLOP_MISMATCH, Comparison, FlopCheck, comparisons_for, flop_checks  # noqa: F401
from .run_input import RunInput  # noqa: F401 (the roofline's input, named here since before the split)
from .points import Point, points_for_run, variant_order
from .caveats import (RooflineWarning, card_warning, comparison_warnings, flop_warnings, hfma_move_warnings,
                      l2_fit_warnings, point_warnings, rate_count_warnings)


@dataclass
class RooflineResult:
    """Everything the chart, the terminal table and the report show of one roofline."""

    runs: list[dict[str, Any]]
    ceilings: Ceilings
    points: list[Point]
    flop_check: list[FlopCheck]
    warnings: list[RooflineWarning]
    comparisons: list[Comparison]
    flop_basis: str = "auto"
    # hardware key -> that card's ceilings, each run's points judged against its own card's;
    # `ceilings` is the first run's card's (the only one where the runs share a card)
    card_ceilings: dict[str, Ceilings] = field(default_factory=dict)

    def ceilings_of(self, run_id: str) -> Ceilings:
        """The ceilings the run's points are judged against: those of the card it ran on."""
        key = next((r.get("hardware_key") for r in self.runs if r["run_id"] == run_id), None)
        return self.card_ceilings.get(key or "", self.ceilings)

    @property
    def cards(self) -> dict[str, Ceilings]:
        """Every card's ceilings by hardware key, the first run's card first (one entry for one card)."""
        return self.card_ceilings or {self.ceilings.hardware_key: self.ceilings}

    def run_names(self) -> dict[str, str]:
        """run_id -> a short name for rows and labels where several runs show: its card ('H100')
        where each run ran on a card of its own, else its run id's time stamp, after its card where
        the runs span cards (the whole id where two runs share a stamp)."""
        cards = {r["run_id"]: card_name(r.get("gpu_name")) if r.get("gpu_name") else r.get("hardware_key") or "?"
                 for r in self.runs}
        if len(set(cards.values())) == len(cards):
            return cards
        stamps = {r: r.split("-", 1)[0] for r in cards}
        if len(set(stamps.values())) < len(stamps):
            stamps = {r: r for r in cards}
        return {r: f"{cards[r]} {stamps[r]}" if len(self.cards) > 1 else stamps[r] for r in cards}

    def aggregates(self, run_id: str | None = None) -> list[Point]:
        return [p for p in self.points if p.is_aggregate and (run_id is None or p.run_id == run_id)]

    def kernels_of(self, run_id: str, variant: str) -> list[Point]:
        return [p for p in self.points if not p.is_aggregate and p.run_id == run_id and p.variant == variant]

    def to_dict(self) -> dict[str, Any]:
        by_card = ({"ceilings_by_hardware_key": {k: c.to_dict() for k, c in self.cards.items()}}
                   if len(self.cards) > 1 else {})
        return {"runs": self.runs, "flop_basis": self.flop_basis, "ceilings": self.ceilings.to_dict(), **by_card,
                "points": [p.to_dict() for p in self.points],
                "comparisons": [c.to_dict() for c in self.comparisons],
                "flop_check": [f.to_dict() for f in self.flop_check],
                "warnings": [w.to_dict() for w in self.warnings]}


# ----------------------------------------------------------------------------------- assembly

Calibrations = Sequence[Mapping[str, Any]]      # the store's calibration records (`_source` beside each)


def run_cards(runs: Sequence[RunInput], calibrations: Calibrations = ()) -> dict[str, str]:
    """run_id -> the hardware key of the card it ran on: its GPU name's, else (an export with no
    GPU name) the key of the calibration its SM count and memory match, else the one card the named
    runs share (a bare ncu export beside its own run folder, as before ceilings were per card), else
    'unknown'."""
    out = {}
    for r in runs:
        found = None if r.gpu_name else calibration_for_runs(calibrations, [r])
        out[r.run_id] = (found[0].get("hardware_key") if found else None) or hardware_key(r.gpu_name)
    named = {out[r.run_id] for r in runs if r.gpu_name}
    unknown = hardware_key(None)
    if len(named) == 1:
        out = {run_id: (next(iter(named)) if key == unknown else key) for run_id, key in out.items()}
    return out


def card_ceilings(runs: Sequence[RunInput], calibrations: Calibrations = ()) -> dict[str, Ceilings]:
    """Each card's ceilings (measured beside theoretical where that card is calibrated), from the
    peaks and clocks of the kernels that ran on it, by hardware key in the runs' order: a run is
    never judged against another card's roofs, nor against a median of two cards' peaks."""
    cards = run_cards(runs, calibrations)
    out = {}
    for key in dict.fromkeys(cards.values()):
        group = [r for r in runs if cards[r.run_id] == key]
        frames = [r.kernels for r in group if not r.kernels.empty]
        allk = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        gpu = next((r.gpu_name for r in group if r.gpu_name), None)
        ceilings = theoretical_ceilings(allk, gpu, key)
        calibration = calibration_for_runs(calibrations, group)
        out[key] = with_measured(ceilings, calibration[0], calibration[1]) if calibration else ceilings
    return out


def roofline_points_of(runs: Sequence[RunInput], calibrations: Calibrations = (),
                       flop_basis: str = "auto") -> list[Point]:
    """Only the points of `build_roofline` (the same ones): what a verdict's bounds and a diff's
    positions need, without the FLOP checks, comparisons and warnings."""
    _check_basis(flop_basis)
    cards, ceilings = run_cards(runs, calibrations), card_ceilings(runs, calibrations)
    return [p for run in runs for p in points_for_run(run, ceilings[cards[run.run_id]], flop_basis)]


def _check_basis(flop_basis: str) -> None:
    if flop_basis not in ("auto", "analytic", "counted"):
        raise ArgumentError(f"flop_basis must be auto, analytic or counted, not {flop_basis!r}")


def build_roofline(runs: Sequence[RunInput], calibrations: Calibrations = (),
                   flop_basis: str = "auto") -> RooflineResult:
    """Ceilings, points, FLOP check, comparisons and warnings of one or more runs (pure), each
    run's points against its own card's ceilings."""
    _check_basis(flop_basis)
    cards, by_card = run_cards(runs, calibrations), card_ceilings(runs, calibrations)
    points: list[Point] = []
    checks: list[FlopCheck] = []
    warnings: list[RooflineWarning] = []
    for run in runs:
        pts = points_for_run(run, by_card[cards[run.run_id]], flop_basis)
        if len(by_card) > 1:        # a card column where the ceilings differ between points
            for p in pts:
                p.hardware_key = cards[run.run_id]
        points += pts
        checks += flop_checks(run, pts)
        warnings += l2_fit_warnings(run, pts) + hfma_move_warnings(run) + rate_count_warnings(run)
    comparisons = comparisons_for(runs, points)
    warnings = (point_warnings(points) + warnings + comparison_warnings(comparisons, {r.run_id: r for r in runs})
                + flop_warnings(checks))
    if len(by_card) > 1:
        warnings.insert(0, card_warning(list(by_card), comparisons, cards))
    summary = [{"run_id": r.run_id, "pair": r.info.get("pair"), "label": r.info.get("label"),
                "gpu_name": r.gpu_name, "hardware_key": cards[r.run_id],
                "ncu_settings": ncu_settings(r.info), "variants": variant_order(r)} for r in runs]
    first = by_card[cards[runs[0].run_id]] if runs else theoretical_ceilings(pd.DataFrame())
    return RooflineResult(summary, first, points, checks, warnings, comparisons, flop_basis, by_card)
