"""The run database (profiles/aisp.db, through sqlite-utils): write a run, read runs back.

Tables: runs, kernels (one row per ncu-profiled launch, tidy columns), metric_columns and
metric_rows (every raw ncu metric, so nothing measured is lost: a row per metric column, a row
per launch, see `metric_rows`), timeline (one row per kernel nsys saw),
memory_ops (one row per GPU memcpy/memset nsys saw), ranges (per innermost NVTX range),
range_levels (every NVTX level of every thread), graph_launches (whole-graph launches), checks and
timings, timeline_calls (per-variant sums written at import, see `aggregates`), and ceilings (measured
calibrations, see `calibrations`). A run is written in one
transaction: if anything fails half-way, no row of it remains.

The store opens the database one way for each direction: `Reader(path)`, one open connection
for a sequence of reads (a report page costs one open, not one per table), and `writing(path)`
(and `write_run`), one write transaction. The library's face over it is `aisp_prof.open_db(path)`
-> `api.RunDatabase`; the sqlite-utils connection under both (`_connect`) stays inside the store.

Schema changes only add: a table or column a newer parser writes is created on first insert
(`alter=True`), and rows stored before it read back with it missing (table) or NULL (column).
`ranges.gpu_time_ns` of runs stored before memory ops were parsed is kernel time only.

Schema version (PRAGMA user_version): 0 for databases written before it was kept, where the raw
ncu metrics of a run are the long `metrics` table (one value per row); 2 since they are stored
in `metric_columns`/`metric_rows`. Runs of both kinds read the same (a database can hold both:
an older database that a newer aisp-prof imports into). A database of a later version than
this code knows is refused with a message, not misread.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import contextlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import pandas as pd
import sqlite_utils

from ..arguments import texts
from ..errors import ArgumentError, ExportParseError, RunExistsError
from ..export_rows import ExportRows, StreamedRows
from ..sqlite_frames import frame_of_rows
from . import connection, identity
from .aggregates import call_spread, fold_calls, page_timeline, write_aggregates
from .bulk import insert_export_rows, insert_frame
from .metric_rows import TABLES as METRIC_TABLES
from .metric_rows import read_metrics, write_metrics
from .select import RUN_WHAT, resolve_run
from ..model.run_data import TABLES, RunData

log = logging.getLogger(__name__)

DEFAULT_DB = Path("profiles") / "aisp.db"
RUN_COLUMNS = ("run_id", "pair", "label", "source", "status", "created_at", "gpu_name", "job")   # job: --job NAME
DEVICE_METRICS = "device__attribute_%"
SCHEMA_VERSION = connection.SCHEMA_VERSION   # 2: raw ncu metrics in metric_columns/metric_rows (0: `metrics`)


def db_path(explicit: str | os.PathLike | None = None) -> Path:
    """--db, else $AISP_PROF_DB, else profiles/aisp.db under the current folder."""
    return Path(explicit or os.environ.get("AISP_PROF_DB") or DEFAULT_DB)


def _connect(path: Path, create: bool = True) -> sqlite_utils.Database:
    """The database at `path` (`connection.connect`: WAL, a busy timeout): made if missing for a
    writer; for a reader (`create=False`) a missing one is MissingDatabaseError, nothing made.
    A file that is not an aisp-prof database, or one of a later schema version, is a StorageError
    before anything is written (`connection.check_ours`)."""
    return sqlite_utils.Database(connection.connect(path, create))


@contextmanager
def writing(path: Path) -> Iterator[sqlite_utils.Database]:
    """One write transaction on the database at `path` (made if missing): `BEGIN IMMEDIATE`
    (`connection`: other writers queue), committed when the block ends, rolled back if it raises;
    a locked, read-only or full database is a StorageError (exit 13)."""
    db = _connect(path)
    try:
        connection.begin_immediate(db.conn, path)
        yield db
        connection.commit(db.conn, path)
    except sqlite3.OperationalError as exc:
        raise connection.storage_error(exc, path, writing=True) from exc
    finally:
        db.close()                             # rolls back what was not committed


# SQLite column types for pandas dtypes (the types sqlite-utils would infer from the values)
_SQL_TYPES = {"i": "INTEGER", "u": "INTEGER", "b": "INTEGER", "f": "FLOAT"}


def _sql_type(col: pd.Series) -> str:
    kind = col.dtype.kind
    if kind in _SQL_TYPES:
        return _SQL_TYPES[kind]
    first = next((v for v in col if v is not None and v == v), None)
    if isinstance(first, (bool, int)):
        return "INTEGER"
    return "FLOAT" if isinstance(first, float) else "TEXT"


def _ensure_table(db: sqlite_utils.Database, name: str, types: dict[str, str]) -> None:
    """Create `name` with these columns (and run_id) and its run_id index (kept as rows go in: a
    run's rows share one run_id, so each lands at the index's end; built after the rows it
    was a 0.4 s sort at 1M kernels, after the parse), or add the columns it lacks."""
    types = {"run_id": "TEXT", **types}
    if name not in db.table_names():
        db.execute(f"CREATE TABLE [{name}] ({', '.join(f'[{c}] {t}' for c, t in types.items())})")
        db.execute(f"CREATE INDEX IF NOT EXISTS [idx_{name}_run_id] ON [{name}] (run_id)")   # sqlite-utils' name
        return
    have = set(db[name].columns_dict)
    for c, t in types.items():
        if c not in have:
            db.execute(f"ALTER TABLE [{name}] ADD COLUMN [{c}] {t}")


def _column_types(rows: pd.DataFrame | ExportRows) -> dict[str, str]:
    """Each stored column's SQL type: a frame column's from its values, an export column's as
    its parser declares it."""
    if isinstance(rows, ExportRows):
        frame, declared = rows.frame, rows.source.types
        return {c: declared[c] if c in declared else _sql_type(frame[c]) for c in rows.columns}
    return {str(c): _sql_type(rows[c]) for c in rows.columns}


INSERT_CHUNK_ROWS = 100_000         # rows converted to Python values at a time (memory stays flat)


def _insert(db: sqlite_utils.Database, name: str, df: pd.DataFrame | ExportRows | None, run_id: str) -> int:
    """The frame's rows (with run_id) into `name` (`bulk.insert_frame`), or an ExportRows' rows
    copied from its export, which `_attach_exports` attached (`bulk.insert_export_rows`); the
    number of rows."""
    if df is None or df.empty:
        return 0
    streamed = isinstance(df, StreamedRows)
    parts = df.parts() if streamed else iter([df])      # a long timeline: window by window
    with contextlib.closing(parts) if streamed else contextlib.nullcontext():   # a failed write stops the parse now
        _insert_parts(db, name, parts, run_id, streamed)
    return len(df)


def _insert_parts(db: sqlite_utils.Database, name: str, parts: Iterator[pd.DataFrame | ExportRows], run_id: str,
                  streamed: bool) -> None:
    """Each part's rows into `name`, the table made for the first; a streamed timeline's calls
    summed as each window goes in (`aggregates.fold_calls`)."""
    for i, part in enumerate(parts):
        if i == 0:
            _ensure_table(db, name, _column_types(part))
        if not isinstance(part, ExportRows):
            insert_frame(db.conn, name, part, run_id, INSERT_CHUNK_ROWS)
            continue
        before = db.conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM [{name}]").fetchone()[0] if streamed else 0
        try:
            insert_export_rows(db.conn, name, part, _attached(db, part.source.path), run_id, INSERT_CHUNK_ROWS)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):    # the run database's file: full, read-only, ...
                raise
            raise ExportParseError(f"{part.source.path}: unreadable SQLite export ({exc})") from exc
        if streamed and name == "timeline":          # its calls' sums while the next window is parsed
            fold_calls(db.conn, run_id, before)


def _attach_exports(db: sqlite_utils.Database, data: RunData) -> None:
    """Attach, read-only, every export that rows of `data` are copied from."""
    paths = {rows.source.path for name in TABLES if name != "metrics"
             for rows in [getattr(data, name)] if isinstance(rows, (ExportRows, StreamedRows))}
    for i, p in enumerate(sorted(paths)):
        try:
            connection.attach_read_only(db.conn, p, f"aisp_export{i}")
        except sqlite3.Error as exc:                  # gone or unreadable since it was parsed
            raise ExportParseError(f"{p}: cannot open SQLite export ({exc})") from exc


def _attached(db: sqlite_utils.Database, path: Path) -> str:
    """The schema name the export at `path` is attached as."""
    file = str(Path(path).resolve())
    return next(name for _, name, attached in db.conn.execute("PRAGMA database_list") if attached == file)


def write_run(path: Path, data: RunData, replace: bool = False) -> str:
    """Insert one run atomically; a run id or content key (`identity`) already stored is a
    RunExistsError naming the stored run, not an overwrite; with `replace`, the stored runs of
    that run id or content are removed in the same transaction first.

    Rows go in through plain sqlite3 inside one transaction (`bulk`: sqlite-utils' `insert_all`
    converted every cell in Python twice and wrote 43-row statements, each with a savepoint: 58
    of 84 s of a 1M-kernel import). The tables stay what sqlite-utils makes. Rows left in an
    export (`export_rows.ExportRows`) are copied from it, attached read-only for the transaction.

    The transaction is `BEGIN IMMEDIATE` (`connection`): whether the run is new is asked under
    the write lock, so two imports of one run at once store it once; other writers queue. A
    database that does not exist yet is made whole or not at all (`connection.create_whole`)."""
    if not Path(path).exists() and connection.create_whole(Path(path), lambda new: _write_run(new, data, replace)):
        return data.run_id
    return _write_run(path, data, replace)


def _write_run(path: Path, data: RunData, replace: bool) -> str:
    db = _connect(path)
    try:
        _attach_exports(db, data)                  # before the transaction: ATTACH cannot be inside one
        connection.begin_immediate(db.conn, path)
        for found in identity.find_stored(db.conn, data.run_id, data.run.get(identity.CONTENT_COLUMN)):
            if not replace:
                raise RunExistsError(found["run_id"], path, found["by"] == "content", found["label"])
            identity.delete_run(db.conn, found["run_id"])
        with db.atomic():                      # a savepoint of the immediate transaction
            db["runs"].insert(data.run, pk="run_id", alter=True)
            for name in TABLES:
                if name == "metrics":
                    write_metrics(db.conn, data.launch_metrics, data.run_id)
                else:
                    _insert(db, name, getattr(data, name), data.run_id)
            if db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        for name in (*TABLES, *METRIC_TABLES):
            if name in db.table_names():
                db[name].create_index(["run_id"], if_not_exists=True)
        write_aggregates(db.conn, data.run_id)     # after the indexes: it reads this run's timeline
        connection.commit(db.conn, path)
    except sqlite3.OperationalError as exc:     # a full disk, a read-only file: nothing was stored
        raise connection.storage_error(exc, path, writing=True) from exc
    finally:
        db.close()                             # rolls back what was not committed
    return data.run_id


class Reader:
    """One open connection to the run database for a sequence of reads (a context manager); a
    missing database is MissingDatabaseError, nothing made."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._db = _connect(self.path, create=False)
        self._tables = set(self._db.table_names())

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def has(self, table: str) -> bool:
        return table in self._tables

    def columns(self, table: str) -> set[str]:
        return set(self._db[table].columns_dict) if self.has(table) else set()

    def query(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self._db.query(sql, list(params))]

    def list_runs(self) -> list[dict[str, Any]]:
        """Every stored run's RUN_COLUMNS, oldest first."""
        return _list_runs(self._db)

    def stored_as(self, run_id: str | None, key: str | None) -> list[dict[str, Any]]:
        """The stored runs of this run id or content key (`identity.find_stored`)."""
        return identity.find_stored(self._db.conn, run_id, key)

    def run_row(self, run_id: str) -> dict[str, Any]:
        return dict(self._db["runs"].get(run_id))

    def table(self, table: str, run_id: str, where: str = "", params: tuple[Any, ...] = ()) -> pd.DataFrame:
        """One run's rows of a child table, without the run_id column (missing table: empty)."""
        chunks = list(self.iter_table(table, run_id, where, params))
        return pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else (chunks[0] if chunks else pd.DataFrame())

    def iter_table(self, table: str, run_id: str, where: str = "", params: tuple[Any, ...] = (),
                   chunk_rows: int = 100_000, columns: Sequence[str] | None = None,
                   limit: int | None = None) -> Iterator[pd.DataFrame]:
        """One run's rows of a child table (all its columns but run_id, or `columns`; the first
        `limit` rows, in table order) in frames of at most `chunk_rows`, so a million-row timeline
        streams instead of sitting in memory as a million dicts."""
        if not self.has(table):
            return
        select = "*" if columns is None else ", ".join(f"[{c}]" for c in columns if c != "run_id") or "run_id"
        tail, extra = (" LIMIT ?", [limit]) if limit is not None else ("", [])
        cur = self._db.conn.execute(f"SELECT {select} FROM [{table}] WHERE run_id = ?{where}{tail}",
                                    [run_id, *params, *extra])
        names = [d[0] for d in cur.description]
        keep = [c for c in names if c != "run_id"]
        while rows := cur.fetchmany(chunk_rows):
            yield frame_of_rows(rows, names)[keep]

    def table_columns(self, table: str) -> list[str]:
        """A child table's columns in table order (none without the table)."""
        return [r[1] for r in self._db.conn.execute(f"PRAGMA table_info([{table}])")] if self.has(table) else []

    def count(self, table: str, run_id: str) -> int:
        """How many rows of `table` belong to the run (0 without the table)."""
        if not self.has(table):
            return 0
        return int(self._db.conn.execute(f"SELECT count(*) FROM [{table}] WHERE run_id = ?", [run_id]).fetchone()[0])

    def read_run(self, run_id: str, all_metrics: bool = False, tables: Sequence[str] = TABLES) -> RunData:
        """A stored run as RunData, with the child `tables` asked for (the others empty). Its
        `metrics` (the long form) shows each device attribute's first value only unless
        `all_metrics`; `launch_metrics` holds every value (cheap to read now). Runs stored as
        the long `metrics` table (schema 0) read that table, as before: the device attributes'
        first values unless `all_metrics`."""
        data = RunData(run=self.run_row(run_id))
        for name in child_tables(tables):
            if name == "metrics":
                self._read_metrics(data, all_metrics)
            else:
                setattr(data, name, self.table(name, run_id))
        return data

    def _read_metrics(self, data: RunData, all_metrics: bool) -> None:
        run_id = data.run_id
        stored = read_metrics(self._db.conn, run_id)
        if stored is not None:
            if not all_metrics:
                data.set_metrics(stored, stored.device_rows())
            else:
                data.set_metrics(stored, None if stored.n_values else pd.DataFrame())
        elif all_metrics:
            data.metrics = self.table("metrics", run_id)
        else:
            data.metrics = self.table("metrics", run_id, " AND rowid IN (SELECT min(rowid) FROM metrics WHERE "
                                      "run_id = ? AND metric LIKE ? GROUP BY metric)", (run_id, DEVICE_METRICS))

    def call_spread(self, run_id: str) -> pd.DataFrame:
        """Per variant, the run's nsys calls and least/most kernel time per call (`aggregates`)."""
        return call_spread(self._db.conn, run_id)

    def page_timeline(self, run_id: str, memory_first: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, int] | None:
        """What a report page reads of the run's timeline, grouped in SQL (`aggregates.page_timeline`)."""
        return page_timeline(self._db.conn, run_id, memory_first) if self.has("timeline") else None

    def long_metrics(self, run_id: str) -> pd.DataFrame:
        """Every raw ncu metric of a run in long form, whichever way it is stored."""
        data = RunData(run={"run_id": run_id})
        self._read_metrics(data, all_metrics=True)
        return data.metrics


