"""The second card's two-rank sample: profiles/samples_h200x2_ch14/<run-id>/ (a real `aisp-prof run` of
ch14.quantized_allreduce on 2x H200, session 9) stores and reads back like the 2x H100 one
(test_multirank_store.py holds the detailed checks): both ranks, one clock, every check passed on
both, the same launch structure per call, int8 ahead by CUDA events. Counts come from the files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_paths import ROOT
from click.testing import CliRunner

from aisp_prof.api import open_db
from aisp_prof.cli import cli

RUN_DIR = next(p for p in sorted((ROOT / "profiles" / "samples_h200x2_ch14").glob("*")) if (p / "run.json").exists())
INFO = json.loads((RUN_DIR / "run.json").read_text())
VARIANTS = ["baseline", "fp32_rs_ag", "int8", "int8_overlap"]


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("h200x2") / "a.db"
    res = CliRunner().invoke(cli, ["import", "--db", str(path), str(RUN_DIR) + "/"])
    assert res.exit_code == 0, res.output
    return path


@pytest.mark.slow
def test_two_h200_ranks_on_one_clock_with_every_check_passed(db):
    assert INFO["pair"] == "ch14.quantized_allreduce" and INFO["world_size"] == 2
    run = open_db(db).run(INFO["run_id"])
    ranks = run.ranks.sort_values("rank")
    assert ranks["rank"].tolist() == [0, 1] and (ranks["matched_collectives"] > 100).all()
    assert (ranks["clock_residual_ns"].abs() < 50_000).all()
    checks = run.checks
    assert set(checks["rank"]) == {0, 1} and (checks["passed"] == 1).all()
    for rank in (0, 1):
        assert set(checks[checks["rank"] == rank]["variant"]) == set(VARIANTS)


@pytest.mark.slow
def test_summary_keeps_the_launch_structure_and_int8_wins(db):
    res = CliRunner().invoke(cli, ["summary", "latest", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert "H200" in out["run"]["gpu_name"]
    rows = {r["variant"]: r for r in out["summary"]}
    assert {v: rows[v]["kernels_per_call"] for v in VARIANTS} == {
        "baseline": 1, "fp32_rs_ag": 2, "int8": 5, "int8_overlap": 20}
    events = INFO["timing_cuda_events"]
    assert rows["int8"]["speedup_vs_baseline"] == pytest.approx(
        events["baseline"]["median_ns"] / events["int8"]["median_ns"], rel=0.02)
    assert rows["int8"]["speedup_vs_baseline"] > rows["int8_overlap"]["speedup_vs_baseline"] > 1.5
