"""A pair's declared reference variant (cuBLAS, torch's softmax, eager PyTorch: a library's code) is a
machine reference for the pair's own variants and never fails the gate (analyze.gate.verdict.judge_one).
Real verdicts of a no-change whole-book gate on an H200 lease whose big GEMMs ran slower at a higher clock
(tests/fixtures/gate/h200_library_reference_verdicts.json): judged without the library's part, three
variants were SLOWER and the gate failed; with it, none fails, and a planted slowdown still does."""
from __future__ import annotations

import json

import pytest
from repo_paths import FIXTURES

from aisp_prof.analyze.gate.rules import failing
from aisp_prof.analyze.gate.verdict import SAME, SLOWER, MetricVerdict, judge_one
from aisp_prof.analyze.timing.intervals import Interval
from aisp_prof.bench.ci_files import variant_fails

VERDICTS = json.loads((FIXTURES / "gate" / "h200_library_reference_verdicts.json").read_text())


def _metrics(verdict: dict, slower_by: float = 1.0) -> list[MetricVerdict]:
    """The stored metrics, each change multiplied by `slower_by` (a planted slowdown of this variant)."""
    out = []
    for m in verdict["metrics"]:
        c = m["change"]
        out.append(MetricVerdict(m["metric"], Interval(c["value"] * slower_by, c["low"] * slower_by,
                                                       c["high"] * slower_by), m["observed"], m["expected"],
                                 m["margin"], m["verdict"]))
    return out


def _judged(pair: str, library: set[str], planted: dict[str, float] | None = None) -> dict:
    from aisp_prof.analyze.gate.verdict import decide

    out = []
    stored = sorted(VERDICTS[pair]["verdicts"], key=lambda v: (not v["variant"].startswith("ref:"),
                                                                v["variant"] not in library))
    base = None
    for v in stored:
        metrics = _metrics(v, (planted or {}).get(v["variant"], 1.0))
        metrics = [MetricVerdict(m.metric, m.change, m.observed, m.expected, m.margin, decide(m.change, m.margin))
                   for m in metrics]
        if v["variant"] == "baseline":
            base = next((m for m in metrics if m.metric == "time"), None)
        out.append(judge_one(pair, v["variant"], metrics, out, base, v["variant"] in library))
    return {v.variant: v for v in out}


def test_judged_as_recorded_the_no_change_gate_failed():
    """What the gate said that night (no library references): the fixture is what it claims."""
    pipelined = _judged("ch10.matmul_wgmma_pipelined", set())
    assert pipelined["cublas"].verdict == pipelined["pipelined"].verdict == SLOWER
    assert _judged("ch10.warp_specialization", set())["warp_specialized_reg_epilogue"].verdict == SLOWER
    assert [v["verdict"] for v in VERDICTS["ch10.matmul_wgmma_pipelined"]["verdicts"]
            if v["variant"] in ("pipelined", "cublas")] == [SLOWER, SLOWER]


@pytest.mark.parametrize("pair, variant", [("ch10.matmul_wgmma_pipelined", "pipelined"),
                                           ("ch10.warp_specialization", "warp_specialized_reg_epilogue")])
def test_a_variant_that_moved_with_its_pairs_cublas_moved_with_the_machine(pair, variant):
    judged = _judged(pair, {"cublas"})
    assert judged[variant].verdict == SAME and judged[variant].cause.startswith("moved with the machine: cublas")
    assert not failing(list(judged.values()), strict=True)


def test_the_library_variant_is_reported_and_never_fails():
    cublas = _judged("ch10.matmul_wgmma_pipelined", {"cublas"})["cublas"]
    assert cublas.verdict == SLOWER and cublas.library and not cublas.fails
    assert cublas.cause.startswith("the pair's reference, a library's code")
    assert not variant_fails(cublas.to_dict(), strict=True) and cublas.to_dict()["library"] is True


def test_a_planted_slowdown_beside_the_machine_s_still_fails():
    judged = _judged("ch10.matmul_wgmma_pipelined", {"cublas"}, planted={"pipelined": 1.10})
    assert judged["pipelined"].verdict == SLOWER and [v.variant for v in failing(list(judged.values()))] == [
        "pipelined"]
