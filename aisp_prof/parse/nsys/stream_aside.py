"""What a parse in windows (`stream`) sets aside before its first window, in threads of their
own beside it (SQLite runs a statement without holding Python's GIL, so on two cores they cost
little wall time; at 1M kernels the setting aside took ~3.3 s in one thread, ~2 s now):

* the runtime call behind each GPU operation (`load_calls`, ~2 s at 1M kernels: a scan of every
  runtime call), into a scratch SQLite file where SQLite puts its temporary files, which the windows'
  connection attaches read-only once it is filled (a temp table is seen by its connection only);
* the NVTX push/pop ranges (`load_ranges`, ~0.7 s), in a temp table of a connection of their own,
  which the windows then read (`ActiveRanges`);

while the windows' connection sorts the kernels. Each file and connection goes when the parse
ends, however it ends; a thread still running then is interrupted first."""
from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

import numpy as np
import pandas as pd

from aisp_prof.parse.nsys import tables as export
from aisp_prof.parse.nsys.sqlite_export import connect
from aisp_prof.parse.nsys.tables import KERNEL_TABLE, OPEN_END, packed_id_sql
from aisp_prof.sqlite_frames import integer_frame

log = logging.getLogger(__name__)
_FIRST, _LAST = -(2 ** 63), 2 ** 63 - 1
_RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
CALLS_SCHEMA = "aisp_calls"          # the scratch file of runtime calls, as the windows' connection attaches it


class Live:
    """A parse's open connections, which a caller stopping early (Ctrl-C, a failed write) interrupts
    from its own thread (`StreamedParse.windows`): the windows' and those set aside beside them,
    whose scan the windows' thread may be waiting for. A connection leaves before it is closed
    (SQLite forbids interrupting a closed one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conns: list[sqlite3.Connection] = []

    def add(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        with self._lock:
            self._conns.append(conn)
        return conn

    def close(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            if conn in self._conns:
                self._conns.remove(conn)
            conn.close()

    def interrupt(self) -> None:
        with self._lock:
            for conn in self._conns:
                conn.interrupt()


@contextlib.contextmanager
def _beside(conn: sqlite3.Connection, work: Callable[[], object], name: str, live: Live) -> Iterator[Future]:
    """`work` in a thread of its own from now, on `conn` (opened for any thread, in `live`);
    leaving waits for it, interrupting SQLite's statement if it has not ended, then closes `conn`."""
    pool, future = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name), None
    try:
        future = pool.submit(work)
        yield future
    finally:
        while future is not None and not future.done():   # SQLite interrupts the statement running now: each in turn
            conn.interrupt()
            wait([future], timeout=0.05)
        pool.shutdown()
        live.close(conn)


@contextlib.contextmanager
def ranges_beside(source: Path, tables: set[str], live: Live) -> Iterator[Callable[[dict[int, str]], "ActiveRanges"]]:
    """`load_ranges` on a connection of its own (in `live`), in a second thread from now; yields the
    function that waits for it and gives the ranges to read windows from (on that connection, which
    the caller's thread then reads; names resolved through the caller's string cache)."""
    conn = live.add(connect(source, any_thread=True))
    with _beside(conn, lambda: _load(conn, tables), "aisp-nvtx-ranges", live) as future:
        yield lambda strings: ActiveRanges(conn, *future.result(), strings)


@contextlib.contextmanager
def calls_beside(source: Path, tables: set[str], reader: sqlite3.Connection, live: Live) -> Iterator[Callable[[], str]]:
    """`load_calls` into a scratch file, on a connection of its own (in `live`), in a second thread from now;
    yields the function that waits for it and attaches the file to `reader` (read-only), giving
    the schema name the calls are in. Leaving detaches and removes the file."""
    folder = sqlite_temp_folder()
    sweep_stale_scratch(folder)
    scratch = folder / f"{SCRATCH_PREFIX}{os.getpid()}-{secrets.token_hex(4)}.sqlite"
    conn = live.add(connect(source, any_thread=True))
    attached = False

    def attach() -> str:
        nonlocal attached
        future.result()
        reader.execute(f"ATTACH DATABASE ? AS {CALLS_SCHEMA}", [f"{scratch.resolve().as_uri()}?mode=ro"])
        attached = True
        return CALLS_SCHEMA

    def fill() -> None:
        conn.execute(f"ATTACH DATABASE ? AS {CALLS_SCHEMA}", [f"{scratch.resolve().as_uri()}?mode=rwc"])
        load_calls(conn, tables)

    try:
        with _beside(conn, fill, "aisp-runtime-calls", live) as future:
            yield attach
    finally:
        if attached:
            with contextlib.suppress(sqlite3.Error):      # a statement still open: the file goes all the same
                reader.execute(f"DETACH DATABASE {CALLS_SCHEMA}")
        for leftover in (scratch, Path(f"{scratch}-journal")):
            leftover.unlink(missing_ok=True)


