"""benchmarks/gate_cost_table.py reads the time a gate spent per pair off its stamped progress log; the
numbers of benchmarks/results/gate_cost_h200.md come from it. Checked on that file's five real logs
(H200, 2026-11-29: `fresh` processes on code a921a08, cut by the call's limit; `cold`, forked, finished;
`warm`, forked with the libraries built, cut; on another lease, code 08f7e5d, one compile cache kept
between gates: `shared_cold` from empty caches, cut in ch10, then `shared_warm`, the whole book)
against what the gate itself said of each pair, and the md's claims against the committed logs and cost
files (the table's `--json --runs` output)."""
from __future__ import annotations

import json
import re
import sys

import pytest
from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

from gate_cost_table import main, read, table  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CALLS = ("fresh", "cold", "warm", "shared_cold", "shared_warm")
# judged by host-side time: fresh processes again since 4e19d11 (the shared calls ran after it)
HOST_TIMED = {"ch14.attention_eager_sdpa", "ch14.gpu_quantization", "ch14.graph_break_control_flow",
              "ch14.triton_persistent"}
LOG = {k: RESULTS / f"gate_cost_h200_{k}.log" for k in CALLS}
COST = {k: RESULTS / f"gate_cost_h200_{k}_cost.json" for k in CALLS}
OUTCOME = re.compile(r"^\s*[\d.]+\s+(ch\d+\.\S+): (?:ok|skipped)\b.*\((\d+\.\d) s\)$")


def cost(call: str) -> dict:
    return read(LOG[call].read_text())


def chapter_s(call: str, chapter: str) -> float:
    return round(sum(p["s"] for p in cost(call)["pairs"] if p["chapter"] == chapter), 1)


@pytest.mark.parametrize("call", CALLS)
def test_each_pair_costs_what_the_gate_said_it_cost(call):
    """Each finished pair's seconds (from its `==` line to the next) match the duration its own outcome
    line reports, within the 0.2 s the stamping and the storing of the run add."""
    said = {m[1]: float(m[2]) for line in LOG[call].read_text().splitlines() if (m := OUTCOME.match(line))}
    finished = [p for p in cost(call)["pairs"] if p["status"] != "cut off"]
    assert len(said) == len(finished) >= 20
    for p in finished:
        assert p["s"] == pytest.approx(said[p["pair"]], abs=0.2), p["pair"]


@pytest.mark.parametrize("call", CALLS)
def test_the_committed_cost_file_is_the_tables_reading_of_its_log(call):
    committed = json.loads(COST[call].read_text())
    assert {k: committed[k] for k in ("pairs", "builds", "log_s")} == cost(call)


def test_the_forked_cold_call_finished_and_the_others_were_cut():
    cold = cost("cold")
    assert len(cold["pairs"]) == 37 and all(p["status"] in ("ok", "skipped") for p in cold["pairs"])
    assert cold["pairs"][-1]["pair"] == "ch09.warp_specialization_producer_consumer" and cold["log_s"] == 394.1
    fresh, warm = cost("fresh"), cost("warm")
    assert [p["pair"] for p in fresh["pairs"] if p["status"] == "cut off"] == ["ch09.structured_sparsity_ffn"]
    assert [p["pair"] for p in warm["pairs"] if p["status"] == "cut off"] == \
        ["ch09.warp_specialization_producer_consumer"]
    assert [p["chapter"] for p in warm["pairs"]] == ["ch14"] * 12 + ["ch09"] * 13      # ch10 not reached
    text = table(warm)
    assert "cut off in ch09.warp_specialization_producer_consumer" in text
    assert max(len(line) for line in text.splitlines()) <= 120


def test_the_builds_line():
    assert cost("fresh")["builds"] == {"libraries": 24, "built": 24, "s": 126.2}
    assert cost("cold")["builds"] == {"libraries": 24, "built": 24, "s": 106.6}
    assert cost("warm")["builds"] == {"libraries": 1, "built": 1, "s": 57.0}   # cublas_vs_cutlass.cu only
    assert cost("shared_cold")["builds"] == {"libraries": 25, "built": 25, "s": 93.7}
    assert cost("shared_warm")["builds"] == {"libraries": 0, "built": 0, "s": 0.0}   # every library kept: no line


def test_forked_check_processes_did_not_import_torch_and_fresh_ones_did():
    """The md's claim: every forked check process spent < 0.1 s in import_torch, every fresh one > 2 s;
    one check process per pair that ran (skipped pairs have none). In the shared calls (after 4e19d11)
    the four host-timed ch14 pairs are the fresh ones."""
    for call in CALLS:
        runs = json.loads(COST[call].read_text())["runs"]
        ran = {p["pair"] for p in cost(call)["pairs"] if p["status"] == "ok"}
        assert {r["pair"] for r in runs} == ran and len(runs) == len(ran) >= 20, call
        imports = [r["phases_s"]["import_torch"] for r in runs]
        if call == "fresh":
            assert min(imports) > 2.0
        elif call.startswith("shared"):
            fresh = {r["pair"] for r in runs if r["phases_s"]["import_torch"] > 2.0}
            assert fresh == HOST_TIMED, call
            assert max(r["phases_s"]["import_torch"] for r in runs if r["pair"] not in fresh) < 0.1
        else:
            assert max(imports) < 0.1


