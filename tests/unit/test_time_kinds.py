"""The timer's three kinds of time (collect.timing.samplers, collect.timing.timer) on a simulated GPU: each
kind measures what it says, whatever the variant's position in a round or what ran before it."""
from __future__ import annotations

import statistics

import pytest

from aisp_prof.collect.timing.samplers import HOLD_MIN_NS, Hold, gpu_round, steady_calls, waits_for_gpu
from aisp_prof.collect.timing.timer import SamplingPlan, time_rounds
from aisp_prof.stats import summarize_samples
from sim_device import SimDevice

US = 1_000.0


def _plan(**kw):
    return SamplingPlan(**{"min_rounds": 12, "max_rounds": 12, "warmup": 2, "budget_s": 60.0, **kw})


def _by(samples, variant, kind):
    return [s for s in samples if s["variant"] == variant and s["kind"] == kind]


def test_a_host_bound_variant_has_the_same_gpu_time_in_every_position():
    """Issue 28: a variant costing 300 us of host and 100 us of GPU per call, beside a GPU-bound
    one and the two reference kernels. Its gpu samples are 100 us in every slot of the ABBA
    rounds (in the old design it was ~100 us behind queued work and ~400 us at a block's head)."""
    dev = SimDevice(issue_ns=2 * US, flush_ns=40 * US)
    launches = {"baseline": [dev.variant(5 * US, 500 * US)], "host_bound": [dev.variant(300 * US, 100 * US, launches=4)],
                "ref:copy": [dev.variant(2 * US, 180 * US)], "ref:gemm_bf16": [dev.variant(2 * US, 180 * US)]}
    samples = time_rounds(launches, _plan(), device=dev)
    gpu = _by(samples, "host_bound", "gpu")
    assert {s["slot"] for s in gpu} == {0, 1}
    assert len(gpu) == 12 and all(s["time_ns"] == pytest.approx(100 * US) for s in gpu)
    assert all(s["time_ns"] == pytest.approx(500 * US) for s in _by(samples, "baseline", "gpu"))
    # the references have gpu samples only, in rounds of their own
    assert {s["kind"] for s in samples if s["variant"].startswith("ref:")} == {"gpu"}


def test_latency_counts_the_host_and_steady_its_pace():
    dev = SimDevice(issue_ns=2 * US, flush_ns=40 * US)
    launches = {"baseline": [dev.variant(5 * US, 500 * US)], "host_bound": [dev.variant(300 * US, 100 * US, launches=4)]}
    stats = summarize_samples(time_rounds(launches, _plan(), device=dev))
    hb, base = stats["host_bound"], stats["baseline"]
    # latency: the whole call on an idle GPU, host launches and all (the last kernel ends at host + GPU share)
    assert hb["latency_median_ns"] == pytest.approx(300 * US + 4 * 2 * US + 25 * US, rel=0.02)
    # steady: back to back, the GPU waits for the host: the host's pace per call
    assert hb["steady_median_ns"] == pytest.approx(300 * US + 4 * 2 * US, rel=0.02)
    # a GPU-bound variant: all three agree with its GPU time
    for key in ("median_ns", "latency_median_ns", "steady_median_ns"):
        assert base[key] == pytest.approx(500 * US, rel=0.03)
    assert hb["design"] == "kinds" and hb["waits_for_gpu"] is False


def test_a_variant_that_waits_for_the_gpu_has_no_gpu_time_but_latency_and_steady():
    """The gpu_quantization baseline's synchronous copies: it cannot be queued ahead of the GPU."""
    dev = SimDevice(issue_ns=2 * US)
    syncing = dev.variant(1000 * US, 64 * US, launches=32, syncs=True)
    assert waits_for_gpu(dev, syncing) is True
    assert waits_for_gpu(dev, dev.variant(1000 * US, 64 * US, launches=32)) is False
    launches = {"baseline": [syncing], "gpu": [dev.variant(40 * US, 30 * US, launches=11)]}
    samples = time_rounds(launches, _plan(), device=dev)
    assert not _by(samples, "baseline", "gpu") and _by(samples, "baseline", "latency") and _by(samples, "baseline", "steady")
    stats = summarize_samples(samples)
    assert "median_ns" not in stats["baseline"] and stats["baseline"]["waits_for_gpu"] is True
    assert stats["gpu"]["median_ns"] == pytest.approx(30 * US)


def test_a_block_the_host_cannot_queue_behind_the_spin_is_discarded_and_the_spin_grows():
    dev = SimDevice(issue_ns=2 * US)
    slow_host = {"v": [dev.variant(3_000 * US, 10 * US)]}
    holds = {"v": Hold(ns=HOLD_MIN_NS)}
    assert gpu_round(dev, slow_host, ["v"], 0, holds) == []
    assert holds["v"].discarded_blocks == 1 and holds["v"].ns >= 4 * 3_000 * US
    rows = gpu_round(dev, slow_host, ["v"], 1, holds)
    assert len(rows) == 1 and rows[0]["time_ns"] == pytest.approx(10 * US)


