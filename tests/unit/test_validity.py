"""Issue 28's validity checks, each on the real case it was made for (no GPU):

  bimodal      the legacy gate evidence of ch10.stream_concurrency, ch14.attention_eager_sdpa and
               ch14.triton_persistent (H100, format 2: one CUDA-event timer whose times depended
               on a variant's position; tests/fixtures/gate/expectations_h100_position_dependent.json);
  drifted      the shipped H100 run of ch14.gpu_quantization, whose baseline took 1.99 ms on its
               second call and ~128 ms after the compiled variant's factory ran;
  below_floor  a shipped memory-bound run as if its timer had missed 99% of the work;
and the headline that rests on a flagged variant is withheld, while GPU-bound pairs keep theirs."""
from __future__ import annotations

import pandas as pd
import pytest

from aisp_prof.analyze.rule_input import RuleInput
from aisp_prof.analyze.verdict.validity import below_floor, bimodal, drifted, floor_ns, modes, withhold
from aisp_prof.api import open_db
from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.paths import data_root

FIXTURE = data_root() / "tests" / "fixtures" / "gate" / "expectations_h100_position_dependent.json"
QUANT = data_root() / "profiles" / "samples_h100_ch14" / "20261126T151027Z-ch14.gpu_quantization-fdf0"
L2NORM = data_root() / "profiles" / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"


def _legacy_input(pair: str) -> RuleInput:
    entry = exp.read_any(FIXTURE)["pairs"][pair]
    samples = exp.session_samples(entry)
    summary = [{"variant": v, "speedup_timer": "cuda_events"} for v in dict.fromkeys(samples["variant"])]
    return RuleInput({}, summary, samples=samples)


@pytest.mark.parametrize("pair, flagged", [
    ("ch10.stream_concurrency", {"baseline", "streams32"}),
    ("ch14.attention_eager_sdpa", {"baseline", "sdpa_flash"}),
    ("ch14.triton_persistent", {"baseline"}),
])
def test_bimodal_fires_on_the_position_dependent_legacy_samples(pair, flagged):
    found = {f.variant: f for f in bimodal(_legacy_input(pair))}
    assert flagged <= set(found), sorted(found)
    assert all(f.severity == "warning" for f in found.values())
    # the reference kernels, GPU-bound and timed beside them, are one group
    assert not {v for v in found if v.startswith("ref:")}


def test_streams32_two_groups_are_named():
    f = {x.variant: x for x in bimodal(_legacy_input("ch10.stream_concurrency"))}["streams32"]
    m = modes(_legacy_input("ch10.stream_concurrency").samples.query("variant == 'streams32'")["time_ns"])
    assert 120e3 < m["centre_ns"] < 132e3 and m["far_median_ns"] > 250e3 and m["far_share"] > 0.25
    assert "not one group" in f.message


def test_one_tight_group_is_not_bimodal():
    rng = pd.Series(range(200), dtype=float)
    assert modes(100e3 + (rng % 7) * 100) ["far_share"] == 0.0
    assert modes([1.0] * 10) is None                     # too few samples to say


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = open_db(tmp_path_factory.mktemp("validity") / "a.db")
    for p in (QUANT, L2NORM):
        database.import_path(p)
    return database


@pytest.mark.slow
def test_drifted_fires_on_the_gpu_quantization_baseline(db):
    run = db.run(QUANT.name)
    result = db.summary_result(QUANT.name)
    found = drifted(RuleInput(run.info, result["summary"], compiles=run.compiles))
    assert [f.variant for f in found] == ["baseline"]
    assert "1.993 ms" in found[0].message and "64.2x" in found[0].message
    head = result["headline"]
    assert head["text"].startswith("headline withheld") and "drifted" in head["text"]
    assert any(w["rule"] == "drifted" and w["variant"] == "baseline" for w in head["withheld"])


@pytest.mark.slow
def test_below_floor_fires_when_the_timer_misses_work(db):
    run = db.run(L2NORM.name)
    summary = db.summary_result(L2NORM.name)["summary"]
    floor = floor_ns(run.info)
    assert floor and 30e3 < floor < 100e3                # (256 MiB - 60 MB of L2) at 4.81 TB/s
    assert below_floor(RuleInput(run.info, summary)) == []          # the real times are above it
    missed = [{**r, "gpu_time_ns": r["gpu_time_ns"] / 100} if r.get("gpu_time_ns") else r for r in summary]
    found = below_floor(RuleInput(run.info, missed))
    assert {f.variant for f in found} == {r["variant"] for r in summary if r.get("gpu_time_ns")}


@pytest.mark.slow
def test_a_gpu_bound_pair_keeps_its_headline(db):
    head = db.summary_result(L2NORM.name)["headline"]
    assert head["withheld"] == [] and not head["text"].startswith("headline withheld")


def test_withhold_names_the_reason_and_keeps_the_measured_text():
    from aisp_prof.analyze.rule_input import Finding

    head = {"best": "gpu", "text": "gpu: 447.79x over baseline (CUDA events)", "comparison": False}
    out = withhold(head, [Finding("bimodal", "warning", "gpu: its samples are not one group", "gpu")], [])
    assert out["text"].startswith("headline withheld (bimodal): gpu: its samples") and "447.79x" in out["text"]
    assert withhold(head, [Finding("bimodal", "info", "x", "gpu")], [])["withheld"] == []


# ------------------------------------------------- where the far group lies, and who moved with it

H200_CH14 = data_root() / "profiles" / "samples_h200_ch14"


@pytest.fixture(scope="module")
def h200_ch14(tmp_path_factory):
    db = open_db(tmp_path_factory.mktemp("h200") / "a.db")
    ids = {}
    for name in ("20261129T060052Z-ch14.graph_break_control_flow-acfd", "20261129T054952Z-ch14.triton_persistent-149c"):
        ids[name.split("-")[1].split(".")[1]] = db.import_path(H200_CH14 / name)
    return db, ids


def _bimodal_of(db, run_id) -> dict:
    result = db.summary_result(run_id)
    return {f["variant"]: f["message"] for f in result["findings"] if f["rule"] == "bimodal"}


def test_a_step_under_every_variant_is_called_the_machine(h200_ch14):
    """ch14.graph_break_control_flow on an H200: both variants' steady samples step down at round 250
    (the stored samples, H200 2026-11-29): the warning says where and that the machine changed state."""
    db, ids = h200_ch14
    msg = _bimodal_of(db, ids["graph_break_control_flow"])["tensor_branch"]
    assert "all in rounds 250-338" in msg and "baseline -35% moved with it" in msg
    assert "the machine changed state under the calls" in msg and "picks one state by chance" in msg


def test_a_gpu_bound_variant_that_stays_put_is_named(h200_ch14):
    """ch14.triton_persistent: the 64-launch baseline and persistent_128 (+55%) move in the same rounds, the
    one-launch persistent does not: the host changed, and the warning names who did not move."""
    db, ids = h200_ch14
    msg = _bimodal_of(db, ids["triton_persistent"])["baseline"]
    assert "persistent_128 +55% moved with it, persistent did not" in msg and "stretches of rounds" in msg


def test_legacy_samples_are_not_lined_up_by_round():
    """The legacy timer's times hung on a call's position in a queued block: no 'moved with it' there."""
    for pair in ("ch10.stream_concurrency", "ch14.attention_eager_sdpa"):
        for f in bimodal(_legacy_input(pair)):
            assert "moved with it" not in f.message and "rounds" not in f.message
