"""benchmarks/gate_cost_table.py reads the time a gate spent per pair off its stamped progress log; the
numbers of benchmarks/results/gate_cost_h200.md come from it. Checked on that file's two real logs
(H200, 2026-11-29, both cut by the GPU call's limit) against what the gate itself said of each pair."""
from __future__ import annotations

import json
import re
import sys

import pytest
from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

from gate_cost_table import main, read, table  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
COLD, WARM = RESULTS / "gate_cost_h200_cold.log", RESULTS / "gate_cost_h200_warm.log"
OUTCOME = re.compile(r"^\s*[\d.]+\s+(ch\d+\.\S+): (?:ok|skipped)\b.*\((\d+\.\d) s\)$")


@pytest.mark.parametrize("log", [COLD, WARM], ids=["cold", "warm"])
def test_each_pair_costs_what_the_gate_said_it_cost(log):
    """Each finished pair's seconds (from its `==` line to the next) match the duration its own outcome
    line reports, within the 0.2 s the stamping and the storing of the run add."""
    said = {m[1]: float(m[2]) for line in log.read_text().splitlines() if (m := OUTCOME.match(line))}
    cost = read(log.read_text())
    finished = [p for p in cost["pairs"] if p["status"] != "cut off"]
    assert len(said) == len(finished) >= 20
    for p in finished:
        assert p["s"] == pytest.approx(said[p["pair"]], abs=0.2), p["pair"]
    assert [p["status"] for p in cost["pairs"]][-1] == "cut off"      # both calls ran out of time in a pair


def test_cold_log_has_the_builds_and_chapter_14_first():
    cost = read(COLD.read_text())
    assert cost["builds"] == {"libraries": 25, "built": 25, "s": 96.2}
    assert [p["chapter"] for p in cost["pairs"][:12]] == ["ch14"] * 12
    assert cost["pairs"][-1]["pair"] == "ch09.structured_sparsity_ffn"
    skipped = {p["pair"] for p in cost["pairs"] if p["status"] == "skipped"}
    assert skipped == {"ch14.quantized_allreduce", "ch09.nvfp4_gemm"}
    text = table(cost)
    assert "cut off in ch09.structured_sparsity_ffn" in text and max(len(line) for line in text.splitlines()) <= 120


def test_a_second_timing_process_splits_the_pair():
    """ch10.matmul_wgmma_pipelined needed a second process in the warm call: the first process's share
    ends where the second starts."""
    pair = next(p for p in read(WARM.read_text())["pairs"] if p["pair"] == "ch10.matmul_wgmma_pipelined")
    assert pair["processes"] == 2 and 0 < pair["first_process_s"] < pair["s"]
    assert all(p["processes"] == 1 for p in read(WARM.read_text())["pairs"] if p is not pair
               and p["pair"] != "ch10.matmul_wgmma_pipelined")


def test_cli_json_and_a_missing_log(tmp_path, capsys):
    assert main([str(WARM), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["pairs"]) == 44
    assert main([str(tmp_path / "none.log")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read" in err


def test_runs_split_a_check_process_into_compile_and_the_rest():
    """On the shipped H200 chapter 14 runs (empty compile caches at the start of each): the compiled
    pairs' factories are most of their check process, a pair with nothing to compile spends ~nothing."""
    by_pair = {r["pair"]: r for r in main_runs()}
    assert len(by_pair) == 11
    regional, eager = by_pair["ch14.regional_triton"], by_pair["ch14.attention_eager_sdpa"]
    assert 0.5 * regional["check_process_wall_s"] < regional["factories_in_check_s"] < regional["check_process_wall_s"]
    assert eager["factories_in_check_s"] < 1.0 < eager["check_process_wall_s"]


def main_runs():
    from gate_cost_table import runs

    return runs(ROOT / "profiles" / "samples_h200_ch14")
