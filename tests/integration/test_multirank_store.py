"""Issue 15 end to end on the CPU: a real 2-rank run folder and a job's two exports stored as ONE
run each (rank column, one clock, a `ranks` table), and what `summary`, `ranks` and `report` say of it.

Data: profiles/samples_h100x2_ch14/<run-id>/ (a real `aisp-prof run` of ch14.quantized_allreduce on
2x H100: nsys.sqlite = rank 0, nsys.rank1.sqlite = rank 1, ncu on rank 0 with NCCL kernels left out,
check.json = both ranks' checks; shipped gzipped, dev/shrink_samples.py) and tests/fixtures/multigpu_h100x2/ (the two rank exports of an
earlier capture, no run folder). Counts are read off those files with sqlite3/json here, not
copied from the code under test. The commands, calibrations and faults are in test_multirank_cli.py.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from repo_paths import ROOT
from click.testing import CliRunner

from aisp_prof.api import open_db
from aisp_prof.cli import cli
from sample_files import plain_file, shipped, shipped_bytes

SAMPLES = ROOT / "profiles" / "samples_h100x2_ch14"
RUN_DIR = next(p for p in sorted(SAMPLES.glob("*")) if (p / "run.json").exists())
INFO = json.loads((RUN_DIR / "run.json").read_text())
FIXTURE = ROOT / "tests" / "fixtures" / "multigpu_h100x2"
RANK_EXPORTS = [FIXTURE / "nsys.rank0.sqlite.gz", FIXTURE / "nsys.rank1.sqlite.gz"]     # kept gzipped
PAIR = "ch14.quantized_allreduce"
VARIANTS = ["baseline", "fp32_rs_ag", "int8", "int8_overlap"]
US = 1000


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def raw_kernels(path: Path, tmp: Path) -> tuple[int, int]:
    """(kernels, NCCL kernels) of one nsys export (a plain copy of the shipped one), straight from its SQLite tables."""
    path = plain_file(path, tmp)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT count(*), sum(s.value LIKE 'ncclDev%') FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                           "JOIN StringIds s ON s.id = k.shortName").fetchone()
    conn.close()
    return int(row[0]), int(row[1])


def checks_in(path: Path) -> list[dict]:
    return json.loads(shipped_bytes(path))["check"]["checks"]


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A database holding the sample run folder, stored through `aisp-prof import` as a user would."""
    db = tmp_path_factory.mktemp("multirank") / "a.db"
    res = invoke("import", "--db", str(db), str(RUN_DIR) + "/")
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == INFO["run_id"]
    return db


@pytest.fixture(scope="module")
def run(stored):
    return open_db(stored).run(INFO["run_id"])


