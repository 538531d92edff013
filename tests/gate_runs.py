"""The gate's real runs (tests/fixtures/gate/*.db.gz, each a `bench run`'s database as it came back from the GPU
machine) as the gate tests judge them again: a plain copy of the database, and one run's samples with the SM clock
limit its cycles are counted against."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

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


@pytest.fixture(scope="module", name="con")
def warp_spec_con(tmp_path_factory) -> sqlite3.Connection:
    """`con`, for a test module that imports it: the three no-change gates of ch10.warp_specialization."""
    return gate_db(WARP_SPEC_DB, tmp_path_factory.mktemp("db"))


@pytest.fixture(scope="module", name="entry")
def warp_spec_evidence() -> dict:
    """`entry`, for a test module that imports it: the evidence those gates were judged against."""
    return warp_spec_entry()


def warp_spec_verdicts(con: sqlite3.Connection, entry: dict, run: str, scale: dict[str, float] | None = None,
                       library: tuple[str, ...] = ()) -> dict:
    """The gate's verdicts (`gate_verdicts`, GPU time) of `run`'s samples, each variant's times x `scale`,
    with `library` the pair's declared references; by variant."""
    from aisp_prof.analyze.gate.rules import Traits, gate_verdicts

    s, clock = run_samples(con, run)
    for variant, k in (scale or {}).items():
        s.loc[s["variant"] == variant, "time_ns"] = s.loc[s["variant"] == variant, "time_ns"] * k
    return {v.variant: v for v in gate_verdicts(WARP_SPEC, s, "gpu", entry, clock, traits=Traits(library=library))}
