"""The gate of a multi-rank pair, on the real per-rank samples of the 2x H200 run of
ch14.quantized_allreduce (profiles/samples_h200x2_ch14: check.json and check.rank1.json, 140 rounds
per variant on each rank): a call's time is its slowest rank's, clocks are kept per rank, the
evidence is keyed by rank count and card, and a slowdown on one rank is caught."""
from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest
from repo_paths import ROOT

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.verdict import SAME, SLOWER, judge
from aisp_prof.bench.runner import BenchOptions, pair_key
from aisp_prof.collect.process.steps import merge_rank_checks
from aisp_prof import pairs
from aisp_prof.stats import slowest_rank

RUN = ROOT / "profiles" / "samples_h200x2_ch14" / "20261126T231409Z-ch14.quantized_allreduce-3c06"
PAIR = "ch14.quantized_allreduce"


@pytest.fixture(scope="module")
def merged() -> dict:
    reports = [json.loads(gzip.open(RUN / name).read()) for name in ("check.json.gz", "check.rank1.json.gz")]
    return merge_rank_checks(reports)


@pytest.fixture(scope="module")
def samples(merged) -> pd.DataFrame:
    return pd.DataFrame(merged["samples"])


def test_merged_samples_are_every_ranks_each_with_its_rank(merged, samples):
    assert sorted(samples["rank"].unique()) == [0, 1]
    assert len(samples) == 2 * 560 and set(merged["sensor_per_rank"]) == {"0", "1"}


def test_a_calls_time_is_its_slowest_ranks(samples):
    slow = exp.of_kind(samples, "gpu")
    assert len(slow) == 560                                     # one row per timed call
    wide = samples.pivot_table(index=["round", "variant"], columns="rank", values="time_ns")
    got = slow.set_index(["round", "variant"])["time_ns"].sort_index()
    assert (got == wide.max(axis=1).sort_index()).all()
    assert set(slow["slowest_rank"]) == {0, 1}                  # neither rank is always the slow one
    assert len(slowest_rank(samples.to_dict("records"))) == 560   # the same rule on records (run summaries)


def test_a_session_keeps_clocks_per_rank(samples, merged):
    session = exp.session_of(samples, {"run_id": "x"}, merged["sensor"], "gpu")
    assert session["world_size"] == 2 and session["time_of"] == "each call's slowest rank"
    per_rank = session["clocks_per_rank"]
    assert set(per_rank) == {"0", "1"} and per_rank["1"]["sm_clock_mhz_min_median_max"] == [1980.0] * 3
    assert per_rank["0"]["temperature_c_min_median_max"] != per_rank["1"]["temperature_c_min_median_max"]


