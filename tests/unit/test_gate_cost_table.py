"""benchmarks/gate_cost_table.py reads the time a gate spent per pair off its stamped progress log; the
numbers of benchmarks/results/gate_cost_h200.md come from it. Checked on that file's three real logs (H200,
2026-11-30: `cold` and `cold_b`, each the first call of a fresh lease, code 6b9b788, the whole book in one call;
`warm`, code 4a4881d, the everyday gate in one call) against what the gate itself said of each pair, and the md's
claims against the committed logs, cost files (the table's `--json --runs` output) and each call's `--json`."""
from __future__ import annotations

import gzip
import json
import re
import statistics
import sys

import pytest
from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

from gate_cost_table import main, read, table  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CALLS = ("cold", "cold_b", "warm")
FRESH = ("cold", "cold_b")
# judged by host-side time: their processes start afresh (import torch), every other one is forked
HOST_TIMED = {"ch14.attention_eager_sdpa", "ch14.gpu_quantization", "ch14.graph_break_control_flow",
              "ch14.triton_persistent"}
LOG = {k: RESULTS / f"gate_cost_h200_{k}.log" for k in CALLS}
COST = {k: RESULTS / f"gate_cost_h200_{k}_cost.json" for k in CALLS}
MD = RESULTS / "gate_cost_h200.md"
OUTCOME = re.compile(r"^\s*[\d.]+\s+(ch\d+\.\S+): (?:ok|skipped)\b.*\((\d+\.\d) s\)$")


def cost(call: str) -> dict:
    return read(LOG[call].read_text())


def chapter_s(call: str, chapter: str) -> float:
    return round(sum(p["s"] for p in cost(call)["pairs"] if p["chapter"] == chapter), 1)


def runs(call: str) -> dict[str, dict]:
    return {r["pair"]: r for r in json.loads((RESULTS / f"gate_cost_h200_{call}_cost.json").read_text())["runs"]}


@pytest.mark.parametrize("call", CALLS)
def test_each_pair_costs_what_the_gate_said_it_cost(call):
    """Each finished pair's seconds (from its `==` line to the next) match the duration its own outcome
    line reports, within the 0.2 s the stamping and the storing of the run add."""
    said = {m[1]: float(m[2]) for line in LOG[call].read_text().splitlines() if (m := OUTCOME.match(line))}
    finished = [p for p in cost(call)["pairs"] if p["status"] != "cut off"]
    assert len(said) == len(finished) >= 48
    for p in finished:
        assert p["s"] == pytest.approx(said[p["pair"]], abs=0.2), p["pair"]


@pytest.mark.parametrize("call", CALLS)
def test_the_committed_cost_file_is_the_tables_reading_of_its_log(call):
    committed = json.loads(COST[call].read_text())
    assert {k: committed[k] for k in ("pairs", "builds", "log_s")} == cost(call)


def test_every_call_finished_the_book_in_one_call():
    """Both fresh machines and the everyday gate: 49 pairs, none cut off, the two that one Hopper GPU cannot
    run skipped; the md says each call's log length."""
    md = MD.read_text()
    for call, log_s in (("cold", 552.0), ("cold_b", 550.7), ("warm", 466.6)):
        done = cost(call)
        assert len(done["pairs"]) == 49 and all(p["status"] in ("ok", "skipped") for p in done["pairs"]), call
        assert [p["pair"] for p in done["pairs"] if p["status"] == "skipped"] == ["ch14.quantized_allreduce",
                                                                                   "ch09.nvfp4_gemm"], call
        assert done["log_s"] == log_s, call
        assert f"49 pairs (2 skipped on one Hopper GPU) in {log_s} s of the log" in md, call
        text = table(done)
        assert max(len(line) for line in text.splitlines()) <= 120
    assert "twice: 552.0 s and 550.7 s (9.2 minutes), exit 0" in md


def test_the_md_per_part_table_is_the_logs():
    md = MD.read_text()
    first = [float(LOG[c].read_text().split()[0]) for c in CALLS]       # the parent's start
    assert f"| the parent's start (the first stamped line) | {' | '.join(map(str, first))} |" in md
    assert cost("cold")["builds"] == {"libraries": 25, "built": 25, "s": 66.6}
    assert cost("cold_b")["builds"] == {"libraries": 25, "built": 25, "s": 67.4}
    assert cost("warm")["builds"] == {"libraries": 0, "built": 0, "s": 0.0}     # every library kept: no line
    assert "| builds, 8 at a time | 66.6 (25 built) | 67.4 (25 built) | none needed |" in md
    for chapter, n in (("ch14", 12), ("ch09", 13), ("ch10", 24)):
        assert f"| {chapter}, {n} pairs | {' | '.join(str(chapter_s(c, chapter)) for c in CALLS)} |" in md
    assert f"| the log | {' | '.join(str(cost(c)['log_s']) for c in CALLS)} |" in md
    for call in CALLS:                     # the parts add up: the start, the builds, the three chapters
        done = cost(call)
        parts = sum(chapter_s(call, ch) for ch in ("ch14", "ch09", "ch10")) + done["pairs"][0]["start_s"]
        assert round(parts, 1) == done["log_s"], call