def _list_runs(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    if "runs" not in db.table_names():
        return []
    have = set(db["runs"].columns_dict)
    sel = ", ".join(c if c in have else f"NULL AS {c}" for c in RUN_COLUMNS)
    return [dict(r) for r in db.query(f"SELECT {sel} FROM runs ORDER BY created_at, run_id")]


def remove_runs(path: Path, runs: Sequence[str]) -> list[dict[str, Any]]:
    """`aisp-prof rm`: the runs named (ids, prefixes, 'latest', pair or job names: `select`) and
    every row of them, in one transaction; per run its id, pair, label and rows removed. A name
    that matches no run is UnknownTargetError before anything is removed; a missing database is
    MissingDatabaseError, nothing made. One str is one run (not its letters)."""
    runs = texts(runs, "runs", RUN_WHAT)
    with Reader(path) as reader:          # missing, not aisp-prof's, or a name that matches no run (an empty
        listing = reader.list_runs()      # file's none): refused before a writer opens it, the file untouched
    for text in runs:
        resolve_run(listing, text, str(path))
    with writing(path) as db:
        listing = _list_runs(db)
        chosen = list(dict.fromkeys(resolve_run(listing, text, str(path)) for text in runs))
        rows = {r["run_id"]: r for r in listing}
        return [{"run_id": rid, "pair": rows[rid]["pair"], "label": rows[rid]["label"], "job": rows[rid]["job"],
                 "rows_removed": identity.delete_run(db.conn, rid)} for rid in chosen]


def child_tables(tables: Any) -> tuple[str, ...]:
    """The child tables `tables` names (one name is one table, not its letters); a name that is
    none of them is an ArgumentError listing them, never a table silently left empty."""
    asked = texts(tables, "tables", "a child table's name")
    unknown = [t for t in asked if t not in TABLES]
    if unknown:
        raise ArgumentError(f"tables: a run has no table {unknown[0]!r}; its tables are {', '.join(TABLES)}")
    return asked


def list_runs(path: Path) -> list[dict[str, Any]]:
    """The stored runs, oldest first (one open)."""
    with Reader(path) as db:
        return db.list_runs()


def read_run(path: Path, run_id: str, all_metrics: bool = False) -> RunData:
    """One stored run (one open)."""
    with Reader(path) as db:
        return db.read_run(run_id, all_metrics)


def read_table(path: Path, table: str, run_id: str) -> pd.DataFrame:
    """One run's rows of one child table (one open); `metrics` is the long form of every raw ncu
    metric, however stored."""
    with Reader(path) as db:
        return db.long_metrics(run_id) if table == "metrics" else db.table(table, run_id)
