"""benchmarks/sampling_replay.py replays the timer's stopping rule on a real gate run's samples and judges the
cut samples with the gate's own code (benchmarks/results/sampling_replay_h200.md). Checked on a fresh H200
lease's chapter 14 gate (tests/fixtures/gate/h200_fresh_lease_ch14_gate.db.gz): at the gate's own target the
replay stops each process where the real one stopped by precision, never earlier than any real process
stopped; and the uncut samples judged against the evidence the gate read that day
(expectations_h200_ch14_at_gate.json.gz, kernels/ch14/expectations_h200.json at f84572c) give the verdicts
the gate stored, every one: the replay's verdicts are the gate's."""
from __future__ import annotations

import json
import sys

import pytest
from repo_paths import FIXTURES, ROOT
from sample_files import plain_file

sys.path.insert(0, str(ROOT / "benchmarks"))

from sampling_replay import (GATE_MIN_ROUNDS, GATE_TARGET, from_db, gate_verdicts, main,  # noqa: E402
                             replay, stop_round)

GATE = FIXTURES / "gate"
AT_GATE = GATE / "expectations_h200_ch14_at_gate.json.gz"
# the rounds each real process took where it stopped by precision (the others ran to 400 rounds or
# out of their 2 s budget: gpu_quantization 389, model_compile_reduced_precision 49, triton_persistent 282)
BY_PRECISION = {"ch14.cublas_vs_cutlass": [43], "ch14.cuda_python": [29], "ch14.flex_attention_sparse": [98],
                "ch14.regional_triton": [21, 29], "ch14.sliding_window": [71], "ch14.sliding_window_causal": [21]}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return plain_file(GATE / "h200_fresh_lease_ch14_gate.db", tmp_path_factory.mktemp("lease") / "g.db")


@pytest.fixture(scope="module")
def runs(db):
    return {t.pair: t for t in from_db(db, AT_GATE)}


def _processes(t):
    return [g for _, g in t.samples.groupby("process", sort=True)]


def test_at_the_gates_target_the_replay_stops_where_the_real_processes_stopped(runs):
    assert len(runs) == 11
    for pair, t in runs.items():
        for g in _processes(t):
            taken, stop = g["round"].nunique(), stop_round(g, lambda _v: GATE_TARGET, GATE_MIN_ROUNDS)
            assert stop is None or stop == taken, (pair, taken, stop)     # a real process never ran past its stop
    for pair, taken in BY_PRECISION.items():
        assert [stop_round(g, lambda _v: GATE_TARGET) for g in _processes(runs[pair])] == taken, pair
    assert [stop_round(g, lambda _v: GATE_TARGET) for g in _processes(runs["ch14.attention_eager_sdpa"])] == [None]


def test_a_looser_target_cuts_rounds_but_never_below_min_rounds(runs):
    result = replay(runs["ch14.cublas_vs_cutlass"], ["0.0025", "0.01", "margin/4"])
    kept = {t: [p["rounds_kept"] for p in cut["processes"]] for t, cut in result["targets"].items()}
    assert kept["0.0025"] == [43] and GATE_MIN_ROUNDS <= kept["0.01"][0] < 43
    assert result["targets"]["0.0025"]["processes"][0]["saved_s"] == 0
    for pair in ("ch14.regional_triton", "ch14.sliding_window_causal"):       # 21 rounds: cut to the floor
        cut = replay(runs[pair], ["0.01"])["targets"]["0.01"]
        assert [p["rounds_kept"] for p in cut["processes"]] == [GATE_MIN_ROUNDS] * len(cut["processes"]), pair


def test_judging_the_uncut_samples_gives_the_verdicts_the_gate_stored(runs):
    judged = 0
    for pair, t in runs.items():
        mine = {v.variant: v.verdict for v in gate_verdicts(t, t.samples)}
        assert mine == t.stored, pair
        judged += len(mine)
    assert judged == 52      # every row of its verdicts table


def test_against_todays_evidence_regional_triton_reads_otherwise(db, runs):
    """The oracle can fail: the same samples against the evidence shipped now (a fresh-cache session
    added after that gate) are no longer FASTER."""
    today = {t.pair: t for t in from_db(db, None)}["ch14.regional_triton"]
    assert runs["ch14.regional_triton"].stored["regional"] == "FASTER"
    assert {v.variant: v.verdict for v in gate_verdicts(today, today.samples)}["regional"] != "FASTER"


