"""A compiled variant's change may be the compiler's draw (issue 28): on a fresh H200 lease with no
code change ch14.regional_triton's three torch.compile'd variants read FASTER by 5.4-7.7% against
evidence whose two processes had shared one compile cache; four processes with an empty cache each,
recorded right after, ran up to 11% apart (eager, which compiles nothing, 0%). The gate says so in
the cause while the evidence holds no fresh-cache session, and stops saying it once it does.
Real data: the lease's gate runs (tests/fixtures/gate/h200_fresh_lease_ch14_gate.db.gz), the pair's
evidence before that recording (expectations_h200_regional_triton_shared_cache.json, taken from
kernels/ch14/expectations_h200.json at 73149f6^) and the shipped evidence after it."""
from __future__ import annotations

import pytest
from sample_files import plain_file

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.rules import compiled_variants, gate_verdicts
from aisp_prof.analyze.gate.verdict import FASTER
from aisp_prof.api import open_db
from aisp_prof.paths import data_root

GATE = data_root() / "tests" / "fixtures" / "gate"
PAIR = "ch14.regional_triton"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    db = open_db(plain_file(GATE / "h200_fresh_lease_ch14_gate.db", tmp_path_factory.mktemp("lease") / "g.db"))
    return db.run(next(r["run_id"] for r in db.run_list() if r["pair"] == PAIR))


def _verdicts(run, entry):
    return {v.variant: v for v in gate_verdicts(PAIR, run.samples, "gpu", entry,
                                                (run.info.get("sensor") or {}).get("sm_clock_max_mhz"),
                                                compiles=run.compiles)}


def test_the_compiled_variants_are_the_ones_torch_compile_ran(run):
    assert compiled_variants(run.compiles) == {"baseline", "regional", "book_baseline"}


def test_against_shared_cache_evidence_the_faster_says_it_may_be_the_draw(run):
    entry = exp.load(GATE / "expectations_h200_regional_triton_shared_cache.json")["pairs"][PAIR]
    assert exp.fresh_compile_sessions(entry) == 0
    found = _verdicts(run, entry)
    for v in ("baseline", "regional", "book_baseline"):
        assert found[v].verdict == FASTER and "shared one compile cache" in found[v].cause, found[v]
    assert found["eager"].verdict == "SAME" and "compile cache" not in (found["eager"].cause or "")


def test_evidence_with_a_fresh_cache_session_holds_the_draw_and_says_nothing(run):
    entry = exp.load(data_root() / "kernels" / "ch14" / "expectations_h200.json")["pairs"][PAIR]
    assert exp.fresh_compile_sessions(entry) >= 1
    found = _verdicts(run, entry)
    assert {v.verdict for name, v in found.items() if not v.is_reference} <= {"SAME", "AMBIGUOUS"}
    assert all("compile cache" not in (v.cause or "") for v in found.values())
