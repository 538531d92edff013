"""Faults a user meets, each one line with its documented exit code and nothing half-written
(issue 18): a read-only database or folder, a full disk, an unwritable --out, a 5000-character
label, broken run.json/check.json, Ctrl-C, a typo'd --db, an unknown --variant. No GPU.

Read-only files: chmod as a normal user; as root (chmod does not stop root) `chattr +i`, or
the test skips. Disk full: SQLite's own SQLITE_FULL (a page limit set on the writer's
connection), an OSError(ENOSPC) raised by the report's writes, and a real 1 MB tmpfs where
this machine lets the test mount one."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from repo_paths import ROOT
from click.testing import CliRunner
from interrupts import interrupt_on_call

from aisp_prof.cli import cli
from aisp_prof.store import connection
from aisp_prof.store import db as store
from aisp_prof.store.ingest import sample_run_dirs

RUN = sample_run_dirs()[0]                       # the real ch09.fused_l2norm run (H200)
LONG = "L" * 5000


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_error(res, code: int, *needles: str) -> str:
    """The command failed with `code` and said so in exactly one line (the last on stderr)."""
    assert res.exit_code == code, (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.output and not isinstance(res.exception, (AssertionError, TypeError))
    errors = [line for line in res.stderr.splitlines() if line.startswith("aisp-prof: error:")]
    assert len(errors) == 1 and res.stderr.strip().splitlines()[-1] == errors[0], res.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("faults") / "a.db"
    assert invoke("import", "--db", str(db), str(RUN)).exit_code == 0
    return db


def _copy_db(sample_db: Path, to: Path) -> Path:
    to.mkdir(parents=True, exist_ok=True)
    shutil.copy(sample_db, to / "a.db")
    return to / "a.db"


@contextlib.contextmanager
def read_only(path: Path):
    """`path` (file or folder) made read-only for this process, root included, or skip."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
        pytest.skip("running as root, where only chattr +i makes a file read-only, and chattr is refused here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


# ---------------------------------------------------------------------------- read-only database / folder


@pytest.mark.slow
def test_read_only_database_file(tmp_path, sample_db):
    db = _copy_db(sample_db, tmp_path)
    before = db.read_bytes()
    with read_only(db):
        res = invoke("import", "--db", str(db), str(sample_run_dirs()[1]))
        one_error(res, 13, "is read-only", "--db")
        assert json.loads(invoke("runs", "--db", str(db), "--json").stdout)[0]["run_id"] == RUN.name
    assert db.read_bytes() == before


@pytest.mark.slow
def test_read_only_folder(tmp_path, sample_db):
    folder = tmp_path / "ro"
    db = _copy_db(sample_db, folder)
    with read_only(folder):
        one_error(invoke("import", "--db", str(db), str(sample_run_dirs()[1])), 13, "cannot open", "writable")
        one_error(invoke("import", "--db", str(folder / "new.db"), str(RUN)), 13, "cannot open")
        res = invoke("summary", "latest", "--db", str(db))       # reading still works (opened immutable)
        assert res.exit_code == 0 and RUN.name in res.stdout, res.output
    assert sorted(p.name for p in folder.iterdir()) == ["a.db"]


# ---------------------------------------------------------------------------- disk full


def test_disk_full_during_import_stores_nothing(tmp_path, sample_db, monkeypatch):
    db = _copy_db(sample_db, tmp_path)
    pages = sqlite3.connect(db).execute("PRAGMA page_count").fetchone()[0]
    real = connection._setup_write

    def small_disk(conn):                          # SQLite answers SQLITE_FULL past this many pages
        real(conn)
        conn.execute(f"PRAGMA max_page_count = {pages + 20}")

    monkeypatch.setattr(connection, "_setup_write", small_disk)
    res = invoke("import", "--db", str(db), str(sample_run_dirs()[1]))
    one_error(res, 13, "is full", "nothing was stored")
    assert [r["run_id"] for r in store.list_runs(db)] == [RUN.name]
    assert store.read_table(db, "kernels", sample_run_dirs()[1].name).empty


@pytest.mark.slow
def test_disk_full_during_report_leaves_the_old_report(tmp_path, sample_db, monkeypatch):
    out = tmp_path / "rep"
    assert invoke("report", "latest", "--db", str(sample_db), "--out", str(out)).exit_code == 0
    before = (out / "index.html").read_text()
    real = Path.write_text

    def full(self, *args, **kwargs):
        if ".partial-" in str(self) and self.suffix == ".json":
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    one_error(invoke("report", "latest", "--db", str(sample_db), "--out", str(out)), 14, "disk is full", str(out))
    assert (out / "index.html").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 1 MB tmpfs, where this machine lets the test mount one."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.slow
def test_really_full_disk(tiny_disk, sample_db):
    """A real ENOSPC: 1 MB filled but for 64 kB, then an import and a report."""
    free = shutil.disk_usage(tiny_disk).free
    (tiny_disk / "filler").write_bytes(b"x" * (free - 64 * 1024))
    one_error(invoke("import", "--db", str(tiny_disk / "a.db"), str(RUN)), 13, "full")
    assert not (tiny_disk / "a.db").exists() or store.list_runs(tiny_disk / "a.db") == []
    one_error(invoke("report", "latest", "--db", str(sample_db), "--out", str(tiny_disk / "rep")), 14, "disk is full")
    assert [p.name for p in tiny_disk.iterdir() if not p.name.startswith("a.db")] == ["filler"]


# ---------------------------------------------------------------------------- outputs


def _unwritable(tmp_path: Path, where: str) -> str:
    """/proc (no new files, root or not), or a folder under a regular file."""
    if where == "proc":
        return "/proc/aisp-out"
    (tmp_path / "file").write_text("a file, not a folder")
    return str(tmp_path / "file" / "aisp-out")


@pytest.mark.parametrize("where", ["proc", "under_a_file"])
def test_report_out_unwritable(tmp_path, sample_db, where):
    out = _unwritable(tmp_path, where)
    one_error(invoke("report", "latest", "--db", str(sample_db), "--out", out), 14, out, "choose")
    assert not Path(out).exists()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["proc", "under_a_file"])
