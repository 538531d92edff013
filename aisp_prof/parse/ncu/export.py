"""Any ncu export, read by its name: the raw-page CSV (`csv_page`) or the report file (`rep`)."""
from __future__ import annotations

from pathlib import Path

from aisp_prof.errors import ExportParseError
from aisp_prof.parse.ncu.csv_page import NcuParse, parse_ncu_csv
from aisp_prof.parse.ncu.csv_text import REEXPORT_HINT


def parse_ncu_export(path: str | Path) -> NcuParse:
    """Parse any ncu export by its name: `.csv` / `.csv.gz` (raw page) or `.ncu-rep` / `.ncu-rep.gz`."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        return parse_ncu_csv(path)
    if name.endswith((".ncu-rep", ".ncu-rep.gz")):
        from aisp_prof.parse.ncu.rep import parse_ncu_rep  # where used: ncu_report is large

        return parse_ncu_rep(path)
    raise ExportParseError(
        f"{path}: not an ncu export this tool reads (.csv, .csv.gz, .ncu-rep, .ncu-rep.gz); {REEXPORT_HINT}"
    )
