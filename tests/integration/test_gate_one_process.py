"""The gate's stopping rule (analyze.gate.rules.undecided), on the real H200 evidence of
ch10.stream_concurrency (kernels/ch10/expectations_h200.json, 2 recorded processes): one process
of unchanged code decides; a change one process shows asks for a second before it counts."""
from __future__ import annotations

import json

import pytest

from repo_paths import KERNELS

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.rules import undecided

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
