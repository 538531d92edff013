"""`aisp-prof diff A B` on the real shipped runs: ch09.fused_l2norm on an H200 (profiles/samples/)
and on an H100 (profiles/samples_h100/), the "two GPUs" case. Those runs predate interleaved
timing, so they carry no samples and are not judged; the gate's verdict on samples is tested on
the real recorded samples of kernels/ch09/expectations_*.json (two H200 sessions, one H100)."""
from __future__ import annotations

import json

import pytest
from repo_paths import ROOT
from click.testing import CliRunner

from aisp_prof import api
from aisp_prof.analyze.run_diff import KINDS_DIFFER, NOT_JUDGED, RunSide, compare, timer_times
from aisp_prof.analyze.gate.expectations import session_samples
from aisp_prof.cli import cli

H200 = ROOT / "profiles" / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"
H100 = ROOT / "profiles" / "samples_h100" / "20261126T045251Z-ch09.fused_l2norm-ba93"
OTHER = ROOT / "profiles" / "samples_h100" / "20261126T045319Z-ch09.memory_bound-64b1"
ALLREDUCE_H100 = ROOT / "profiles" / "samples_h100x2_ch14" / "20261126T174545Z-ch14.quantized_allreduce-cbe0"
ALLREDUCE_H200 = ROOT / "profiles" / "samples_h200x2_ch14" / "20261129T180029Z-ch14.quantized_allreduce-7cd8"
CUBLAS_H200 = ROOT / "profiles" / "samples_h200_ch14" / "20261129T055435Z-ch14.cublas_vs_cutlass-c3cf"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("diff") / "aisp.db"
    runs = api.open_db(path)
    ids = [runs.import_path(p) for p in (H200, H100, OTHER)]
    return path, runs, ids


def _recorded(key: str, session: int):
    """A format-2 session of ch09.fused_l2norm on one card (tests/fixtures/gate/, as recorded)."""
    path = ROOT / "tests" / "fixtures" / "gate" / "expectations_ch09_fused_l2norm_by_card.json"
    entry = json.loads(path.read_text())
    return session_samples({"sessions": [entry["pairs"][key]["sessions"][session]]})


