"""A variant whose every sample was throttled has nothing to judge: its verdict is AMBIGUOUS and says why, the
gate's chase asks for another process as for any AMBIGUOUS, and `bench run` goes on (it once raised a bare
ValueError from the bootstrap, which ended the pair as "unexpected ValueError" with its run folder removed).

Edited real data: the shipped H200 sample run of ch10.stream_concurrency (profiles/samples_h200_ch10_early), every
sample of its streams32 variant set to an SM clock of 800 of the sensor's 1980 MHz with a thermal slowdown (NVML
clock-event reason 0x20); judged against the shipped kernels/ch10/expectations_h200.json, read only."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from repo_paths import KERNELS, PROFILES

from aisp_prof import pairs
from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.rules import gate_kind, gate_verdicts, undecided
from aisp_prof.analyze.gate.verdict import AMBIGUOUS
from aisp_prof.bench.runner import BenchOptions, bench_one, gate_error
from aisp_prof.pairs.capabilities import Machine
from aisp_prof.store.ingest import load_run_dir

PAIR = "ch10.stream_concurrency"
RUN = PROFILES / "samples_h200_ch10_early" / "20261129T055115Z-ch10.stream_concurrency-ae8e"
HOT = "streams32"


@pytest.fixture(scope="module")
def run():
    return load_run_dir(RUN)


@pytest.fixture(scope="module")
def entry() -> dict:
    return exp.load(KERNELS / "ch10" / "expectations_h200.json")["pairs"][PAIR]


def _throttled(samples, variant: str = HOT):
    hot = samples["variant"] == variant
    return samples.assign(sm_clock_mhz=samples["sm_clock_mhz"].where(~hot, 800),
                          clock_event_reasons=samples["clock_event_reasons"].where(~hot, 0x20))


def test_a_variant_throttled_throughout_is_ambiguous_and_says_why(run, entry):
    """streams32 AMBIGUOUS, 'every sample throttled'; the baseline judged as in the unedited run."""
    assert run.info["sensor"]["sm_clock_max_mhz"] == 1980 and gate_kind(pairs.find(PAIR)) == "gpu"
    found = {v.variant: v for v in gate_verdicts(PAIR, _throttled(run.samples), "gpu", entry, 1980)}
    as_run = {v.variant: v for v in gate_verdicts(PAIR, run.samples, "gpu", entry, 1980)}
    hot = found[HOT]
    assert hot.verdict == AMBIGUOUS and hot.cause.startswith("every sample throttled") and not hot.metrics
    assert not hot.fails and not hot.settled
    assert found["baseline"].verdict == as_run["baseline"].verdict
    assert found["baseline"].metrics == as_run["baseline"].metrics


def test_the_chase_asks_for_another_process_then_stops_with_the_reason(run, entry):
    """Between timing processes the chase judges the same samples: another process (it may run unthrottled),
    until the most the gate takes; then the verdict's cause says it stopped. The run's one process is taken
    twice (as processes 0 and 1) for the second case: two processes confirm the baseline's move, so only
    streams32 asks for more."""
    records = _throttled(run.samples).to_dict("records")
    chase = undecided(PAIR, entry, "gpu", budget_s=None, max_processes=5)
    assert chase(records, 1980) is True and not chase.stopped
    two = records + [dict(r, process=1) for r in records]
    assert undecided(PAIR, entry, "gpu", budget_s=None, max_processes=3)(two, 1980) is True
    last = undecided(PAIR, entry, "gpu", budget_s=None, max_processes=2)
    assert last(two, 1980) is False and last.stopped.startswith("still AMBIGUOUS after 2 timing processes")


def test_bench_run_goes_on_and_passes_unless_strict(run, entry):
    """bench_one with the run database's `profile` replaced by the edited run (no GPU): the pair is ok, its
    streams32 AMBIGUOUS; the gate passes (exit 0), and with --strict fails as AMBIGUOUS does (exit 11)."""
    data = load_run_dir(RUN)
    data.samples = _throttled(data.samples)
    asked = []

    class Runs:
        def profile(self, opts, progress, annotate):
            asked.append(opts.timing.more(data.samples.to_dict("records"), 1980))
            annotate(data)
            return SimpleNamespace(error=None, run=data.run, data=data)

    machine = Machine.of("gpu", "triton", "nvcc", gpu_name="NVIDIA H200")
    for strict, code in ((False, None), (True, 11)):
        outcome = bench_one(pairs.find(PAIR), Runs(), "h200", BenchOptions(strict=strict), machine=machine)
        assert outcome.status == "ok" and asked[-1] is True
        hot = next(v for v in outcome.verdicts if v.variant == HOT)
        assert hot.verdict == AMBIGUOUS and "every sample throttled" in hot.cause
        error = gate_error([outcome])
        assert (error.exit_code if error else None) == code
