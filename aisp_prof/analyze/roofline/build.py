"""The roofline of one or more runs: ceilings, points, the two FLOP counts, comparisons, warnings.

`build_roofline` is the one entry point of the analysis: a pure function of the runs' stored data
(`RunInput`: run.json and tidy ncu kernel rows) and an optional calibration record. It takes the
ceilings from `ceilings`, one point per kernel launch and per variant from `points`, checks
counted FLOPs against the pair's formula, pairs baseline and optimized aggregates as the chart's
arrows (`Comparison`), and collects what would make any of it mislead from `caveats`.
The result (`RooflineResult`) is what the chart, the terminal table and the report draw.

It opens nothing: `aisp_prof.api` reads the runs and the calibrations and hands them in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from ...naming import hardware_key
from .ceilings import Ceilings, theoretical_ceilings, with_measured
from ..kernels.ncu_command import ncu_settings
from .compare import FLOP_MISMATCH, Comparison, FlopCheck, comparisons_for, flop_checks  # noqa: F401
from .run_input import RunInput  # noqa: F401 (the roofline's input, named here since before the split)
from .points import Point, points_for_run, variant_order
from .caveats import (RooflineWarning, comparison_warnings, flop_warnings, hfma_move_warnings, l2_fit_warnings,
                      point_warnings, rate_count_warnings)


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

    def aggregates(self, run_id: str | None = None) -> list[Point]:
        return [p for p in self.points if p.is_aggregate and (run_id is None or p.run_id == run_id)]

    def kernels_of(self, run_id: str, variant: str) -> list[Point]:
        return [p for p in self.points if not p.is_aggregate and p.run_id == run_id and p.variant == variant]

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "flop_basis": self.flop_basis, "ceilings": self.ceilings.to_dict(),
                "points": [p.to_dict() for p in self.points],
                "comparisons": [c.to_dict() for c in self.comparisons],
                "flop_check": [f.to_dict() for f in self.flop_check],
                "warnings": [w.to_dict() for w in self.warnings]}


# ----------------------------------------------------------------------------------- assembly

def roofline_ceilings(runs: Sequence[RunInput], calibration: tuple[Mapping[str, Any], str] | None = None
                      ) -> tuple[Ceilings, str | None]:
    """The runs' ceilings (measured beside theoretical where calibrated) and their hardware key."""
    frames = [r.kernels for r in runs if not r.kernels.empty]
    allk = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    gpu = next((r.gpu_name for r in runs if r.gpu_name), None)
    key = (calibration[0].get("hardware_key") if calibration and not gpu else None) or hardware_key(gpu)
    ceilings = theoretical_ceilings(allk, gpu, key)
    if calibration:
        ceilings = with_measured(ceilings, calibration[0], calibration[1])
    return ceilings, key


def roofline_points_of(runs: Sequence[RunInput], calibration: tuple[Mapping[str, Any], str] | None = None,
                       flop_basis: str = "auto") -> list[Point]:
    """Only the points of `build_roofline` (the same ones): what a verdict's bounds and a diff's
    positions need, without the FLOP checks, comparisons and warnings."""
    _check_basis(flop_basis)
    ceilings, _ = roofline_ceilings(runs, calibration)
    return [p for run in runs for p in points_for_run(run, ceilings, flop_basis)]


def _check_basis(flop_basis: str) -> None:
    if flop_basis not in ("auto", "analytic", "counted"):
        raise ValueError(f"flop_basis must be auto, analytic or counted, not {flop_basis!r}")


def build_roofline(runs: Sequence[RunInput], calibration: tuple[Mapping[str, Any], str] | None = None,
                   flop_basis: str = "auto") -> RooflineResult:
    """Ceilings, points, FLOP check, comparisons and warnings of one or more runs (pure)."""
    _check_basis(flop_basis)
    keys = {hardware_key(r.gpu_name) for r in runs if r.gpu_name}
    ceilings, key = roofline_ceilings(runs, calibration)
    points: list[Point] = []
    checks: list[FlopCheck] = []
    warnings: list[RooflineWarning] = []
    for run in runs:
        pts = points_for_run(run, ceilings, flop_basis)
        points += pts
        checks += flop_checks(run, pts)
        warnings += l2_fit_warnings(run, pts) + hfma_move_warnings(run) + rate_count_warnings(run)
    comparisons = comparisons_for(runs, points)
    warnings = (point_warnings(points) + warnings + comparison_warnings(comparisons, {r.run_id: r for r in runs})
                + flop_warnings(checks))
    if len(keys) > 1:
        warnings.insert(0, RooflineWarning("other_gpu", f"runs from different GPUs ({', '.join(sorted(keys))}): "
                                           f"ceilings are those of {key}"))
    summary = [{"run_id": r.run_id, "pair": r.info.get("pair"), "label": r.info.get("label"),
                "gpu_name": r.gpu_name, "hardware_key": hardware_key(r.gpu_name) if r.gpu_name else key,
                "ncu_settings": ncu_settings(r.info), "variants": variant_order(r)} for r in runs]
    return RooflineResult(summary, ceilings, points, checks, warnings, comparisons, flop_basis)
