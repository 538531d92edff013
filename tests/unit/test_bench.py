"""Benchmark statistics, expectations and the regression gate, without a GPU."""
from __future__ import annotations

import json
import tarfile

import pytest
from repo_paths import FIXTURES
from click.testing import CliRunner

from aisp_prof.analyze.timing.intervals import Interval
from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.verdict import AMBIGUOUS, FASTER, SAME, SLOWER, decide, judge
from aisp_prof.cli import cli
from aisp_prof.collect.timing.timer import input_sets_needed, summarize_times
from aisp_prof.naming import hardware_key
from aisp_prof.api import open_db
from aisp_prof.store.history import pair_history
from aisp_prof.store.ingest import load_run_dir, sample_run_dirs


def test_hardware_keys():
    assert hardware_key("NVIDIA H100 80GB HBM3") == "h100_80gb_hbm3"
    assert hardware_key("NVIDIA H200") == "h200"
    assert hardware_key("NVIDIA H200", 2) == "2x_h200"


def test_robust_spread_ignores_one_straggler():
    stats = summarize_times([100.0] * 9 + [100.0, 102.0, 98.0, 101.0, 99.0, 5000.0])
    assert stats["median_ns"] == 100.0 and stats["max_ns"] == 5000.0
    assert stats["rel_spread"] < 0.02


def test_rotation_only_when_inputs_fit_in_l2():
    l2 = 60 << 20
    assert input_sets_needed(512 << 20, l2) == 1          # fused_l2norm: 8x the L2
    assert input_sets_needed(32 << 20, l2) == 5           # ceil(2*60/32) + 1
    assert input_sets_needed(1 << 20, l2) == 8            # capped


def test_decide_against_the_margin():
    """An interval of observed/expected against [1 - margin, 1 + margin]."""
    assert decide(Interval(1.03, 1.025, 1.035), 0.02) == SLOWER
    assert decide(Interval(0.90, 0.89, 0.91), 0.02) == FASTER
    assert decide(Interval(1.00, 0.995, 1.006), 0.02) == SAME
    assert decide(Interval(1.02, 1.01, 1.03), 0.02) == AMBIGUOUS          # straddles the edge: sample more


def test_expectations_keep_number_lists_on_one_line(tmp_path):
    data = {"format": exp.FORMAT, "pairs": {"ch09.x": {"sessions": [{"samples": {"cuda": {"time_ns": [[1, 2], [3, 4]]}}}]}}}
    path = tmp_path / "ch09" / "expectations_h200.json"
    exp.save(path, data)
    assert exp.load(path) == data
    assert "[1, 2]" in path.read_text() and "[3, 4]" in path.read_text()


def test_files_of_the_old_format_are_outdated_not_compared(tmp_path):
    """The recorded files before the gate (format 1: the H100's ch09 file until it was recorded
    again) hold medians without samples; each variant's verdict then says so, not 'no expectation'."""
    old = FIXTURES / "gate" / "expectations_h100_format1.json"
    data = exp.load(old)
    assert data["pairs"] == {} and "older format" in data["outdated"]
    with tarfile.open(old.parent / "h100_lease2_runs.tgz") as tar:     # a real H100 run of the pair
        tar.extractall(tmp_path, filter="data")
    samples = load_run_dir(tmp_path / "20261126T102002Z-ch09.fused_l2norm-5698").samples
    found = judge("ch09.fused_l2norm", samples, data["pairs"].get("ch09.fused_l2norm"), 1980, data["outdated"])
    assert found and all(v.verdict == "NEW" and "older format" in v.cause for v in found)


@pytest.mark.slow
def test_history_of_the_sample_pair(tmp_path, sample_dbs):
    db = sample_dbs.copy(tmp_path / "a.db", sample_run_dirs()[0])
    rows = pair_history(db, "ch09.fused_l2norm")
    assert [r["variant"] for r in rows] == ["baseline", "cuda", "triton"]
    # the speedup is the summary's (issue 16); the CUDA-event ratio is its secondary figure
    hist = open_db(db).history("ch09.fused_l2norm").to_dict("records")
    cuda, summary = hist[1], open_db(db).summary("latest").set_index("variant")
    assert cuda["speedup_vs_baseline"] == summary.loc["cuda", "speedup_vs_baseline"]
    events = [r["cuda_event_median_ns"] for r in rows]
    assert cuda["speedup_by_timer"]["cuda_events"] == pytest.approx(events[0] / events[1])
    res = CliRunner().invoke(cli, ["history", "ch09.fused_l2norm", "--db", str(db), "--json"])
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == 3


def test_bench_without_gpu_exits_3(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", "ch09", "--db", str(tmp_path / "a.db"),
                                   "--profiles-dir", str(tmp_path / "p")])
    assert res.exit_code == 3, res.output


