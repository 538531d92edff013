"""The gate's real runs (tests/fixtures/gate/*.db.gz, each a `bench run`'s database as it came back from the GPU
machine) as the gate tests judge them again: a plain copy of the database, and one run's samples with the SM clock
limit its cycles are counted against."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd

from repo_paths import ROOT
from sample_files import plain_file

GATE = ROOT / "tests" / "fixtures" / "gate"


def gate_db(name: str, folder: Path) -> sqlite3.Connection:
    """A connection to a plain copy in `folder` of the shipped database `name` (without its .gz)."""
    return sqlite3.connect(plain_file(GATE / name, folder / name))


def run_samples(con: sqlite3.Connection, run: str) -> tuple[pd.DataFrame, float]:
    """Every stored sample of `run`, and its sensor's SM clock limit (MHz)."""
    samples = pd.read_sql_query("SELECT * FROM samples WHERE run_id = ?", con, params=(run,))
    info = json.loads(con.execute("SELECT info_json FROM runs WHERE run_id = ?", (run,)).fetchone()[0])
    return samples, info["sensor"]["sm_clock_max_mhz"]


WARP_SPEC = "ch10.warp_specialization"
WARP_SPEC_DB = "h200_power_cap_warp_specialization.db"     # three no-change gates of it on one lease (README)


def warp_spec_entry() -> dict:
    """ch10.warp_specialization's evidence as those gates judged it against (format 3, one lease)."""
    from aisp_prof.analyze.gate import expectations as exp

    return exp.load(GATE / "expectations_h200_ch10_warp_specialization.json")["pairs"][WARP_SPEC]
