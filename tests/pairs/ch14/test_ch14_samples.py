"""profiles/samples_h100_ch14: one real `aisp-prof run` of every chapter 14 pair on an H100
(2026-11-26; provenance in that folder's README). Issue 14's targets that a profile can show, read
back on the CPU: graphs and breaks per variant, launches per call, compile cost, and every check."""
from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import PROFILES, every_sample_run
from sample_files import FolderRuns

from aisp_prof.api import open_db, run_summary

RUNS = sorted(p for p in (PROFILES / "samples_h100_ch14").glob("*") if (p / "run.json").exists())


def pair_of(run_dir: Path) -> str:
    return run_dir.name.split("-", 1)[1].rsplit("-", 1)[0]


@pytest.fixture(scope="module")
def db(sample_dbs):
    """This folder's runs, in the session's database of every sample run (imported once)."""
    return FolderRuns(open_db(sample_dbs.original(*every_sample_run())), RUNS)


def summary(db, pair: str) -> dict:
    return run_summary(db.run(pair))


@pytest.mark.slow
def test_every_pair_of_chapter_14_ran_on_an_h100_and_passed_its_check(db):
    assert len(RUNS) == 11 and len({pair_of(r) for r in RUNS}) == 11
    for run_dir in RUNS:
        result = run_summary(db.run(run_dir.name))
        assert "H100" in result["run"]["gpu_name"] and result["run"]["status"] == "ok", run_dir.name
        assert result["summary"] and all(row["correct"] for row in result["summary"]), run_dir.name


@pytest.mark.slow
def test_graph_break_pair_shows_a_break_against_one_whole_graph(db):
    """Issue 14's target: one graph and zero breaks against at least one break, with its reason."""
    run = db.run("ch14.graph_break_control_flow")
    first = run.compiles[(run.compiles["phase"] == "check") & (run.compiles["trial"] == 0)].set_index("variant")
    assert first.loc["baseline", "graph_breaks"] >= 1 and first.loc["baseline", "graphs"] >= 2
    assert first.loc["tensor_branch", "graph_breaks"] == 0 and first.loc["tensor_branch", "graphs"] == 1
    assert (run.compiles[run.compiles["phase"] == "timed"]["recompiles"] == 0).all()


@pytest.mark.slow
def test_triton_persistent_is_one_launch_per_call_against_sixty_four(db):
    rows = {r["variant"]: r for r in summary(db, "ch14.triton_persistent")["summary"]}
    assert rows["baseline"]["kernels_per_call"] == 64
    assert rows["persistent"]["kernels_per_call"] == 1 and rows["persistent_128"]["kernels_per_call"] == 1


@pytest.mark.slow
def test_compile_cost_is_measured_for_every_compiled_variant(db):
    """The first (compiling) call of a torch.compile variant costs seconds; an eager one does not."""
    run = db.run("ch14.model_compile_reduced_precision")
    first = run.compiles[(run.compiles["phase"] == "check") & (run.compiles["trial"] == 0)].set_index("variant")
    assert first.loc["compiled", "factory_wall_ns"] > 1e9 and first.loc["baseline", "factory_wall_ns"] < 1e9