def test_the_md_chapter_14_rows_are_the_logs():
    md, logs = MD.read_text(), {c: {p["pair"]: p for p in cost(c)["pairs"]} for c in CALLS}
    have = {c: runs(c) for c in CALLS}
    rows = 0
    for pair, warm in logs["warm"].items():
        if not pair.startswith("ch14.") or warm["status"] == "skipped":
            continue
        cells = [f"{logs[c][pair]['s']}" + (f" ({logs[c][pair]['processes']} processes)"
                                            if logs[c][pair]["processes"] > 1 else "") for c in CALLS]
        f = " / ".join(str(have[c][pair]["factories_in_check_s"]) for c in CALLS)
        assert f"| {pair} | {' | '.join(cells)} | {f} |" in md, pair
        rows += 1
    assert rows == 11


def test_the_fresh_calls_json_has_nothing_that_fails_and_says_where_evidence_is_of_other_code():
    """Each fresh call's --json: exit-0 verdicts (no SLOWER or FASTER of a pair's own variants but a library
    read as a machine reference), the reference kernels' moves the md counts, and the pairs whose code the
    split changed judged against evidence of the code before, which the gate said."""
    md = MD.read_text()
    for call, refs in (("cold", 6), ("cold_b", 3)):
        gate = json.loads(gzip.decompress((RESULTS / f"gate_cost_h200_{call}.json.gz").read_bytes()))
        assert gate["fails"] is False and set(p["pair"] for p in gate["pairs"]) == set(logs_pairs(call))
        verdicts = [v for p in gate["pairs"] for v in p.get("verdicts") or []]
        moved = [v for v in verdicts if v["verdict"] in ("SLOWER", "FASTER") and not v["reference"]]
        assert [(v["pair"], v["variant"], v["verdict"]) for v in moved] == \
            ([("ch10.matmul_wgmma_pipelined", "cublas", "SLOWER")] if call == "cold" else [])
        assert all("machine reference" in v["cause"] for v in moved)
        assert len([v for v in verdicts if v["reference"] and v["verdict"] != "SAME"]) == refs
        other = sorted(p["pair"] for p in gate["pairs"] if "recorded from other code" in (p.get("message") or ""))
        assert other == (["ch09.cutlass_gemm", "ch10.warp_specialization_cutlass", "ch10.warpgroup_specialization",
                          "ch14.cublas_vs_cutlass"] if call == "cold" else ["ch10.warpgroup_specialization"])
    assert "(6 in cold, 3 in cold_b)" in md and "cycles (+4.6%; time +1.9%, SAME)" in md


def logs_pairs(call: str) -> list[str]:
    return [p["pair"] for p in cost(call)["pairs"]]


def test_forked_check_processes_did_not_import_torch_and_the_host_timed_ones_did():
    for call in CALLS:
        ran = {p["pair"] for p in cost(call)["pairs"] if p["status"] == "ok"}
        have = runs(call)
        assert set(have) >= ran and len(ran) >= 46, call
        fresh = {pair for pair, r in have.items() if r["phases_s"]["import_torch"] > 2.0}
        assert fresh == HOST_TIMED, call
        assert max(r["phases_s"]["import_torch"] for pair, r in have.items() if pair not in fresh) < 0.1


def test_the_parent_s_share_of_a_one_process_pair_is_what_the_md_says():
    """The md's measure of 4a4881d: a one-process pair's time beyond its check process's own wall,
    median 0.50 s over 45 pairs of the warm call (1.70 s over 41 before: 494fa09's copy of the earlier log),
    and the check processes' load_pair median 0.14 s."""
    logs, have = {p["pair"]: p for p in cost("warm")["pairs"]}, runs("warm")
    beyond = [logs[pair]["s"] - r["check_process_wall_s"] for pair, r in have.items()
              if logs[pair]["processes"] == 1 and logs[pair]["status"] == "ok"]
    assert len(beyond) == 45 and round(statistics.median(beyond), 2) == 0.50
    assert round(statistics.median(r["phases_s"]["load_pair"] for r in have.values()), 2) == 0.14
    md = MD.read_text()
    assert "median **1.70 s -> 0.50 s** (41 pairs" in md and "45 of this warm call" in md
    assert "`load_pair` median 0.45 -> 0.14 s" in md


