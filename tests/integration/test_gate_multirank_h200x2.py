"""The multi-rank gate on real samples (issue 34 item 1): ch14.quantized_allreduce on a fresh 2x H200 lease
against the evidence recorded on another lease (tests/fixtures/gate/README.md). Each call's time is its
slowest rank's steady time; with no code change every verdict is SAME, a planted +10% in the int8 kernels
is SLOWER, and int8_overlap, whose recorded processes disagree by 81%, is unguarded with the cause its
own samples show: the host needs most of a call's time just to issue it (time_kinds.host_paced)."""
from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.rules import Traits, gate_verdicts
from aisp_prof.analyze.gate.verdict import SAME, SLOWER
from aisp_prof.analyze.timing.time_kinds import HOST_PACE_SHARE
from gate_runs import GATE, gate_db, run_samples
PAIR = "ch14.quantized_allreduce"
PLAIN, SLOWED = "20261129T175923Z-ch14.quantized_allreduce-bd5c", "20261129T175950Z-ch14.quantized_allreduce-3149"


@pytest.fixture(scope="module")
def con(tmp_path_factory) -> sqlite3.Connection:
    return gate_db("h200x2_fresh_lease_quantized_allreduce.db", tmp_path_factory.mktemp("db"))


@pytest.fixture(scope="module")
def entry() -> dict:
    return exp.load(GATE / "expectations_2x_h200_quantized_allreduce.json")["pairs"][PAIR]


def _judged(con, entry, run: str) -> dict:
    s, clock = run_samples(con, run)
    return {v.variant: v for v in gate_verdicts(PAIR, s, "steady", entry, clock, traits=Traits(link_bound=True))}


def _stored(con, run: str) -> dict:
    return dict(con.execute("SELECT variant, verdict FROM verdicts WHERE run_id = ?", (run,)).fetchall())


def test_both_ranks_timed_every_call_and_the_evidence_is_another_lease_s(con, entry):
    s, _ = run_samples(con, PLAIN)
    assert sorted(s["rank"].unique()) == [0, 1]
    boots = {json.loads(i)["boot_id"] for (i,) in con.execute("SELECT info_json FROM runs")}
    assert len(boots) == 1 and boots.isdisjoint({x["boot_id"] for x in entry["sessions"]})     # a fresh machine
    assert {x["world_size"] for x in entry["sessions"]} == {2}


def test_no_code_change_passes_as_the_gate_said(con, entry):
    now = _judged(con, entry, PLAIN)
    assert {v: now[v].verdict for v in _stored(con, PLAIN)} == _stored(con, PLAIN)
    assert {v.verdict for v in now.values()} == {SAME}
    assert now["int8"].metric("time").margin <= 0.02           # the int8 path is guarded to 2%


def test_a_planted_int8_slowdown_is_caught_and_nothing_else_moves(con, entry):
    now = _judged(con, entry, SLOWED)
    assert {v: now[v].verdict for v in _stored(con, SLOWED)} == _stored(con, SLOWED)
    assert now["int8"].verdict == SLOWER and 1.08 < now["int8"].metric("time").change.value < 1.15    # +10.6%
    assert {v.verdict for k, v in now.items() if k != "int8"} == {SAME}


def test_the_unguarded_overlap_variant_names_the_host_pace_its_samples_show(con, entry):
    s, _ = run_samples(con, PLAIN)
    steady = exp.of_kind(s, "steady")                 # each call's slowest rank, its slowest host's issue time
    share = {v: g["issue_ns"].median() / g["time_ns"].median() for v, g in steady.groupby("variant")}
    assert share["int8_overlap"] >= HOST_PACE_SHARE > 0.5 > 0.4 > share["int8"]      # measured 0.94 and 0.33
    cause = _judged(con, entry, PLAIN)["int8_overlap"].cause
    assert cause.startswith("unguarded: the recorded processes of this code disagree by up to 81%")
    assert "to issue one call" in cause and "the host sets the pace" in cause and "library choice" not in cause


def test_a_call_s_issue_time_is_its_slowest_host_s(con):
    """The slowest rank's sample is kept whole, but the host that paces a collective is the slower one, whichever
    GPU finished last: both reductions (stats.slowest_rank on records, intervals.slowest_ranks on frames) give each
    call the largest of its ranks' issue times."""
    from aisp_prof.analyze.timing.intervals import slowest_ranks
    from aisp_prof.stats import slowest_rank

    s, _ = run_samples(con, PLAIN)
    steady = s[s["kind"] == "steady"]
    most = steady.groupby(["process", "round", "variant"])["issue_ns"].max()
    framed = slowest_ranks(steady).set_index(["process", "round", "variant"])["issue_ns"]
    assert framed.sort_index().equals(most.sort_index())
    records = pd.DataFrame(slowest_rank(steady.to_dict("records"))).set_index(["process", "round", "variant"])
    assert records["issue_ns"].sort_index().equals(most.sort_index())
    # and it is not always the slowest rank's own
    own = steady.sort_values("time_ns").drop_duplicates(["process", "round", "variant"], keep="last")
    assert (own.set_index(["process", "round", "variant"])["issue_ns"].sort_index() < most.sort_index()).any()


def test_a_variant_that_waits_for_the_gpu_keeps_the_unguarded_cause(con, entry):
    """Its issue time holds the wait (ch14.graph_break_control_flow's baseline), so it says nothing of the host's pace."""
    s, clock = run_samples(con, PLAIN)
    s = s.assign(waits_for_gpu=s["variant"] == "int8_overlap")
    cause = {v.variant: v for v in gate_verdicts(PAIR, s, "steady", entry, clock, traits=Traits(link_bound=True))}["int8_overlap"].cause
    assert cause.startswith("unguarded:") and "library choice" in cause and "to issue one call" not in cause
