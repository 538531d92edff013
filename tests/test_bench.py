"""Benchmark statistics, expectations and the regression gate, without a GPU."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from aisp_prof.bench import expectations as exp
from aisp_prof.cli import cli
from aisp_prof.collect.timing import input_sets_needed, summarize_times
from aisp_prof.naming import hardware_key
from aisp_prof.store.history import pair_history
from aisp_prof.store.ingest import sample_run_dirs, store_path


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


def _entry(base_ns, opt_ns, spread=0.01):
    timings = {"baseline": {"median_ns": base_ns, "rel_spread": spread},
               "cuda": {"median_ns": opt_ns, "rel_spread": spread}}
    return exp.pair_entry("ch09.x", {"n": 1}, timings, analytic_flops=1000, analytic_bytes=2000,
                          provenance={"gpu_name": "NVIDIA H200"})


def test_tolerance_comes_from_the_recorded_spread():
    assert exp.tolerance(0.001, 0.001) == exp.MIN_TOLERANCE
    assert exp.tolerance(0.03, 0.04) == pytest.approx(4 * 0.05)


def test_gate_flags_a_time_regression_beyond_noise_only():
    expected = _entry(400_000, 130_000)
    same = exp.compare(expected, _entry(401_000, 131_000))
    assert {v.status for v in same} == {"ok"} and not exp.gate_failed(same)
    slower = exp.compare(expected, _entry(400_000, 150_000))
    status = {(v.variant, v.what): v.status for v in slower}
    assert status[("cuda", "time")] == "regressed" and status[("cuda", "speedup")] == "regressed"
    assert exp.gate_failed(slower)
    # the same 15% on a noisy pair (10% spread each) is within tolerance
    noisy = exp.compare(_entry(400_000, 130_000, 0.1), _entry(400_000, 150_000, 0.1))
    assert not exp.gate_failed(noisy)


def test_new_missing_and_failed_pairs():
    expected = _entry(400_000, 130_000)
    observed = _entry(400_000, 130_000)
    del observed["variants"]["cuda"]
    verdicts = exp.compare(expected, observed)
    assert ("cuda", "missing") in {(v.variant, v.status) for v in verdicts} and exp.gate_failed(verdicts)
    assert [v.status for v in exp.compare(None, _entry(1, 1))] == ["new", "new"]
    assert exp.gate_failed(exp.compare(expected, {"pair": "ch09.x", "variants": {}}, correct=False))


def test_expectations_round_trip(tmp_path):
    path = exp.expectations_path(tmp_path, "ch09", "h200")
    path.parent.mkdir()
    exp.save(path, {"pairs": {"ch09.x": _entry(400_000, 130_000)}})
    assert exp.load(path)["pairs"]["ch09.x"]["variants"]["cuda"]["speedup_vs_baseline"] == pytest.approx(400 / 130)
    assert exp.load(tmp_path / "nope.json") == {"pairs": {}}


def test_history_of_the_sample_pair(tmp_path):
    db = tmp_path / "a.db"
    store_path(db, sample_run_dirs()[0])
    rows = pair_history(db, "ch09.fused_l2norm")
    assert [r["variant"] for r in rows] == ["baseline", "cuda", "triton"]
    cuda = rows[1]
    assert cuda["speedup_vs_baseline"] == pytest.approx(rows[0]["median_ns"] / cuda["median_ns"])
    res = CliRunner().invoke(cli, ["history", "ch09.fused_l2norm", "--db", str(db), "--json"])
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == 3


def test_bench_without_gpu_exits_3(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", "ch09", "--db", str(tmp_path / "a.db"),
                                   "--profiles-dir", str(tmp_path / "p")])
    assert res.exit_code == 3, res.output


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
        verdicts = exp.compare(None, {"pair": pair.name, "variants": {}}, False)
        return runner.PairOutcome(pair.name, "run-1", "failed_check", message, verdicts)

    monkeypatch.setattr(runner, "current_hardware_key", lambda *a: "h100_80gb_hbm3")
    monkeypatch.setattr(runner, "bench_one", fake_bench_one)
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", "ch09.warp_specialization_producer_consumer",
                                   "--db", str(tmp_path / "a.db"), "--profiles-dir", str(tmp_path / "p")])
    assert res.exit_code == 7, res.output
    assert "failed_check: " + message in res.stdout
    assert "ch09.warp_specialization_producer_consumer" in res.stderr and "warp_specialized_tma" in res.stderr