@pytest.mark.slow
def test_the_command_writes_its_results_as_json_and_a_table(db, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["--db", str(db), "--expectations", str(AT_GATE), "--targets", "0.0025,0.01",
                 "--save-json", str(out)]) == 0
    first = {t["target"]: t for t in json.loads(out.read_text())["totals"]}
    assert first["0.0025"]["rounds_kept"] == first["0.0025"]["rounds_taken"] == 1832
    assert first["0.0025"]["changes"] == [] and first["0.01"]["rounds_kept"] < 1832
    printed = capsys.readouterr().out
    assert "| gate db | 0.01 |" in printed
    assert main(["--from-json", str(out)]) == 0 and capsys.readouterr().out.strip() == printed.strip()


def test_bad_input_is_one_line_and_exit_2(db, tmp_path, capsys):
    assert main(["--db", str(tmp_path / "none.db")]) == 2
    assert main(["--db", str(db), "--targets", "tight"]) == 2
    assert main(["--runs", str(tmp_path)]) == 2
    assert main(["--from-json", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 4 and "Traceback" not in err and "none.db" in err


def _floor(timed, **kw):
    from sampling_replay import floor_replay

    return {f["pair"]: f for f in floor_replay(timed, **kw)}


def test_the_replay_reports_the_floor_where_the_budget_ran_out_first():
    """The ch09 recordings (the gate's plan): ffn and micro_tiling_matmul ran out of their 2 s at 10
    rounds, structured_sparsity at 37; the floor takes them on to 40 rounds (the 10-s cap allows it),
    past the samples, so the rounds are extrapolated, the seconds estimated and nothing judged.
    Processes that stopped by precision are not its business."""
    from sampling_replay import from_evidence

    every = from_evidence(ROOT / "kernels/ch09/expectations_h200.json")
    timed = [t for t in every if not t.run_id.startswith("20261129")]    # the first machine's sessions
    floor = _floor(timed)
    assert set(floor) == {"ch09.micro_tiling_matmul", "ch09.structured_sparsity", "ch09.structured_sparsity_ffn"}
    ffn = floor["ch09.structured_sparsity_ffn"]
    assert [(p["rounds_gate"], p["rounds_floor"], p["beyond"]) for p in ffn["processes"]] == [(10, 40, True)] * 2
    assert all(6.0 < p["extra_wall_s"] < 7.5 for p in ffn["processes"])      # 30 rounds of ~0.22 s
    assert ffn["changes"] is None and ffn["cap_s"] == 10.0
    assert [p["rounds_floor"] for p in floor["ch09.structured_sparsity"]["processes"]] == [40, 40]
    assert _floor(timed, floor_rounds=10) == {}                               # a floor at min_rounds: no change
    # the second machine's session (2026-11-29): only ffn ran out of its 2 s, at 30 rounds
    second = _floor([t for t in every if t.run_id.startswith("20261129")])
    assert set(second) == {"ch09.structured_sparsity_ffn"}
    assert [p["rounds_gate"] for p in second["ch09.structured_sparsity_ffn"]["processes"]] == [30, 30]


def test_where_the_samples_go_on_past_the_cut_the_floor_is_judged():
    """An `aisp-prof run` folder took 201 rounds of attention_eager_sdpa (all three kinds sampled): as
    if its rounds were ten times slower (a 0.2-s budget) the gate would stop at 19 and the floor at 40,
    both within the samples, so both cuts are judged and the floor changes no verdict. cublas_vs_cutlass's
    run the same way: its baseline, AMBIGUOUS at the gate's 22 rounds (+1.9% of a 2% margin), is SAME at 40."""
    from sampling_replay import from_run_folder

    run = from_run_folder(ROOT / "profiles/samples_h200_ch14/20261129T055034Z-ch14.attention_eager_sdpa-1dfa", None)
    sdpa = _floor([run], budget_s=0.2, median_s=0.0085)["ch14.attention_eager_sdpa"]
    assert [(p["rounds_gate"], p["rounds_floor"], p["beyond"]) for p in sdpa["processes"]] == [(19, 40, False)]
    assert sdpa["changes"] == []
    assert _floor([run], median_s=0.0085) == {}      # at the gate's 2 s its rounds never run the budget out
    run = from_run_folder(ROOT / "profiles/samples_h200_ch14/20261129T055435Z-ch14.cublas_vs_cutlass-c3cf", None)
    cublas = _floor([run], budget_s=0.2, median_s=0.0085)["ch14.cublas_vs_cutlass"]
    assert [(p["rounds_gate"], p["rounds_floor"]) for p in cublas["processes"]] == [(22, 40)]
    assert [(c["variant"], c["from"], c["to"]) for c in cublas["changes"]] == [("baseline", "AMBIGUOUS", "SAME")]