SCRATCH_PREFIX = "aisp-calls-"     # + pid + "-" + 8 hex digits + ".sqlite"
STALE_AFTER_S = 6 * 3600           # a scratch file this old whose process is gone was left by a SIGKILL


def sweep_stale_scratch(folder: Path, now: float | None = None) -> list[Path]:
    """Remove the scratch files (and journals) an import killed outright (SIGKILL, OOM) left in
    `folder`: only ours by name, only where the process of the pid in the name is gone, and only
    when untouched for STALE_AFTER_S (a live import in another PID namespace sharing the folder
    writes or reads its file within minutes). Returns what it removed; never raises."""
    import time

    now = time.time() if now is None else now
    removed = []
    for path in folder.glob(f"{SCRATCH_PREFIX}*.sqlite*"):
        pid = path.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        try:
            if not pid.isdigit() or _alive(int(pid)) or now - path.stat().st_mtime < STALE_AFTER_S:
                continue
            path.unlink()
            removed.append(path)
        except OSError:
            continue
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:                  # EPERM: a process of another user holds the pid
        return True
    return True


def sqlite_temp_folder() -> Path:
    """Where SQLite puts its own temporary files (its unix order): $SQLITE_TMPDIR, $TMPDIR,
    /var/tmp, /usr/tmp, /tmp, the first that is a writable folder; else Python's."""
    for folder in (os.environ.get("SQLITE_TMPDIR"), os.environ.get("TMPDIR"), "/var/tmp", "/usr/tmp", "/tmp"):
        if folder and os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            return Path(folder)
    return Path(tempfile.gettempdir())


def load_calls(conn: sqlite3.Connection, tables: set[str]) -> None:
    """aisp_calls.aisp_launch: each GPU operation's runtime call, the first of a (process,
    correlationId) (process -1: calls without a thread id, which no kernel of a streamed export
    matches), as `tables.read_launches` keeps them. The file is scratch: no journal, no sync."""
    conn.execute(f"PRAGMA {CALLS_SCHEMA}.journal_mode = OFF")
    conn.execute(f"PRAGMA {CALLS_SCHEMA}.synchronous = OFF")
    conn.execute(f"CREATE TABLE {CALLS_SCHEMA}.aisp_launch (process_key INTEGER, correlation_id INTEGER, "
                 "global_tid INTEGER, launch_start_ns INTEGER, api INTEGER, "
                 "PRIMARY KEY (process_key, correlation_id)) WITHOUT ROWID")
    if _RUNTIME not in tables:
        log.warning("export has no CUDA API trace; kernels cannot be attributed to NVTX ranges")
    else:
        work = [KERNEL_TABLE] + [t for t in (*export.MEMORY_TABLES.values(), export.GRAPH_TABLE) if t in tables]
        correlated = " UNION ".join(f"SELECT correlationId FROM {t}" for t in work)
        conn.execute(f"""
            INSERT OR IGNORE INTO {CALLS_SCHEMA}.aisp_launch
            SELECT COALESCE({packed_id_sql('r.globalTid', 'process_key')}, -1), r.correlationId, r.globalTid, r.start,
                   r.nameId
            FROM {_RUNTIME} AS r WHERE r.correlationId IN ({correlated})""")
    conn.commit()


def _load(conn: sqlite3.Connection, tables: set[str]) -> tuple[pd.DataFrame | None, int]:
    conn.execute("PRAGMA temp_store = FILE")            # as the windows' own temp tables
    count = load_ranges(conn, tables)
    return (export.read_domains(conn, tables) if "NVTX_EVENTS" in tables else None), count


