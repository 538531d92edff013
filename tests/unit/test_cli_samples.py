"""`aisp-prof samples RUN`: every timed call of a run, per variant and kind of time or one by one,
checked against `db.samples` on real shipped runs (no GPU).

ch14.graph_break_control_flow on an H200 (profiles/samples_h200_ch14/, timed in three kinds; its
baseline waits for the GPU inside each call, so it has no gpu samples) and the same pair on an H100
(profiles/samples_h100_ch14/, timed before the kinds: legacy samples, one CUDA-event timer); the
`bench run` of ch09.compute_bound in tests/fixtures/gate/ for four processes and reference kernels."""
from __future__ import annotations

import json
import sqlite3
import tarfile
from contextlib import closing

import pytest
from click.testing import CliRunner
from repo_paths import FIXTURES, PROFILES

from aisp_prof.api import open_db
from aisp_prof.cli import cli

H200 = PROFILES / "samples_h200_ch14" / "20261129T060052Z-ch14.graph_break_control_flow-acfd"
H100 = PROFILES / "samples_h100_ch14" / "20261126T144407Z-ch14.graph_break_control_flow-65b4"
GATE_RUN = "20261126T081911Z-ch09.compute_bound-af3a"


@pytest.fixture(scope="module")
def db(sample_dbs):
    return str(sample_dbs.original(H200, H100))


def invoke(db: str, *args: str):
    return CliRunner().invoke(cli, ["samples", *args, "--db", db])


def _lines(res) -> list[str]:
    return res.stdout.splitlines()


def test_the_h200_table_marks_the_headline_kind_and_fits_120_columns(db):
    res = invoke(db, H200.name)
    assert res.exit_code == 0, res.output
    lines = _lines(res)
    assert max(map(len, lines)) <= 120
    assert lines[0].split() == ["variant", "kind", "samples", "processes", "median", "p10", "p90", "min", "max"]
    rows = [line.split() for line in lines[2:7]]
    assert [(r[0], r[1]) for r in rows] == [("baseline", "latency"), ("baseline", "steady"), ("tensor_branch", "gpu"),
                                            ("tensor_branch", "latency"), ("tensor_branch", "steady")]
    steady = next(line for line in lines if line.startswith("tensor_branch") and "steady *" in line)
    assert steady.split()[3:6] == ["339", "1", "257.0"]     # samples, processes, median 257.0 us
    assert sum("*" in line for line in lines[2:7]) == 2     # steady is the headline's kind, for both variants
    assert lines[-1].startswith("* the headline's kind of time (steady")


def test_json_groups_are_the_pandas_statistics_of_db_samples(db):
    samples = open_db(db).samples(H200.name)
    assert len(samples[(samples.variant == "tensor_branch") & (samples.kind == "steady")]) == 339
    res = invoke(db, H200.name, "--json")
    assert res.exit_code == 0, res.output
    groups = json.loads(res.stdout)
    assert len(groups) == samples.groupby(["variant", "kind"]).ngroups == 5
    for g in groups:
        times = samples[(samples.variant == g["variant"]) & (samples.kind == g["kind"])]["time_ns"]
        assert g["samples"] == len(times) and g["processes"] == 1
        assert g["median_ns"] == times.median() and g["p10_ns"] == times.quantile(0.1)
        assert (g["min_ns"], g["max_ns"], g["p90_ns"]) == (times.min(), times.max(), times.quantile(0.9))
        assert g["headline"] is (g["kind"] == "steady")
    steady = {g["variant"]: g["median_ns"] for g in groups if g["kind"] == "steady"}
    assert steady["tensor_branch"] == pytest.approx(257_008, abs=1)


def test_the_headline_kind_is_the_one_the_summary_speedup_is_the_median_of(db):
    """The mark is no guess: the marked groups' medians are the summary's speedup times, on both cards."""
    for run, kind in ((H200, "steady"), (H100, "legacy")):
        summary = {r["variant"]: r["speedup_time_ns"] for r in open_db(db).summary_result(run.name)["summary"]}
        marked = [g for g in json.loads(invoke(db, run.name, "--json").stdout) if g["headline"]]
        assert {g["kind"] for g in marked} == {kind}
        assert {g["variant"]: g["median_ns"] for g in marked} == pytest.approx(summary)


