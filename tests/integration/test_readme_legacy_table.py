"""kernels/ch10/README.md's H100 table is typed by hand (it sets the legacy gate evidence beside the
shipped runs' nsys kernel times), so its gate columns are checked here against the file they quote,
kernels/ch10/expectations_h100_80gb_hbm3.json: each variant's median per call and its speedup
(1 / the recorded time relative to the baseline), to the digits the cell shows. Three rows once kept
a superseded recording's numbers (5.074 vs 4.809 ms where the file holds 5.128 vs 4.825)."""
from __future__ import annotations

import json
import re

from repo_paths import ROOT

README = ROOT / "kernels" / "ch10" / "README.md"
EVIDENCE = ROOT / "kernels" / "ch10" / "expectations_h100_80gb_hbm3.json"
HEADER = "| pair (size) | variant | gate time (CUDA events) | vs baseline | nsys kernel time | vs baseline | book (B200) |"
UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6}


def _rows() -> list[tuple[str, str, str, str]]:
    """(pair, variant, gate time cell, vs baseline cell) of every row of the table."""
    lines = README.read_text().splitlines()
    start = lines.index(HEADER) + 2
    rows, pair = [], None
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        pair = "ch10." + re.match(r"`(\w+)`", cells[0]).group(1) if cells[0] else pair
        variant = cells[1].split(" ")[0]
        rows.append((pair, variant, cells[2], cells[3]))
    return rows


def _matches(cell: str, value: float) -> bool:
    """The cell's number is `value` rounded to the digits the cell shows."""
    digits = len(cell.split(".")[1]) if "." in cell else 0
    return abs(round(value, digits) - float(cell)) < 10 ** -(digits + 3)


def test_the_h100_table_s_gate_columns_are_the_recorded_evidence():
    recorded = json.loads(EVIDENCE.read_text())["pairs"]
    rows, wrong = _rows(), []
    assert len(rows) > 70, "the H100 table lost its rows"
    for pair, variant, time_cell, ratio_cell in rows:
        summary = recorded[pair]["summary"]["variants"][variant]
        number, unit = re.match(r"([\d.]+) (ns|us|ms)", time_cell).groups()
        ratio = summary.get("time_vs_baseline")
        speedup = 1 / ratio if ratio else 1.0
        if not _matches(number, summary["median_ns"] / UNITS[unit]) or not _matches(ratio_cell.rstrip("x"), speedup):
            wrong.append(f"{pair} {variant}: {time_cell} {ratio_cell}, the file "
                         f"{summary['median_ns'] / UNITS[unit]:.4f} {unit} {speedup:.4f}x")
    assert not wrong, wrong
