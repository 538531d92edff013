"""A stored run's folder found wherever it is now (`store.identity.find_run_folder`).

`runs.run_dir` used to keep the path as typed: the shipped samples imported as
`aisp-prof import profiles/samples*/*/` stored 'profiles/samples_.../<run>', so from any other
folder `aisp-prof code RUN --show sass` exited 6 ("... or its folder is on another machine") and
`aisp-prof report RUN` silently left out its Generated code section. An import now keeps the
absolute path; a reader takes the stored path when it holds a run.json of the same run, else that
path (or its end) under the database's folder and the folders above it, the current folder and the
checkout, so an old database of relative paths and a tree moved with its database still work; a
folder that is truly gone is one line saying what to do, and a note on the report page."""
from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from click.testing import CliRunner
from repo_paths import ROOT, every_sample_run

from aisp_prof.cli import cli
from aisp_prof.store.ingest import store_path

KEPT = next(d for d in every_sample_run() if d.name == "20261126T144407Z-ch14.graph_break_control_flow-65b4")
OTHER = next(d for d in every_sample_run() if d.name.startswith("20261126T150805Z-ch14.cuda_python"))
RELATIVE = KEPT.relative_to(ROOT)                      # profiles/samples_h100_ch14/<run>: as a user types it
NOTE = "Left out: this run kept the code of 121 Triton kernels in its folder"


def _cli(db: Path, *args: str):
    return CliRunner().invoke(cli, [*args, "--db", str(db)], env={"COLUMNS": "120"})


def _stored_dir(db: Path) -> str:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT run_dir FROM runs").fetchone()[0]


def _set_stored_dir(db: Path, run_dir: str) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE runs SET run_dir = ?", [run_dir])


def _sass_shown(db: Path) -> None:
    res = _cli(db, "code", KEPT.name, "--show", "sass")
    assert res.exit_code == 0, res.output
    assert "Function : triton_red_fused_sum_3" in res.stdout


def _page(db: Path, out: Path) -> str:
    res = _cli(db, "report", KEPT.name, "--out", str(out))
    assert res.exit_code == 0, res.output
    return (out / "ch14.graph_break_control_flow.html").read_text()


def _import_relative(db: Path, monkeypatch, cwd: Path, folder: Path) -> None:
    monkeypatch.chdir(cwd)
    store_path(db, folder)


def test_an_import_keeps_the_absolute_path(tmp_path, monkeypatch):
    _import_relative(tmp_path / "a.db", monkeypatch, ROOT, RELATIVE)
    assert _stored_dir(tmp_path / "a.db") == str(KEPT.resolve())


def test_code_and_report_read_the_folder_from_another_folder(tmp_path, monkeypatch):
    """The audit's case: samples imported by a relative path, then read from elsewhere."""
    db = tmp_path / "a.db"
    _import_relative(db, monkeypatch, ROOT, RELATIVE)
    monkeypatch.chdir(tmp_path)
    _sass_shown(db)
    html = _page(db, tmp_path / "report")
    assert '<h3 id="generated">Generated code</h3>' in html and 'id="gen-d0af4d10"' in html
    assert NOTE not in html and "not on this machine" not in html


def test_an_old_database_of_relative_paths_still_works(tmp_path, monkeypatch):
    """A database written before kept 'profiles/...': it works from the folder it was imported in
    (the checkout) as before, and now from any other folder too."""
    db = tmp_path / "a.db"
    _import_relative(db, monkeypatch, ROOT, RELATIVE)
    _set_stored_dir(db, str(RELATIVE))
    _sass_shown(db)
    monkeypatch.chdir(tmp_path)
    _sass_shown(db)