def test_roofline_out_unwritable(tmp_path, sample_db, where):
    out = _unwritable(tmp_path, where) + ".png"
    one_error(invoke("roofline", "latest", "--db", str(sample_db), "--out", out), 14, out, "choose")
    assert not Path(out).exists() and not list(Path(out).parent.glob(".aisp-out*")) if where == "proc" else True


@pytest.mark.slow
def test_out_in_a_read_only_folder(tmp_path, sample_db):
    folder = tmp_path / "ro"
    folder.mkdir()
    with read_only(folder):
        one_error(invoke("roofline", "latest", "--db", str(sample_db), "--out", str(folder / "r.png")), 14)
        one_error(invoke("report", "latest", "--db", str(sample_db), "--out", str(folder / "rep")), 14)
    assert list(folder.iterdir()) == []


@pytest.mark.slow
def test_long_names(tmp_path, sample_db):
    """A 5000-character label still gets a report (file names are cut, with a hash); a
    5000-character --out is one line saying the name is too long, and leaves nothing."""
    db = _copy_db(sample_db, tmp_path)
    assert invoke("import", "--db", str(db), "--label", LONG,
                  str(ROOT / "tests/fixtures/h200/probe_curated_raw_base.csv")).exit_code == 0
    res = invoke("report", "latest", "--db", str(db), "--out", str(tmp_path / "rep"))
    assert res.exit_code == 0, res.output
    assert max(len(p.name) for p in (tmp_path / "rep").rglob("*")) < 120
    one_error(invoke("report", "latest", "--db", str(db), "--out", str(tmp_path / LONG)), 14, "too long")
    one_error(invoke("roofline", RUN.name, "--db", str(db), "--out", str(tmp_path / f"{LONG}.png")), 14, "too long")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "rep"]


# ---------------------------------------------------------------------------- broken run folders


