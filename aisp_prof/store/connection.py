"""Opening the run database, for reading or for one write transaction, and its failures as one line.

Many writers share one database (a team's, a CI matrix's): each write is one `BEGIN IMMEDIATE`
transaction in WAL mode, so readers never block it and writers queue on SQLite's busy timeout
instead of failing half-way; a writer still refused after that is retried, a bounded number of
times, after a random pause (so the queue does not retry in lock step). In WAL mode the lock is
only ever waited for there (and when WAL is first turned on): once a writer holds it, its writes
and its commit need no other. Reading never creates anything: a missing database is a
`MissingDatabaseError`. A failure of the file (read-only, full, cannot open, not a database,
locked past the retries) becomes a `StorageError` that says what to do.

A database that does not exist yet is made whole or not at all (`create_whole`): the first
write goes into a hidden file beside it, hard-linked into place only once committed, so a first
import that fails leaves no 4 KB database (nor the folders made for it) behind.

Only a run database is ever opened (`check_ours`): an existing SQLite file that is someone
else's (a user's nsys export given as --db, any database with tables but neither `runs` nor
`ceilings`) or written by a newer aisp-prof (schema version above SCHEMA_VERSION) is refused
with a StorageError (exit 13) after a read-only look, before WAL is turned on or anything is
written: the file stays byte-identical and no -wal/-shm is left beside it. An empty file, or a
database without tables, is a new run database.
"""
from __future__ import annotations

import logging
import os
import random
import secrets
import sqlite3
import time
from pathlib import Path
from typing import Callable

from ..errors import MissingDatabaseError, StorageError, os_error_message, shorten

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 20.0      # SQLite waits this long for the write lock before answering "locked"
WRITE_ATTEMPTS = 6         # whole transactions tried before giving up (about 2 minutes of queue)
RETRY_PAUSE_S = (0.05, 1.0)
SCHEMA_VERSION = 2          # PRAGMA user_version; 2: raw ncu metrics in metric_columns/metric_rows (0: `metrics`)
OWN_TABLES = ("runs", "ceilings")    # a database holding tables but none of these is not aisp-prof's


def _error_name(exc: sqlite3.Error) -> str:
    """SQLITE_BUSY, SQLITE_FULL, ... (Python 3.11+), else guessed from the message."""
    name = getattr(exc, "sqlite_errorname", None)
    if name:
        return name
    text = str(exc).lower()
    for needle, guess in (("locked", "SQLITE_BUSY"), ("busy", "SQLITE_BUSY"), ("readonly", "SQLITE_READONLY"),
                          ("read-only", "SQLITE_READONLY"), ("full", "SQLITE_FULL"), ("unable to open", "SQLITE_CANTOPEN"),
                          ("not a database", "SQLITE_NOTADB"), ("malformed", "SQLITE_CORRUPT"), ("i/o", "SQLITE_IOERR")):
        if needle in text:
            return guess
    return ""


def is_storage_failure(exc: BaseException) -> bool:
    """A failure of the file or its lock (locked, read-only, full, cannot open, not a database),
    not of the statement or the values (those are bugs, and keep their traceback)."""
    return isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError


def is_busy(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and _error_name(exc).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def storage_error(exc: sqlite3.Error, path: Path, writing: bool) -> StorageError:
    """The one line for a sqlite3 error on the database at `path`."""
    name, db = _error_name(exc), shorten(path)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        text = (f"{db} stayed locked by other writers for {WRITE_ATTEMPTS} tries of {BUSY_TIMEOUT_S:.0f} s; "
                "nothing was stored: run again (or look for a stuck aisp-prof process)")
    elif name.startswith("SQLITE_READONLY"):
        text = f"{db} is read-only: make the file and its folder writable, or store elsewhere with --db"
    elif name.startswith("SQLITE_FULL") or "full" in str(exc).lower():
        text = f"the disk holding {db} is full; nothing was stored: free some space and run again"
    elif name.startswith("SQLITE_CANTOPEN"):
        text = (f"cannot open {db}: its folder must exist and be writable (SQLite keeps a -wal and a -shm "
                "file beside it): fix the permissions, or choose another --db")
    elif name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
        text = f"{db} is not a readable SQLite database ({exc}): point --db at the run database"
    elif name.startswith("SQLITE_IOERR"):
        text = f"I/O error on {db} ({exc}): the disk may be full or failing; nothing was stored" if writing else \
            f"I/O error reading {db} ({exc})"
    else:
        text = f"{db}: {exc}"
    return StorageError(text)


def connect(path: Path, create: bool = True) -> sqlite3.Connection:
    """A connection to the database at `path` with the busy timeout set.

    A writer (`create`) makes the folder and the file if missing and turns WAL on (it stays on
    in the file). A reader makes nothing: a missing database is MissingDatabaseError; one in a
    folder it may not write is opened immutable (SQLite could not make its -shm file there)."""
    path = Path(path)
    if create and path.is_dir():         # SQLite's answer was "disk I/O error: the disk may be full"
        raise StorageError(f"{shorten(path)} is a folder, not a database file: give --db a file in it "
                           f"(e.g. {shorten(path / 'aisp.db')}) or choose another place")
    try:
        return _connect_write(path) if create else _connect_read(path)
    except sqlite3.DatabaseError as exc:
        if not is_storage_failure(exc):
            raise
        raise storage_error(exc, path, writing=create) from exc


def _connect_read(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        what = "is a folder, not a database" if path.is_dir() else "does not exist"
        raise MissingDatabaseError(f"no run database at {shorten(path)} (it {what}): check --db or $AISP_PROF_DB, "
                                   "or store runs there first with `aisp-prof import` or `aisp-prof run`")
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        conn.close()
        if not _error_name(exc).startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY")):
            raise
        log.info("%s: opened immutable (%s)", path, exc)
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    try:
        check_ours(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def check_ours(conn: sqlite3.Connection, path: Path) -> None:
    """A StorageError unless the database open on `conn` is an aisp-prof run database this code
    reads: no tables yet, or `runs`/`ceilings` among them, at a schema version it knows."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                         "AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
    if version > SCHEMA_VERSION:
        raise StorageError(f"{shorten(path)} was written by a newer aisp-prof (database schema {version}, this one "
                           f"reads up to {SCHEMA_VERSION}); nothing was written to it: upgrade aisp-prof "
                           "(pip install -U aisp-prof) or pass another --db")
    if tables and not {t.lower() for t in tables} & set(OWN_TABLES):
        nsys = any(t.startswith(("CUPTI_ACTIVITY_KIND_", "TARGET_INFO_")) for t in tables)
        what = " (an nsys export: `aisp-prof import FILE` stores it)" if nsys else ""
        raise StorageError(f"{shorten(path)} is not an aisp-prof run database{what}: it holds {len(tables)} other "
                           f"tables ({', '.join(tables[:3])}, ...); nothing was written to it: pass another --db "
                           "(default: $AISP_PROF_DB or profiles/aisp.db)")


def _check_before_writing(path: Path) -> None:
    """`check_ours` of an existing, non-empty file, through a read-only connection (which
    writes nothing to a database in rollback-journal mode, as every nsys export is), before a
    writer turns WAL on."""
    try:
        if path.stat().st_size == 0:
            return
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(os_error_message(exc, f"reading {shorten(path)}")) from exc
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    try:
        check_ours(conn, path)
    finally:
        conn.close()


def _connect_write(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(os_error_message(exc, f"creating the folder of {shorten(path)}")) from exc
    _check_before_writing(path)
    # as a URI, so that an export can be attached read-only (`attach_read_only`) whatever SQLite's build
    conn = sqlite3.connect(path.absolute().as_uri(), uri=True, timeout=BUSY_TIMEOUT_S)
    try:
        _retrying(lambda: _setup_write(conn), path)
    except BaseException:
        conn.close()
        raise
    return conn


def _setup_write(conn: sqlite3.Connection) -> None:
    """Per-connection settings of a writer (a function, so tests can inject faults here)."""
    conn.execute("PRAGMA journal_mode = WAL").fetchone()


def attach_read_only(conn: sqlite3.Connection, path: Path, schema: str) -> None:
    """Attach the SQLite file at `path` read-only as `schema` (an export the store copies rows
    from: it is never written, nor its journal rolled back). ATTACH must come before the write
    transaction begins."""
    conn.execute(f"ATTACH DATABASE ? AS [{schema}]", [f"{Path(path).resolve().as_uri()}?mode=ro"])


def begin_immediate(conn: sqlite3.Connection, path: Path) -> None:
    """Start a write transaction holding the write lock now (not at the first write, where a
    reader turned writer can only fail): the check that a run is new and its rows then go in
    under one lock. Other writers queue on the busy timeout; a writer still refused after it is
    retried, WRITE_ATTEMPTS times in all, after a random and growing pause."""
    _retrying(lambda: conn.execute("BEGIN IMMEDIATE"), path)


def commit(conn: sqlite3.Connection, path: Path) -> None:
    try:
        conn.commit()
    except sqlite3.OperationalError as exc:
        raise storage_error(exc, path, writing=True) from exc


def _retrying(step: Callable[[], object], path: Path) -> None:
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or attempt == WRITE_ATTEMPTS:
                raise storage_error(exc, path, writing=True) from exc
            pause = random.uniform(*RETRY_PAUSE_S) * attempt
            log.info("%s is locked (%s); try %d of %d in %.2f s", path, exc, attempt + 1, WRITE_ATTEMPTS, pause)
            time.sleep(pause)


def create_whole(path: Path, write: Callable[[Path], object]) -> bool:
    """Make the database at `path`, which does not exist, by `write(file)` on a hidden file beside
    it, put in place when `write` returns (a hard link: never over a database that appeared
    meanwhile; where the file system has none, a rename if `path` is still free). False when
    `path` appeared meanwhile: nothing of this write is there, and the caller writes into it. If
    `write` raises, the hidden file (and -wal/-shm) and the folders made for it are removed."""
    made = [d for d in (path.parent, *path.parent.parents) if not d.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(os_error_message(exc, f"creating the folder of {shorten(path)}")) from exc
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}-{secrets.token_hex(3)}")
    leftovers = (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}-journal"))
    try:
        write(tmp)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:                       # no hard links on this file system
            if path.exists():
                return False
            os.replace(tmp, path)
        return True
    except BaseException as exc:
        _remove(leftovers)
        for folder in made:                   # deepest first; only if still empty
            try:
                folder.rmdir()
            except OSError:
                break
        if isinstance(exc, StorageError):     # the message names the database asked for
            raise type(exc)(str(exc).replace(shorten(tmp), shorten(path))) from exc
        raise
    finally:
        _remove(leftovers)


def _remove(files: tuple[Path, ...]) -> None:
    for f in files:
        f.unlink(missing_ok=True)
