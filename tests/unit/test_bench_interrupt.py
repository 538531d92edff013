"""`bench run` cut off part way (Ctrl-C, or SIGTERM as a CI job's time limit sends it): the pairs that
finished are reported as a finished gate reports them, the pair in progress leaves nothing, and the exit
code is 130 unless a finished pair failed. On an H200 a whole-book gate (ch14, ch09, ch10) cut off after 43
of 49 pairs printed no --json at all.

The finished pairs carry the real verdicts of a real H200 lease (`tests/fixtures/gate/h200_lease2_runs.tgz`
judged against its recorded session: fused_l2norm unchanged, fused_l2norm with the +6.6% slowdown
fixture); the pair in progress goes through the real `bench_one`, `RunDatabase.profile` and run-folder
code on a stand-in GPU machine, and the interrupt lands in its collection after half a file is written."""
from __future__ import annotations

import json
import os
import signal
import tarfile
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner
from interrupts import interrupt_on_call
from junit_schema import junit_problems
from repo_paths import FIXTURES

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate.verdict import judge
from aisp_prof.bench import runner
from aisp_prof.cli import cli
from aisp_prof.collect.process import runner as collect_runner
from aisp_prof.pairs.capabilities import Machine
from aisp_prof.store.ingest import load_run_dir

GATE = FIXTURES / "gate"
UNCHANGED, SLOWED = "20261126T081831Z-ch09.fused_l2norm-7f86", "20261126T082135Z-ch09.fused_l2norm-d477"
CUT = "ch09.memory_bound"                            # the pair in progress when the interrupt comes
NOT_REACHED = ["ch09.triton", "ch09.compute_bound"]


@pytest.fixture(scope="module")
def lease(tmp_path_factory) -> dict[str, runner.PairOutcome]:
    """The real verdicts of the lease-2 runs of ch09.fused_l2norm against the recorded H200 session."""
    root = tmp_path_factory.mktemp("lease2")
    with tarfile.open(GATE / "h200_lease2_runs.tgz") as tar:
        tar.extractall(root, filter="data", members=[m for m in tar.getmembers()
                                                     if m.name.startswith((UNCHANGED, SLOWED))])
    recorded = exp.read_any(GATE / "expectations_h200_session1.json")["pairs"]
    out = {}
    for run in (UNCHANGED, SLOWED):
        data = load_run_dir(root / run)
        verdicts = judge(data.run["pair"], data.samples, recorded[data.run["pair"]],
                         data.info["sensor"]["sm_clock_max_mhz"])
        out[run] = runner.PairOutcome(data.run["pair"], run, "ok", verdicts=verdicts, hardware_key="h200")
    assert not out[UNCHANGED].fails and out[SLOWED].fails        # what the tests below rest on
    return out


def half_written(ctx, *args, **kwargs):
    """The pair in progress: Ctrl-C in its collection, half a file into its run folder."""
    (ctx.folder / "timing_p1.json").write_text('{"samples": [')
    raise KeyboardInterrupt


def sigterm(ctx, *args, **kwargs):
    """The pair in progress: SIGTERM (a CI job's time limit) in its collection, which stops at its next step."""
    (ctx.folder / "timing_p1.json").write_text('{"samples": [')
    os.kill(os.getpid(), signal.SIGTERM)
    ctx.progress("timing process 1 of 2")
    raise AssertionError("the SIGTERM did not stop the pair at its next step")