@pytest.fixture(scope="module")
def summary(stored) -> dict:
    res = invoke("summary", "latest", "--db", str(stored), "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def job_db(tmp_path_factory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("job") / "a.db"
    res = invoke("import", "--job", "step1", "--db", str(db), *map(str, RANK_EXPORTS))
    assert res.exit_code == 0, res.output
    return db, res.stdout.strip()


# ------------------------------------------------------------------------------ the stored run


def test_the_sample_is_a_two_rank_run_of_the_pair():
    assert INFO["pair"] == PAIR and INFO["world_size"] == 2 and INFO["ncu_rank"] == 0
    assert shipped(RUN_DIR / "nsys.sqlite").exists() and shipped(RUN_DIR / "nsys.rank1.sqlite").exists()


@pytest.mark.slow
def test_timeline_holds_every_kernel_of_both_ranks(run, tmp_path):
    per_rank = run.timeline.groupby("rank").size().to_dict()
    raw = {0: raw_kernels(RUN_DIR / "nsys.sqlite", tmp_path), 1: raw_kernels(RUN_DIR / "nsys.rank1.sqlite", tmp_path)}
    assert per_rank == {0: raw[0][0], 1: raw[1][0]}
    assert per_rank[0] == per_rank[1]                   # the same program ran on both ranks
    nccl = run.timeline[run.timeline["short_name"].str.startswith("ncclDev")].groupby("rank").size().to_dict()
    assert nccl == {0: raw[0][1], 1: raw[1][1]} and nccl[0] > 100


@pytest.mark.slow
def test_ranges_come_per_rank_with_every_variant(run):
    assert set(run.ranges["rank"]) == {0, 1}
    for rank in (0, 1):
        mine = run.ranges[(run.ranges["rank"] == rank) & run.ranges["nvtx_range"].str.startswith(f"aisp/{PAIR}/")]
        assert set(mine["variant"]) == set(VARIANTS), rank
    # the same ranges, with the same calls, on both ranks
    by_rank = [run.ranges[run.ranges["rank"] == r].set_index("nvtx_range")["occurrences"].sort_index() for r in (0, 1)]
    assert by_rank[0].to_dict() == by_rank[1].to_dict()


def test_ranks_table_says_which_export_was_which_rank_on_one_clock(run):
    ranks = run.ranks.sort_values("rank")
    assert ranks["rank"].tolist() == [0, 1] and ranks["local_rank"].tolist() == [0, 1]
    assert ranks["world_size"].tolist() == [2, 2] and ranks["job_id"].nunique() == 1
    assert [Path(p).name for p in ranks["path"]] == ["nsys.sqlite.gz", "nsys.rank1.sqlite.gz"]     # as shipped
    assert (ranks["matched_collectives"] > 100).all()
    assert (ranks["clock_residual_ns"].abs() < 50 * US).all()


def test_ncu_watched_rank_zero_and_left_nccl_out(run):
    assert set(run.kernels["rank"]) == {INFO["ncu_rank"]} == {0}
    assert len(run.kernels) == INFO["ncu_kernels_profiled"]
    assert not run.kernels["kernel"].str.contains("nccl", case=False).any()
    assert set(run.kernels["variant"]) == {"int8", "int8_overlap"}       # only they launch Triton kernels


def test_checks_of_both_ranks_are_stored_and_passed(run):
    checks = run.checks
    assert set(checks["rank"]) == {0, 1}
    assert (checks["passed"] == 1).all()
    assert int((checks["rank"] == 1).sum()) == len(checks_in(RUN_DIR / "check.rank1.json"))
    assert int((checks["rank"] == 0).sum()) == len(checks_in(RUN_DIR / "check.json")) // 2
    for rank in (0, 1):
        assert set(checks[checks["rank"] == rank]["variant"]) == set(VARIANTS)


# ------------------------------------------------------------------------------ summary


@pytest.mark.slow
def test_summary_has_the_four_variants_and_no_nccl_range_as_a_variant(summary):
    names = [r["variant"] for r in summary["summary"]]
    assert names == INFO["variants"] == VARIANTS
    assert not any(n.startswith("nccl") for n in names)


def test_kernels_per_call_count_calls_of_the_variant_not_of_nccls_ranges(summary):
    """baseline: one all-reduce; fp32_rs_ag: reduce-scatter + all-gather; int8: 3 Triton kernels +
    all-to-all + all-gather; int8_overlap: the same in 4 pieces (NCCL's ranges occur 4x a call)."""
    rows = {r["variant"]: r for r in summary["summary"]}
    assert {v: rows[v]["kernels_per_call"] for v in VARIANTS} == {
        "baseline": 1, "fp32_rs_ag": 2, "int8": 5, "int8_overlap": 20}


def test_speedups_are_timed_by_cuda_events_on_a_multi_rank_run(summary):
    rows = {r["variant"]: r for r in summary["summary"]}
    assert {rows[v]["speedup_timer"] for v in VARIANTS} == {"cuda_events"}
    events = INFO["timing_cuda_events"]
    expected = events["baseline"]["median_ns"] / events["int8"]["median_ns"]
    assert rows["int8"]["speedup_vs_baseline"] == pytest.approx(expected, rel=0.02)
    assert rows["int8"]["speedup_vs_baseline"] > 1.5
    assert rows["fp32_rs_ag"]["role"] == "control" and rows["baseline"]["role"] == "baseline"
    assert summary["headline"]["best"] == "int8" and summary["headline"]["speedup_timer"] == "cuda_events"


# ------------------------------------------------------------------------------ import --job


def test_the_fixture_folder_holds_exactly_the_two_rank_exports():
    assert sorted(FIXTURE.glob("*.sqlite*")) == RANK_EXPORTS


@pytest.mark.slow
@pytest.mark.parametrize("as_folder", [False, True])
def test_import_job_stores_one_run_of_two_ranks(tmp_path, as_folder):
    db = tmp_path / "a.db"
    paths = [str(FIXTURE)] if as_folder else [str(p) for p in RANK_EXPORTS]
    res = invoke("import", "--job", "step1", "--db", str(db), *paths)
    assert res.exit_code == 0, res.output
    runs = json.loads(invoke("runs", "--db", str(db), "--json").stdout)
    assert [r["run_id"] for r in runs] == [res.stdout.strip()] and runs[0]["label"] == "step1"
    data = open_db(db).run("latest")
    assert data.ranks["rank"].tolist() == [0, 1]
    assert [Path(p).name for p in data.ranks["path"]] == [p.name for p in RANK_EXPORTS]
    raw = [raw_kernels(p.with_suffix(""), tmp_path) for p in RANK_EXPORTS]      # a plain copy of each
    assert data.timeline.groupby("rank").size().to_dict() == {0: raw[0][0], 1: raw[1][0]}
    assert data.ranks["matched_collectives"].tolist() == [raw[0][1], raw[1][1]]


@pytest.mark.slow
def test_ranks_of_an_imported_job_say_the_message_sizes_are_unknown(job_db):
    db, run_id = job_db
    res = invoke("ranks", run_id, "--db", str(db), "--json")
    assert res.exit_code == 0, res.output
    frames = json.loads(res.stdout)
    bw = frames["bandwidth"]
    assert {r["variant"] for r in bw} == set(VARIANTS)
    assert all(r["collective_ns"] > 0 for r in bw)                       # transfer time is measured...
    assert all(r["message_bytes"] is None and r["busbw_gb_per_s"] is None and r["pct_of_link"] is None
               for r in bw)                                              # ...bandwidth is not
    assert all("message size unknown" in r["note"] for r in bw)
    table = invoke("ranks", run_id, "--db", str(db))
    assert table.exit_code == 0, table.output
    rows = [line.split() for line in table.stdout.splitlines() if line.startswith("baseline ")]
    allreduce = next(r for r in rows if "AllReduce" in r)
    assert allreduce[-3:] == ["-", "-", "-"]                             # message, busbw, of link


@pytest.mark.slow
def test_an_imported_job_counts_a_variant_s_kernels_per_call_of_the_variant(job_db):
    """Without a pair (import --job), NCCL's ranges nested in aisp/<pair>/<variant> still count once
    per call of the variant: the same 1/2/5/20 as the run folder of the same pair, in run order."""
    db, run_id = job_db
    res = invoke("summary", run_id, "--db", str(db), "--json")
    assert res.exit_code == 0, res.output
    rows = [r for r in json.loads(res.stdout)["summary"] if not r["variant"].startswith("nccl")]
    assert {r["variant"]: r["kernels_per_call"] for r in rows} == {
        "baseline": 1, "fp32_rs_ag": 2, "int8": 5, "int8_overlap": 20}
    assert [r["variant"] for r in rows] == VARIANTS


# ------------------------------------------------------------------------------ one-process runs beside it


@pytest.mark.slow
def test_a_one_process_run_reads_the_same_beside_a_multi_rank_run(tmp_path):
    """Storing a multi-rank run adds a rank column to shared tables (NULL for one-process runs);
    the one-process run's summary must not change: same GPU times, same timer."""
    from aisp_prof.store.ingest import sample_run_dirs

    single = sample_run_dirs()[0]
    alone, beside = open_db(tmp_path / "alone.db"), open_db(tmp_path / "beside.db")
    alone.import_path(single)
    beside.import_path(RUN_DIR)
    beside.import_path(single)
    want = {r["variant"]: r for r in alone.summary_result(single.name)["summary"]}
    got = {r["variant"]: r for r in beside.summary_result(single.name)["summary"]}
    assert want.keys() == got.keys() and all(r["gpu_time_ns"] for r in want.values())
    for v in want:
        assert (got[v]["gpu_time_ns"], got[v]["speedup_timer"]) == (want[v]["gpu_time_ns"], want[v]["speedup_timer"]), v
    assert {r["speedup_timer"] for r in want.values()} == {"nsys_gpu_time"}
