"""The roofline of several runs: arrows across runs timed as the pair declares, each point judged
against its own card's ceilings, and every row saying which run it belongs to. Real samples:
ch09.fused_l2norm on an H200 (profiles/samples) and an H100 (profiles/samples_h100), and
ch14.triton_persistent on an H200 (profiles/samples_h200_ch14), a pair that declares the steady timer."""
from __future__ import annotations

from dataclasses import replace

import pytest
from repo_paths import PROFILES

from aisp_prof.analyze.roofline.build import build_roofline
from aisp_prof.api import open_db, roofline_input

PERSISTENT_H200 = "20261129T054952Z-ch14.triton_persistent-149c"
PERSISTENT_H200_DIR = PROFILES / "samples_h200_ch14" / PERSISTENT_H200


@pytest.fixture(scope="module")
def persistent(sample_dbs):
    """The H200 triton_persistent run as the roofline reads it (its pair's declarations included)."""
    return roofline_input(open_db(sample_dbs.original(PERSISTENT_H200_DIR)).run(PERSISTENT_H200))


def test_arrows_across_runs_use_the_declared_timer(persistent):
    """The run beside a copy of itself under another id (derived: the same data, run_id changed):
    the arrows between the two are timed by steady, the timer the pair declares and its own
    arrows use, not by the first GPU timer both runs have (gpu_events)."""
    assert persistent.info["timer"] == "steady"
    copy = replace(persistent, run_id=persistent.run_id + "-copy")
    result = build_roofline([persistent, copy])
    within = [c for c in result.comparisons if c.baseline.run_id == c.optimized.run_id]
    across = [c for c in result.comparisons if c.baseline.run_id != c.optimized.run_id]
    assert {c.timer for c in within} == {"steady"}
    assert [c.optimized.variant for c in across] == ["baseline", "persistent", "persistent_128"]
    for c in across:
        steady = persistent.times[c.baseline.variant]["steady"]
        assert c.timer == "steady" and c.time_ns == steady and c.baseline_time_ns == steady
