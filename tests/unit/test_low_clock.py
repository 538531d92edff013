"""Ratios measured at another SM clock (analyze.verdict.clock, analyze.gate.agree.clock_moved).

Real data: the H200 runs of profiles/samples_h200_ch09 and samples_h200_ch10 (2026-11-30, one lease), timed
back to back by `aisp-prof run`, and the gate's H200 evidence in kernels/chNN/expectations_h200.json,
recorded at ~1980 MHz. ch09.cublaslt_gemm ran power-capped at a median 1710 MHz: cuBLASLt fp16 2.52x
against 2.81x recorded, its time +12.8% and its cycles -2.5%, which the gate reads as the SM clock moving.
The edited copies put every sample at the recorded 1980 MHz, so the same times become other cycles: the
code would then have moved, and nothing may explain it away."""
from __future__ import annotations

import gzip
import json
import shutil

import pytest
from repo_paths import PROFILES

from aisp_prof.analyze.verdict.clock import low_clock
from aisp_prof.api import open_db
from aisp_prof.bench.agree import agree

CUBLASLT = PROFILES / "samples_h200_ch09" / "20261130T081354Z-ch09.cublaslt_gemm-6b1d"
CLUSTER_GROUP = PROFILES / "samples_h200_ch10" / "20261130T082652Z-ch10.cluster_group-00bb"
WARP_SPEC = PROFILES / "samples_h200_ch10" / "20261130T082257Z-ch10.warp_specialization-d1ea"


def _at_full_clock(run, tmp_path):
    """A copy of the run folder whose every sample reads 1980 MHz, no clock event, power 300 W."""
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    path = copy / "check.json.gz"
    check = json.loads(gzip.decompress(path.read_bytes()))
    for s in check["samples"]:
        s.update(sm_clock_mhz=1980, clock_event_reasons=0, power_w=300.0)
    path.write_bytes(gzip.compress(json.dumps(check).encode()))
    return copy


def _open(tmp_path, *runs):
    db = open_db(tmp_path / "runs.db")
    for run in runs:
        db.import_path(run)
    return db


def _by_variant(db, pair):
    return {a.variant: a for a in agree(db, [pair])}


def test_a_power_capped_run_differs_from_the_gate_by_the_clock(tmp_path):
    found = _by_variant(_open(tmp_path, CUBLASLT), "ch09.cublaslt_gemm")
    fp16 = found["cublaslt_fp16"]
    assert fp16.verdict == "DIFFER" and fp16.explained and fp16.tags == ["clock"]
    assert fp16.run_speedup == pytest.approx(2.52, abs=0.01) and fp16.gate_speedup == pytest.approx(2.81, abs=0.01)
    said = fp16.reasons[0]
    assert "cublaslt_fp16 time +12.8% but cycles -2.5%" in said
    assert "SM clock median 1710 MHz against 1980 MHz" in said


def test_the_same_times_at_the_recorded_clock_are_not_explained(tmp_path):
    found = _by_variant(_open(tmp_path, _at_full_clock(CUBLASLT, tmp_path)), "ch09.cublaslt_gemm")
    fp16 = found["cublaslt_fp16"]
    assert fp16.verdict == "DIFFER" and not fp16.explained and "clock" not in fp16.tags


def _low_clock_findings(db):
    run = db.open("latest")
    return [f for f in run.result()["findings"] if f["rule"] == "low_clock"]


def test_a_run_timed_at_the_power_cap_says_its_clock(tmp_path):
    found = _low_clock_findings(_open(tmp_path, WARP_SPEC))
    assert len(found) == 1 and found[0]["severity"] == "warning" and found[0]["variant"] is None
    assert found[0]["message"].startswith("the timed calls ran at a median SM clock of 1500 MHz, 76% of the card's "
                                          "1980 MHz; power 690 W of its 700 W limit, the software power cap")


@pytest.mark.parametrize("run", [CLUSTER_GROUP, "edited"])
def test_a_run_at_full_clock_says_nothing(tmp_path, run):
    folder = _at_full_clock(WARP_SPEC, tmp_path) if run == "edited" else run
    assert _low_clock_findings(_open(tmp_path, folder)) == []


def test_a_run_without_clock_readings_says_nothing():
    from aisp_prof.analyze.rule_input import RuleInput

    assert low_clock(RuleInput(info={"gpu": {"sm_clock_max_mhz": "1980"}}, summary=[])) == []
