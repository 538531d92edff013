"""Issue 28: a host-side time judged against evidence from one machine cannot tell the code from
the host. On a fresh H200 lease with no code change (tests/fixtures/gate/, README there),
ch14.triton_persistent's host-bound baseline read FASTER (0.94 vs 1.76 ms per call back to back)
and the gate failed (exit 11); against the same evidence a planted +10% host cost read SAME.
Such verdicts are AMBIGUOUS, saying why, until a second machine's session widens the margin."""
from __future__ import annotations

import json

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.bench.runner import PairOutcome, one_machine
from aisp_prof.analyze.gate.verdict import AMBIGUOUS, FASTER, SLOWER, MetricVerdict, VariantVerdict
from aisp_prof.analyze.intervals import Interval
from aisp_prof.paths import data_root

GATE = data_root() / "tests" / "fixtures" / "gate"
EVIDENCE = data_root() / "kernels" / "ch14" / "expectations_h200.json"


def _verdicts(name: str) -> list[VariantVerdict]:
    """The gate's verdicts as it printed them (--json), back as objects."""
    out = []
    for v in json.loads((GATE / name).read_text())["pairs"][0]["verdicts"]:
        metrics = [MetricVerdict(m["metric"], Interval(**m["change"]), m["observed"], m["expected"], m["margin"],
                                 m["verdict"]) for m in v["metrics"]]
        out.append(VariantVerdict(v["pair"], v["variant"], v["verdict"], v["cause"], metrics))
    return out


def test_a_fresh_lease_with_no_code_change_no_longer_fails_the_gate():
    entry = exp.load(EVIDENCE)["pairs"]["ch14.triton_persistent"]
    assert exp.machines(entry) == 1 and entry["sessions"][-1]["kind"] == "steady"
    before = _verdicts("h200_fresh_lease_triton_persistent_gate.json")
    assert {v.variant: v.verdict for v in before if not v.is_reference} == {
        "baseline": FASTER, "persistent": SLOWER, "persistent_128": FASTER}
    assert PairOutcome("ch14.triton_persistent", "r", "ok", verdicts=before).fails        # exit 11 then
    after = one_machine(_verdicts("h200_fresh_lease_triton_persistent_gate.json"), "steady", entry)
    assert {v.verdict for v in after if not v.is_reference} == {AMBIGUOUS}
    assert all("evidence from one machine" in v.cause for v in after if not v.is_reference)
    assert not PairOutcome("ch14.triton_persistent", "r", "ok", verdicts=after).fails
    assert all(v.verdict == "SAME" for v in after if v.is_reference)                         # untouched


def test_gpu_time_and_evidence_from_two_machines_are_judged_as_before():
    entry = exp.load(EVIDENCE)["pairs"]["ch14.triton_persistent"]
    two = {**entry, "sessions": [dict(s, boot_id=b) for s, b in zip(entry["sessions"] * 2, ("a", "b"))]}
    assert exp.machines(two) == 2
    assert {v.verdict for v in one_machine(_verdicts("h200_fresh_lease_triton_persistent_gate.json"), "steady", two)
            if v.variant == "persistent"} == {SLOWER}
    assert {v.verdict for v in one_machine(_verdicts("h200_fresh_lease_triton_persistent_gate.json"), "gpu", entry)
            if v.variant == "persistent"} == {SLOWER}

