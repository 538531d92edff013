"""Verdict rules (aisp_prof.analyze.verdict.rules) on real captured runs: each rule where it must
speak, with the measured numbers in its sentence, and where it must stay silent.

Runs: profiles/samples (H200, 2026-11-26), profiles/samples_h100 and samples_h100_ch10 (H100
80GB HBM3, 2026-11-26), made by `aisp-prof run` as their READMEs say."""
from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest
from click.testing import CliRunner

from aisp_prof.analyze.verdict.rules import RuleInput, event_noise_ns, findings, host_bound, mechanisms, timers_disagree
from aisp_prof.api import summary_records
from aisp_prof.cli import cli
from verdict_samples import PROFILES, rule_input, sample


def _by(found, variant, severity=None):
    return [f for f in found if f.variant == variant and (severity is None or f.severity == severity)]


# ------------------------------------------------------------------------------ host_bound


@pytest.mark.slow
def test_host_bound_names_the_launch_gap_of_128_launches():
    # ch10.stream_concurrency on the H100: 546.6 us by CUDA events, 325.9 us of GPU busy time per call
    found = host_bound(rule_input("samples_h100_ch10", "ch10.stream_concurrency"))
    (base,) = _by(found, "baseline")
    assert base.severity == "warning" and base.rule == "host_bound"
    assert "546.6 us per call by CUDA events" in base.message and "busy 325.9 us" in base.message
    assert "220.7 us (40%) is launch overhead" in base.message and "CUDA graph" in base.message


@pytest.mark.slow
def test_host_bound_on_one_short_kernel_says_batching():
    # ch10.cluster_group single_cta_float4: a 22.5 us kernel timed at 33.1 us by CUDA events
    (f,) = _by(host_bound(rule_input("samples_h100_ch10", "ch10.cluster_group")), "single_cta_float4")
    assert f.severity == "warning" and "33.1 us" in f.message and "22.5 us" in f.message
    assert "batching" in f.message


def test_host_bound_is_silent_on_long_gemms():
    # every variant of the H200 and H100 TMA/wgmma GEMMs: events and nsys within 1-2%
    for folder in ("samples", "samples_h100"):
        assert host_bound(rule_input(folder, "ch09.tma_wgmma_pipeline")) == []


@pytest.mark.slow
def test_host_bound_does_not_call_153_us_on_one_launch_launch_overhead():
    # ch10.warp_specialized_cluster_pipeline baseline: 618.1 us events, 465.0 us nsys, 606.7 us ncu:
    # nsys alone is fast; one launch cannot cost 153 us of host time
    assert _by(host_bound(rule_input("samples_h100_ch10", "ch10.warp_specialized_cluster_pipeline")), "baseline") == []


def test_old_runs_without_percentiles_use_min_max_spread():
    run = sample("samples", "ch09.fused_l2norm")          # timed before p10/p90 were kept
    assert "p10_ns" not in run.timings
    cuda = run.timings.set_index("variant").loc["cuda"]
    assert event_noise_ns(run.timings, "cuda") == pytest.approx((cuda["max_ns"] - cuda["min_ns"]) / 2)


# ------------------------------------------------------------------------------ timers_disagree


def test_a_speedup_only_nsys_sees_rests_on_one_timer():
    # async_copy: 1.45x by nsys GPU time, 1.89x by CUDA events, 1.88x by ncu
    found = timers_disagree(rule_input("samples_h100_ch10", "ch10.warp_specialized_cluster_pipeline"))
    (f,) = _by(found, "async_copy")
    assert f.severity == "warning" and "1.45x by nsys GPU time rests on that timer alone" in f.message
    assert "1.89x by CUDA events" in f.message and "1.88x by ncu duration" in f.message


def test_one_timer_off_but_another_agreeing_is_a_note():
    # H100 structured_sparsity sparse24_tuned: events 1.22x, nsys 1.55x, ncu 1.46x
    (f,) = _by(timers_disagree(rule_input("samples_h100", "ch09.structured_sparsity")), "sparse24_tuned")
    assert f.severity == "info" and "1.22x by CUDA events against 1.55x by nsys GPU time" in f.message
    assert "ncu duration (1.46x) agrees" in f.message


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["samples", "samples_h100"])
@pytest.mark.parametrize("pair", ["ch09.tma_wgmma_pipeline", "ch09.fused_l2norm", "ch09.cutlass_gemm"])
def test_timers_that_agree_say_nothing(folder, pair):
    assert timers_disagree(rule_input(folder, pair)) == []


