"""`aisp-prof diff OLD NEW` on the shipped H200 runs of one pair at two dates: what else changed between
them besides the times. ch09 of 2026-11-26 (profiles/samples/: no samples, no source digest) against
2026-11-30 (profiles/samples_h200_ch09/: samples with SM clocks, digests); ch10 of 2026-11-26/29
(profiles/samples_h200_ch10_early/) against 2026-11-30 (profiles/samples_h200_ch10/). Before these notes the
diff named neither the code nor the clock: cublaslt_fp16 read 1.03x slower with nothing to say that B's timed
calls ran power-capped at 1710 of 1980 MHz, or that A names no source digest."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES

from aisp_prof import api
from aisp_prof.cli import cli

CUBLAS_OLD = PROFILES / "samples" / "20261126T024238Z-ch09.cublaslt_gemm-a129"
CUBLAS_NEW = PROFILES / "samples_h200_ch09" / "20261130T081354Z-ch09.cublaslt_gemm-6b1d"
CLUSTER_OLD = PROFILES / "samples_h200_ch10_early" / "20261129T055402Z-ch10.cluster_group-b197"
CLUSTER_NEW = PROFILES / "samples_h200_ch10" / "20261130T082652Z-ch10.cluster_group-00bb"
WARP_OLD = PROFILES / "samples_h200_ch10_early" / "20261126T230324Z-ch10.warp_specialization-6a38"
WARP_NEW = PROFILES / "samples_h200_ch10" / "20261130T082257Z-ch10.warp_specialization-d1ea"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("diffctx") / "aisp.db"
    runs = api.open_db(path)
    ids = [runs.import_path(p) for p in (CUBLAS_OLD, CUBLAS_NEW, CLUSTER_OLD, CLUSTER_NEW, WARP_OLD, WARP_NEW)]
    return str(path), ids


def _diff(db: str, a: str, b: str, *extra: str):
    r = CliRunner().invoke(cli, ["diff", a, b, "--db", db, *extra], env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    return r.output


def test_old_run_without_digest_and_power_capped_new_run(db):
    """cublaslt_gemm: A (2026-11-26) names no source digest, so whether the code changed is unknown, never 'the
    same'; B's timed calls ran at a median 1710 of 1980 MHz (the power cap) and A's clock is not recorded."""
    path, (old, new, *_) = db
    d = json.loads(_diff(path, old, new, "--json"))
    assert d["code"]["same"] is None and "A names no source digest" in d["code"]["note"]
    assert "8d9f070" in d["code"]["note"] and "e6ea01e" in d["code"]["note"]          # each run's git commit
    assert d["a"]["sm_clock_median_mhz"] is None and d["b"]["sm_clock_median_mhz"] == 1710
    assert d["b"]["sm_clock_max_mhz"] == 1980 and d["clock"]["moved"] is None
    assert "1710 of 1980 MHz" in d["clock"]["note"] and "B ran at a low clock" in d["clock"]["note"]
    out = _diff(path, old, new)
    assert "code: A names no source digest" in out and "SM clock (median of the timed calls)" in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_same_code_same_clock_says_so_and_no_clock_line(db):
    """cluster_group 2026-11-29 and 2026-11-30: one code digest, both at 1980 MHz: the same code, no clock line."""
    path, (_, _, old, new, *_) = db
    d = json.loads(_diff(path, old, new, "--json"))
    assert d["code"] == {"same": True, "note": "code: the same (code digest 81f5261752de in both)"}
    assert d["a"]["sm_clock_median_mhz"] == d["b"]["sm_clock_median_mhz"] == 1980
    assert d["clock"] == {"moved": False, "note": ""}
    assert "SM clock" not in _diff(path, old, new)


def test_changed_source_with_one_code_digest(db, tmp_path):
    """warp_specialization 2026-11-26 (a source digest, no code digest) against 2026-11-30: the text differs, and
    with one code digest a comment-only edit cannot be told from a code change; both ran at ~1500 of 1980 MHz."""
    path, (*_, old, new) = db
    d = json.loads(_diff(path, old, new, "--json"))
    assert d["code"]["same"] is None and "3e574e816385 -> e33a39bc72a7" in d["code"]["note"]
    assert d["clock"]["moved"] is False and "same low clock" in d["clock"]["note"]
    page = tmp_path / "diff.html"
    _diff(path, old, new, "--html", str(page))
    html = page.read_text()
    assert "source text differs" in html and "same low clock" in html


ALLREDUCE_H200 = PROFILES / "samples_h200x2_ch14" / "20261126T231409Z-ch14.quantized_allreduce-3c06"
ALLREDUCE_H100 = PROFILES / "samples_h100x2_ch14" / "20261126T174545Z-ch14.quantized_allreduce-cbe0"


def test_legacy_samples_are_judged_against_legacy_ones(db):
    """A run before issue 28 has samples of the one legacy timer, stored with an empty kind. The diff picked that
    timer (cuda_events) yet read B's samples of kind 'gpu', found none and printed 'no samples: not judged (A's
    samples: legacy; B's: legacy)'. Judged by the legacy timer, the run against itself is SAME, never AMBIGUOUS."""
    path, (*_, old, _) = db
    d = json.loads(_diff(path, old, old, "--json"))
    assert d["judged"] and d["judged_timer"] == "cuda_events"
    assert {r["verdict"] for r in d["variants"]} == {"SAME"}
    assert "no samples" not in _diff(path, old, old)


def test_legacy_runs_on_two_cards_are_not_judged(tmp_path):
    """2x H200 -> 2x H100 quantized_allreduce, both legacy: judged by the gate's one-card rule they read int8 and
    int8_overlap SLOWER +14% (the H100, not the code). Without the gate's machine references (`ref:` samples) in
    both runs, a diff across cards says the GPUs differ and judges nothing."""
    path = str(tmp_path / "a.db")
    runs = api.open_db(path)
    h200, h100 = (runs.import_path(p) for p in (ALLREDUCE_H200, ALLREDUCE_H100))
    d = json.loads(_diff(path, h200, h100, "--json"))
    assert not d["judged"] and {r["reason"] for r in d["variants"]} == {"GPUs differ, no machine reference timed "
                                                                          "in both: not judged"}
    out = _diff(path, h200, h100)
    assert "different GPUs" in out and "SLOWER" not in out