def load_ranges(conn: sqlite3.Connection, tables: set[str]) -> int:
    """temp.aisp_nvtx: the push/pop ranges in `read_push_pop_ranges`' order (range_id - 1 is
    its range id); how many."""
    conn.execute('CREATE TEMP TABLE aisp_nvtx (range_id INTEGER PRIMARY KEY, global_tid INTEGER, '
                 'domain_id INTEGER, start INTEGER, "end" INTEGER, text TEXT, text_id INTEGER)')
    if "NVTX_EVENTS" not in tables:
        return 0
    conn.execute(f"""
        INSERT INTO temp.aisp_nvtx (global_tid, domain_id, start, "end", text, text_id)
        SELECT n.globalTid, COALESCE(n.domainId, 0), n.start, COALESCE(n."end", {OPEN_END}), n.text, n.textId
        FROM NVTX_EVENTS AS n WHERE n.eventType = {export.push_pop_type(conn, tables)}
        ORDER BY n.globalTid, n.start, n."end" DESC, n.rowid""")
    conn.execute('CREATE INDEX temp.aisp_nvtx_start ON aisp_nvtx (start, range_id, global_tid, domain_id, '
                 '"end", text_id)')       # windows read ranges by start from the index alone
    return int(conn.execute("SELECT count(*) FROM temp.aisp_nvtx").fetchone()[0])


class ActiveRanges:
    """The ranges a window's calls can be in (see `stream`'s doc), as `read_push_pop_ranges`
    has them, in range id order."""

    def __init__(self, conn: sqlite3.Connection, domains: pd.DataFrame | None, count: int,
                 strings: dict[int, str] | None = None):
        self.conn, self.count, self.strings = conn, count, strings if strings is not None else {}
        self.domains = domains if domains is not None else pd.DataFrame(
            {"global_tid": pd.Series(dtype=np.int64), "domain_id": pd.Series(dtype=np.int64),
             "domain": pd.Series(dtype=object)})
        self.fetched, self.floor = _FIRST, _FIRST     # ranges read start by `fetched`; none ending before `floor` is held
        self.has_text: bool | None = None             # whether any range has its own text (not a registered string)
        self.frame = self._read("0", ())

    def window(self, first: int | None, last: int | None) -> tuple[pd.DataFrame, np.ndarray]:
        """The ranges that can hold calls from `first` to `last` (None: no call) and those
        pushed since the last window, and which of them are read for the first time."""
        horizon = min(_LAST if first is None else first, self.fetched + 1)
        if horizon < self.floor:                     # calls reach back before what was let go: read again
            self.frame = self._read('start <= ? AND "end" >= ?', (self.fetched, horizon))
        elif horizon > self.floor:
            self.frame = self.frame.loc[self.frame["end"].to_numpy() >= horizon]
        self.floor = horizon
        new = np.array([], np.int64)
        if last is not None and last > self.fetched:
            read = self._read("start > ? AND start <= ?", (self.fetched, last))
            self.fetched, new = last, read["range_id"].to_numpy()
            self.frame = pd.concat([self.frame, read], ignore_index=True).sort_values("range_id", kind="stable")
        self.frame = self.frame.reset_index(drop=True)
        return self.frame, np.isin(self.frame["range_id"].to_numpy(), new)

    def rest(self, chunk: int) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
        """After the last window: the ranges not read yet, about `chunk` at a time."""
        while True:
            row = self.conn.execute("SELECT start FROM temp.aisp_nvtx WHERE start > ? ORDER BY start LIMIT 1 OFFSET ?",
                                    (self.fetched, chunk - 1)).fetchone()
            frame, new = self.window(None, _LAST if row is None else int(row[0]))
            if new.any():
                yield frame, new
            if row is None:
                return

    def _read(self, where: str, params: tuple[int, ...]) -> pd.DataFrame:
        """The ranges `where` says, in range id order, as `read_push_pop_ranges` has them."""
        if self.has_text is None:
            self.has_text = self.conn.execute("SELECT count(text) FROM temp.aisp_nvtx").fetchone()[0] > 0
        text = ", text" if self.has_text else ""
        sql = (f'SELECT range_id - 1 AS range_id, global_tid, domain_id, start, "end", text_id{text} '
               f"FROM temp.aisp_nvtx WHERE {where}")
        ints = None if self.has_text else integer_frame(self.conn, sql.replace("text_id", "COALESCE(text_id, -1) AS text_id"), params)
        rows = [] if ints is not None else self.conn.execute(sql, params).fetchall()
        cols = list(zip(*rows)) or [[]] * 7
        df = ints if ints is not None else pd.DataFrame(
            {c: np.array(cols[i], dtype=np.int64) for i, c in enumerate(("range_id", "global_tid", "domain_id", "start", "end"))})
        df["text"] = pd.Series([None] * len(df) if ints is not None or not self.has_text else list(cols[6]), dtype=object)
        if ints is None:
            df["text_id"] = pd.Series(list(cols[5]), dtype=object)
        df = df.sort_values("range_id", kind="stable").reset_index(drop=True)
        df = export.named_ranges(self.conn, df, self.domains, self.strings)
        return df.loc[:, ["range_id", "global_tid", "domain_id", "start", "end", "name", "domain"]]