def cut_gate(monkeypatch, tmp_path, finished, *extra, collect=half_written):
    """`bench run` of the `finished` outcomes' pairs, then CUT, then NOT_REACHED, on a stand-in H200: the
    finished pairs' outcomes are given, CUT runs the real bench_one into the real run folder code, whose
    collection `collect` interrupts; the pairs after it are never called."""
    real = runner.bench_one
    calls = []

    def bench_one(pair, *args, **kwargs):
        calls.append(pair.name)
        return finished[len(calls) - 1] if len(calls) <= len(finished) else real(pair, *args, **kwargs)
    machine = Machine.of("gpu", "triton", gpu_name="NVIDIA H200")
    monkeypatch.setattr(runner, "current_hardware_key", lambda *a: "h200")
    monkeypatch.setattr(runner, "bench_one", bench_one)
    monkeypatch.setattr("aisp_prof.pairs.capabilities.detect_machine", lambda: machine)
    monkeypatch.setattr("aisp_prof.collect.code.prebuild.prebuild", lambda *a, **k: [])   # no nvcc here
    monkeypatch.setattr(collect_runner, "provenance", lambda: {"gpu": {}})
    monkeypatch.setattr(collect_runner, "collect_into", collect)
    targets = [a for name in [o.pair for o in finished] + [CUT] + NOT_REACHED for a in ("--targets", name)]
    res = CliRunner().invoke(cli, ["bench", "run", *targets, "--db", str(tmp_path / "a.db"),
                                   "--profiles-dir", str(tmp_path / "p"), *extra])
    assert calls == [o.pair for o in finished] + [CUT], (calls, res.output)
    return res


def test_an_interrupted_gate_prints_the_finished_pairs_json(monkeypatch, tmp_path, lease):
    res = cut_gate(monkeypatch, tmp_path, [lease[UNCHANGED]], "--json")
    assert res.exit_code == 130, res.output
    payload = json.loads(res.stdout)
    assert set(payload) == {"hardware_key", "fails", "pairs", "interrupted"}
    assert payload["interrupted"] is True and payload["fails"] is False and payload["hardware_key"] == "h200"
    pairs = payload["pairs"]
    assert pairs[0] == lease[UNCHANGED].to_dict()                 # as a finished gate reports it
    assert [(p["pair"], p["status"]) for p in pairs[1:]] == [(CUT, "not run")] + [(n, "not run") for n in NOT_REACHED]
    assert "interrupted while it ran" in pairs[1]["message"] and "not reached" in pairs[2]["message"]
    assert all(p["run_id"] is None and not p["fails"] and p["verdicts"] == [] for p in pairs[1:])
    assert res.stderr.strip().splitlines()[-1] == \
        "aisp-prof: interrupted: 1 of 4 pair(s) finished, 3 not run (ch09.memory_bound, ch09.triton, ch09.compute_bound)"


def test_an_interrupted_gate_leaves_nothing_half_written(monkeypatch, tmp_path, lease):
    """The pair in progress had half a timing file in its partial run folder: the folder is gone and
    nothing of the pair is stored, while the finished pairs are reported (the table here)."""
    from aisp_prof.store.db import list_runs

    res = cut_gate(monkeypatch, tmp_path, [lease[UNCHANGED]], "--wide")
    assert res.exit_code == 130, res.output
    assert list((tmp_path / "p").iterdir()) == []                # no run folder, no .partial one
    assert not (tmp_path / "a.db").exists() or list_runs(tmp_path / "a.db") == []
    assert "ch09.fused_l2norm" in res.stdout and "NOT RUN" in res.stdout
    assert res.stdout.strip().splitlines()[-1].startswith("interrupted: 1 of 4 pair(s) finished, 3 not run")


def test_an_interrupted_gate_writes_junit_and_markdown(monkeypatch, tmp_path, lease):
    res = cut_gate(monkeypatch, tmp_path, [lease[UNCHANGED]], "--junit", str(tmp_path / "gate.xml"),
                   "--markdown", str(tmp_path / "gate.md"))
    assert res.exit_code == 130, res.output
    xml = (tmp_path / "gate.xml").read_text()
    assert junit_problems(xml) == []
    cases = {f"{c.get('classname')}:{c.get('name')}": c for c in ET.fromstring(xml.encode()).iter("testcase")}
    skipped = {k: c.find("skipped").get("message") for k, c in cases.items() if c.find("skipped") is not None}
    assert skipped == {f"{CUT}:(pair)": "interrupted while it ran: nothing of it stored",
                       **{f"{n}:(pair)": "not reached: the gate was interrupted" for n in NOT_REACHED}}
    assert [k for k, c in cases.items() if c.find("failure") is not None or c.find("error") is not None] == []
    assert {k.split(":", 1)[1] for k in cases if k.startswith("ch09.fused_l2norm:")} == \
        {v.variant for v in lease[UNCHANGED].verdicts}
    md = (tmp_path / "gate.md").read_text()
    assert md.startswith("## aisp-prof bench: INTERRUPTED (4 pair(s) on h200, 0 failing)")
    assert "**The gate was cut off (interrupted) after 1 of 4 pair(s)**; not run: " \
           "ch09.memory_bound, ch09.triton, ch09.compute_bound." in md
    assert "| ch09.triton | - | not run | - | not reached: the gate was interrupted |" in md
    assert not list(tmp_path.glob(".gate.*"))