def test_the_warm_call_s_json_is_its_log_s_verdicts():
    """The shipped --json holds every pair the log names, no SLOWER or FASTER of a pair's own variants, and
    the one reference kernel the md names as SLOWER by time only: the machine's clock, not its cycles."""
    gate = json.loads(gzip.decompress((RESULTS / "gate_cost_h200_warm.json.gz").read_bytes()))
    pairs = {p["pair"]: p for p in gate["pairs"]}
    assert set(pairs) == {p["pair"] for p in cost("warm")["pairs"]}
    verdicts = [v for p in gate["pairs"] for v in p.get("verdicts") or []]
    assert len(verdicts) > 100 and not [v for v in verdicts if v["verdict"] in ("SLOWER", "FASTER")
                                        and not v["reference"]]
    (ref,) = [v for v in verdicts if v["reference"] and v["verdict"] == "SLOWER"]
    metric = {m["metric"]: m for m in ref["metrics"]}
    assert (ref["pair"], metric["time"]["verdict"], metric["cycles"]["verdict"]) == \
        ("ch10.warp_specialization_cutlass", "SLOWER", "AMBIGUOUS")
    assert "+9.7% at a lower SM clock (cycles -1.9%)" in MD.read_text()
    change = {k: round(m["change"]["value"] - 1, 3) for k, m in metric.items()}
    assert (change["time"], change["cycles"]) == (0.097, -0.019)
    regional = {v["variant"]: v["verdict"] for v in pairs["ch14.regional_triton"]["verdicts"] if not v["reference"]}
    assert regional == {"baseline": "AMBIGUOUS", "regional": "SAME", "eager": "SAME", "book_baseline": "SAME"}


def test_a_second_timing_process_splits_the_pair():
    """ch14.regional_triton took two processes in the warm call: the first process's share ends where the
    second starts; warpgroup_specialization took three."""
    pairs = {p["pair"]: p for p in cost("warm")["pairs"]}
    regional = pairs["ch14.regional_triton"]
    assert regional["processes"] == 2 and 0 < regional["first_process_s"] < regional["s"]
    assert pairs["ch10.warpgroup_specialization"]["processes"] == 3
    assert pairs["ch10.attention"]["processes"] == 1


def test_cli_json_and_a_missing_log(tmp_path, capsys):
    assert main([str(LOG["warm"]), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["pairs"]) == 49
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
    from gate_cost_table import runs as folder_runs

    return folder_runs(ROOT / "profiles" / "samples_h200_ch14")


CUT = "cold_c"            # a third fresh machine (code 1d46fe7), cut off by its call's limit


def test_the_cut_fresh_call_is_what_the_md_says():
    """cold_c's log: 34 pairs finished, cut in ch10.flash_attn_tma_micro_pipeline at 586.4 s, its interrupted
    --json failing nothing; the same 34 pairs took 18% longer than in cold, and the md's comparison is the logs'."""
    log, md = RESULTS / f"gate_cost_h200_{CUT}.log", MD.read_text()
    done = read(log.read_text())
    assert done == {k: json.loads((RESULTS / f"gate_cost_h200_{CUT}_cost.json").read_text())[k]
                    for k in ("pairs", "builds", "log_s")}
    finished = [p for p in done["pairs"] if p["status"] in ("ok", "skipped")]
    assert [p["pair"] for p in done["pairs"] if p["status"] == "cut off"] == ["ch10.flash_attn_tma_micro_pipeline"]
    assert (len(finished), done["log_s"], done["builds"]["s"]) == (34, 586.4, 71.0)
    assert "34 of the 49 pairs finished in 586.4 s of the log" in md
    cold = {p["pair"]: p["s"] for p in cost("cold")["pairs"]}
    pair_s = (round(sum(p["s"] for p in finished), 1), round(sum(cold[p["pair"]] for p in finished), 1))
    assert pair_s == (506.9, 429.1) and "**506.9 s against 429.1 s** in cold" in md
    factories = {c: round(sum(r["factories_in_check_s"] for pair, r in runs(c).items() if pair.startswith("ch14.")), 1)
                 for c in ("cold", CUT)}
    assert factories == {"cold": 202.6, CUT: 248.5} and "248.5 s against 202.6 s" in md
    gate = json.loads(gzip.decompress((RESULTS / f"gate_cost_h200_{CUT}.json.gz").read_bytes()))
    assert gate["interrupted"] is True and gate["fails"] is False
    other = [p["pair"] for p in gate["pairs"] if "recorded from other code" in (p.get("message") or "")]
    assert other == ["ch09.cutlass_gemm"]          # the build_parts.h comment, since reverted (test_code_digest.py)


def test_the_build_parts_results_are_what_the_docs_say():
    """benchmarks/build_parts.py on the 2-core CPU machine (parts lose) and on a 16-core H200 machine (parts win by
    about a fifth): the docs quote these rounds."""
    h200 = [json.loads(line) for line in (RESULTS / "build_parts_h200.jsonl").read_text().splitlines()]
    assert [(r["mode"], r["wall_s"], r["cpus"]) for r in h200] == [
        ("parts", 79.4, 16), ("whole", 102.5, 16), ("parts", 78.9, 16), ("whole", 96.7, 16)]
    assert "**the parts took 79.4 and 78.9 s, whole 102.5 and 96.7 s**" in MD.read_text()
    cpu = [json.loads(line) for line in (RESULTS / "build_parts_2cpu.jsonl").read_text().splitlines()]
    assert [(r["mode"], r["wall_s"]) for r in cpu] == [("parts", 112.3), ("whole", 59.7)]
