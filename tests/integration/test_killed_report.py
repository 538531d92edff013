"""Killing `aisp-prof report` (issue 31, item 2): a real report of the shipped samples, drawing in
two worker processes, is killed mid-way. Its workers die with it (SIGKILL: Linux's parent-death
signal; SIGTERM: handled as Ctrl-C, exit 130, its partial folder removed) and the next report
into the same place removes what a SIGKILL left at once (its lock is free), not 10 minutes later."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_paths import ROOT

from aisp_prof.cli import cli

sys.path.insert(0, str(ROOT / "benchmarks"))
from fault_battery import process_group  # noqa: E402  (the live processes of a process group)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")]


def _report_drawing(db: Path, out: Path) -> subprocess.Popen:
    """`aisp-prof report` in a session of its own, returned once its drawing workers run."""
    proc = subprocess.Popen([sys.executable, "-m", "aisp_prof", "report", "--db", str(db), "--out", str(out)],
                            cwd=ROOT, env={**os.environ, "AISP_REPORT_WORKERS": "2"}, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while not (process_group(proc.pid) - {proc.pid} and list(out.parent.glob(f".{out.name}.partial-*"))):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the report never started drawing"
        time.sleep(0.05)
    return proc


def _no_worker_left(pgid: int) -> set[int]:
    deadline = time.monotonic() + 10
    while (left := process_group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_sigkill_takes_the_workers_and_the_next_report_cleans_up(tmp_path, samples_db):
    out = tmp_path / "rep"
    proc = _report_drawing(samples_db, out)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(60) == -signal.SIGKILL
    assert not _no_worker_left(proc.pid), "drawing workers outlived the killed report"
    left = [p.name for p in tmp_path.glob(".rep.partial-*")]
    assert left == [f".rep.partial-{proc.pid}"]                  # SIGKILL: no chance to clean up
    res = CliRunner().invoke(cli, ["report", "latest", "--db", str(samples_db), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "samples.db"]
    assert (out / "index.html").is_file() and not (out / ".writer.lock").exists()


def test_sigterm_exits_130_and_leaves_nothing(tmp_path, samples_db):
    out = tmp_path / "rep"
    proc = _report_drawing(samples_db, out)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "aisp-prof: interrupted" and "Traceback" not in err
    assert not _no_worker_left(proc.pid)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.db"]