@pytest.mark.parametrize("finished, code, says", [
    ([UNCHANGED], 130, "aisp-prof: interrupted: 1 of 4"),
    ([SLOWED], 11, "aisp-prof: error: regressed, missing or failed: ch09.fused_l2norm:cuda (interrupted: 1 of 4"),
    ([UNCHANGED, "failed_check"], 7, "aisp-prof: error: failed the correctness check: ch09.warp_specialization"),
])
def test_a_finished_pairs_failure_outranks_the_interrupt(monkeypatch, tmp_path, lease, finished, code, says):
    """11 (a regression) or 7 (a failed check) among the finished pairs wins over 130: a slower or wrong
    kernel is never reported as a mere interrupt; the stderr line says the gate was cut off too."""
    broken = runner.PairOutcome("ch09.warp_specialization_producer_consumer", "run-1", "failed_check",
                                "variant(s) warp_specialized_tma failed the correctness check")
    outcomes = [broken if f == "failed_check" else lease[f] for f in finished]
    res = cut_gate(monkeypatch, tmp_path, outcomes, "--json")
    assert res.exit_code == code, res.output
    assert res.stderr.strip().splitlines()[-1].startswith(says), res.stderr
    assert json.loads(res.stdout)["interrupted"] is True


def sigterm_kills_the_child(ctx, *args, **kwargs):
    """SIGTERM to the whole process group, as `timeout` sends it: the pair's child dies of it too, and
    its step fails (the child's report missing) before the pair says another step."""
    from aisp_prof.errors import ProfilerFailedError

    os.kill(os.getpid(), signal.SIGTERM)
    raise ProfilerFailedError("the check process exited -15 before writing check.json")


@pytest.mark.parametrize("collect", [sigterm, sigterm_kills_the_child])
def test_sigterm_stops_the_gate_at_the_pairs_next_step(monkeypatch, tmp_path, lease, collect):
    """`timeout 3000 aisp-prof bench run ...` sends SIGTERM: the gate stops as on Ctrl-C (the SIGTERM
    marks, the next progress step raises), its partial folder removed, the finished pairs printed. A
    pair whose child died of the same SIGTERM is abandoned, not a failed pair: the exit is 11 here only
    because the finished fused_l2norm regressed."""
    before = signal.getsignal(signal.SIGTERM)
    res = cut_gate(monkeypatch, tmp_path, [lease[SLOWED]], "--json", collect=collect)
    assert signal.getsignal(signal.SIGTERM) is before                 # the handler is put back
    assert res.exit_code == 11, res.output
    assert "regressed, missing or failed: ch09.fused_l2norm:cuda (interrupted" in res.stderr
    payload = json.loads(res.stdout)
    assert payload["interrupted"] is True and payload["fails"] is True
    assert [p["status"] for p in payload["pairs"]] == ["ok", "not run", "not run", "not run"]
    assert list((tmp_path / "p").iterdir()) == []


def test_a_gate_that_finishes_says_it_was_not_interrupted(monkeypatch, tmp_path, lease):
    """The schema of a finished gate is kept; it only gains "interrupted": false."""
    by_name = {"ch09.fused_l2norm": lease[UNCHANGED]}
    monkeypatch.setattr(runner, "current_hardware_key", lambda *a: "h200")
    monkeypatch.setattr(runner, "bench_one", lambda pair, *a, **k: by_name[pair.name])
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", "ch09.fused_l2norm", "--db", str(tmp_path / "a.db"),
                                   "--profiles-dir", str(tmp_path / "p"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"hardware_key": "h200", "fails": False, "pairs": [lease[UNCHANGED].to_dict()],
                                      "interrupted": False}


