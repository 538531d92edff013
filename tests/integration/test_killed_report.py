"""Killing `aisp-prof report` (issue 31, item 2): a real report of the shipped samples, drawing in
two worker processes, is killed mid-way. Its workers die with it (SIGKILL: Linux's parent-death
signal; SIGTERM: handled as Ctrl-C, exit 130, its partial folder removed) and the next report
into the same place removes what a SIGKILL left at once (its lock is free), not 10 minutes later.

Each kill lands at a point the report is held at (`HELD`: the real command, one of its functions
waiting for the test's signal), not at a time: a kill timed by polling for the workers could land
after the report's last page, which once failed this test under load (the report then finished, or
was in place, before the signal came). SIGTERM at each moment a report can get it: while it opens
the database, while it draws (to it alone, or to its process group as `timeout` sends it), while its
pool shuts down after the last page (exit 130, nothing left: it used to rename the finished report
into place and still say "interrupted"), just after the rename (exit 0: the
report is whole) and while the interpreter shuts down (exit 0, not a death by SIGTERM)."""
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


# `python -c HELD READY GO WHERE ARGS...`: `aisp-prof ARGS` whose WHERE ("MODULE:NAME" held on entry,
# "after:MODULE:NAME" once it returned, a class's method as "MODULE:CLASS.NAME"; "atexit": as atexit
# functions run; "teardown": as the interpreter frees the modules, where Python's signal handlers are
# gone) creates READY the first time it is reached and waits there until GO exists (then removes it:
# the tests count the files left beside the report). What `hold` uses is bound as it is defined: in
# the teardown the module's names are being cleared.
HELD = r'''
import atexit, functools, importlib, os, sys, time
ready, go, where = sys.argv[1:4]
def hold(reached=[], exists=os.path.exists, sleep=time.sleep, unlink=os.unlink, touch=open, ready=ready, go=go):
    if not reached:
        reached.append(True)
        touch(ready, "w").close()
        while not exists(go):
            sleep(0.01)
        unlink(go)
class Freed:
    def __del__(self, hold=hold):
        hold()
if where == "atexit":
    atexit.register(hold)
elif where == "teardown":
    freed = Freed()
else:
    after = where.startswith("after:")
    module, name = where.removeprefix("after:").split(":")
    owner = importlib.import_module(module)
    if "." in name:
        cls, name = name.split(".")
        owner = getattr(owner, cls)
    real = getattr(owner, name)
    @functools.wraps(real)
    def held(*args, **kwargs):
        if not after:
            hold()
        result = real(*args, **kwargs)
        if after:
            hold()
        return result
    setattr(owner, name, held)
sys.argv = ["aisp-prof", *sys.argv[4:]]
from aisp_prof.cli import main
main()
'''
DRAWING = "aisp_prof.render.report:_finish_page"      # the first page is back: both workers run, the partial folder is there
SHUTDOWN = "concurrent.futures.process:ProcessPoolExecutor.shutdown"   # after the last page; workers still alive


def _report_held(db: Path, out: Path, where: str) -> tuple[subprocess.Popen, Path]:
    """`aisp-prof report` in a session of its own (drawing in two workers), returned once it waits at
    `where`, with the file that lets it go on."""
    ready, go = out.parent / "held.ready", out.parent / "held.go"
    proc = subprocess.Popen([sys.executable, "-c", HELD, str(ready), str(go), where,
                             "report", "--db", str(db), "--out", str(out)],
                            cwd=ROOT, env={**os.environ, "AISP_REPORT_WORKERS": "2"}, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while not ready.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"the report never reached {where}"
        time.sleep(0.05)
    ready.unlink()
    return proc, go


def _killed_at(db: Path, out: Path, where: str, sig: int, group: bool = False) -> subprocess.Popen:
    """The report held at `where` gets `sig` (its process group too with `group`), then goes on."""
    proc, go = _report_held(db, out, where)
    workers = process_group(proc.pid) - {proc.pid}
    assert bool(workers) == (where in (DRAWING, SHUTDOWN)), (where, workers)     # held where the test means
    os.killpg(proc.pid, sig) if group else os.kill(proc.pid, sig)
    if sig != signal.SIGKILL:
        go.touch()                              # the signal is already pending: it lands at `where`
    return proc


def _no_worker_left(pgid: int) -> set[int]:
    deadline = time.monotonic() + 10
    while (left := process_group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_sigkill_takes_the_workers_and_the_next_report_cleans_up(tmp_path, samples_db):
    out = tmp_path / "rep"
    proc = _killed_at(samples_db, out, DRAWING, signal.SIGKILL)
    assert proc.wait(60) == -signal.SIGKILL
    assert not _no_worker_left(proc.pid), "drawing workers outlived the killed report"
    left = [p.name for p in tmp_path.glob(".rep.partial-*")]
    assert left == [f".rep.partial-{proc.pid}"]                  # SIGKILL: no chance to clean up
    res = CliRunner().invoke(cli, ["report", "latest", "--db", str(samples_db), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "samples.db"]
    assert (out / "index.html").is_file() and not (out / ".writer.lock").exists()


@pytest.mark.parametrize("where, group", [(DRAWING, False), (DRAWING, True), (SHUTDOWN, False),
                                          ("aisp_prof.cli.report:database", False)],
                         ids=["drawing", "drawing-to-its-group", "pool-shutting-down", "opening-the-db"])
def test_sigterm_exits_130_and_leaves_nothing(tmp_path, samples_db, where, group):
    """Before the finished report is renamed into place, SIGTERM stops it: exit 130, one line, no worker,
    nothing but the database (no partial folder, no report, no -wal or -shm of a worker killed mid-read)."""
    proc = _killed_at(samples_db, tmp_path / "rep", where, signal.SIGTERM, group)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "aisp-prof: interrupted" and "Traceback" not in err
    assert not _no_worker_left(proc.pid)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.db"]


@pytest.mark.parametrize("where", ["after:aisp_prof.render.report:move_into_place", "atexit", "teardown"],
                         ids=["just-renamed", "atexit-functions-running", "modules-being-freed"])
def test_sigterm_after_the_rename_keeps_the_whole_report_and_exit_0(tmp_path, samples_db, where):
    """Once the report is in place it is whole: a SIGTERM then neither says "interrupted" (it said so,
    exit 130, about a report it had finished and kept) nor kills the process on its way out (exit -15)."""
    out = tmp_path / "rep"
    proc = _killed_at(samples_db, out, where, signal.SIGTERM)
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert stdout.strip() == str(out / "index.html") and "interrupted" not in err and "Traceback" not in err
    assert not _no_worker_left(proc.pid)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "samples.db"]
    assert (out / "index.html").is_file() and (out / ".aisp-report").is_file()
