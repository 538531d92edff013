"""Whether an ncu export is whole: every parsed launch has a name and metrics, and an export of an
aisp-prof run holds as many launches as ncu said it profiled.

A launch without a kernel name or without any metric value is what an export cut short (or partly
unreadable) leaves behind: an error, never a stored row (`check_launches_whole`, for CSV and
`.ncu-rep` alike). A CSV cut mid-row is already an error where it is read (`csv_text`); a
`.ncu-rep` cut where its framing shows it, before `ncu_report` reads it (`rep_frame`).

A cut exactly between two launches (a CSV cut at a line end, a report cut after a result block)
leaves a whole-looking export of fewer launches: neither format counts its launches. aisp-prof's
run folders do: run.json's `ncu_kernels_profiled` is the number of kernels ncu's log says it
profiled (`collect.process.steps.ncu_step`), and `check_launch_count` holds the export to it.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from aisp_prof.errors import ExportParseError
from aisp_prof.model.launch_metrics import LaunchMetrics

FILE_HINT = "copy the file again from where it was made, or profile again"


def check_launches_whole(path: Path, launches: pd.DataFrame, metrics: LaunchMetrics) -> None:
    """A launch without a kernel name or without any metric value is what an export cut short
    (or partly unreadable) leaves: an error, never a stored row."""
    names = launches["kernel"]
    nameless = launches["launch_id"][names.isna() | (names.astype(str).str.strip() == "")]
    if len(nameless):
        raise ExportParseError(
            f"{path}: launch {int(nameless.iloc[0])} has no kernel name: the export is truncated or "
            f"partly unreadable; {FILE_HINT}")
    with_values = set(metrics.launch_ids[metrics.mask().any(axis=1)].tolist()) if metrics.values.size else set()
    empty = [int(i) for i in launches["launch_id"] if int(i) not in with_values]
    if empty:
        raise ExportParseError(
            f"{path}: launch {empty[0]} has no metric values: the export is truncated or partly "
            f"unreadable; {FILE_HINT}")


def check_launch_count(path: Path, launches: int, profiled: int | None, where: str) -> None:
    """An export of an aisp-prof run holds exactly the `profiled` launches ncu reported (`where`
    names the record, e.g. "run.json ncu_kernels_profiled"); fewer is a cut between two launches,
    more is another run's export. Nothing to check where the count was not recorded."""
    if profiled is None or launches == profiled:
        return
    if launches < profiled:
        raise ExportParseError(
            f"{path}: holds {launches} kernel launch(es), but ncu profiled {profiled} ({where}): the export is "
            f"truncated between two launches; {FILE_HINT}")
    raise ExportParseError(
        f"{path}: holds {launches} kernel launches, but ncu profiled {profiled} ({where}): not this run's "
        f"export; {FILE_HINT}")