def test_each_variant_is_held_in_a_block_of_its_own():
    """What is queued behind a call must not share its block: each gpu sample is one spin, one
    flush, one call between its events, and each variant's spin adapts to its own queueing."""
    dev = SimDevice(issue_ns=2 * US)
    launches = {"a": [dev.variant(5 * US, 100 * US)], "b": [dev.variant(900 * US, 50 * US, launches=32)]}
    holds: dict = {}
    rows = gpu_round(dev, launches, ["a", "b"], 0, holds)
    assert [(r["variant"], r["slot"]) for r in rows] == [("a", 0), ("b", 1)]
    assert rows[0]["time_ns"] == pytest.approx(100 * US) and rows[1]["time_ns"] == pytest.approx(50 * US)
    assert rows[1]["queue_ns"] > 900 * US > 100 * US > rows[0]["queue_ns"]
    assert set(holds) == {"a", "b"} and holds["b"].ns > 2 * holds["a"].ns     # 2 x its 964 us of queueing


def test_steady_samples_span_about_a_millisecond():
    assert steady_calls(5 * US) == 200 and steady_calls(100 * US) == 10 and steady_calls(50_000 * US) == 2


def test_legacy_samples_keep_their_one_timer():
    """Runs stored before issue 28 have samples without a kind: unprefixed statistics, no design."""
    stats = summarize_samples([{"variant": "a", "time_ns": t, "process": 0} for t in (10.0, 11.0, 12.0)])
    assert stats["a"]["median_ns"] == 11.0 and "design" not in stats["a"]


def test_the_queued_design_of_calibration_probes_is_unchanged():
    dev = SimDevice(issue_ns=2 * US)
    samples = time_rounds({"x": [dev.variant(1 * US, 50 * US)]}, _plan(interleaved=False, max_rounds=5), device=dev)
    assert len(samples) == 5 and statistics.median(s["time_ns"] for s in samples) == pytest.approx(50 * US)


def test_the_host_s_issue_time_is_sampled_and_a_variant_on_the_edge_is_host_paced():
    """ch14.quantized_allreduce on 2x H200 (benchmarks/results/overlap_host_pace_2x_h200.md): int8 takes ~130 us
    of host to issue and 511 us of GPU; int8_overlap ~530 us to issue (20 launches) and 637 us of GPU, on the
    edge. Each steady sample carries the host's time to issue its first call; only int8_overlap is host-paced."""
    from aisp_prof.analyze.rule_input import RuleInput
    from aisp_prof.analyze.timing.time_kinds import host_paced, time_fields

    dev = SimDevice(issue_ns=2 * US)
    launches = {"baseline": [dev.variant(100 * US, 1027 * US)], "int8": [dev.variant(120 * US, 511 * US, launches=5)],
                "int8_overlap": [dev.variant(490 * US, 637 * US, launches=20)]}
    samples = time_rounds(launches, _plan(), device=dev)
    steady = _by(samples, "int8_overlap", "steady")
    assert steady and all(s["issue_ns"] == pytest.approx(490 * US + 20 * 2 * US) for s in steady)
    stats = summarize_samples(samples)
    assert stats["int8"]["steady_issue_median_ns"] == pytest.approx(130 * US)
    summary = [{"variant": v, **time_fields({"variant": v, **stats[v]})} for v in launches]
    assert {r["variant"]: r["time_class"] for r in summary} == {v: "gpu_bound" for v in launches}
    found = host_paced(RuleInput(info={}, summary=summary))
    assert [f.variant for f in found] == ["int8_overlap"] and found[0].severity == "warning"
    assert "530.0 us to issue one call, 83% of its 637.0 us back to back" in found[0].message
    # a host-bound variant is the host_bound rule's (time_kinds.host_share), not this one's
    hb = {**summary[2], "time_class": "host_bound"}
    assert host_paced(RuleInput(info={}, summary=[hb])) == []


def test_the_issue_time_is_the_loop_s_where_a_first_call_after_a_synchronize_costs_more():
    """On 2x H200 int8's first NCCL call after a synchronize took ~350 us to issue, ~150 us in a loop: its issue
    time is the loop's, not the cold first call's (that read 0.74 of its steady time, near the host_paced line)."""
    class ColdAfterSync(SimDevice):
        cold = False

        def synchronize(self) -> None:
            super().synchronize()
            self.cold = True

    dev = ColdAfterSync(issue_ns=2 * US)

    def int8() -> None:
        dev.host(350 * US if dev.cold else 130 * US)
        dev.cold = False
        dev.gpu(511 * US)

    stats = summarize_samples(time_rounds({"int8": [int8]}, _plan(), device=dev))
    assert stats["int8"]["steady_issue_median_ns"] == pytest.approx(132 * US)
    assert stats["int8"]["steady_median_ns"] == pytest.approx(511 * US, rel=0.01)
