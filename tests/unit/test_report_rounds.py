"""The pair page's "Samples by round" figure (issue 28, "distrust before you publish") on real runs.

ch14.graph_break_control_flow on an H200 (profiles/samples_h200_ch14/, its README's "Host-timed
variants move with the machine inside one process"): the steady samples of both variants step down
at round 250, its headline is withheld as bimodal, and the page must show why. The same pair on an
H100 (profiles/samples_h100_ch14/) was timed before the kinds: one CUDA-event timer, one panel."""
from __future__ import annotations

import json
import re
import sqlite3
import tarfile
from contextlib import closing
from pathlib import Path

import pytest

from repo_paths import FIXTURES, PROFILES

from aisp_prof.api import open_db

H200 = PROFILES / "samples_h200_ch14" / "20261129T060052Z-ch14.graph_break_control_flow-acfd"
H100 = PROFILES / "samples_h100_ch14" / "20261126T144407Z-ch14.graph_break_control_flow-65b4"
STEP_ROUND = 250


def _report(sample_dbs, tmp: Path, run: Path, out: str):
    db = open_db(sample_dbs.original(run))
    return db, db.report(out=tmp / out)


@pytest.fixture(scope="module")
def h200(sample_dbs, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rounds_h200")
    db, first = _report(sample_dbs, tmp, H200, "a")
    return db, first, _report(sample_dbs, tmp, H200, "b")[1]


@pytest.fixture(scope="module")
def h100(sample_dbs, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rounds_h100")
    db, first = _report(sample_dbs, tmp, H100, "a")
    return db, first, _report(sample_dbs, tmp, H100, "b")[1]


def _svg(report) -> Path:
    return report.out_dir / "img" / (report.pages[0].stem + "-rounds.svg")


def test_the_graph_break_page_shows_both_variants_by_round_beside_its_bimodal_warning(h200):
    _, report, _ = h200
    page = report.pages[0].read_text()
    svg = _svg(report).read_text()
    assert 'id="rounds"' in page and f'img/{_svg(report).name}' in page
    for kind in ("latency (one call, idle GPU)", "steady (back to back) (log)"):     # log: a 1.95 ms outlier
        assert kind in svg
    for variant in ("baseline", "tensor_branch"):
        assert len(re.findall(rf"<title>{variant}: 339 samples, median", svg)) >= 2 * 2    # a series + its median
    data = json.loads((report.out_dir / "data" / (report.pages[0].stem + ".json")).read_text())
    assert data["answer"]["withheld"] and data["answer"]["withheld"][0]["rule"] == "bimodal"
    bimodal = [li for li in re.findall(r"<li class=\"bad\">.*?</li>", page, re.S) if "not one group" in li]
    assert bimodal and all('href="#rounds"' in li for li in bimodal)
    # the page's JSON keeps the figure's summary, not its 1,695 samples
    steady = next(p for p in data["rounds"]["panels"] if p["kind"] == "steady")
    assert [s["variant"] for s in steady["series"]] == ["baseline", "tensor_branch"]
    assert all("time_ns" not in s and s["samples"] == 339 for s in steady["series"])


def test_the_samples_behind_it_step_down_at_round_250_in_both_variants(h200):
    """From the stored samples (the library's `samples`): the medians either side of round 250 differ
    by over 30% for both variants, as the samples README says (baseline ~470 -> ~310 us, tensor_branch
    ~260 -> ~155 us): one median of all 339 picks neither state."""
    db, _, _ = h200
    samples = db.samples("ch14.graph_break_control_flow")
    assert list(samples.columns) == ["round", "process", "variant", "kind", "time_ns"]
    assert set(samples["kind"]) == {"gpu", "latency", "steady"} and set(samples["process"]) == {0}
    steady = samples[samples["kind"] == "steady"]
    for variant in ("baseline", "tensor_branch"):
        s = steady[steady["variant"] == variant]
        before = s.loc[s["round"] < STEP_ROUND, "time_ns"].median()
        after = s.loc[s["round"] >= STEP_ROUND, "time_ns"].median()
        assert after < 0.7 * before, (variant, before, after)


def test_the_svg_is_the_same_bytes_each_time(h200):
    _, first, second = h200
    assert _svg(first).read_bytes() == _svg(second).read_bytes()


def test_a_run_timed_before_the_kinds_draws_its_one_timer(h100):
    db, report, second = h100
    page = report.pages[0].read_text()
    svg = _svg(report).read_text()
    assert 'id="rounds"' in page and "CUDA events (one timer)" in svg and "latency" not in svg
    assert "baseline: 400 samples" in svg and "tensor_branch: 400 samples" in svg
    assert _svg(report).read_bytes() == _svg(second).read_bytes()
    samples = db.samples("ch14.graph_break_control_flow")
    assert set(samples["kind"]) == {"legacy"} and len(samples) == 800


def test_a_run_without_samples_says_so_instead(sample_dbs, tmp_path):
    """A run whose samples were not stored (here deleted from a copy of the H100 run): no figure, a note."""
    path = sample_dbs.copy(tmp_path / "a.db", H100)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DELETE FROM samples")
    report = open_db(path).report(out=tmp_path / "out")
    page = report.pages[0].read_text()
    assert 'id="rounds"' in page and "No timed samples in this run" in page
    assert not _svg(report).exists()


def test_several_processes_are_marked_and_the_reference_kernels_grey(tmp_path):
    """A real `bench run` of ch09.compute_bound on an H200 (tests/fixtures/gate/, README there): four
    timing processes of 48 rounds each, the reference kernels ref:copy and ref:gemm_bf16 beside the variants."""
    run = "20261126T081911Z-ch09.compute_bound-af3a"
    with tarfile.open(FIXTURES / "gate" / "h200_lease2_runs.tgz") as tar:
        tar.extractall(tmp_path, members=[m for m in tar.getmembers() if m.name.startswith(run)])
    db = open_db(tmp_path / "a.db")
    db.import_path(tmp_path / run)
    report = db.report(out=tmp_path / "out")
    data = json.loads((report.out_dir / "data" / (report.pages[0].stem + ".json")).read_text())
    rounds = data["rounds"]
    assert (rounds["processes"], rounds["process_starts"], rounds["rounds"]) == (4, [48, 96, 144], 192)
    assert rounds["variants"][-2:] == ["ref:copy", "ref:gemm_bf16"]
    svg = _svg(report).read_text()
    assert [f"process {i} starts at round {48 * i}" in svg for i in (1, 2, 3)] == [True] * 3
    for ref in ("ref:copy", "ref:gemm_bf16"):
        assert re.search(rf'stroke="#c7c7c7"[^>]*><title>{ref}: 192 samples', svg)
    assert "4 processes, dashed where each began" in report.pages[0].read_text()
