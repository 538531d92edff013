"""An import read in windows (`parse.nsys.stream`, issue 33: a long trace in flat memory) stores
exactly what the one-piece parse stores: every table of the run, row for row, value for value,
each value of the same SQLite type, and the same GPU. The windows are forced down to a few
kernels (AISP_PROF_NSYS_CHUNK_ROWS: 3 on five chosen exports; on every export 7, or as many as keep
it to 30 windows) so that a real shipped export crosses dozens of window seams:
a kernel lost or counted twice at a seam, a busy time or gap not carried across one, a range
read twice or never, would change a row here."""
from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from repo_paths import ROOT

from aisp_prof.export_rows import ExportRows, StreamedRows
from aisp_prof.parse.nsys import stream, stream_aside
from aisp_prof.parse.nsys import tables as export_tables
from aisp_prof.parse.nsys.sqlite_export import KERNEL_COLUMNS
from aisp_prof.store.ingest import load_export, store_path
from interrupts import interrupt_on_call, python_ctrl_c
from sample_files import plain_path

FIXTURES = ROOT / "tests" / "fixtures"
# graph launches and memory operations on 5 streams; two NVTX domains (merged paths); ranges
# named by their own text; 256 memory operations; two domains on two threads
# named as kept, gzipped: each is read through a plain copy (plain_path; a .gz is never read in windows)
CHOSEN = [FIXTURES / "foreign_h100" / "nested_graph_default.sqlite.gz", FIXTURES / "h200" / "probe_nested_graph_nsys.sqlite.gz",
          FIXTURES / "h200" / "l2norm_pair_nsys.sqlite.gz",
          FIXTURES / "time_kinds" / "20261127T171610Z-ch14.gpu_quantization-5c82" / "nsys.sqlite.gz",
          FIXTURES / "multigpu_h100x2" / "nsys.rank0.sqlite.gz"]
EVERY = sorted([*FIXTURES.glob("*/*.sqlite"), *FIXTURES.glob("*/*.sqlite.gz"),
                *(ROOT / "profiles").glob("*/*/nsys.sqlite.gz")])
L2NORM = FIXTURES / "h200" / "l2norm_pair_nsys.sqlite"          # the tests below read plain_path(L2NORM)
_RUN_SAME = ("gpu_name", "compute_capability", "sm_count", "driver_version", "nsys_version", "source", "status")


def _stored(db: Path, run_id: str) -> dict[str, object]:
    """Every table's rows of the run (values and their SQLite types, in stored order), and the
    runs row less what differs between two imports (id, time)."""
    con = sqlite3.connect(db)
    try:
        out: dict[str, object] = {}
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'runs'"):
            schema = con.execute(f"PRAGMA table_info([{table}])").fetchall()
            names = [r[1] for r in schema if r[1] != "run_id"]
            if len(names) == len(schema):
                continue
            typed = ", ".join(f"[{c}], typeof([{c}])" for c in names)
            out[table] = (schema, con.execute(f"SELECT {typed} FROM [{table}] WHERE run_id = ? ORDER BY rowid",
                                              (run_id,)).fetchall())
        run = dict(zip([d[0] for d in con.execute("SELECT * FROM runs").description],
                       con.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()))
        info = json.loads(run["info_json"])
        out["runs"] = ({k: run[k] for k in _RUN_SAME}, info["gpu"])
        return out
    finally:
        con.close()


def _both(tmp_path: Path, export: Path, monkeypatch: pytest.MonkeyPatch, rows: int) -> tuple[dict, dict]:
    """The run stored in one piece, and read `rows` kernels a window."""
    with monkeypatch.context() as m:
        m.setattr(stream, "stream_nsys_sqlite", lambda *a: None)
        whole = store_path(tmp_path / "whole.db", export)
    monkeypatch.setenv(stream.CHUNK_ROWS_ENV, str(rows))
    windows = store_path(tmp_path / "windows.db", export)
    return _stored(tmp_path / "whole.db", whole), _stored(tmp_path / "windows.db", windows)