@pytest.mark.parametrize("name, text, needle", [
    ("run.json", "{}", "no run_id"),
    ("run.json", "[1, 2]", "JSON list"),
    ("run.json", '{"run_id": "r", "gpu": "H200"}', "not what aisp-prof writes"),
    ("check.json", "\x00garbage{", "broken check.json"),
    ("check.json", '{"check": []}', "not what aisp-prof writes"),
])
@pytest.mark.slow
def test_broken_run_folder(tmp_path, name, text, needle):
    folder = tmp_path / "run"
    shutil.copytree(RUN, folder)
    (folder / name).write_text(text)
    one_error(invoke("import", "--db", str(tmp_path / "a.db"), str(folder)), 6, needle)
    assert not (tmp_path / "a.db").exists()


# ---------------------------------------------------------------------------- read-only commands


@pytest.mark.slow
@pytest.mark.parametrize("command", [["runs"], ["kernels", "latest"], ["summary", "latest"], ["ranges", "latest"],
                                     ["roofline", "latest"], ["report", "latest"],
                                     ["history", "ch09.fused_l2norm"]])
def test_query_of_a_missing_database_creates_nothing(tmp_path, command):
    db = tmp_path / "typo" / "dir" / "x.db"
    one_error(invoke(*command, "--db", str(db)), 13, "no run database at", str(db))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_unknown_variant_is_exit_2_and_an_empty_variant_is_not(tmp_path, sample_db):
    one_error(invoke("kernels", "latest", "--db", str(sample_db), "--variant", "cdua"), 2, "did you mean cuda")
    one_error(invoke("kernels", "latest", "--db", str(sample_db), "--variant", "nope"), 2, "no variant 'nope'")
    db = _copy_db(sample_db, tmp_path)               # a variant the run checked but ncu did not profile
    data = store.read_run(db, RUN.name)
    data.run["run_id"] = "r-unprofiled"
    data.run.pop("content_sha256", None)             # made here, not the import of the sample's files
    data.checks = data.checks.assign(variant="unprofiled")
    store.write_run(db, data)
    res = invoke("kernels", "r-unprofiled", "--db", str(db), "--variant", "unprofiled", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == [], res.output


# ---------------------------------------------------------------------------- Ctrl-C


@pytest.mark.slow
def test_ctrl_c_during_report_exits_130_and_leaves_nothing(tmp_path, sample_db, monkeypatch):
    from aisp_prof.render import report

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "_finish_page", interrupted)
    res = invoke("report", "latest", "--db", str(sample_db), "--out", str(tmp_path / "rep"))
    assert res.exit_code == 130 and res.stderr.strip().splitlines()[-1] == "aisp-prof: interrupted", res.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_ctrl_c_during_import_stores_nothing(tmp_path, sample_db, monkeypatch):
    db = _copy_db(sample_db, tmp_path)
    interrupted, _ = interrupt_on_call(store._insert, 3)
    monkeypatch.setattr(store, "_insert", interrupted)
    res = invoke("import", "--db", str(db), str(sample_run_dirs()[1]))
    assert res.exit_code == 130 and "aisp-prof: interrupted" in res.stderr
    assert [r["run_id"] for r in store.list_runs(db)] == [RUN.name]
    assert store.read_table(db, "kernels", sample_run_dirs()[1].name).empty


LOST_SIGINT_S = 8.0        # an interrupted quick start exits within ~4 s of the SIGINT on 2 busy cores


