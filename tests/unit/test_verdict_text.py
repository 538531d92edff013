"""The verdict sentences (aisp_prof.analyze.verdict.text) of real sample runs: every number in them
is the run's (H200 samples in profiles/samples), and a run without counters says "not measured"."""
from __future__ import annotations

import json

import pytest
import pandas as pd
from click.testing import CliRunner

from aisp_prof.analyze.summary import summarize
from aisp_prof.analyze.verdict.text import verdict_sentences
from aisp_prof.api import open_db
from aisp_prof.cli import cli
from aisp_prof.store.ingest import store_path
from verdict_samples import PROFILES, sample


def _stored(tmp_path, pair):
    db = tmp_path / "a.db"
    return db, store_path(db, next((PROFILES / "samples").glob(f"*{pair}*")))


@pytest.mark.slow
def test_memory_bound_verdict_names_roof_bytes_launches_and_headroom(tmp_path):
    db, run_id = _stored(tmp_path, "ch09.memory_bound")
    bound, changed, headroom = open_db(db).summary_result(run_id)["verdict"]
    assert bound.startswith("Bound: baseline: DRAM-bound at 88% of its theoretical roof")
    assert "triton: DRAM-bound at 85% of its theoretical roof" in bound
    assert "DRAM bytes 6.37 GB -> 2.12 GB (3.00x fewer)" in changed and "launches per call 3 -> 1" in changed
    assert headroom.startswith("Headroom of triton: at 96% of the measured DRAM roof, at most 1.05x")


@pytest.mark.slow
def test_gemm_verdict_says_what_did_not_change(tmp_path):
    db, run_id = _stored(tmp_path, "ch09.tma_wgmma_pipeline")
    res = CliRunner().invoke(cli, ["summary", run_id, "--db", str(db), "--json"])
    bound, changed, _ = json.loads(res.stdout)["verdict"]
    assert "pipelined: compute (tensor_bf16)-bound at 87%" in bound
    assert "DRAM bytes unchanged (402 MB)" in changed and "stall long_scoreboard 24.1 cycles/inst" in changed


def test_without_counters_or_roofline_the_verdict_says_not_measured():
    run = sample("samples", "ch09.fused_l2norm")
    rows = summarize(run.info, pd.DataFrame(), run.ranges, run.checks, run.timings)
    bound, changed, headroom = verdict_sentences(rows, {})
    assert "bound not measured (no roofline)" in bound
    assert changed == "What changed from baseline to triton: launches per call 5 -> 1 (5.00x fewer)."
    assert headroom.endswith("not measured (no roofline).")
    assert verdict_sentences([], {}) == []


@pytest.mark.slow
def test_far_below_every_roof_is_not_called_bound_by_it(tmp_path, sample_dbs):
    # ch10.stream_concurrency on the H100: 128 small launches per call, 8% of the measured L2 peak
    run_dir = next((PROFILES / "samples_h100_ch10").glob("*ch10.stream_concurrency*"))
    db = sample_dbs.copy(tmp_path / "a.db", run_dir)
    run_id = run_dir.name
    bound, _, headroom = open_db(db).summary_result(run_id)["verdict"]
    assert "baseline: below every roof (L2, the nearest, at 8%)" in bound and "L2-bound" not in bound
    assert headroom.startswith("Headroom of streams32: the roofline does not say")


@pytest.mark.parametrize("zeroed, said", [("triton", "DRAM bytes 6.37 GB -> 0 B (to none)"),
                                          ("baseline", "DRAM bytes 0 B -> 2.12 GB (from none)")])
def test_dram_bytes_to_or_from_none_have_no_ratio(zeroed, said):
    """The H200 ch09.memory_bound sample (6.37 GB -> 2.12 GB), edited: one side's ncu DRAM counters
    set to 0, as for kernels whose data stays in L2. Before: '6.37 GB -> 0 B (0.00x more)'."""
    run = sample("samples", "ch09.memory_bound")
    kernels = run.kernels.copy()
    kernels.loc[kernels["variant"] == zeroed, ["dram_read_bytes", "dram_write_bytes"]] = 0
    rows = summarize(run.info, kernels, run.ranges, run.checks, run.timings)
    changed = verdict_sentences(rows, {})[1]
    assert said in changed and "0.00x" not in changed