@pytest.mark.parametrize("export", CHOSEN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_windows_of_three_kernels_store_what_one_piece_stores(tmp_path, monkeypatch, export):
    export = plain_path(export.with_name(export.name.removesuffix(".gz")))
    monkeypatch.setenv(stream.CHUNK_ROWS_ENV, "3")
    streamed = stream.stream_nsys_sqlite(export, KERNEL_COLUMNS)
    assert streamed is not None                                       # the windows are really taken
    sizes = [len(w) for w in streamed.windows()]
    assert len(sizes) > 3 and sum(sizes) == streamed.kernel_count
    whole, windows = _both(tmp_path, export, monkeypatch, 3)
    assert set(windows) == set(whole)
    for table in whole:
        assert windows[table] == whole[table], table
    assert len(whole["timeline"][1]) == streamed.kernel_count and whole["ranges"][1]


MAX_WINDOWS = 30      # window seams per export in the sweep below


def _window_rows(export: Path) -> int:
    """7 kernels a window, or as many more as keep the export to MAX_WINDOWS windows: every export
    still crosses dozens of seams, and the tiny windows (3 kernels, calls spanning several windows)
    are the test above's. At 7 a window the two largest samples (ch10.batch's 6590 kernels,
    model_compile_reduced_precision's 5767) took 941 and 824 windows, over a minute of the suite."""
    with contextlib.closing(sqlite3.connect(export)) as con:
        kernels = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    return max(7, -(-kernels // MAX_WINDOWS))


@pytest.mark.slow
@pytest.mark.parametrize("export", EVERY, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_export_stores_the_same_in_windows(tmp_path, monkeypatch, export):
    export = plain_path(export.with_name(export.name.removesuffix(".gz")))
    whole, windows = _both(tmp_path, export, monkeypatch, _window_rows(export))
    assert stream.stream_nsys_sqlite(export, KERNEL_COLUMNS) is not None    # the windows were really taken
    assert windows == whole


def test_one_window_is_the_one_piece_parse(tmp_path, monkeypatch):
    """A trace that fits one window is parsed in one piece, as before (the export rows of
    `export_rows`); a longer one comes in windows."""
    export = plain_path(L2NORM)
    assert isinstance(load_export(export, in_export=True).timeline, ExportRows)
    monkeypatch.setenv(stream.CHUNK_ROWS_ENV, "10")
    assert isinstance(load_export(export, in_export=True).timeline, StreamedRows)


def test_calls_reaching_back_read_the_ranges_let_go_again():
    """Kernels come in GPU start order, so a window's calls can start before the last window's
    (a kernel queued long on another stream): the ranges let go as ended must be read again,
    exactly those a one-piece read holds there. The real ranges of a 2-domain export."""
    export = plain_path(FIXTURES / "multigpu_h100x2" / "nsys.rank0.sqlite")
    conn = stream.connect(export)
    try:
        tables = export_tables.table_names(conn)
        whole = export_tables.read_push_pop_ranges(conn, tables)
        count = stream_aside.load_ranges(conn, tables)
        active = stream_aside.ActiveRanges(conn, export_tables.read_domains(conn, tables), count, {})
        starts = np.sort(whole["start"].to_numpy())
        early, late, last = (int(starts[i]) for i in (10, len(starts) // 2, len(starts) - 5))
        active.window(late, last)                                 # reads every range up to `last`
        held, _ = active.window(late, last)                       # lets go of those ended before `late`
        let_go = whole.loc[(whole["end"] >= early) & (whole["end"] < late) & (whole["start"] <= last)]
        assert len(let_go) and not held["range_id"].isin(let_go["range_id"]).any()
        again, new = active.window(early, last)
        want = whole.loc[(whole["start"] <= last) & (whole["end"] >= early)].reset_index(drop=True)
        assert not new.any()
        pd.testing.assert_frame_equal(again.reset_index(drop=True), want, check_dtype=False)
    finally:
        conn.close()


def test_a_report_exported_on_the_fly_is_read_in_windows_until_stored(tmp_path, monkeypatch):
    """A .nsys-rep's temporary SQLite export stays until the run is written (the windows read it
    while the store writes), then goes; the run stores what importing that export stores."""
    export = plain_path(FIXTURES / "h200" / "probe_nested_graph_nsys.sqlite")
    monkeypatch.setenv(stream.CHUNK_ROWS_ENV, "3")
    folder, streamed = tmp_path / "exported", []
    real = stream.stream_nsys_sqlite
    monkeypatch.setattr(stream, "stream_nsys_sqlite", lambda *a: streamed.append(real(*a)) or streamed[-1])

    @contextlib.contextmanager
    def via(report: Path):
        folder.mkdir()
        shutil.copyfile(export, folder / "export.sqlite")
        try:
            yield folder / "export.sqlite", ["nsys", "export", "--type", "sqlite"]
        finally:
            shutil.rmtree(folder)

    rep = tmp_path / "trace.nsys-rep"
    rep.write_bytes(b"read by the stand-in exporter only")
    run = store_path(tmp_path / "rep.db", rep, via=via)
    assert streamed and streamed[0] is not None and not folder.exists()
    direct = store_path(tmp_path / "direct.db", export)
    assert _stored(tmp_path / "rep.db", run) == _stored(tmp_path / "direct.db", direct)


@pytest.mark.parametrize("which", ["kernels", "ranges", "calls"])
def test_a_full_disk_under_the_windows_temp_tables_is_one_line_and_stores_nothing(tmp_path, monkeypatch, which):
    """The windows' temp tables filling their disk (SQLite's own SQLITE_FULL: a page limit on the
    kernels' temp database, on the one of the NVTX ranges or on the scratch file of the runtime
    calls, both filled in threads of their own) is the storage error (exit 13) naming that
    folder, and the run database is left as it was: none; nor is the scratch file left."""
    from click.testing import CliRunner

    from aisp_prof.cli import cli

    monkeypatch.setenv(stream.CHUNK_ROWS_ENV, "3")
    if which == "ranges":
        real_load = stream_aside.load_ranges

        def small_load(conn: sqlite3.Connection, tables: set[str]) -> int:
            conn.execute("PRAGMA temp.max_page_count = 2")     # its table, not its index
            return real_load(conn, tables)
        monkeypatch.setattr(stream_aside, "load_ranges", small_load)
    elif which == "calls":
        real_calls = stream_aside.load_calls

        def small_calls(conn: sqlite3.Connection, tables: set[str]) -> None:
            conn.execute(f"PRAGMA {stream_aside.CALLS_SCHEMA}.max_page_count = 1")     # not even its table
            real_calls(conn, tables)
        monkeypatch.setattr(stream_aside, "load_calls", small_calls)
        monkeypatch.setenv("SQLITE_TMPDIR", str(tmp_path / "scratch"))
        (tmp_path / "scratch").mkdir()
    else:
        real = stream._Windows.__init__

        def small(self, conn: sqlite3.Connection, parse: stream.StreamedParse) -> None:
            conn.execute("PRAGMA temp.max_page_count = 1")     # after temp_store, which resets it
            real(self, conn, parse)
        monkeypatch.setattr(stream._Windows, "__init__", small)
    res = CliRunner().invoke(cli, ["import", "--db", str(tmp_path / "a.db"), str(plain_path(L2NORM))])
    assert res.exit_code == 13, res.output
    assert "SQLite's temporary files" in res.output and len(res.output.strip().splitlines()) == 1
    assert which != "calls" or not any((tmp_path / "scratch").iterdir())
    assert not (tmp_path / "a.db").exists()


def test_an_export_the_windows_cannot_read_is_exit_6_naming_it_as_in_one_piece(tmp_path, monkeypatch):
    """An export whose runtime table lacks a column the windows read (SQLite's 'no such column', an
    OperationalError) is the export's fault, as the one-piece parse says (exit 6, naming it): not
    'the run database failed' (exit 13) naming the database, which it said before."""
    from click.testing import CliRunner

    from aisp_prof.cli import cli

    export = tmp_path / "odd.sqlite"
    shutil.copy(plain_path(L2NORM), export)
    with contextlib.closing(sqlite3.connect(export)) as con:
        con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME DROP COLUMN nameId")
        con.commit()
    outputs = []
    for rows in ("", "3"):                      # one piece, then windows of 3 kernels
        monkeypatch.setenv(stream.CHUNK_ROWS_ENV, rows)
        res = CliRunner().invoke(cli, ["import", "--db", str(tmp_path / f"a{rows}.db"), str(export)])
        assert res.exit_code == 6, res.output
        assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
        outputs.append(res.output)
    assert outputs[0] == outputs[1] and str(export) in outputs[1]


@pytest.mark.parametrize("devices", [1, 2])
def test_kernel_counts_per_process_and_device_in_one_pass_or_grouped(tmp_path, devices):
    """`_kernel_counts` reads one process on one device in one pass, without GROUP BY's sort, and
    more in groups: both equal SQLite's own GROUP BY. The real l2norm export, and a copy of it
    whose odd kernels are moved to device 1 (no shipped export has two devices in a process)."""
    export = tmp_path / "two.sqlite"
    shutil.copy(plain_path(L2NORM), export)
    with contextlib.closing(sqlite3.connect(export)) as conn:
        conn.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1 WHERE rowid % 2 = 1 AND {devices} = 2")
        conn.commit()
        want = conn.execute("SELECT (globalPid >> 24) & 16777215 AS p, deviceId AS d, count(*) "
                            "FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY p, d ORDER BY p, d").fetchall()
    with contextlib.closing(stream.connect(export)) as conn:
        counts = stream._kernel_counts(conn)
    assert len(want) == devices
    assert [(*k, int(n)) for k, n in counts.items()] == want


def test_ctrl_c_while_a_window_is_stored_stops_the_parse_threads_and_leaves_nothing(tmp_path, monkeypatch):
    """Ctrl-C while the store writes a window (the parse is a window ahead in its thread): exit 130
    with one line, no run database, no thread of the parse still running, no scratch file left."""
    import threading

    from click.testing import CliRunner

    from aisp_prof.cli import cli
    from aisp_prof.store import db as store_db

    monkeypatch.setenv(stream.CHUNK_ROWS_ENV, "3")
    monkeypatch.setenv("SQLITE_TMPDIR", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    interrupted, calls = interrupt_on_call(store_db.insert_export_rows, 2)
    monkeypatch.setattr(store_db, "insert_export_rows", interrupted)
    res = CliRunner().invoke(cli, ["import", "--db", str(tmp_path / "a.db"), str(plain_path(L2NORM))])
    assert res.exit_code == 130 and "interrupted" in res.output, res.output
    assert len(calls) == 2 and not (tmp_path / "a.db").exists()
    assert not [t.name for t in threading.enumerate() if t.name.startswith(("aisp-nsys", "aisp-nvtx", "aisp-runtime"))]
    assert not any((tmp_path / "scratch").iterdir())


def test_a_scratch_file_left_by_a_killed_import_is_swept_only_when_stale_and_its_process_gone(tmp_path):
    """SIGKILL leaves the runtime calls' scratch file behind (no finally runs): the next import removes
    it, but never a file of a live process, a fresh one (a live import in another PID namespace), or
    a file that is not ours by name."""
    import os
    import subprocess
    import time

    from aisp_prof.parse.nsys.stream_aside import STALE_AFTER_S, sweep_stale_scratch

    gone = subprocess.Popen(["true"])
    gone.wait()
    old = time.time() - STALE_AFTER_S - 60
    names = {"dead_old": f"aisp-calls-{gone.pid}-0a1b2c3d.sqlite",
             "dead_journal": f"aisp-calls-{gone.pid}-0a1b2c3d.sqlite-journal",
             "live_old": f"aisp-calls-{os.getpid()}-0a1b2c3d.sqlite",
             "dead_fresh": f"aisp-calls-{gone.pid}-ffff0000.sqlite",
             "not_ours": "other-calls-1-0a1b2c3d.sqlite"}
    for key, name in names.items():
        (tmp_path / name).write_bytes(b"x")
        if key != "dead_fresh":
            os.utime(tmp_path / name, (old, old))
    removed = {p.name for p in sweep_stale_scratch(tmp_path)}
    assert removed == {names["dead_old"], names["dead_journal"]}
    assert {p.name for p in tmp_path.iterdir()} == {names["live_old"], names["dead_fresh"], names["not_ours"]}


@pytest.mark.parametrize("which", ["calls", "ranges"])
def test_ctrl_c_while_the_parse_sets_aside_stops_at_once(tmp_path, monkeypatch, which):
    """Ctrl-C before the first window, while a thread beside the parse still scans the runtime calls
    (~2 s a million kernels) or loads the NVTX ranges, and the windows' thread waits for it: the
    import exits 130 at once, not when that scan ends (only the windows' own connection was
    interrupted), with no thread, run database or scratch file left. The stand-in scan naps 10 ms
    a row in SQL for up to 30 s, unless interrupted."""
    import os
    import signal
    import threading
    import time

    from click.testing import CliRunner

    from aisp_prof.cli import cli

    monkeypatch.setenv(stream.CHUNK_ROWS_ENV, "3")
    monkeypatch.setenv("SQLITE_TMPDIR", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    scanning = threading.Event()
    name = "load_calls" if which == "calls" else "load_ranges"
    real = getattr(stream_aside, name)

    def slow(conn: sqlite3.Connection, tables: set[str]):
        conn.create_function("nap", 1, lambda s: time.sleep(s) or 0)
        scanning.set()
        conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 + nap(0.01) FROM n WHERE i < 3000) "
                      "SELECT count(*) FROM n").fetchone()
        return real(conn, tables)
    monkeypatch.setattr(stream_aside, name, slow)

    def ctrl_c() -> None:
        if scanning.wait(timeout=20):
            time.sleep(0.3)                   # the windows' thread has sorted its kernels and waits
            os.kill(os.getpid(), signal.SIGINT)
    with python_ctrl_c():
        threading.Thread(target=ctrl_c, daemon=True).start()
        t0 = time.perf_counter()
        res = CliRunner().invoke(cli, ["import", "--db", str(tmp_path / "a.db"),
                                       str(plain_path(L2NORM))])
        took_s = time.perf_counter() - t0
    assert scanning.is_set() and res.exit_code == 130 and "interrupted" in res.output, res.output
    assert took_s < 10, took_s
    assert not [t.name for t in threading.enumerate() if t.name.startswith(("aisp-nsys", "aisp-nvtx", "aisp-runtime"))]
    assert not (tmp_path / "a.db").exists() and not any((tmp_path / "scratch").iterdir())


@pytest.mark.parametrize("edit", ["DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME", "DROP TABLE NVTX_EVENTS",
                                  "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IN "
                                  "(SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 9)"])
def test_an_export_without_the_runtime_calls_or_nvtx_stores_what_one_piece_stores(tmp_path, monkeypatch, edit):
    """A copy of a real export with no CUDA API trace (the one-piece parse warns and stores its
    kernels unattributed), no NVTX, or the first kernels' calls gone: read in windows it stores
    the same rows. Without the runtime calls it stopped with a pandas traceback (exit 1): the API
    names of no call were mapped to an integer column, which took no text."""
    export = tmp_path / "odd.sqlite"
    shutil.copy(plain_path(L2NORM), export)
    with contextlib.closing(sqlite3.connect(export)) as con:
        con.execute(edit)
        con.commit()
    whole, windows = _both(tmp_path, export, monkeypatch, 3)
    assert set(windows) == set(whole)
    for name in whole:
        assert windows[name] == whole[name], name
    assert len(whole["timeline"][1]) == 28
