"""Many `aisp-prof` processes writing one database at once (a shared team database, a CI matrix):
every run is stored, whole, once. Real processes through the real CLI, no GPU.

Before WAL + `BEGIN IMMEDIATE` + the busy timeout, 20 concurrent imports stored 2 runs and 18
died with "database is locked" tracebacks (issue 18)."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from stored_digest import digest
from repo_paths import FIXTURES, ROOT

GOLDEN = FIXTURES / "stored_tables_digest.json"
SAMPLES = sorted(p for d in ("samples", "samples_h100") for p in (ROOT / "profiles" / d).iterdir()
                 if (p / "run.json").exists())


def _start(*args: str, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("AISP_PROF_DB", None)
    return subprocess.Popen([sys.executable, "-m", "aisp_prof", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    outputs = [p.communicate(timeout=600) for p in procs]
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs)]


def _rows(d: dict | None) -> int:
    return 0 if d is None else d["rows"]


def _counts(db: Path, folders: list[Path]) -> dict:
    """Rows per table per run (the golden's hashes depend on the order a table's columns were
    made in, which is the order the runs arrived in; the rows do not)."""
    return {r: {t: _rows(d) for t, d in tables.items()} for r, tables in digest(db, [f.name for f in folders]).items()}


def _golden(folders: list[Path]) -> dict:
    golden = json.loads(GOLDEN.read_text())
    return {f.name: {t: _rows(d) for t, d in golden[f.name].items()} for f in folders}


def _hold_write_lock(db: Path) -> sqlite3.Connection:
    """A WAL database whose write lock this process holds: every writer started now must queue."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    return conn


@pytest.mark.slow
def test_eight_concurrent_imports_all_store_every_row(tmp_path):
    """Every writer queues behind a held write lock, then all go at once: eight processes make the
    same contention twenty did (each one an interpreter importing pandas: 2.5 times the CPU)."""
    db = tmp_path / "team.db"
    folders = SAMPLES[:8]
    lock = _hold_write_lock(db)
    procs = [_start("import", "--db", str(db), str(f), cwd=tmp_path) for f in folders]
    time.sleep(2.0)                    # all of them start, parse their run and wait for the lock
    lock.execute("COMMIT")
    lock.close()
    results = _finish(procs)
    for folder, (code, out, err) in zip(folders, results):
        assert code == 0, (folder.name, err)
        assert out.strip() == folder.name and "Traceback" not in err, err
    runs = json.loads(_finish([_start("runs", "--db", str(db), "--json", cwd=tmp_path)])[0][1])
    assert sorted(r["run_id"] for r in runs) == [f.name for f in folders]
    assert _counts(db, folders) == _golden(folders)      # every row of every table, per run


@pytest.mark.slow
def test_same_run_imported_twice_at_once_is_stored_once(tmp_path):
    """Two quickstart-style imports of one run: one stores it, the other says it is already
    there; both exit 0 and print the run id, and no row is doubled."""
    db, folder = tmp_path / "a.db", SAMPLES[0]
    lock = _hold_write_lock(db)
    procs = [_start("import", "--db", str(db), str(folder), cwd=tmp_path) for _ in range(2)]
    time.sleep(1.5)
    lock.execute("COMMIT")
    lock.close()
    results = _finish(procs)
    assert [code for code, _, _ in results] == [0, 0], results
    assert [out.strip() for _, out, _ in results] == [folder.name] * 2
    already = [err for _, _, err in results if "already in" in err]
    assert len(already) == 1 and already[0].strip() == f"{folder}: run {folder.name} is already in {db}"
    assert _counts(db, [folder]) == _golden([folder])


@pytest.mark.slow
def test_reimport_exits_0_with_the_run_id(tmp_path):
    """Issue 16: the README's next step after the quick start re-imports the samples; already
    stored is not a failure. --json says which paths were stored and which were already there."""
    db = tmp_path / "a.db"
    first = _finish([_start("import", "--db", str(db), str(SAMPLES[0]), cwd=tmp_path)])[0]
    assert first[0] == 0 and first[2] == ""
    again = _finish([_start("import", "--db", str(db), str(SAMPLES[0]), str(SAMPLES[1]), "--json",
                            cwd=tmp_path)])[0]
    assert again[0] == 0, again[2]
    assert [(r["run_id"], r["status"]) for r in json.loads(again[1])] == [(SAMPLES[0].name, "already stored"),
                                                                          (SAMPLES[1].name, "stored")]
    assert "already in" in again[2]


@pytest.mark.slow
def test_two_reports_into_one_folder_at_once(tmp_path):
    """Two `quickstart`s write reports/quickstart at the same moment: both succeed, and the
    folder left is one whole report, not a mix or a leftover partial."""
    db, folder = tmp_path / "a.db", SAMPLES[0]
    assert _finish([_start("import", "--db", str(db), str(folder), cwd=tmp_path)])[0][0] == 0
    out = tmp_path / "reports" / "quickstart"
    procs = [_start("report", folder.name, "--db", str(db), "--out", str(out), cwd=tmp_path) for _ in range(3)]
    results = _finish(procs)
    assert [code for code, _, _ in results] == [0, 0, 0], results
    assert (out / "index.html").exists() and (out / "ch09.fused_l2norm.html").exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["quickstart"]      # no partial or old folder left
