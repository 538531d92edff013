"""The gate's stopping rule (analyze.gate.rules.undecided), on the real H200 evidence of
ch10.stream_concurrency (kernels/ch10/expectations_h200.json, 2 recorded processes): one process
of unchanged code decides; a change one process shows asks for a second before it counts; an
AMBIGUOUS verdict is chased while another process fits in the pair's budget and could decide it."""
from __future__ import annotations

import json

import pytest

from repo_paths import KERNELS

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.rules import PAIR_BUDGET_S, hopeless, undecided
from aisp_prof.analyze.gate.verdict import MetricVerdict, VariantVerdict, decide
from aisp_prof.analyze.timing.intervals import Interval

PAIR = "ch10.stream_concurrency"


@pytest.fixture(scope="module")
def entry():
    return json.loads((KERNELS / "ch10" / "expectations_h200.json").read_text())["pairs"][PAIR]


def _samples(entry, processes, slower=1.0, variant="streams32"):
    """The recorded samples of `processes`, as a run's sample rows (gpu kind), `variant` x `slower`."""
    df = exp.session_samples(entry)
    rows = []
    for r in df[df["process"].isin(processes)].to_dict("records"):
        scale = slower if r["variant"] == variant else 1.0
        rows.append({"process": r["process"], "variant": r["variant"], "kind": "gpu",
                     "time_ns": r["time_ns"] * scale, "sm_clock_mhz": r["sm_clock_mhz"], "throttled": False})
    return rows


@pytest.mark.parametrize("process", [0, 1])
def test_one_process_of_unchanged_code_is_enough(entry, process):
    assert undecided(PAIR, entry, "gpu")(_samples(entry, [process])) is False


@pytest.mark.slow
def test_a_slowdown_seen_by_one_process_asks_for_a_second(entry):
    assert undecided(PAIR, entry, "gpu")(_samples(entry, [0], slower=1.10)) is True


@pytest.mark.slow
def test_a_slowdown_seen_by_two_processes_stands(entry):
    assert undecided(PAIR, entry, "gpu")(_samples(entry, [0, 1], slower=1.10)) is False


class Clock:
    """A stand-in for time.monotonic: each timing process takes `process_s`."""

    def __init__(self, process_s):
        self.now, self.process_s = 0.0, process_s

    def __call__(self):
        return self.now

    def process(self):
        self.now += self.process_s


def _chase(entry, process_s, budget_s=40.0):
    clock = Clock(process_s)
    chase = undecided(PAIR, entry, "gpu", budget_s)
    chase.clock = clock
    chase.started_s = chase.last_s = 0.0
    clock.process()
    return chase, clock


@pytest.mark.slow
def test_an_ambiguous_pair_of_cheap_processes_is_chased(entry):
    chase, _ = _chase(entry, process_s=8.0)
    assert chase(_samples(entry, [0], slower=1.017)) is True and chase.stopped == ""


@pytest.mark.slow
def test_a_dear_process_stops_the_chase_at_the_pair_budget(entry):
    """ch09.structured_sparsity_ffn's processes took 28 s each: a second would pass 40 s."""
    chase, _ = _chase(entry, process_s=28.0)
    assert chase(_samples(entry, [0], slower=1.017)) is False
    assert "28 s" in chase.stopped and "40 s budget" in chase.stopped


@pytest.mark.slow
def test_a_budget_never_cuts_the_confirming_process(entry):
    chase, _ = _chase(entry, process_s=100.0, budget_s=0.0)
    assert chase(_samples(entry, [0], slower=1.10)) is True


@pytest.mark.slow
def test_an_estimate_on_the_margin_edge_is_not_chased_past_two_processes(entry):
    """+2.0% against a 2.0% margin: five processes would still straddle it, however cheap they are."""
    chase, _ = _chase(entry, process_s=1.0, budget_s=None)
    assert chase(_samples(entry, [0, 1], slower=1.02)) is False
    assert "5 would not decide it" in chase.stopped


def _verdict(value, low, high, margin=0.02):
    change = Interval(value, low, high)
    m = MetricVerdict("time", change, value, 1.0, margin, decide(change, margin))
    return VariantVerdict(PAIR, "v", m.verdict, metrics=[m])


