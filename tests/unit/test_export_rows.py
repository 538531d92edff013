"""An import that leaves the timeline's kernel columns in the export for SQLite to copy
(`export_rows`, issue 17) stores exactly what storing the whole parsed frame stores: the same
columns in the same order with the same declared types, the same rows in the same order, every
value of the same SQLite type. Checked on every nsys export the repository holds (the fixtures
and one export of every sample folder, kept gzipped: a plain copy of each, since a gzipped export is
read through a temporary copy and so always as a frame), and the export path must really be taken there."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from repo_paths import ROOT

from aisp_prof.export_rows import ExportRows
from aisp_prof.store import db as store
from aisp_prof.store.ingest import load_export, store_path
from sample_files import plain_path

EXPORTS = sorted([*(ROOT / "tests" / "fixtures").glob("*/*.sqlite"), *(ROOT / "tests" / "fixtures").glob("*/*.sqlite.gz"),
                  *(ROOT / "profiles").glob("*/*/nsys.sqlite"),
                  *(ROOT / "profiles").glob("*/*/nsys.sqlite.gz")])


def _timeline(db: Path) -> tuple[list[tuple], list[tuple]]:
    con = sqlite3.connect(db)
    try:
        schema = con.execute("PRAGMA table_info(timeline)").fetchall()
        names = [r[1] for r in schema if r[1] != "run_id"]
        typed = ", ".join(f"[{c}], typeof([{c}])" for c in names)
        return schema, con.execute(f"SELECT {typed} FROM timeline ORDER BY rowid").fetchall()
    finally:
        con.close()


@pytest.mark.slow
@pytest.mark.parametrize("export", EXPORTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_copied_timeline_is_the_parsed_frame(tmp_path, export):
    export = plain_path(export.with_name(export.name.removesuffix(".gz")))
    framed = load_export(export)
    assert not isinstance(framed.timeline, ExportRows)
    store.write_run(tmp_path / "frame.db", framed)
    copied = load_export(export, in_export=True)
    assert isinstance(copied.timeline, ExportRows)
    store.write_run(tmp_path / "copy.db", copied)
    assert _timeline(tmp_path / "copy.db") == _timeline(tmp_path / "frame.db")


def test_store_path_copies_and_leaves_the_export_as_it_was(tmp_path):
    export = plain_path(ROOT / "tests" / "fixtures" / "h200" / "l2norm_pair_nsys.sqlite")      # kept gzipped
    before = export.read_bytes()
    store_path(tmp_path / "a.db", export)
    assert export.read_bytes() == before
    assert not list(export.parent.glob(export.name + "-*"))          # no journal left beside it


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["removed", "overwritten"])
def test_export_gone_bad_before_the_copy_is_an_export_error_and_stores_nothing(tmp_path, damage):
    """The export is read again when the rows are stored: if it went missing or bad in between,
    the import fails as a bad export (exit 6) and nothing of the run is stored."""
    import shutil

    from aisp_prof.errors import ExportParseError

    export = tmp_path / "e.sqlite"
    shutil.copy(plain_path(ROOT / "tests" / "fixtures" / "h200" / "l2norm_pair_nsys.sqlite"), export)
    data = load_export(export, in_export=True)
    if damage == "removed":
        export.unlink()
    else:
        export.write_bytes(export.read_bytes()[:100] + b"\xff" * (export.stat().st_size - 100))
    with pytest.raises(ExportParseError) as err:
        store.write_run(tmp_path / "a.db", data)
    assert err.value.exit_code == 6 and str(export) in str(err.value)
    con = sqlite3.connect(tmp_path / "a.db")
    assert not [r for r in con.execute("SELECT name FROM sqlite_master WHERE name = 'runs'")] or \
        con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    con.close()
    assert not export.exists() if damage == "removed" else True        # nothing made in its place
