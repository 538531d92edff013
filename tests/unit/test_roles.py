"""Roles of variants (aisp_prof.pairs.roles, pairs.declared, analyze.verdict.headline): a reference such as
cuBLAS never wins the headline; old runs, recorded before roles, read them from the pair module.

Runs: profiles/samples (H200) and profiles/samples_h100 (H100), real `aisp-prof run` captures."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aisp_prof.analyze.verdict.headline import headline
from aisp_prof.api import open_db, summary_records
from aisp_prof.cli import cli
from aisp_prof.pairs import KernelPair, Mechanism, discover
from aisp_prof.pairs.declared import module_declarations, with_declarations
from aisp_prof.pairs.roles import check_roles, roles_of, run_declarations, variant_roles
from verdict_samples import PROFILES, sample


def test_roles_default_to_baseline_and_optimizations():
    assert variant_roles(["baseline", "a", "cublas"]) == {"baseline": "baseline", "a": "optimization",
                                                         "cublas": "optimization"}
    assert variant_roles(["baseline", "cublas"], {"cublas": "reference"})["cublas"] == "reference"
    assert roles_of({}, ["baseline", "x"]) == {"baseline": "baseline", "x": "optimization"}
    assert roles_of({"roles": {"x": "nonsense"}}, ["baseline", "x"])["x"] == "optimization"


def test_bad_roles_and_mechanisms_are_refused():
    with pytest.raises(ValueError, match="not a variant"):
        check_roles(["baseline", "fast"], {"cublass": "reference"})
    with pytest.raises(ValueError, match="a role is one of"):
        KernelPair("x.y", 1, "", lambda *a: {}, {"baseline": None}, None, len, len, roles={"baseline": "ref"})
    with pytest.raises(ValueError, match="increase"):
        Mechanism("dram_bytes", "halve")
    with pytest.raises(ValueError, match="ratio >= 1"):
        Mechanism("dram_bytes", "decrease", factor=0.5)


def test_run_json_records_every_variants_role_and_the_mechanisms():
    rec = run_declarations(["baseline", "pipelined", "cublas"], {"cublas": "reference"}, False,
                           (Mechanism("kernels_per_call", "decrease", why="5 -> 1"),))
    assert rec["roles"] == {"baseline": "baseline", "pipelined": "optimization", "cublas": "reference"}
    assert rec["expect"] == [{"metric": "kernels_per_call", "change": "decrease", "factor": 1.0, "variants": [],
                              "why": "5 -> 1"}]
    assert with_declarations({"variants": ["baseline"], **rec})["declared_from"] == "run"


@pytest.mark.slow
def test_static_reading_matches_every_shipped_pair():
    """What an old run gets from the module without importing it is what the module declares."""
    for pair in discover():
        found = module_declarations(Path(pair.source))
        assert dict(found.get("roles") or {}) == dict(pair.roles), pair.name
        assert tuple(found.get("expect") or ()) == pair.expect, pair.name
        assert bool(found.get("comparison")) == pair.comparison, pair.name
        assert found.get("book") == pair.book, pair.name
        check_roles(list(pair.variants), pair.roles)         # every role names a variant of the pair


def test_reference_variants_of_the_shipped_pairs():
    refs = {p.name: sorted(v for v, r in p.roles.items() if r == "reference") for p in discover() if p.roles}
    assert refs["ch09.tma_wgmma_pipeline"] == ["cublas"] and refs["ch09.cutlass_gemm"] == ["cublas"]
    assert refs["ch09.triton"] == ["torch_softmax"]


@pytest.mark.slow
@pytest.mark.parametrize("folder, pct", [("samples", 93), ("samples_h100", 92)])
def test_tma_wgmma_headline_is_the_pipeline_not_cublas(folder, pct):
    run = sample(folder, "ch09.tma_wgmma_pipeline")
    assert run.info["declared_from"] == "pair module now"        # recorded before roles existed
    rows = summary_records(run)
    h = headline(rows)
    assert h["best"] == "pipelined" and h["reference"] == "cublas"
    cublas, pipelined = (next(r for r in rows if r["variant"] == v) for v in ("cublas", "pipelined"))
    assert h["pct_of_reference"] == pytest.approx(100 * cublas["gpu_time_ns"] / pipelined["gpu_time_ns"])
    assert round(h["pct_of_reference"]) == pct
    assert f"reaches {pct}% of cublas" in h["text"]


@pytest.mark.slow
def test_cutlass_headline_is_the_tensor_op_kernel():
    h = headline(summary_records(sample("samples", "ch09.cutlass_gemm")))      # was "20.72x cublas"
    assert h["best"] == "tensorop_sm90" and h["text"].startswith("tensorop_sm90: 18.93x over baseline")


@pytest.mark.slow
def test_controls_are_never_the_headline_even_in_runs_recorded_before_the_role():
    """The cluster_pipeline sample recorded its two controls as optimizations, and its headline was the
    no-multicast control's 1.41x; the pair module now declares them controls (issue 19)."""
    run = sample("samples_h100_ch10", "ch10.cluster_pipeline")
    assert "controls from the pair module now" in run.info["declared_from"]
    rows = summary_records(run)
    roles = {r["variant"]: r["role"] for r in rows}
    assert roles == {"baseline": "baseline", "four_stage": "optimization", "four_stage_no_multicast": "control",
                     "four_stage_eager": "control", "cublas": "reference"}
    h = headline(rows)
    assert h["best"] == "four_stage" and h["text"].startswith("four_stage: 1.33x over baseline")
    control = next(r for r in rows if r["variant"] == "four_stage_no_multicast")
    assert control["speedup_vs_baseline"] > h["speedup"]          # faster, and still not the headline
    assert check_roles(["a", "b"], {"b": "control"}) is None