# ------------------------------------------------------------------------------ mechanisms


@pytest.mark.parametrize("folder", ["samples", "samples_h100"])
def test_fused_l2norm_did_what_its_docstring_predicts(folder):
    found = mechanisms(rule_input(folder, "ch09.fused_l2norm"))
    assert found and all(f.severity == "info" for f in found)
    dram = [f for f in found if "dram_bytes moved as predicted" in f.message]
    assert {f.variant for f in dram} == {"cuda", "triton"}
    assert any("5 -> 1 (5.00x)" in f.message for f in found)


def test_a_mechanism_the_numbers_contradict_is_a_warning():
    # the pipelined GEMM moves the same DRAM bytes as the serial one (402 MB each): a pair that
    # claimed fewer bytes would be wrong about why it is faster
    inp = rule_input("samples", "ch09.tma_wgmma_pipeline")
    inp = replace(inp, info={**inp.info, "expect": [{"metric": "dram_bytes", "change": "decrease", "factor": 2.0,
                                                     "variants": ["pipelined"]}]})
    (f,) = mechanisms(inp)
    assert f.severity == "warning" and f.variant == "pipelined"
    assert "402 MB -> 402 MB (1.00x)" in f.message and "did not happen" in f.message


def test_a_mechanism_without_counters_is_not_measured():
    run = sample("samples", "ch09.fused_l2norm")
    empty = pd.DataFrame()
    from aisp_prof.analyze.summary import summarize
    rows = summarize(run.info, empty, run.ranges, run.checks, run.timings)     # an nsys-only run
    inp = RuleInput(run.info, rows, run.timings, run.timeline, empty)
    dram = [f for f in mechanisms(inp) if "dram_bytes" in f.message]
    assert dram and all(f.severity == "info" and f.message.endswith("not measured in this run") for f in dram)


@pytest.mark.slow
def test_runs_without_declarations_or_data_give_no_findings():
    assert findings(RuleInput({}, [])) == []
    assert mechanisms(rule_input("samples", "ch09.sdpa_attention")) == []     # declares no mechanism


# ------------------------------------------------------------------------------ where they are shown


@pytest.mark.slow
def test_summary_prints_headline_and_findings(tmp_path, sample_dbs):
    run_dir = next((PROFILES / "samples_h100_ch10").glob("*ch10.stream_concurrency*"))
    db = sample_dbs.copy(tmp_path / "a.db", run_dir)
    run_id = run_dir.name
    res = CliRunner().invoke(cli, ["summary", run_id, "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert "headline: streams32 (the book's optimization): 0.99x over baseline" in res.output
    assert "warning: baseline: 546.6 us per call by CUDA events" in res.output
    as_json = json.loads(CliRunner().invoke(cli, ["summary", run_id, "--db", str(db), "--json"]).stdout)
    assert as_json["headline"]["best"] == "streams32"
    assert {f["rule"] for f in as_json["findings"]} >= {"host_bound"}


@pytest.mark.slow
def test_report_page_carries_findings(tmp_path, sample_dbs):
    from aisp_prof.api import open_db

    run_dir = next((PROFILES / "samples").glob("*ch09.fused_l2norm*"))
    db = sample_dbs.copy(tmp_path / "a.db", run_dir)
    run_id = run_dir.name
    page = open_db(db).page(run_id)
    # the book's optimization leads (issue 28); the faster Triton kernel is named beyond the book
    assert page["answer"]["text"].startswith("cuda (the book's optimization): 3.13x over baseline")
    assert page["answer"]["text"].endswith("beyond the book: triton 3.21x")
    assert any("dram_bytes moved as predicted" in f["message"] for f in page["findings"])


def test_summary_records_of_a_sample_have_roles():
    rows = summary_records(sample("samples", "ch09.fused_l2norm"))
    assert [r["role"] for r in rows] == ["baseline", "optimization", "optimization"]