@pytest.mark.parametrize("target, code", [("ch09.fused_l2norm", 3), ("ch14", 3), ("ch09.fused_l2nrm", 2)])
def test_a_planted_module_is_a_target_of_bench_run(monkeypatch, tmp_path, target, code):
    """The plants build their PAIR from the shipped pair (no literal PAIR to read without importing):
    `bench run --targets ch09.fused_l2norm` under their $AISP_KERNELS was an unknown target (exit 2) on
    an H200 visit; it gets as far as the GPU (exit 3 here), and a typo is still exit 2."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    from aisp_prof.paths import data_root

    monkeypatch.setenv("AISP_KERNELS", str(data_root() / "tests" / "fixtures" / "gate_kernels"))
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", target, "--db", str(tmp_path / "a.db"),
                                   "--profiles-dir", str(tmp_path / "p")])
    assert res.exit_code == code, res.output


def test_bench_list_targets():
    res = CliRunner().invoke(cli, ["bench", "list-targets", "--chapter", "ch09", "--json"])
    assert res.exit_code == 0
    assert "ch09.fused_l2norm" in {r["name"] for r in json.loads(res.stdout)}


def test_bench_failed_check_exits_7_and_names_the_variant(monkeypatch, tmp_path):
    """A failed correctness check outranks any timing verdict: exit 7, and both the table and
    the one-line error say which pair failed and why (the message the check produced)."""
    from aisp_prof.bench import runner

    message = "variant(s) warp_specialized_tma failed the correctness check (max rel err 1.6e-03 > 1e-05)"

    def fake_bench_one(pair, *args, **kwargs):
        return runner.PairOutcome(pair.name, "run-1", "failed_check", message)

    monkeypatch.setattr(runner, "current_hardware_key", lambda *a: "h100_80gb_hbm3")
    monkeypatch.setattr(runner, "bench_one", fake_bench_one)
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", "ch09.warp_specialization_producer_consumer", "--wide",
                                   "--db", str(tmp_path / "a.db"), "--profiles-dir", str(tmp_path / "p")])
    assert res.exit_code == 7, res.output
    assert "FAILED_CHECK" in res.stdout and message in res.stdout
    assert "ch09.warp_specialization_producer_consumer" in res.stderr and "warp_specialized_tma" in res.stderr


def test_bench_logs_a_line_per_pair_with_its_time(monkeypatch, tmp_path):
    """stderr is a log, not a progress bar: each pair's start (with the time so far) and its outcome
    on a line of their own, so a gate cut off by a CI job's time limit says how far it got (a
    4-GPU visit's gate printed only 'bench' before 530 s ran out)."""
    from aisp_prof.bench import runner

    def fake_bench_one(pair, *args, **kwargs):
        status = "failed_check" if pair.name.endswith("memory_bound") else "ok"
        return runner.PairOutcome(pair.name, "run-1", status, "wrong at row 3" if status != "ok" else "")

    monkeypatch.setattr(runner, "current_hardware_key", lambda *a: "h200")
    monkeypatch.setattr(runner, "bench_one", fake_bench_one)
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", "ch09.fused_l2norm", "--targets", "ch09.memory_bound",
                                   "--db", str(tmp_path / "a.db"), "--profiles-dir", str(tmp_path / "p")])
    lines = res.stderr.splitlines()
    assert any(ln.startswith("== ch09.fused_l2norm (1/2), 0 s into the bench") for ln in lines), res.stderr
    assert any(ln.startswith("== ch09.memory_bound (2/2), ") for ln in lines), res.stderr
    assert any(ln.strip().startswith("ch09.fused_l2norm: ok (") for ln in lines), res.stderr
    assert any("ch09.memory_bound: failed_check (wrong at row 3)" in ln for ln in lines), res.stderr


def test_a_planted_slowdown_module_is_judged_against_the_shipped_evidence(monkeypatch, tmp_path):
    """tests/fixtures/gate_kernels holds modules named like shipped pairs with a planted slowdown and
    no expectations file: on a 4-GPU H200 visit its ch09.fused_l2norm got NEW for every variant and
    exit 0 (the planted +10% unseen). The shipped evidence applies when reading; recording never
    writes into it from such a folder."""
    from aisp_prof.bench.runner import BenchOptions, evidence_path
    from aisp_prof.paths import data_root

    monkeypatch.setenv("AISP_KERNELS", str(data_root() / "tests" / "fixtures" / "gate_kernels"))
    shipped = data_root() / "kernels" / "ch09" / "expectations_h200.json"
    assert evidence_path(BenchOptions(), "ch09", "h200") == shipped
    beside = evidence_path(BenchOptions(update_expectations=True), "ch09", "h200")
    assert beside == data_root() / "tests" / "fixtures" / "gate_kernels" / "ch09" / "expectations_h200.json"
    assert evidence_path(BenchOptions(), "ch99", "h200").parent.name == "ch99"      # none shipped: its own
    mine = tmp_path / "mine.json"
    assert evidence_path(BenchOptions(expectations=mine), "ch09", "h200") == mine


def test_every_planted_module_wraps_the_shipped_pair_and_names_its_own_file(monkeypatch):
    """The three gate_kernels modules load the real pair through one helper (pairs.discovery.
    shipped_module) that leaves its PAIR as written: discovered under $AISP_KERNELS, each PAIR is
    the shipped pair's name and sizes with its own file as `source` (what a verdict's code digest
    reads), never the real file's."""
    pytest.importorskip("torch")
    from aisp_prof import pairs
    from aisp_prof.pairs.discovery import shipped_module
    from aisp_prof.paths import data_root

    fixtures = data_root() / "tests" / "fixtures" / "gate_kernels"
    monkeypatch.setenv("AISP_KERNELS", str(fixtures))
    planted = {p.name: p for p in pairs.discover()}
    assert sorted(planted) == ["ch09.fused_l2norm", "ch14.attention_eager_sdpa", "ch14.quantized_allreduce"]
    for name, pair in planted.items():
        chapter, stem = name.split(".")
        real = shipped_module(chapter, stem)
        assert pair.source == str(fixtures / chapter / f"{stem}.py")
        assert real.PAIR.source != pair.source and pair.sizes == real.PAIR.sizes
        assert real.__file__ == str(data_root() / "kernels" / chapter / f"{stem}.py")
