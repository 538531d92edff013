"""A pair's declared reference variant (cuBLAS, torch's softmax, eager PyTorch: a library) is a machine
reference for the pair's variants while it moved as machines do, and then does not fail the gate
(analyze.gate.verdict.judge_one); the gate passes it only for a GPU time and only where the pair's code is
the evidence's (bench.runner.machine_references). Two sets of real data:
- the verdicts of a no-change whole-book gate on an H200 lease whose big GEMMs ran slower at a higher clock
  (tests/fixtures/gate/h200_library_reference_verdicts.json): three SLOWER then, none now;
- real samples of ch10.warp_specialization at the full clock (tests/fixtures/gate/README.md, the power-cap
  runs), scaled per variant to plant a machine's move, a shared slowdown, a wrapper's slowdown."""
from __future__ import annotations

import json

import pytest
from gate_runs import warp_spec_con, warp_spec_evidence, warp_spec_verdicts  # noqa: F401 (fixtures)
from repo_paths import FIXTURES

from aisp_prof.analyze.gate.rules import failing
from aisp_prof.analyze.gate.verdict import SAME, SLOWER, MetricVerdict, decide, judge_one
from aisp_prof.analyze.timing.intervals import Interval
from aisp_prof.bench.ci_files import variant_fails

VERDICTS = json.loads((FIXTURES / "gate" / "h200_library_reference_verdicts.json").read_text())


def _metrics(verdict: dict, slower_by: float = 1.0) -> list[MetricVerdict]:
    """The stored metrics, each change times `slower_by` (a planted slowdown), decided again."""
    out = []
    for m in verdict["metrics"]:
        c = {k: v * slower_by for k, v in m["change"].items()}
        change = Interval(c["value"], c["low"], c["high"])
        out.append(MetricVerdict(m["metric"], change, m["observed"], m["expected"], m["margin"],
                                 decide(change, m["margin"])))
    return out


def _judged(pair: str, library: set[str], planted: dict[str, float] | None = None) -> dict:
    """The stored verdicts judged again as `judge` orders them: references, the library, the rest."""
    measured = {v["variant"]: _metrics(v, (planted or {}).get(v["variant"], 1.0)) for v in VERDICTS[pair]["verdicts"]}
    base = next((m for m in measured.get("baseline", []) if m.metric == "time"), None)
    out = []
    for variant in sorted(measured, key=lambda v: (not v.startswith("ref:"), v not in library)):
        out.append(judge_one(pair, variant, measured[variant], out, base, variant in library))
    return {v.variant: v for v in out}


def test_judged_without_library_references_the_no_change_gate_failed():
    """What the gate said that night: the fixture is what it claims."""
    pipelined = _judged("ch10.matmul_wgmma_pipelined", set())
    assert pipelined["cublas"].verdict == pipelined["pipelined"].verdict == SLOWER
    assert _judged("ch10.warp_specialization", set())["warp_specialized_reg_epilogue"].verdict == SLOWER


@pytest.mark.parametrize("pair, variant", [("ch10.matmul_wgmma_pipelined", "pipelined"),
                                           ("ch10.warp_specialization", "warp_specialized_reg_epilogue")])
def test_a_variant_that_moved_with_its_pairs_cublas_moved_with_the_machine(pair, variant):
    judged = _judged(pair, {"cublas"})
    assert judged[variant].verdict == SAME and judged[variant].cause.startswith("moved with the machine: cublas")
    assert not failing(list(judged.values()), strict=True)


def test_the_library_variant_that_moved_as_machines_do_is_reported_and_never_fails():
    cublas = _judged("ch10.matmul_wgmma_pipelined", {"cublas"})["cublas"]
    assert cublas.verdict == SLOWER and cublas.library and not cublas.fails
    assert cublas.cause.startswith("the pair's reference (a library) moved +2.7%, as machines do")
    assert not variant_fails(cublas.to_dict(), strict=True) and cublas.to_dict()["library"] is True


def test_a_planted_slowdown_beside_the_machine_s_still_fails():
    judged = _judged("ch10.matmul_wgmma_pipelined", {"cublas"}, planted={"pipelined": 1.10})
    assert [v.variant for v in failing(list(judged.values()))] == ["pipelined"]


# real samples of ch10.warp_specialization at the full clock (all SAME as judged), scaled per variant
NORMAL = "20261129T151205Z-ch10.warp_specialization-6214"
OURS = ("baseline", "warp_specialized", "warp_specialized_c2", "warp_specialized_reg_epilogue")


def _gate(con, entry, scale: dict[str, float], library=("cublas",)) -> dict:
    return warp_spec_verdicts(con, entry, NORMAL, scale, library)


def _failing(judged: dict, strict: bool = False) -> set[str]:
    return {v.variant for v in failing(list(judged.values()), strict)}


def test_real_samples_a_machine_sized_move_of_cublas_and_a_variant_passes(con, entry):
    judged = _gate(con, entry, {"cublas": 1.03, "warp_specialized_reg_epilogue": 1.035})
    assert judged["cublas"].library and judged["cublas"].verdict == SLOWER
    assert judged["warp_specialized_reg_epilogue"].cause.startswith("moved with the machine: cublas")
    assert _failing(judged, strict=True) == set()
    # as the gate judged before: AMBIGUOUS by the one-machine rule (this evidence is one lease's), which
    # fails a --strict gate
    before = _gate(con, entry, {"cublas": 1.03, "warp_specialized_reg_epilogue": 1.035}, library=())
    assert _failing(before, strict=True) == {"cublas", "warp_specialized_reg_epilogue"}


def test_real_samples_a_shared_slowdown_beyond_what_machines_do_fails(con, entry):
    """The pair's own inputs or setup slowing every variant, cuBLAS's too, by 30%."""
    judged = _gate(con, entry, {v: 1.30 for v in (*OURS, "cublas")})
    assert not judged["cublas"].library and {"cublas", *OURS} <= _failing(judged)


def test_real_samples_a_wrapper_slowing_cublas_alone_fails_and_excuses_nothing(con, entry):
    judged = _gate(con, entry, {"cublas": 1.15, "warp_specialized": 1.10})
    assert _failing(judged) == {"cublas", "warp_specialized"}


def test_real_samples_a_library_within_its_noise_excuses_nothing(con, entry):
    judged = _gate(con, entry, {"warp_specialized": 1.10})
    assert not judged["cublas"].library and _failing(judged) == {"warp_specialized"}


def test_the_gate_reads_library_references_only_for_gpu_time_and_the_evidence_s_own_code(tmp_path):
    from types import SimpleNamespace

    from aisp_prof.bench.runner import machine_references
    from aisp_prof.pairs import find
    from aisp_prof.pairs.source import source_digest
    from pathlib import Path

    pair = find("ch10.matmul_wgmma_pipelined")
    now = source_digest(Path(pair.source))
    same = {"sessions": [{"source_sha256": now["sha256"], "code_sha256": now["code_sha256"]}]}
    other = {"sessions": [{"source_sha256": "0" * 64, "code_sha256": "1" * 64}]}
    assert machine_references(pair, same, "gpu") == ("cublas",)
    assert machine_references(pair, other, "gpu") == ()            # the pair's code changed: none
    assert machine_references(pair, same, "latency") == ()          # a host-side time: none
    assert machine_references(pair, None, "gpu") == ()
    assert machine_references(SimpleNamespace(source=None, variants={}), same, "gpu") == ()