@pytest.mark.slow
def test_diff_two_gpus_table(db):
    path, runs, (a, b, _) = db
    result = CliRunner().invoke(cli, ["--db", str(path), "diff", a, b, "--wide"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "NVIDIA H200" in out and "NVIDIA H100 80GB HBM3" in out and "different GPUs" in out
    assert NOT_JUDGED in out
    for variant in ("baseline", "cuda", "triton"):
        assert variant in out
    # the times are the summaries' own numbers by the first timer of the pair's order both runs have: these runs
    # predate the GPU-time events, so nsys GPU time (what their summaries' speedups use), never recomputed
    sa = {r["variant"]: r for r in runs.summary_result(a)["summary"]}
    sb = {r["variant"]: r for r in runs.summary_result(b)["summary"]}
    assert sa["cuda"]["speedup_timer"] == sb["cuda"]["speedup_timer"] == "nsys_gpu_time"
    assert f"{sa['cuda']['gpu_time_ns'] / 1e3:.1f} us" in out
    assert f"{sb['cuda']['gpu_time_ns'] / 1e3:.1f} us" in out
    assert f"{sb['cuda']['speedup_vs_baseline']:.2f}x" in out        # B's speedup, by the same timer
    assert "times and speedups: nsys GPU time (nsys_gpu_time)" in out   # one timer, said once above the table


@pytest.mark.slow
def test_diff_json_per_variant(db):
    path, runs, (a, b, _) = db
    result = CliRunner().invoke(cli, ["--db", str(path), "diff", a, b, "--json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    assert d["pair"] == "ch09.fused_l2norm" and d["judged"] is False
    rows = {r["variant"]: r for r in d["variants"]}
    assert set(rows) == {"baseline", "cuda", "triton"}
    cuda = rows["cuda"]
    assert cuda["verdict"] is None and cuda["reason"] == NOT_JUDGED
    sb = {r["variant"]: r for r in runs.summary_result(b)["summary"]}["cuda"]
    assert cuda["b"]["dram_bytes"] == sb["dram_bytes"] and cuda["b"]["flops"] == sb["flops_total"]
    assert cuda["b"]["top_stalls"] == [s["reason"] for s in sb["top_stalls"][:3]]
    assert cuda["a"]["roofline"]["bound"] == "dram" and cuda["b"]["roofline"]["bound"] == "dram"
    assert 0 < cuda["b"]["roofline"]["pct_of_roof"] <= 100
    # the H100 is slower on this memory-bound pair: its DRAM moves fewer bytes per second
    assert cuda["time_ratio_b_over_a"] > 1.0


@pytest.mark.slow
def test_diff_html_is_one_offline_page(db, tmp_path):
    path, _, (a, b, _) = db
    out = tmp_path / "page" / "diff.html"
    result = CliRunner().invoke(cli, ["--db", str(path), "diff", a, b, "--html", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "ch09.fused_l2norm" in html and NOT_JUDGED in html and "NVIDIA H100 80GB HBM3" in html
    assert "http://" not in html and "https://" not in html and "<script src" not in html


@pytest.mark.slow
def test_diff_of_different_pairs_is_one_line_exit_2(db):
    path, _, (a, _, other) = db
    result = CliRunner().invoke(cli, ["--db", str(path), "diff", a, other])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and "different pairs" in result.output


@pytest.mark.slow
def test_gate_verdict_on_real_samples(db):
    _, runs, (a, b, _) = db
    ra, rb = runs.summary_result(a), runs.summary_result(b)
    same = compare(RunSide(ra, samples=_recorded("h200", 0)), RunSide(rb, samples=_recorded("h200", 1)))
    assert same["judged"] and {r["verdict"] for r in same["variants"]} == {"SAME"}   # two H200 sessions
    assert all("margin" in r["reason"] for r in same["variants"])
    faster = compare(RunSide(ra, samples=_recorded("h100_80gb_hbm3", 0)), RunSide(rb, samples=_recorded("h200", 0)))
    assert {r["verdict"] for r in faster["variants"]} == {"FASTER"}                  # H100 -> H200
    # H200 -> H100: the device copy timed beside the pair slowed as far, so the gate says the machine moved
    moved = compare(RunSide(ra, samples=_recorded("h200", 0)), RunSide(rb, samples=_recorded("h100_80gb_hbm3", 0)))
    assert all(r["verdict"] == "SAME" and r["reason"].startswith("moved with the machine")
               for r in moved["variants"])


def test_timer_times_tell_legacy_cuda_events_from_gpu_events():
    """A run of the three kinds stores its GPU-time events as cuda_event_median_ns too: they are gpu_events,
    never the legacy cuda_events (the one timer of runs before issue 28)."""
    legacy = timer_times({"cuda_event_median_ns": 2.0, "gpu_time_ns": 1.0, "gpu_time_source": "nsys"})
    assert legacy["cuda_events"] == 2.0 and legacy["gpu_events"] is None and legacy["nsys_gpu_time"] == 1.0
    current = timer_times({"cuda_event_median_ns": 2.0, "gpu_events_median_ns": 2.0, "steady_median_ns": 3.0})
    assert current["gpu_events"] == 2.0 and current["cuda_events"] is None and current["steady"] == 3.0
    assert timer_times({"gpu_time_ns": 1.0, "gpu_time_source": "ncu"})["nsys_gpu_time"] is None


@pytest.mark.parametrize("run", [ROOT / "profiles" / "samples_h200_ch14" / "20261129T060052Z-ch14.graph_break_control_flow-acfd",
                                 ROOT / "profiles" / "samples_h200x2_ch14" / "20261129T180029Z-ch14.quantized_allreduce-7cd8"])
def test_a_run_against_itself_is_never_faster_or_slower(run, tmp_path):
    """Runs timed in the three kinds: B's samples are read by the kind A's were (gpu), not every kind pooled, which
    made a run against itself SLOWER (graph_break_control_flow tensor_branch +126%) or FASTER (2x H200 int8 -16%)."""
    runs = api.open_db(tmp_path / "a.db")
    rid = runs.import_path(run)
    r = CliRunner().invoke(cli, ["diff", rid, rid, "--db", str(tmp_path / "a.db"), "--json"])
    assert r.exit_code == 0, r.output
    verdicts = {row["variant"]: row["verdict"] for row in json.loads(r.output)["variants"] if row["verdict"]}
    assert verdicts and not {"FASTER", "SLOWER"} & set(verdicts.values()), verdicts


@pytest.fixture(scope="module")
def allreduce(tmp_path_factory):
    path = tmp_path_factory.mktemp("allreduce") / "aisp.db"
    runs = api.open_db(path)
    return str(path), [runs.import_path(p) for p in (ALLREDUCE_H100, ALLREDUCE_H200, CUBLAS_H200)]


def _diff_json(db: str, a: str, b: str) -> dict:
    r = CliRunner().invoke(cli, ["diff", a, b, "--db", db, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_legacy_and_current_cuda_events_are_never_one_timer(allreduce):
    """ch14.quantized_allreduce, 2x H100 before issue 28 (A) against 2x H200 after it (B): both store
    cuda_event_median_ns, A's the legacy events (a host-paced variant timed by its place in the queue), B's the
    GPU alone. Their ratio read int8_overlap 1.53x slower under 'cuda_events (the pair's own timer)', though
    the pair's own timer is steady. By nsys GPU time, the first of the pair's order both runs have, it is 0.99x."""
    db, (h100, h200, _) = allreduce
    d = _diff_json(db, h100, h200)
    overlap = {r["variant"]: r for r in d["variants"]}["int8_overlap"]
    assert overlap["time_ratio_b_over_a"] == pytest.approx(685726.8 / 693589.8)         # was 1.53 (legacy/current)
    assert overlap["a"]["time_source"] == overlap["b"]["time_source"] == "nsys_gpu_time" and overlap["same_timer"]
    assert d["timer"] == "nsys_gpu_time" and d["timer_label"] == "nsys GPU time"
    assert overlap["a"]["speedup"] == pytest.approx(1.5617, abs=1e-4)      # the summaries' own nsys speedups
    assert overlap["b"]["speedup"] == pytest.approx(1.5508, abs=1e-4)
    notes = " ".join(d["timer_notes"])
    assert "steady time per call first" in notes and "CUDA events differ in kind: A's" in notes
    assert "A's by CUDA events, B's by steady time per call" in notes
    # A's samples are the legacy timer's, B's the three kinds: not judged, and said so
    assert not d["judged"] and d["not_judged"] == KINDS_DIFFER and d["judged_timer"] is None
    assert {r["reason"] for r in d["variants"]} == {KINDS_DIFFER}
    r = CliRunner().invoke(cli, ["diff", h100, h200, "--db", db], env={"COLUMNS": "120"})
    assert "the pair's own timer" not in r.output and "cuda_events" not in r.output and "1.53x" not in r.output
    assert "times and speedups: nsys GPU time" in r.output and "kinds of time differ" in r.output


def test_a_run_against_itself_is_by_the_pairs_own_timer(allreduce):
    """The 2x H200 run's own timer is steady (a run of several ranks); the diff and its verdict use it."""
    db, (_, h200, _) = allreduce
    d = _diff_json(db, h200, h200)
    assert d["timer"] == "steady" and d["judged_timer"] == "steady" and d["timer_notes"][0].endswith(
        "(steady, the pair's own timer), per call")
    own = {r["variant"]: r for r in api.open_db(db).summary_result(h200)["summary"]}
    for row in d["variants"]:
        assert row["a"]["time_ns"] == own[row["variant"]]["steady_median_ns"] and row["time_ratio_b_over_a"] == 1.0


def test_same_card_same_timer_is_unchanged(allreduce):
    """A one-GPU run of the three kinds against itself: by its GPU-time CUDA events as before (cuda_event_median_ns),
    now named gpu_events, every verdict SAME."""
    db, (_, _, cublas) = allreduce
    d = _diff_json(db, cublas, cublas)
    own = {r["variant"]: r for r in api.open_db(db).summary_result(cublas)["summary"]}
    assert d["timer"] == "gpu_events" and d["judged_timer"] == "gpu_events"
    for row in d["variants"]:
        assert row["a"]["time_ns"] == own[row["variant"]]["cuda_event_median_ns"] and row["verdict"] == "SAME"