def test_the_md_per_part_table_and_the_book_sum_are_the_logs():
    md = (RESULTS / "gate_cost_h200.md").read_text()
    assert f"| ch10, 24 pairs | {chapter_s('fresh', 'ch10')} | {chapter_s('cold', 'ch10')} | not reached |" in md
    assert f"| ch09, 13 pairs | {chapter_s('fresh', 'ch09')} (cut" in md
    assert f"| {chapter_s('cold', 'ch09')} | {chapter_s('warm', 'ch09')} (cut" in md
    assert f"| ch14, 12 pairs | not run | not run | {chapter_s('warm', 'ch14')} " in md
    book = round(chapter_s("warm", "ch14") + chapter_s("cold", "ch09") + chapter_s("cold", "ch10"), 1)
    assert book == 640.3 and f"= {book} s" in md


def test_the_shared_cache_calls_cut_and_finished():
    """shared_cold was cut in ch10's third pair; shared_warm finished the whole book (49 pairs) in one call."""
    cold, warm = cost("shared_cold"), cost("shared_warm")
    assert [p["pair"] for p in cold["pairs"] if p["status"] == "cut off"] == ["ch10.cluster_group"]
    assert [p["chapter"] for p in cold["pairs"]] == ["ch14"] * 12 + ["ch09"] * 13 + ["ch10"] * 3
    assert len(warm["pairs"]) == 49 and all(p["status"] in ("ok", "skipped") for p in warm["pairs"])
    assert warm["log_s"] == 461.0 and cold["log_s"] == 580.3


def test_the_md_shared_cache_section_is_the_logs():
    """The per-part table, the per-pair ch14 rows and the fresh-machine sum of the shared-cache section."""
    md = (RESULTS / "gate_cost_h200.md").read_text()
    cold, warm = cost("shared_cold"), cost("shared_warm")
    assert f"| ch14, 12 pairs | {chapter_s('shared_cold', 'ch14')} | {chapter_s('shared_warm', 'ch14')} |" in md
    assert f"| ch09, 13 pairs | {chapter_s('shared_cold', 'ch09')} | {chapter_s('shared_warm', 'ch09')} |" in md
    assert f"| ch10, 24 pairs | {chapter_s('shared_cold', 'ch10')} (2 finished" in md
    assert f"{chapter_s('shared_warm', 'ch10')} |" in md
    assert f"| the log | {cold['log_s']} (cut) | {warm['log_s']} |" in md
    first = [float(LOG[c].read_text().split()[0]) for c in ("shared_cold", "shared_warm")]   # the parent's start
    assert f"| the parent's start (the first stamped line) | {first[0]} | {first[1]} |" in md
    assert round(sum(chapter_s(c, ch) for c, ch in (("shared_warm", "ch14"), ("shared_warm", "ch09"),
                                                   ("shared_warm", "ch10"))) + warm["pairs"][0]["start_s"], 1) \
        == warm["log_s"]
    own, runs = {p["pair"]: p for p in cost("warm")["pairs"]}, {}
    for call in ("warm", "shared_cold", "shared_warm"):
        runs[call] = {r["pair"]: r for r in json.loads(COST[call].read_text())["runs"]}
    logs = {c: {p["pair"]: p["s"] for p in cost(c)["pairs"]} for c in ("shared_cold", "shared_warm")}
    for pair in runs["shared_warm"]:
        if pair.startswith("ch14."):
            f = " / ".join(str(runs[c][pair]["factories_in_check_s"]) for c in ("warm", "shared_cold", "shared_warm"))
            row = f"| {pair} | {own[pair]['s']} | {logs['shared_cold'][pair]} | {logs['shared_warm'][pair]} | {f} |"
            assert row in md
    ch10_at = next(p["start_s"] for p in cold["pairs"] if p["chapter"] == "ch10")
    fresh_machine = round(ch10_at + chapter_s("cold", "ch10"), 1)
    assert (ch10_at, fresh_machine) == (565.1, 717.2) and f"at {ch10_at} s" in md
    assert f"**{fresh_machine} s, 12.0 minutes**" in md


def test_a_second_timing_process_splits_the_pair():
    """ch10.matmul_wgmma_pipelined needed three processes in the cold call: the first process's share
    ends where the second starts."""
    pairs = {p["pair"]: p for p in cost("cold")["pairs"]}
    pipelined = pairs["ch10.matmul_wgmma_pipelined"]
    assert pipelined["processes"] == 3 and 0 < pipelined["first_process_s"] < pipelined["s"]
    assert pairs["ch10.warp_specialization"]["processes"] == 2
    assert pairs["ch10.attention"]["processes"] == 1


def test_cli_json_and_a_missing_log(tmp_path, capsys):
    assert main([str(LOG["warm"]), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["pairs"]) == 25
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