def test_ctrl_c_before_the_first_pair_reports_every_pair_not_run(monkeypatch, tmp_path):
    """Ctrl-C while the CUDA libraries are built, before any pair: every pair "not reached", exit 130."""
    build, _ = interrupt_on_call(lambda *a, **k: [], 1)
    monkeypatch.setattr(runner, "current_hardware_key", lambda *a: "h200")
    monkeypatch.setattr("aisp_prof.collect.code.prebuild.prebuild", build)
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", CUT, "--db", str(tmp_path / "a.db"),
                                   "--profiles-dir", str(tmp_path / "p"), "--json"])
    assert res.exit_code == 130, res.output
    assert [(p["pair"], p["message"]) for p in json.loads(res.stdout)["pairs"]] == \
        [(CUT, "not reached: the gate was interrupted")]


DRIVER = '''
import pickle, sys, time
from aisp_prof.bench import runner
from aisp_prof.collect.process import runner as collect_runner
from aisp_prof.pairs.capabilities import Machine
import aisp_prof.collect.code.prebuild as prebuild
import aisp_prof.pairs.capabilities as capabilities

finished, real = pickle.load(open(sys.argv[1], "rb")), runner.bench_one

def collect_into(ctx, *args, **kwargs):       # the pair in progress: a timing process that takes its time
    (ctx.folder / "timing_p1.json").write_text('{"samples": [')
    print("HALF-WRITTEN", file=sys.stderr, flush=True)
    for _ in range(60):
        time.sleep(0.5)
        ctx.progress("      timing process 2")
    print("NEVER STOPPED", file=sys.stderr, flush=True)

runner.current_hardware_key = lambda *a: "h200"
runner.bench_one = lambda pair, *a, **k: finished if pair.name == finished.pair else real(pair, *a, **k)
capabilities.detect_machine = lambda: Machine.of("gpu", "triton", gpu_name="NVIDIA H200")
prebuild.prebuild = lambda *a, **k: []
collect_runner.provenance = lambda: {"gpu": {}}
collect_runner.collect_into = collect_into
from aisp_prof.cli import main
sys.argv = ["aisp-prof", *sys.argv[2:]]
main()
'''


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_a_real_bench_run_process(tmp_path, lease, sig):
    """SIGINT (Ctrl-C, or the device's time limit) and SIGTERM (`timeout`) sent to a real `aisp-prof bench
    run` process while its second pair is timed: --json of the first pair's real verdicts with the rest
    "not run", the JUnit file written, exit 11 (the finished fused_l2norm regressed), no partial folder."""
    import pickle
    import subprocess
    import sys

    from repo_paths import ROOT

    (tmp_path / "finished.pickle").write_bytes(pickle.dumps(lease[SLOWED]))
    (tmp_path / "driver.py").write_text(DRIVER)
    args = ["bench", "run", "--targets", "ch09.fused_l2norm", "--targets", CUT, "--targets", NOT_REACHED[0],
            "--db", str(tmp_path / "a.db"), "--profiles-dir", str(tmp_path / "p"), "--json",
            "--junit", str(tmp_path / "gate.xml")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "finished.pickle"), *args],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in proc.stderr:                          # the log, up to the pair in progress's half-written file
        if line.startswith("HALF-WRITTEN"):
            break
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 11, err
    assert "NEVER STOPPED" not in err and "Traceback" not in err
    assert "(interrupted: 1 of 3 pair(s) finished, 2 not run (ch09.memory_bound, ch09.triton))" in err
    payload = json.loads(out)
    assert payload["interrupted"] is True and payload["pairs"][0] == json.loads(json.dumps(lease[SLOWED].to_dict()))
    assert [p["status"] for p in payload["pairs"]] == ["ok", "not run", "not run"]
    assert junit_problems((tmp_path / "gate.xml").read_text()) == []
    assert list((tmp_path / "p").iterdir()) == []