def test_rounds_json_is_exactly_db_samples(db):
    expected = open_db(db).samples(H200.name)
    got = json.loads(invoke(db, H200.name, "--rounds", "--json").stdout)
    assert got == expected.to_dict("records") and len(got) == 1695
    one = json.loads(invoke(db, H200.name, "--rounds", "--json", "--variant", "baseline", "--kind", "steady").stdout)
    chosen = expected[(expected.variant == "baseline") & (expected.kind == "steady")]
    assert one == chosen.to_dict("records") and len(one) == 339


def test_rounds_table_prints_every_sample_in_order(db):
    res = invoke(db, H100.name, "--rounds", "--variant", "tensor_branch")
    lines = _lines(res)
    assert res.exit_code == 0 and lines[0].split() == ["process", "round", "variant", "kind", "time"]
    assert len(lines) == 2 + 400 and lines[2].split()[:4] == ["0", "0", "tensor_branch", "legacy"]


def test_a_legacy_run_has_one_kind(db):
    res = invoke(db, H100.name, "--kind", "legacy", "--variant", "baseline", "--variant", "tensor_branch")
    lines = _lines(res)
    assert res.exit_code == 0 and max(map(len, lines)) <= 120
    assert [line.split()[:4] for line in lines[2:4]] == [["baseline", "legacy", "*", "400"],
                                                         ["tensor_branch", "legacy", "*", "400"]]


@pytest.mark.parametrize("args, says", [
    (("nosuch",), "unknown run 'nosuch'"),
    ((H200.name, "--variant", "nope"), "has no samples of variant 'nope'; it has baseline, tensor_branch"),
    ((H200.name, "--kind", "legacy"), "has no legacy samples; it has gpu, latency, steady"),
    ((H200.name, "--kind", "gpu", "--variant", "baseline"), "has no gpu samples of baseline; it has its latency, steady"),
    ((H100.name, "--kind", "steady", "--rounds", "--json"), "has no steady samples; it has legacy"),
])
def test_what_the_run_lacks_is_one_line_and_exit_2(db, args, says):
    res = invoke(db, *args)
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and says in res.stderr and "Traceback" not in res.stderr


def test_a_run_without_samples_says_so(sample_dbs, tmp_path):
    path = str(sample_dbs.copy(tmp_path / "a.db", H100))
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DELETE FROM samples")
    res = invoke(path, "latest")
    assert res.exit_code == 0 and _lines(res) == [f"run {H100.name} has no timed samples stored "
                                                  "(an import of bare ncu or nsys exports has none): nothing to show"]
    res = invoke(path, "latest", "--rounds", "--json", "--variant", "baseline")
    assert res.exit_code == 0 and json.loads(res.stdout) == [] and "has no timed samples stored" in res.stderr


@pytest.mark.slow
def test_processes_counted_and_reference_kernels_last(tmp_path):
    with tarfile.open(FIXTURES / "gate" / "h200_lease2_runs.tgz") as tar:
        tar.extractall(tmp_path, members=[m for m in tar.getmembers() if m.name.startswith(GATE_RUN)])
    db = open_db(tmp_path / "a.db")
    db.import_path(tmp_path / GATE_RUN)
    groups = json.loads(invoke(str(db.path), "latest", "--json").stdout)
    assert [g["variant"] for g in groups][-2:] == ["ref:copy", "ref:gemm_bf16"]
    assert {g["processes"] for g in groups} == {4}
    assert max(map(len, _lines(invoke(str(db.path), "latest")))) <= 120


def test_help_has_examples_and_the_command_is_listed():
    res = CliRunner().invoke(cli, ["samples", "--help"])
    assert res.exit_code == 0 and "Examples:" in res.output and "--rounds --json | jq" in res.output
    assert "aisp-prof samples latest" in CliRunner().invoke(cli, ["--help"]).output
