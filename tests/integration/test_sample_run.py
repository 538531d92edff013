"""The shipped sample run (a real `aisp-prof run ch09.fused_l2norm` on an H200, 2026-11-26,
commit 04eaddb; profiles/samples/20261126T011557Z-ch09.fused_l2norm-90df): parse, store, summarize, and the lesson it must show."""
from __future__ import annotations

import json

import pytest
from repo_paths import ROOT
from click.testing import CliRunner

from aisp_prof.cli import cli
from aisp_prof.api import open_db, run_summary as summary_of
from aisp_prof.store.ingest import load_run_dir, sample_run_dirs, store_path


def run_summary(db, run):
    return summary_of(open_db(db).run(run))

RUN_ID = "20261126T011557Z-ch09.fused_l2norm-90df"


@pytest.fixture
def sample_dir():
    dirs = {d.name: d for d in sample_run_dirs()}
    return dirs[RUN_ID]


def test_sample_parses_to_the_profiled_kernels(sample_dir):
    data = load_run_dir(sample_dir)
    assert data.kernels["variant"].tolist() == ["baseline"] * 5 + ["cuda", "triton"]
    cuda = data.kernels[data.kernels["variant"] == "cuda"].iloc[0]
    assert cuda["kernel"] == "void <unnamed>::l2norm_rows_in_registers<float4, 8>(const T1 *, T1 *, int, int, float)"
    assert cuda["duration_ns"] == 129440.0 and cuda["dram_read_bytes"] == 268452864.0
    ranges = data.ranges.set_index("variant")
    assert ranges.loc["baseline", "kernel_count"] == 25 and ranges.loc["baseline", "occurrences"] == 5
    assert ranges.loc["cuda", "gpu_time_ns"] == 674012 and ranges.loc["cuda", "gap_total_ns"] == 0
    # 4 gaps inside each of the 5 baseline calls, none between calls
    assert ranges.loc["baseline", "gap_total_ns"] == 22944 and ranges.loc["baseline", "gap_max_ns"] == 1344
    assert set(data.checks["variant"]) == {"baseline", "cuda", "triton"}
    assert data.checks["passed"].astype(bool).all()


@pytest.mark.slow
def test_sample_summary_shows_the_fusion_lesson(sample_dir, tmp_path, sample_dbs):
    db = sample_dbs.copy(tmp_path / "a.db", sample_dir)
    run_id = sample_dir.name
    result = run_summary(db, run_id)
    rows = {r["variant"]: r for r in result["summary"]}
    analytic_bytes = result["info"]["analytic"]["dram_bytes"]          # read x once + write y once
    assert analytic_bytes == 2 * 8192 * 8192 * 4
    base, cuda, triton = rows["baseline"], rows["cuda"], rows["triton"]
    assert base["kernels_per_call"] == 5 and cuda["kernels_per_call"] == 1 == triton["kernels_per_call"]
    assert base["gpu_time_ns"] == pytest.approx(2107347 / 5)
    assert cuda["speedup_vs_baseline"] == pytest.approx(2107347 / 674012)
    assert all(r["correct"] for r in rows.values())
    # the mechanism, not only the time: the baseline moves more than twice the minimum bytes,
    # the fused kernels move the minimum (writes a little under it: dirty lines still in L2)
    assert base["dram_bytes"] > 2.4 * analytic_bytes
    for fused in (cuda, triton):
        assert 0.9 * analytic_bytes < fused["dram_bytes"] <= 1.01 * analytic_bytes
    assert [s["reason"] for s in cuda["top_stalls"]][0] == "long_scoreboard"


@pytest.mark.slow
def test_importing_the_sample_twice_is_harmless(sample_dir, tmp_path):
    db = tmp_path / "a.db"
    assert store_path(db, sample_dir, skip_stored=True) == RUN_ID
    assert store_path(db, sample_dir, skip_stored=True) == RUN_ID


@pytest.mark.slow
def test_quickstart_without_gpu_summarizes_samples(quickstart_without_gpu):
    res = quickstart_without_gpu                     # run once per session (tests/conftest.py)
    assert res.exit_code == 0, res.output
    assert RUN_ID in res.stdout and "cuda" in res.stdout and "3.13x" in res.stdout
    assert (res.folder / "reports" / "quickstart" / "index.html").exists()
    summary = CliRunner().invoke(cli, ["summary", RUN_ID, "--db", str(res.db), "--json"])
    assert json.loads(summary.stdout)["run"]["gpu_name"] == "NVIDIA H200"


@pytest.mark.slow
def test_h100_runs_parse_and_pair_with_the_h200_samples(tmp_path):
    """profiles/samples_h100 (real H100 runs, same day): one run per pair that the H200 samples
    cover, every variant correct; stored next to the H200 runs, a pair name resolves to the
    pair's most recent run by recording time."""
    
    root = ROOT / "profiles" / "samples_h100"
    h100 = sorted(p for p in root.glob("*") if (p / "run.json").exists())
    h200_pairs = {d.name.split("-", 1)[1].rsplit("-", 1)[0] for d in sample_run_dirs()}
    assert {d.name.split("-", 1)[1].rsplit("-", 1)[0] for d in h100} == h200_pairs
    db = tmp_path / "both.db"
    for d in h100:
        run_id = store_path(db, d)
        result = run_summary(db, run_id)
        assert "H100" in result["run"]["gpu_name"] and result["run"]["status"] == "ok", run_id
        assert len(result["summary"]) >= 2 and all(row["correct"] for row in result["summary"]), run_id
    store_path(db, {d.name: d for d in sample_run_dirs()}[RUN_ID])       # H200, recorded at 01:15
    newest = run_summary(db, "ch09.fused_l2norm")["run"]                 # by when it ran, not when stored
    assert newest["run_id"] == "20261126T045251Z-ch09.fused_l2norm-ba93" and "H100" in newest["gpu_name"]
    assert "H200" in run_summary(db, RUN_ID)["run"]["gpu_name"]
