"""Recording evidence (`bench record`, `--update-expectations`): each sample list keeps the process it came
from, so a ratio pairs a variant with the baseline of its own process, and a run is recorded once.

Data: the shipped H200 evidence of ch14.regional_triton (kernels/ch14/expectations_h200.json), whose second
session's four processes ran its baseline up to 5% apart, and the shipped 2-GPU H200 run of
ch14.quantized_allreduce (profiles/samples_h200x2_ch14) with its evidence (kernels/ch14/expectations_2x_h200.json,
recorded into a copy in tmp)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from repo_paths import KERNELS, PROFILES

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.timing.intervals import process_ratios, relative_spread
from aisp_prof.cli import cli

REGIONAL = "ch14.regional_triton"
ALLREDUCE_RUN = "20261129T180029Z-ch14.quantized_allreduce-7cd8"


def _regional(session: int) -> tuple[dict, dict]:
    entry = exp.read_any(KERNELS / "ch14" / "expectations_h200.json")["pairs"][REGIONAL]
    return entry, entry["sessions"][session]


def _as_samples(entry: dict, session: dict):
    """The recorded session back as a run's samples (process, variant, time and SM clock per sample)."""
    df = exp.session_samples({"sizes": entry["sizes"], "sessions": [session]})
    return df.loc[:, ["process", "variant", "time_ns", "sm_clock_mhz"]].assign(clock_event_reasons=0)


def test_a_variant_throttled_in_one_process_keeps_the_others_paired():
    """Edited real data: session 2 of ch14.regional_triton on the H200, book_baseline's samples of process 0
    marked throttled (SM clock 800 of 1980 MHz, a thermal slowdown). Recorded again, book_baseline's ratio
    pairs processes 1-3 with the baseline of the same processes: 1.644, margin 2.9%. Numbered 0-2 as
    listed, it paired process 1's variant with process 0's baseline: 1.664 and a 15.3% margin."""
    entry, session = _regional(1)
    df = _as_samples(entry, session)
    hot = (df["variant"] == "book_baseline") & (df["process"] == 0)
    df.loc[hot, "sm_clock_mhz"], df.loc[hot, "clock_event_reasons"] = 800, 0x20
    new = exp.session_of(df, {"run_id": "x"}, {"sm_clock_max_mhz": 1980})
    assert new["samples"]["book_baseline"]["process"] == [1, 2, 3] and new["processes"] == 4
    recorded = session["samples"]
    ratios = process_ratios([np.array(t) for t in recorded["book_baseline"]["time_ns"][1:]],
                            [np.array(t) for t in recorded["baseline"]["time_ns"][1:]])
    row = exp.add_session(None, new, entry["sizes"])["summary"]["variants"]["book_baseline"]
    assert row["time_vs_baseline"] == pytest.approx(float(np.median(ratios)), rel=1e-12)
    assert row["time_vs_baseline"] == pytest.approx(1.644, abs=0.0005)
    assert row["margin"]["ratio"] == pytest.approx(max(0.01, 2 * relative_spread(ratios)), rel=1e-12)
    assert row["margin"]["ratio"] < 0.03


@pytest.mark.parametrize("session", [0, 1, 2])
def test_a_session_recorded_now_reads_as_the_shipped_one(session):
    """Format compatibility: a shipped session (no `process`: list i is process i) recorded again from its own
    samples names its processes 0-3, and its pair's summary is the one the shipped file holds, number for
    number: old files and new ones judge alike."""
    entry, old = _regional(session)
    new = exp.session_of(_as_samples(entry, old), {"run_id": old["run_id"]}, {"sm_clock_max_mhz": 1980})
    assert all(lists["process"] == list(range(old["processes"])) for lists in new["samples"].values())
    assert all(new["samples"][v]["time_ns"] == old["samples"][v]["time_ns"] for v in old["samples"])
    sessions = [new if i == session else s for i, s in enumerate(entry["sessions"])]
    assert exp.summarize({**entry, "sessions": sessions}) == exp.summarize(entry) == entry["summary"]