@pytest.mark.slow
def test_sigint_to_a_real_quickstart(tmp_path):
    """SIGINT, as a terminal's Ctrl-C sends it, to a running `quickstart`: exit 130, one line,
    no partial report folder and no half-stored run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    # SIGINT at its default in the child, whatever the runner's: a job started in the background by a
    # non-interactive shell ignores SIGINT, the child inherits that, and Python then installs no handler
    # (a CI launched with `&` failed here with exit 0: the quick start never saw the signal)
    proc = subprocess.Popen([sys.executable, "-m", "aisp_prof", "quickstart", "--db", str(tmp_path / "a.db")],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = proc.stderr.readline()                       # "no CUDA GPU here: reading N sample run(s) ..."
    assert "sample run" in first, first
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=LOST_SIGINT_S)
    except subprocess.TimeoutExpired:
        # Once in ~25 probes at 0-14 s (2026-11-27, foreground, SIGINT at its default) a SIGINT ~3 s
        # after this line was lost and the quick start ran to its end. One cause, found 2026-11-30: the
        # interrupt landed in a callback whose exceptions Python ignores (an import lock's weakref callback),
        # which the CLI now delivers again (cli._redeliver_interrupts; tests/unit/test_interrupt_in_callback.py).
        # Should one still be lost, a user presses Ctrl-C again; so does this test, and says so.
        warnings.warn("the first SIGINT to quickstart was lost; sent a second")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "aisp-prof: interrupted", err
    assert "Traceback" not in err
    leftovers = [p.name for p in tmp_path.rglob("*") if ".partial" in p.name or ".old-" in p.name]
    assert leftovers == []
    if (tmp_path / "a.db").exists():                    # each stored run is whole: its kernels are there
        for run in store.list_runs(tmp_path / "a.db"):
            assert not store.read_table(tmp_path / "a.db", "kernels", run["run_id"]).empty


# ---------------------------------------------------------------------------- killed runs


_WRITER = """
import sys, time
from pathlib import Path
from aisp_prof.collect.output.run_folder import atomic_folder
with atomic_folder(Path(sys.argv[1]), sys.argv[2]) as folder:
    (folder.path / "ncu_raw.csv").write_text("half an export")
    print("writing", flush=True)
    time.sleep(600)
"""


def _writer(profiles: Path, run_id: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(profiles), run_id], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.readline().strip() == "writing"
    return proc


@pytest.mark.slow
def test_stale_partial_run_folders_are_removed_and_said(tmp_path, caplog):
    """A run killed outright (SIGKILL: no chance to clean up) leaves .partial-<id>; the next run
    removes it and logs it, but not a concurrent run's folder (its writer holds the lock), nor
    one made a moment ago. One of an older aisp-prof (no lock file) goes once untouched 24 h."""
    from aisp_prof.collect.output.run_folder import STALE_AFTER_S, atomic_folder

    profiles = tmp_path / "profiles"
    live = _writer(profiles, "r-live")
    killed = _writer(profiles, "r-killed")
    killed.kill()
    killed.wait()
    try:
        old = profiles / ".partial-r-old"
        (old / "ncu_raw.csv").parent.mkdir()
        (old / "ncu_raw.csv").write_text("half")
        day_ago = os.path.getmtime(old) - STALE_AFTER_S - 60
        for p in (old / "ncu_raw.csv", old):
            os.utime(p, (day_ago, day_ago))
        (profiles / ".partial-r-fresh").mkdir()
        with caplog.at_level("WARNING", logger="aisp_prof.collect.output.run_folder"):
            with atomic_folder(profiles, "r-new") as folder:
                (folder.path / "run.json").write_text("{}")
        assert sorted(p.name for p in profiles.iterdir()) == [".partial-r-fresh", ".partial-r-live", "r-new"]
        assert sorted(p.name for p in (profiles / "r-new").iterdir()) == ["run.json"]     # no lock file kept
        said = caplog.text
        assert ".partial-r-killed" in said and f"process {killed.pid}" in said and "is gone" in said
        assert ".partial-r-old" in said and "untouched" in said
    finally:
        live.kill()
        live.wait()


@pytest.mark.slow
def test_killed_report_partial_is_removed_by_the_next_report(tmp_path, sample_db, caplog):
    out = tmp_path / "rep"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".rep.partial-{dead.pid}"
    (stale / "img").mkdir(parents=True)
    long_ago = os.path.getmtime(stale) - 3600
    os.utime(stale, (long_ago, long_ago))
    mine = tmp_path / f".rep.partial-{os.getppid()}"        # a live process's: left alone
    mine.mkdir()
    with caplog.at_level("WARNING", logger="aisp_prof.render.report"):
        assert invoke("report", "latest", "--db", str(sample_db), "--out", str(out)).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [mine.name, "rep"]
    assert stale.name in caplog.text
