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


def test_a_run_already_recorded_is_refused_and_the_file_kept(sample_dbs, tmp_path):
    """`bench record RUN` twice (into a tmp copy of the shipped 2x H200 evidence): the first adds the run as a
    second session (4 processes behind each A/A margin); the second is refused with one line, exit 1 (the
    README's "bench record refused a run"), the file byte for byte as the first left it. Before, the same run
    became a third session: 5 processes, its own counted twice, the medians leaning to it."""
    db = sample_dbs.copy(tmp_path / "a.db", PROFILES / "samples_h200x2_ch14" / ALLREDUCE_RUN)
    file = tmp_path / "expectations_2x_h200.json"
    shutil.copy(KERNELS / "ch14" / "expectations_2x_h200.json", file)
    args = ["bench", "record", ALLREDUCE_RUN, "--db", str(db), "--expectations", str(file)]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    after_first = file.read_bytes()
    entry = json.loads(after_first)["pairs"]["ch14.quantized_allreduce"]
    assert [s["run_id"] for s in entry["sessions"]][-1] == ALLREDUCE_RUN and len(entry["sessions"]) == 2
    assert entry["summary"]["variants"]["baseline"]["processes"] == 4
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 1
    said = [line for line in again.output.splitlines() if "already a session" in line]
    assert len(said) == 1 and f"run {ALLREDUCE_RUN} is already a session of ch14.quantized_allreduce" in said[0]
    assert "not recorded" in again.output.splitlines()[-1]
    assert file.read_bytes() == after_first


def test_a_session_of_the_same_run_is_never_pooled_twice():
    """The library's guard under the CLI's refusal: adding a recorded session of a run again (the shipped
    session of ch14.regional_triton's third session, as recorded) replaces it; the summary is the shipped one."""
    entry, session = _regional(2)
    again = exp.add_session(entry, session, entry["sizes"])
    assert [s["run_id"] for s in again["sessions"]] == [s["run_id"] for s in entry["sessions"]]
    assert again["summary"] == entry["summary"]
    assert exp.recorded_session(entry, session["run_id"]) is session and exp.recorded_session(entry, "x") is None


def test_a_refused_record_with_json_says_where_its_reason_is(sample_dbs, tmp_path):
    """`bench record RUN --json` of a run already recorded (the H200's ch09.triton, recorded once into a tmp
    copy of the shipped evidence) ended "see the messages above": with --json there are none above, the
    reason is the record's "message". The last line now says so; without --json the lines above stay."""
    run = "20261130T081209Z-ch09.triton-2b43"
    db = sample_dbs.copy(tmp_path / "a.db", PROFILES / "samples_h200_ch09" / run)
    file = tmp_path / "expectations_h200.json"
    shutil.copy(KERNELS / "ch09" / "expectations_h200.json", file)
    args = ["bench", "record", run, "--db", str(db), "--expectations", str(file)]
    assert CliRunner().invoke(cli, args).exit_code == 0
    again = CliRunner().invoke(cli, [*args, "--json"])
    assert again.exit_code == 1
    [record] = json.loads(again.stdout)
    assert record["recorded"] is None and "already a session of ch09.triton" in record["message"]
    [line] = again.stderr.strip().splitlines()
    assert line == f'aisp-prof: error: not recorded: {run} (each one\'s "message" in the JSON on stdout says why)'
    assert "above" not in line
    plain = CliRunner().invoke(cli, args)
    assert plain.exit_code == 1 and "already a session" in plain.stdout
    assert plain.stderr.strip().endswith(f"not recorded: {run} (see the messages above)")