def _halves(samples: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """The first 70 rounds recorded as evidence, the last 70 judged against it."""
    first, second = samples[samples["round"] < 70], samples[samples["round"] >= 70]
    session = exp.session_of(first, {"run_id": "first half"}, {"sm_clock_max_mhz": 1980}, "gpu")
    return exp.add_session(None, session, {"numel": 1 << 26}), second


def test_unchanged_code_is_same_and_a_slowdown_on_one_rank_is_slower(samples):
    entry, later = _halves(samples)
    verdicts = {v.variant: v.verdict for v in judge(PAIR, exp.of_kind(later, "gpu"), entry, 1980)}
    assert verdicts == {"baseline": SAME, "fp32_rs_ag": SAME, "int8": SAME, "int8_overlap": SAME}
    slowed = later.copy()
    straggler = (slowed["rank"] == 1) & (slowed["variant"] == "int8")
    slowed.loc[straggler, "time_ns"] *= 1.10                     # rank 1's int8 calls 10% slower
    verdicts = {v.variant: v for v in judge(PAIR, exp.of_kind(slowed, "gpu"), entry, 1980)}
    assert verdicts["int8"].verdict == SLOWER and verdicts["int8"].fails
    assert [k for k, v in verdicts.items() if v.verdict != SAME] == ["int8"]
    rank0_only = {v.variant: v.verdict for v in judge(PAIR, slowed[slowed["rank"] == 0], entry, 1980)}
    assert rank0_only["int8"] == SAME                            # rank 0's time alone would have missed it


def test_evidence_is_keyed_by_rank_count_and_card():
    pair = pairs.find(PAIR)
    assert BenchOptions().world_size(pair) == 2 and BenchOptions(nproc_per_node=4).world_size(pair) == 4
    assert BenchOptions(nproc_per_node=4).world_size(pairs.find("ch09.fused_l2norm")) == 1
    assert pair_key("h200", 4, "NVIDIA H200") == "4x_h200"
    assert pair_key("h200", 1, "NVIDIA H200") == "h200"
    assert BenchOptions(nproc_per_node=4).run_options(pair, None).nproc_per_node == 4
    assert BenchOptions(nproc_per_node=4).run_options(pairs.find("ch09.fused_l2norm"), None).nproc_per_node is None


def test_every_reader_of_a_runs_samples_sees_one_per_call(samples):
    """The verdict's validity checks, the report's speedup intervals and `diff` read a run's samples
    through intervals.slowest_ranks: two ranks' samples pooled would look like two groups of calls."""
    from aisp_prof.analyze.rule_input import RuleInput
    from aisp_prof.analyze.timing.intervals import paired_groups, slowest_ranks
    from aisp_prof.analyze.verdict.validity import _one_per_call, _series

    assert len(_series(_one_per_call(RuleInput({}, [], samples=samples)), "int8", "cuda_events")) == 140
    base, int8 = paired_groups(slowest_ranks(samples), "baseline", "int8")
    assert [len(g) for g in base] == [140] and [len(g) for g in int8] == [140]
    one = samples[samples["rank"] == 0].drop(columns="rank")
    assert slowest_ranks(one).equals(one)                           # one process: untouched


def test_bench_one_records_and_judges_a_multi_rank_run_under_its_rank_key(samples, tmp_path, monkeypatch):
    """bench_one end to end without a GPU: its `profile` returns the real 2x H200 run with both
    ranks' samples (its one CUDA-event timer's, read as the kind the multi-rank gate judges: steady,
    the headline's); the evidence goes to expectations_2x_h200.json with clocks per rank, the
    verdicts are of each call's slowest rank, the collectives' bus bandwidth comes with the outcome,
    and a 10% slowdown of rank 1's int8 calls fails the gate although the evidence is one machine's
    (a steady time of collectives is held to the GPU time's rule, not the host's)."""
    from types import SimpleNamespace

    from aisp_prof.analyze.gate.rules import gate_kind, one_machine
    from aisp_prof.bench.runner import bench_one, gate_error
    from aisp_prof.pairs.capabilities import Machine
    from aisp_prof.store.ingest import load_run_dir

    pair = pairs.find(PAIR)
    kind = gate_kind(pair)
    assert kind == "steady"
    monkeypatch.setattr("aisp_prof.bench.runner.kernels_root", lambda: tmp_path)
    data = load_run_dir(RUN)
    first, later = samples[samples["round"] < 70], samples[samples["round"] >= 70]

    class Runs:
        def __init__(self, frame):
            self.frame = frame

        def profile(self, opts, progress, annotate):
            assert opts.nproc_per_node == 2 and opts.pair.name == PAIR
            data.samples = self.frame.assign(kind=kind)
            annotate(data)
            return SimpleNamespace(error=None, run=data.run, data=data)

    machine = Machine.of("gpu", "triton", cc=(9, 0), gpu_name="NVIDIA H200", gpu_count=2)
    opts = BenchOptions(nproc_per_node=2)
    recorded = bench_one(pair, Runs(first), "h200", BenchOptions(nproc_per_node=2, update_expectations=True, force=True),
                         machine=machine)
    path = tmp_path / "ch14" / "expectations_2x_h200.json"
    assert recorded.recorded == str(path) and recorded.hardware_key == "2x_h200"
    saved = json.loads(path.read_text())
    session = saved["pairs"][PAIR]["sessions"][0]
    assert saved["hardware_key"] == "2x_h200" and set(session["clocks_per_rank"]) == {"0", "1"}
    assert session["kind"] == "steady" and len(session["samples"]["int8"]["time_ns"][0]) == 70   # one per call
    assert {(b["variant"], b["op"]) for b in recorded.bus_bandwidth} >= {("baseline", "AllReduce"), ("int8", "AlltoAll")}
    same = bench_one(pair, Runs(later), "h200", opts, machine=machine)
    assert {v.variant: v.verdict for v in same.verdicts} == {
        "baseline": SAME, "fp32_rs_ag": SAME, "int8": SAME, "int8_overlap": SAME}
    assert gate_error([same]) is None
    slowed = later.copy()
    slowed.loc[(slowed["rank"] == 1) & (slowed["variant"] == "int8"), "time_ns"] *= 1.10
    caught = bench_one(pair, Runs(slowed), "h200", opts, machine=machine)
    assert [v.variant for v in caught.verdicts if v.verdict == SLOWER] == ["int8"]
    assert gate_error([caught]).exit_code == 11
    entry = json.loads(path.read_text())["pairs"][PAIR]
    as_host = one_machine(judge(PAIR, exp.of_kind(slowed.assign(kind=kind), kind), entry, 1980), kind, entry)
    assert {v.variant: v.verdict for v in as_host}["int8"] == "AMBIGUOUS"          # the host rule would not


def test_a_multi_rank_run_folder_reads_each_timing_process_once(merged, tmp_path):
    """A bench run of a multi-rank pair leaves timing_p1.json (every rank's samples, merged by the
    runner) beside each rank's own timing_p1.rank<r>.json: only the merged file is read, once (the
    ranks' names once broke the process order's int() and would have counted rank 1 twice). Built
    from the real 2x H200 run: its folder, and its two ranks' samples as a second process's."""
    import shutil

    from aisp_prof.store.ingest import load_run_dir

    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    reports = [json.loads(gzip.open(RUN / name).read()) for name in ("check.json.gz", "check.rank1.json.gz")]
    second = [{"ok": True, "samples": [dict(s, process=1) for s in rep["samples"]], "sensor": rep["sensor"]}
              for rep in reports]
    (run / "timing_p1.rank1.json").write_text(json.dumps(second[1]))
    (run / "timing_p1.json").write_text(json.dumps(merge_rank_checks(second)))
    data = load_run_dir(run)
    assert len(data.samples) == 560 + 2 * 560                         # rank 0's check, both ranks' process 1
    assert data.samples[data.samples["process"] == 1]["rank"].value_counts().to_dict() == {0: 560, 1: 560}
    timings = data.timings.set_index("variant")
    assert timings.loc["int8", "processes"] == 2
