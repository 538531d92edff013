"""`bench run --junit FILE --markdown FILE` on real gate output: the verdicts of a real H200 lease
(`tests/fixtures/gate/`: a deliberate +6.6% slowdown of ch09.fused_l2norm's cuda variant judged
against the recorded session, and ch14.triton_persistent's `bench run --json` of a fresh lease),
checked against the Jenkins JUnit schema's structure (`tests/junit_schema.py`)."""
from __future__ import annotations

import json
import tarfile
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner
from junit_schema import junit_problems
from repo_paths import FIXTURES

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.verdict import judge
from aisp_prof.bench import ci_files, runner
from aisp_prof.cli import cli
from aisp_prof.store.ingest import load_run_dir

GATE = FIXTURES / "gate"
SLOW_RUN = "20261126T082135Z-ch09.fused_l2norm-d477"          # cuda slowed by the 0.03 spin fixture


@pytest.fixture(scope="module")
def slow_outcome(tmp_path_factory) -> runner.PairOutcome:
    """The real verdicts of the slowed lease-2 run against the recorded H200 session."""
    root = tmp_path_factory.mktemp("lease2")
    with tarfile.open(GATE / "h200_lease2_runs.tgz") as tar:
        tar.extractall(root, filter="data", members=[m for m in tar.getmembers() if m.name.startswith(SLOW_RUN)])
    data = load_run_dir(root / SLOW_RUN)
    recorded = exp.read_any(GATE / "expectations_h200_session1.json")["pairs"]
    verdicts = judge(data.run["pair"], data.samples, recorded[data.run["pair"]], data.info["sensor"]["sm_clock_max_mhz"])
    return runner.PairOutcome(data.run["pair"], SLOW_RUN, "ok", verdicts=verdicts, hardware_key="h200")


def cases(xml: str) -> dict[str, ET.Element]:
    return {f"{c.get('classname')}:{c.get('name')}": c for c in ET.fromstring(xml.encode()).iter("testcase")}


def test_a_real_gate_json_is_valid_junit_with_the_cause_as_failure():
    payload = json.loads((GATE / "h200_fresh_lease_triton_persistent_gate.json").read_text())
    xml = ci_files.junit_xml(payload)
    assert junit_problems(xml) == []
    got = cases(xml)
    verdicts = payload["pairs"][0]["verdicts"]
    assert len(got) == len(verdicts) == 5                     # one per variant, the two references too
    failure = got["ch14.triton_persistent:persistent"].find("failure")
    assert failure.get("message") == "time +3.1% and cycles +3.1%" and failure.get("type") == "SLOWER"
    assert "time +3.1% [+3.0, +3.2] (margin 2.0%)" in failure.text
    assert got["ch14.triton_persistent:baseline"].find("failure") is None      # FASTER passes
    root = ET.fromstring(xml.encode())
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "0")
    md = ci_files.markdown(payload)
    assert md.startswith("## aisp-prof bench: FAIL (1 pair(s) on h200, 1 failing)")
    assert "| ch14.triton_persistent | persistent | **SLOWER** | time +3.1% [+3.0, +3.2] (margin 2.0%)" in md


@pytest.mark.parametrize("edit, problem", [
    (lambda x: x.replace('<testsuites name=', '<testsuites skipped="0" name='), "does not allow"),
    (lambda x: x.replace('tests="5"', 'tests="6"', 1), "but 5 found"),
    (lambda x: x.replace('<testcase classname', '<testcase nom="x" classname', 1), "does not allow"),
    (lambda x: x.replace('name="baseline"', '', 1), "lacks required attribute 'name'"),
    (lambda x: x.replace('</testsuite>', '<failure message="m"/></testsuite>', 1), "not allowed in <testsuite>"),
    (lambda x: x.replace('time="0"', 'time="soon"', 1), "is not a decimal"),
    (lambda x: x.replace('</testsuites>', '', 1), "not well-formed"),
])
def test_the_schema_check_finds_what_breaks_junit(edit, problem):
    payload = json.loads((GATE / "h200_fresh_lease_triton_persistent_gate.json").read_text())
    broken = edit(ci_files.junit_xml(payload))
    assert any(problem in p for p in junit_problems(broken)), junit_problems(broken)


def _bench(monkeypatch, tmp_path, outcomes, *extra):
    by_name = {o.pair: o for o in outcomes}
    monkeypatch.setattr(runner, "current_hardware_key", lambda *a: "h200")
    monkeypatch.setattr(runner, "bench_one", lambda pair, *a, **k: by_name[pair.name])
    targets = [a for o in outcomes for a in ("--targets", o.pair)]
    return CliRunner().invoke(cli, ["bench", "run", *targets, "--db", str(tmp_path / "a.db"),
                                    "--profiles-dir", str(tmp_path / "p"), *extra])


@pytest.mark.slow
def test_bench_run_writes_junit_and_markdown_of_the_real_slowdown(monkeypatch, tmp_path, slow_outcome):
    skipped = runner.PairOutcome("ch09.cutlass_gemm", None, "skipped", "needs nvcc, not found")
    failed = runner.PairOutcome("ch09.memory_bound", "run-2", "failed_check", "float4 wrong at row 3")
    res = _bench(monkeypatch, tmp_path, [slow_outcome, skipped, failed],
                 "--junit", str(tmp_path / "gate.xml"), "--markdown", str(tmp_path / "gate.md"))
    assert res.exit_code == 7, res.output                    # the failed check outranks the regression
    xml = (tmp_path / "gate.xml").read_text()
    assert junit_problems(xml) == []
    got = cases(xml)
    cuda = got["ch09.fused_l2norm:cuda"].find("failure")
    assert cuda.get("message") == slow_outcome.failing[0].cause and "time +6.6% and cycles +6.6%" in cuda.get("message")
    assert [k for k, c in got.items() if c.find("failure") is not None] == ["ch09.fused_l2norm:cuda",
                                                                           "ch09.memory_bound:(pair)"]
    assert got["ch09.cutlass_gemm:(pair)"].find("skipped").get("message") == "needs nvcc, not found"
    assert "float4 wrong at row 3" in got["ch09.memory_bound:(pair)"].find("failure").get("message")
    md = (tmp_path / "gate.md").read_text()
    assert "| ch09.fused_l2norm | cuda | **SLOWER** | time +6.6%" in md and "| ch09.fused_l2norm | triton | SAME |" in md
    assert "| ch09.cutlass_gemm | - | skipped | - | needs nvcc, not found |" in md
    assert not list(tmp_path.glob(".gate.*"))               # no temporary file left


def test_an_unwritable_junit_file_is_refused_before_the_gate(monkeypatch, tmp_path):
    called = []
    monkeypatch.setattr(runner, "bench_one", lambda *a, **k: called.append(1))
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", "ch09.fused_l2norm", "--db", str(tmp_path / "a.db"),
                                   "--junit", str(tmp_path / "no" / "gate.xml")])
    assert res.exit_code == 14 and "its folder does not exist" in res.output and not called
    assert len(res.output.strip().splitlines()) == 1