def test_a_tree_moved_with_its_database(tmp_path, monkeypatch):
    """A checkout (or a copy on another machine) moved with its database under another folder: the
    stored absolute path is stale, its end under a folder above the database holds the run."""
    (tmp_path / "repo" / "profiles" / "runs").mkdir(parents=True)
    shutil.copytree(KEPT, tmp_path / "repo" / "profiles" / "runs" / KEPT.name)
    _import_relative(tmp_path / "repo" / "profiles" / "a.db", monkeypatch, tmp_path / "repo",
                     Path("profiles") / "runs" / KEPT.name)
    (tmp_path / "repo").rename(tmp_path / "moved")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    db = tmp_path / "moved" / "profiles" / "a.db"
    _sass_shown(db)
    from aisp_prof.store.identity import find_run_folder

    folder = find_run_folder(KEPT.name, _stored_dir(db), db)
    assert folder.path == tmp_path / "moved" / "profiles" / "runs" / KEPT.name and not folder.missing


def test_a_folder_gone_is_one_line_and_a_note_on_the_page(tmp_path, monkeypatch):
    (tmp_path / "runs").mkdir()
    shutil.copytree(KEPT, tmp_path / "runs" / KEPT.name)
    db = tmp_path / "db" / "a.db"
    db.parent.mkdir()
    _import_relative(db, monkeypatch, tmp_path, Path("runs") / KEPT.name)
    (tmp_path / "away").mkdir()
    (tmp_path / "runs" / KEPT.name).rename(tmp_path / "away" / KEPT.name)
    res = _cli(db, "code", KEPT.name, "--show", "sass")
    assert res.exit_code == 6 and res.stderr.strip().count("\n") == 0, res.output
    assert "folder is not on this machine" in res.stderr and "aisp-prof import FOLDER --replace" in res.stderr
    assert str(tmp_path / "runs" / KEPT.name) in res.stderr
    html = _page(db, tmp_path / "report")
    assert NOTE in html and "(not on this machine)" in html
    assert 'id="gen-d0af4d10"' not in html
    # what the line says to do brings it back
    assert _cli(db, "import", str(tmp_path / "away" / KEPT.name), "--replace").exit_code == 0
    _sass_shown(db)


def test_a_folder_holding_another_run_is_not_read(tmp_path, monkeypatch):
    """The stored path now holds another run's folder: its generated code is not this run's."""
    (tmp_path / "runs").mkdir()
    shutil.copytree(KEPT, tmp_path / "runs" / "run")
    db = tmp_path / "a.db"
    _import_relative(db, monkeypatch, tmp_path, Path("runs") / "run")
    shutil.rmtree(tmp_path / "runs" / "run")
    shutil.copytree(OTHER, tmp_path / "runs" / "run")
    res = _cli(db, "code", KEPT.name)
    assert res.exit_code == 6 and "folder is not on this machine" in res.stderr, res.output


def test_a_cut_down_copy_of_the_run_is_not_taken_for_it(tmp_path, monkeypatch):
    """The repository ships the run twice: the sample (121 Triton kernels kept) and a cut-down fixture of the
    same run.json (tests/fixtures/generated_h100: 76 kept). With the imported sample gone, the fixture's
    folder, found under the current folder, is not the stored run: its index keeps another count (a review
    showed `code` reading the fixture's 76 kernels as the run's)."""
    from aisp_prof.store.identity import find_run_folder

    fixture = ROOT / "tests" / "fixtures" / "generated_h100" / KEPT.name
    assert (fixture / "run.json").read_bytes() == (KEPT / "run.json").read_bytes()
    shutil.copytree(KEPT, tmp_path / KEPT.name)
    db = tmp_path / "a.db"
    assert _cli(db, "import", str(tmp_path / KEPT.name)).exit_code == 0
    shutil.rmtree(tmp_path / KEPT.name)
    monkeypatch.chdir(fixture.parent)
    assert find_run_folder(KEPT.name, _stored_dir(db), db, 121).path is None
    res = _cli(db, "code", KEPT.name, "--all")
    assert res.exit_code == 6 and "folder is not on this machine" in res.stderr, res.output