@pytest.mark.slow
def test_a_pair_whose_baseline_works_on_the_host_is_timed_by_cuda_events():
    """gpu_quantization's baseline quantizes on the CPU: its GPU time holds only its 32 PCIe copies,
    so the pair declares timer="latency" (issue 28; "cuda_events" before it). The sample, recorded
    by the legacy timer, takes the declaration from the module and, having no latency samples,
    falls back on that timer's CUDA events, never on a GPU-only time (issues 19 and 28)."""
    run = sample("samples_h100_ch14", "ch14.gpu_quantization")
    assert run.info["timer"] == "latency" and run.info["declared_from"] == "pair module now"
    rows = summary_records(run)
    h = headline(rows)
    assert h["speedup_timer"] == "cuda_events" and "over baseline (CUDA events)" in h["text"]
    gpu = next(r for r in rows if r["variant"] == h["best"])
    assert gpu["speedup_vs_baseline"] == gpu["speedup_by_timer"]["cuda_events"] != gpu["speedup_by_timer"]["nsys_gpu_time"]
    assert run_declarations(["baseline"], {}, False, (), "cuda_events")["timer"] == "cuda_events"
    assert "timer" not in run_declarations(["baseline"], {}, False, ())
    # the timers rule weighs the same primary timer the headline uses
    from verdict_samples import rule_input
    from aisp_prof.analyze.verdict.rules import timers_disagree
    said = {f.variant: f.message for f in timers_disagree(rule_input("samples_h100_ch14", "ch14.gpu_quantization"))}
    assert said["gpu"].startswith(f"gpu: the {h['speedup']:.2f}x by CUDA events")


def test_comparison_pairs_claim_nothing():
    rows = summary_records(sample("samples", "ch09.tma_wgmma_pipeline"))
    h = headline(rows, comparison=True)
    assert h["best"] is None and h["speedup"] is None
    assert h["text"] == "comparison pair, no speed claim: fastest is cublas"


def test_a_pair_with_only_a_reference_says_how_close_the_baseline_comes():
    rows = summary_records(sample("samples", "ch09.tma_wgmma_pipeline"))
    only = [r for r in rows if r["variant"] in ("baseline", "cublas")]
    from aisp_prof.analyze.verdict.headline import add_role_fields
    add_role_fields(only, {"baseline": "baseline", "cublas": "reference"})
    assert headline(only)["text"].startswith("no optimization variant: baseline, reaches 46% of cublas")


def test_a_run_of_an_unknown_pair_keeps_the_defaults():
    info = with_declarations({"pair": "ch99.nothing", "variants": ["baseline", "cublas"]})
    assert info["declared_from"] == "defaults" and info["roles"]["cublas"] == "optimization"


@pytest.mark.slow
def test_report_index_and_history_keep_the_reference_apart(tmp_path, sample_dbs):
    run_dir = next((PROFILES / "samples").glob("*ch09.cutlass_gemm*"))
    db = sample_dbs.copy(tmp_path / "a.db", run_dir)
    run_id = run_dir.name
    page = open_db(db).page(run_id)
    assert page["best"]["variant"] == "tensorop_sm90" and page["best"]["reference_variant"] == "cublas"
    assert {h["variant"]: h["role"] for h in page["headline"]}["cublas"] == "reference"
    res = CliRunner().invoke(cli, ["history", "ch09.cutlass_gemm", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert "cublas (reference)" in res.output
    summary = CliRunner().invoke(cli, ["summary", run_id, "--db", str(db)])
    headline_text = " ".join(summary.output.split("\nvariant ")[0].split())        # the headline, unwrapped
    assert ("headline: tensorop_sm90 (the book's optimization): 18.93x over baseline (nsys GPU time), 6.869 ms -> "
            "362.9 us per call, book B200 11.9x, reaches 91% of cublas's speed") in headline_text


def test_list_json_shows_roles_and_expected_mechanisms():
    res = CliRunner().invoke(cli, ["list", "--chapter", "ch09", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.stdout)}
    assert rows["ch09.tma_wgmma_pipeline"]["roles"]["cublas"] == "reference"
    assert rows["ch09.fused_l2norm"]["expect"][0]["metric"] == "dram_bytes"
