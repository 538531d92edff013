"""The gate on chapter 10's recorded H100 evidence (ch10.flash_attention's entry of
kernels/ch10/expectations_h100_80gb_hbm3.json as recorded in format 2, 3 processes, 2026-11-26,
now tests/fixtures/gate/expectations_h100_ch10_flash_attention.json): a variant whose
recorded processes disagree wildly is judged SAME but said to be unguarded, not silently passed.

ch10.flash_attention's cudnn variant ran 55.2, 54.8 and 130.4 us in its three recording
processes (cuDNN chose differently in one), a 272% margin; its flash variant agreed to 2%."""
from __future__ import annotations

import pytest
from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.verdict import SAME, UNGUARDED_MARGIN, judge
from aisp_prof.paths import data_root

FILE = data_root() / "tests" / "fixtures" / "gate" / "expectations_h100_ch10_flash_attention.json"


@pytest.mark.slow
def test_a_bimodal_recording_is_named_unguarded_and_a_tight_one_is_not():
    entry = exp.read_any(FILE)["pairs"]["ch10.flash_attention"]
    margins = {v: row["margin"]["time"] for v, row in entry["summary"]["variants"].items()}
    assert margins["cudnn"] > 2.5 and margins["flash"] <= 0.05         # what the recording says
    samples = exp.session_samples(entry).drop(columns=["cycles"])       # the recording judged against itself
    verdicts = {v.variant: v for v in judge("ch10.flash_attention", samples, entry, sm_clock_max_mhz=1980)}
    assert verdicts["cudnn"].verdict == SAME and verdicts["cudnn"].cause.startswith("unguarded")
    assert "272%" in verdicts["cudnn"].cause
    assert verdicts["flash"].verdict == SAME and not verdicts["flash"].cause.startswith("unguarded")
    assert UNGUARDED_MARGIN < margins["cudnn"]