@pytest.mark.parametrize("interval, processes, hopeless_", [
    ((1.04, 1.01, 1.07), 2, False),     # beyond the edge: five processes (x0.63) would give [1.021, 1.059]: SLOWER
    ((1.04, 1.01, 1.07), 4, True),      # four already: the fifth (x0.89) gives [1.013, 1.067], still across 1.02
    ((1.03, 1.01, 1.05), 2, True),      # five would give [1.017, 1.043]: still across
    ((1.02, 1.00, 1.04), 2, True),      # on the edge: no number of processes moves the estimate
    ((1.00, 0.97, 1.03), 2, False),     # inside: five would give [0.981, 1.019]: SAME
])
def test_hopeless_projects_the_interval_to_the_most_processes(interval, processes, hopeless_):
    v = _verdict(*interval)
    assert v.verdict == "AMBIGUOUS"
    assert hopeless(v, processes, 5) is hopeless_


def test_the_cli_default_is_the_rules_budget():
    from aisp_prof.cli.bench import bench_run

    option = next(p for p in bench_run.params if p.name == "pair_budget_s")
    assert option.default == PAIR_BUDGET_S


@pytest.mark.slow
@pytest.mark.parametrize("slower", [1.0, 1.3])
def test_a_host_time_against_one_machine_asks_for_no_second_process(slower):
    """ch14.gpu_quantization's latency, recorded on one H200 lease: whatever a process shows, `one_machine`
    makes a change AMBIGUOUS, so a confirming or chasing process (22 s there) could not change the verdict."""
    pair = "ch14.gpu_quantization"
    entry = json.loads((KERNELS / "ch14" / "expectations_h200.json").read_text())["pairs"][pair]
    rows = [{**r, "kind": "latency", "throttled": False,
             "time_ns": r["time_ns"] * (slower if r["variant"] == "gpu_compiled" else 1.0)}
            for r in exp.session_samples(entry).to_dict("records") if r["process"] == 0]
    chase = undecided(pair, entry, "latency", budget_s=None)
    assert chase(rows) is False and "one machine" in chase.stopped   # its own process 0 is AMBIGUOUS already
    assert undecided(pair, entry, "latency", budget_s=None, link_bound=True)(rows) is True   # a collective's is chased


@pytest.mark.slow
def test_bench_one_says_in_the_verdict_why_its_chase_stopped(monkeypatch, tmp_path):
    """The runner's side of the rule: a pair whose first process (28 s by the fake clock) is AMBIGUOUS
    gets no second one at a 40 s budget, and the stored verdict's cause and the log say why."""
    from types import SimpleNamespace

    import pandas as pd

    from aisp_prof.analyze.gate import rules
    from aisp_prof.bench import runner
    from aisp_prof.pairs import find
    from aisp_prof.pairs.capabilities import Runnable

    entry = json.loads((KERNELS / "ch10" / "expectations_h200.json").read_text())["pairs"][PAIR]
    clock = iter([0.0, 28.0])
    monkeypatch.setattr(runner, "undecided", lambda *a, **k: rules.Chase(*a, **k, clock=lambda: next(clock)))
    monkeypatch.setattr(runner, "runnable", lambda *a: Runnable(True, ""))
    rows = _samples(entry, [0], slower=1.017)
    asked = []

    class Runs:
        def profile(self, options, progress, annotate):
            asked.append(options.timing.more(rows))
            data = SimpleNamespace(samples=pd.DataFrame(rows), info={"sensor": {"sm_clock_max_mhz": 1980}},
                                   timeline=pd.DataFrame(), ranks=pd.DataFrame(), compiles=pd.DataFrame(),
                                   verdicts=None)
            annotate(data)
            return SimpleNamespace(error=None, run={"run_id": "r1"}, data=data)

    said = []
    outcome = runner.bench_one(find(PAIR), Runs(), "h200", runner.BenchOptions(expectations=KERNELS / "ch10" /
                               "expectations_h200.json"), said.append, machine=SimpleNamespace(gpu_name="NVIDIA H200"))
    assert asked == [False]
    v = next(v for v in outcome.verdicts if v.variant == "streams32")
    assert v.verdict == "AMBIGUOUS" and "40 s budget" in v.cause, v.cause
    assert any("40 s budget" in line for line in said), said


def test_the_chase_leaves_out_throttled_samples_as_the_verdict_does(entry):
    """Half of streams32's calls 50% slower, all of them at an SM clock below 75% of the maximum (no reason
    given: a throttled machine). The verdict, told the sensor's maximum, leaves them out (SAME); so must the
    chase, which the gate now tells it too, or it would time a confirming process for a change that is not."""
    rows = _samples(entry, [0])
    odd = [r for r in rows if r["variant"] == "streams32"][::2]
    for r in odd:
        r["time_ns"] *= 1.5
        r["sm_clock_mhz"] = 900.0
    assert undecided(PAIR, entry, "gpu")(rows) is True                    # blind to the clock: confirm it
    assert undecided(PAIR, entry, "gpu")(rows, 1980.0) is False           # told it: nothing to confirm
