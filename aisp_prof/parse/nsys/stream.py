"""An nsys export parsed in windows of GPU start time, so that an import's memory stays flat as
the trace grows (issue 33: ten million kernels in at most 2 GB).

`stream_nsys_sqlite(path)` checks the export and reads what is small (the GPU, per process and
device kernel counts by SQL); its `windows()` then reads the kernels in (start, end) order, a
window of about `chunk_rows` at a time (never splitting kernels of one start time), with the
memory operations and whole-graph launches that start in the same span, and yields each
window's timeline frame as `parse_nsys_sqlite(path, kernels_in_export=True)` gives the whole
one, row for row. What the parse needs of the rest of the export is first set aside in SQLite,
on disk, gone with the parse; the first two in threads of their own (`stream_aside`) while the
windows' connection sorts the kernels into `temp.aisp_kernel`:

* `aisp_launch`: the runtime call behind each GPU operation, keyed by (process, correlationId),
  the first where several share one (as `tables.read_launches` keeps them), in a scratch file
  attached read-only once filled; each window's kernels are joined to it as they are read;
* `aisp_nvtx`: the push/pop ranges in `tables.read_push_pop_ranges`' order, so that a range's id
  is the same as in a one-shot parse, with an index on start, on a connection of their own.

The windows are parsed one ahead of the caller, in a thread of their own (`prefetch`): the store
writes window i while window i+1 is parsed.

Each window is attributed by `attribution.attribute_all` against the ranges that can hold its
calls: every range that started by its last call and had not ended before its first (or before
the ranges first read in it), which includes every enclosing range's parents, so paths, depths
and range ids are the one-shot parse's. Ranges that ended before a window are let go; a window
whose calls reach back further reads them again. The per-range tables are folded window by
window (`range_fold`); memory operations and graph launches are held whole (they are few next
to kernels), the kernels never.

Only a plain SQLite export whose kernel table is declared as `kernels.kernel_copy` needs, with
integer times, process and thread ids; anything else is parsed in one piece, as before."""
from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from aisp_prof.errors import ExportParseError, StorageError
from aisp_prof.export_rows import ExportColumns
from aisp_prof.parse.gunzip import is_gzipped
from aisp_prof.parse.nsys import kernels as nsys_kernels
from aisp_prof.parse.nsys import tables as export
from aisp_prof.parse.nsys.attribution import attribute_all, attribute_launches
from aisp_prof.parse.nsys.gpu import read_gpu_of
from aisp_prof.parse.nsys.prefetch import ahead
from aisp_prof.parse.nsys.stream_aside import (CALLS_SCHEMA, ActiveRanges, Live, calls_beside, ranges_beside,
                                              sqlite_temp_folder)
from aisp_prof.parse.nsys.range_fold import RangeFold
from aisp_prof.parse.nsys.sqlite_export import GRAPH_LAUNCH_COLUMNS, MEMORY_OP_COLUMNS, check_file, connect
from aisp_prof.parse.nsys.tables import ID_BITS, KERNEL_TABLE, packed_id_sql
from aisp_prof.sqlite_frames import integer_frame, query_frame

CHUNK_ROWS = 50_000                       # kernels per window (~100 MB of the parse's frames)
CHUNK_ROWS_ENV = "AISP_PROF_NSYS_CHUNK_ROWS"  # tests only: a few rows a window, to prove the windows' seams


@dataclass(eq=False)
class StreamedParse:
    """An export to parse in windows: the GPU now, the timeline window by window (`windows`),
    and, once those are all read, what the one-shot parse gives beside it (`rest`)."""

    source: Path
    copy: ExportColumns
    kept: list[str]                       # the timeline frame's columns, the key first
    gpu: dict[str, object]
    kernel_count: int
    chunk_rows: int
    rest: dict[str, pd.DataFrame] = field(default_factory=dict)    # memory_ops, ranges, range_levels, graph_launches
    _live: Live = field(default_factory=Live, repr=False)    # the parse's connections, while open

    def windows(self) -> Iterator[pd.DataFrame]:
        """Each window's timeline frame, in the one-shot frame's row order, parsed a window ahead
        in a thread of its own while the caller stores the last (`prefetch`); fills `rest` at the end.
        A caller that stops early (Ctrl-C, a failed write) interrupts the SQL the parse is running,
        the scans set aside beside it too (the windows' thread may be waiting for one)."""
        return ahead(self._windows, name="aisp-nsys-windows", on_stop=self._live.interrupt)

    def _windows(self) -> Iterator[pd.DataFrame]:
        conn = self._live.add(connect(self.source))
        try:
            conn.execute("PRAGMA temp_store = FILE")    # the temp tables on disk whatever SQLite's build says
            yield from _Windows(conn, self).run()
        except sqlite3.DatabaseError as exc:
            if _full(exc):
                raise StorageError(
                    f"the disk holding SQLite's temporary files ({sqlite_temp_folder()}) "
                    f"filled while {self.source.name} was read in windows (~165 MB per million kernels set aside); "
                    "nothing was stored: free space there, or point SQLITE_TMPDIR at a larger disk") from exc
            if (getattr(exc, "sqlite_errorname", "") or "").startswith(("SQLITE_INTERRUPT", "SQLITE_BUSY", "SQLITE_LOCKED")):
                raise                                        # an interrupt, a lock: not the export
            raise ExportParseError(f"{self.source}: unreadable SQLite export ({exc}); "
                                   "re-run `nsys export --type sqlite` on the .nsys-rep") from exc
        finally:
            self._live.close(conn)


def _full(exc: sqlite3.Error) -> bool:
    """SQLite's temp tables ran out of disk (SQLITE_FULL, or an I/O error writing them)."""
    return (getattr(exc, "sqlite_errorname", "") or "").startswith(("SQLITE_FULL", "SQLITE_IOERR")) or \
        "full" in str(exc).lower()


def chunk_rows() -> int:
    value = os.environ.get(CHUNK_ROWS_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else CHUNK_ROWS


def stream_nsys_sqlite(path: Path, kept_columns: tuple[str, ...]) -> StreamedParse | None:
    """The export to parse in windows, or None where it must be parsed in one piece (see the
    module's doc). `kept_columns`: every timeline column (`sqlite_export.KERNEL_COLUMNS`)."""
    path = Path(path)
    if is_gzipped(path):
        return None
    check_file(path)
    conn = connect(path)
    try:
        tables = export.table_names(conn)
        if "StringIds" not in tables or KERNEL_TABLE not in tables:
            return None
        copy = nsys_kernels.kernel_copy(conn, path, kept_columns)
        if copy is None or "globalPid" not in copy.columns.get("process_id", ""):
            return None
        counts, rows = _kernel_counts(conn), chunk_rows()
        if counts is None or counts.sum() <= rows or not _integers(conn, tables):   # one window: in one piece
            return None
        kept = [copy.key] + [c for c in kept_columns if c not in copy.columns]
        return StreamedParse(path, copy, kept, read_gpu_of(conn, tables, counts), int(counts.sum()), rows)
    except sqlite3.DatabaseError:
        return None                      # the one-shot parse says what is wrong, as it always has
    finally:
        conn.close()


def _integers(conn: sqlite3.Connection, tables: set[str]) -> bool:
    """Whether the columns the windows sort, compare and join on are integers in every row."""
    checks = {}                                     # the kernels': `_kernel_counts`
    for table in (*export.MEMORY_TABLES.values(), export.GRAPH_TABLE):
        if table in tables:
            checks[table] = ("start", "end")
    if "NVTX_EVENTS" in tables:
        checks["NVTX_EVENTS"] = ("start", "globalTid")
    for table, columns in checks.items():
        have = export.table_columns(conn, table)
        if any(c not in have for c in columns):
            return False
        where = " OR ".join(f'typeof(t."{c}") != \'integer\'' for c in columns)
        extra = f" AND t.eventType = {export.push_pop_type(conn, tables)}" if table == "NVTX_EVENTS" else ""
        if conn.execute(f"SELECT 1 FROM {table} AS t WHERE ({where}){extra} LIMIT 1").fetchone():
            return False
    return True


def _kernel_counts(conn: sqlite3.Connection) -> pd.Series | None:
    """Kernels per (process id, device id), as `read_gpu`'s groupby counts them; None when there
    are none, or a kernel's times, process, correlation id or names are not integers. One pass
    without a sort where every kernel ran in one process on one device (GROUP BY sorts: 0.7 s
    at 1M kernels, 0.4 s without)."""
    odd = " OR ".join(f'typeof(k."{c}") != \'integer\'' for c in _KERNEL_INTEGERS)
    pid = packed_id_sql("k.globalPid", "process_id")
    p0, p1, d0, d1, n, bad = conn.execute(f"SELECT min({pid}), max({pid}), min(k.deviceId), max(k.deviceId), "
                                          f"count(*), max({odd}) FROM {KERNEL_TABLE} AS k").fetchone()
    if not n or bad:
        return None
    rows = [(p0, d0, n)] if (p0, d0) == (p1, d1) else conn.execute(
        f"SELECT {pid} AS p, k.deviceId AS d, count(*) FROM {KERNEL_TABLE} AS k GROUP BY p, d ORDER BY p, d").fetchall()
    index = pd.MultiIndex.from_tuples([(p, d) for p, d, _ in rows], names=["process_id", "device_id"])
    return pd.Series([c for _, _, c in rows], index=index, dtype=np.int64)


_KERNEL_INTEGERS = ("start", "end", "globalPid", "correlationId", "demangledName", "shortName", "deviceId")


_KERNEL_SORT = f"""
    INSERT INTO temp.aisp_kernel
    SELECT NULL, k.rowid, k.correlationId, k.demangledName, k.shortName, k.start, k."end", k.deviceId, k.globalPid
    FROM {KERNEL_TABLE} AS k ORDER BY k.start, k."end", k.rowid
"""
_KERNEL_READ = f"""
    SELECT k.kernel_rowid, k.correlation_id, k.kernel, k.short_name, k.start_ns, k.end_ns, k.device_id, k.global_pid,
           l.process_key IS NOT NULL AS matched, COALESCE(l.api, -1) AS api,
           COALESCE(l.launch_start_ns, 0) AS launch_start_ns, l.launch_start_ns IS NOT NULL AS has_start,
           COALESCE(l.global_tid, 0) AS global_tid, l.global_tid IS NOT NULL AS has_tid
    FROM temp.aisp_kernel AS k LEFT JOIN {CALLS_SCHEMA}.aisp_launch AS l
      ON l.process_key = {packed_id_sql('k.global_pid', 'process_key')} AND l.correlation_id = k.correlation_id
    WHERE k.seq >= {{}} AND k.seq < {{}}
"""
_KERNEL_FIELDS = ("kernel_rowid", "correlation_id", "kernel", "short_name", "start_ns", "end_ns", "device_id",
                  "global_pid")


class _Windows:
    """One pass over the export (`StreamedParse.windows`)."""

    def __init__(self, conn: sqlite3.Connection, parse: StreamedParse):
        self.conn, self.parse = conn, parse
        self.tables = export.table_names(conn)
        self.strings: dict[int, str] = {}
        self.apis: dict[int, str] = {}

    def run(self) -> Iterator[pd.DataFrame]:
        with ranges_beside(self.parse.source, self.tables, self.parse._live) as loaded, \
                calls_beside(self.parse.source, self.tables, self.conn, self.parse._live) as attach_calls:   # both meanwhile
            self.conn.execute(f"CREATE TEMP TABLE aisp_kernel (seq INTEGER PRIMARY KEY, {', '.join(_KERNEL_FIELDS)})")
            self.conn.execute(_KERNEL_SORT)
            self.conn.commit()                   # ATTACH is refused inside a transaction
            attach_calls()
            memory_ops, graphs = self._with_launches(export.read_memory_ops(self.conn, self.tables), False), \
                self._with_launches(export.read_graph_launches(self.conn, self.tables), True)
            yield from self._windows(memory_ops, graphs, self._kernel_windows(), loaded)

    def _windows(self, memory_ops: pd.DataFrame, graphs: pd.DataFrame, windows: Iterator[tuple[pd.DataFrame, int | None]],
                 loaded: Callable[[dict[int, str]], ActiveRanges]) -> Iterator[pd.DataFrame]:
        active, done_m, done_g, m_at, g_at = None, [], [], 0, 0
        m_start, g_start = (f["start_ns"].to_numpy(dtype=np.int64) for f in (memory_ops, graphs))
        for kernels, next_start in windows:
            if active is None:                   # the kernels are set aside (read first): the ranges now
                active = loaded(self.strings)
                fold = RangeFold(active.count)
            m_to, g_to = ((len(s) if next_start is None else int(np.searchsorted(s, next_start))) for s in (m_start, g_start))
            m, g = memory_ops.iloc[m_at:m_to], graphs.iloc[g_at:g_to]
            m_at, g_at = m_to, g_to
            nvtx, new = active.window(*_call_span([kernels, m, g]))
            done = attribute_all(kernels, m, nvtx, g)
            fold.add_pushes(done.nvtx.loc[new])
            fold.add_work(done.kernels, done.memory_ops, done.graphs, done.nvtx, done.open_ranges)
            done_m.append(done.memory_ops)
            done_g.append(done.graphs)
            yield done.kernels.loc[:, self.parse.kept].reset_index(drop=True)
        if active is None:
            active = loaded(self.strings)
            fold = RangeFold(active.count)
        for nvtx, new in active.rest(self.parse.chunk_rows):
            fold.add_pushes(attribute_launches(_NO_CALLS, nvtx, False)[1].loc[new])
        whole = graphs if len(graphs) else None
        self.parse.rest.update(memory_ops=_joined(done_m, MEMORY_OP_COLUMNS), graph_launches=_joined(done_g, GRAPH_LAUNCH_COLUMNS),
                               ranges=fold.ranges(whole), range_levels=fold.levels(whole))

    def _with_launches(self, frame: pd.DataFrame, graphs: bool) -> pd.DataFrame:
        """Memory operations or graph launches joined to their runtime calls as `_parse` joins them."""
        on = ["process_key", "correlation_id"]
        table = export.GRAPH_TABLE if graphs else None
        sources = [table] if graphs else [t for t in export.MEMORY_TABLES.values() if t in self.tables]
        sources = [t for t in sources if t in self.tables and "correlationId" in export.table_columns(self.conn, t)]
        launches = _launch_frame(self.conn, sources, self._api_names)
        frame = frame.astype({c: "Int64" for c in on}) if graphs else frame
        return frame.merge(launches, on=on, how="left")

    def _api_names(self, ids: pd.Series) -> pd.Series:
        """Runtime API names without their version suffix, read once per id."""
        wanted = [int(i) for i in ids.dropna().unique() if int(i) not in self.apis]
        self.apis.update({i: export.API_VERSION_SUFFIX.sub("", n or "")
                          for i, n in export.string_ids(self.conn, wanted).items()})
        names = ids.map(self.apis)
        if names.dtype.kind == "O":
            return names.fillna("")
        # no id named (none in the window, or none at all): still integers, which take no "". With no
        # runtime calls in the export the one-piece parse leaves the column integer, all null: so here
        return names if "CUPTI_ACTIVITY_KIND_RUNTIME" not in self.tables else names.astype(object).fillna("")

    def _kernel_windows(self) -> Iterator[tuple[pd.DataFrame, int | None]]:
        """Kernel frames of about chunk_rows rows in (start, end, rowid) order, each with the next
        window's first start (None after the last); kernels of one start stay in one window.
        The kernels' keys are in temp.aisp_kernel in that order (`run`), each window's joined to
        its runtime calls as it is read."""
        total, first, n = self.parse.kernel_count, 1, self.parse.chunk_rows
        while first <= total:
            stop = first + n                            # seq of the next window's first kernel
            if stop <= total:
                last = self.conn.execute("SELECT start_ns FROM temp.aisp_kernel WHERE seq = ?", (stop - 1,)).fetchone()[0]
                row = self.conn.execute("SELECT seq, start_ns FROM temp.aisp_kernel WHERE seq >= ? AND start_ns > ? "
                                        "LIMIT 1", (stop, last)).fetchone()
                stop, next_start = (row[0], row[1]) if row else (total + 1, None)
            else:
                stop, next_start = total + 1, None
            sql = _KERNEL_READ.format(first, stop)
            rows = integer_frame(self.conn, sql)
            yield self._kernel_frame(rows if rows is not None else query_frame(self.conn, sql)), next_start
            first = stop

    def _kernel_frame(self, raw: pd.DataFrame) -> pd.DataFrame:
        """Kernel rows of temp.aisp_kernel as `_parse` has them after its launch join (the
        columns the timeline, the attribution and the range tables read)."""
        names = pd.concat([raw["kernel"], raw["short_name"]]).unique()
        self.strings.update(export.string_ids(self.conn, [int(i) for i in names if int(i) not in self.strings]))
        df = raw.loc[:, ["kernel_rowid", "correlation_id", "kernel", "short_name", "start_ns", "end_ns", "device_id"]]
        df = df.astype({"kernel_rowid": np.int64, "start_ns": np.int64, "end_ns": np.int64, "device_id": np.int64})
        df["kernel"], df["short_name"] = df["kernel"].map(self.strings), df["short_name"].map(self.strings)
        df["correlation_id"] = df["correlation_id"].astype("Int64")
        df["duration_ns"] = df["end_ns"] - df["start_ns"]
        df["process_key"] = raw["global_pid"].astype("Int64") // (1 << ID_BITS)
        df["process_id"] = df["process_key"] % (1 << ID_BITS)
        matched = raw["matched"].to_numpy() != 0
        api = raw["api"].astype("Int64")
        df["launch_api"] = self._api_names(api.where(raw["api"].to_numpy() >= 0)).where(matched)
        for column, has in (("launch_start_ns", "has_start"), ("global_tid", "has_tid")):
            df[column] = raw[column].astype("Int64").where(raw[has].to_numpy() != 0)
        df["thread_id"] = df["global_tid"] % (1 << ID_BITS)
        return df


_NO_CALLS = pd.DataFrame({"global_tid": np.array([], np.int64), "launch_start_ns": np.array([], np.int64)})
_LAUNCH_COLUMNS = ["process_key", "correlation_id", "launch_api", "launch_start_ns", "global_tid", "thread_id"]


def _launch_frame(conn: sqlite3.Connection, sources: list[str], api_names) -> pd.DataFrame:
    """`tables.read_launches`' frame, of the calls behind the rows of `sources` only."""
    if not sources:
        return pd.DataFrame({c: pd.Series(dtype="Int64") for c in _LAUNCH_COLUMNS})
    union = " UNION ".join(f"SELECT correlationId FROM {t}" for t in sources)
    rows = conn.execute(f"SELECT correlation_id, global_tid, launch_start_ns, api FROM {CALLS_SCHEMA}.aisp_launch "
                        f"WHERE correlation_id IN ({union})").fetchall()
    cols = list(zip(*rows)) or [[]] * 4
    df = pd.DataFrame({c: pd.array(list(v), dtype="Int64") for c, v in
                       zip(("correlation_id", "global_tid", "launch_start_ns", "api"), cols)})
    df["process_key"] = df["global_tid"] // (1 << ID_BITS)
    df["thread_id"] = df["global_tid"] % (1 << ID_BITS)
    df["launch_api"] = api_names(df["api"])
    return df.loc[:, _LAUNCH_COLUMNS]


def _call_span(frames: list[pd.DataFrame]) -> tuple[int | None, int | None]:
    """The first and last start of the calls behind these rows (None, None: none has one)."""
    times = []
    for f in frames:
        ok = (f["launch_start_ns"].notna() & f["global_tid"].notna()).to_numpy() if len(f) else np.zeros(0, bool)
        if ok.any():
            times.append(f["launch_start_ns"].to_numpy()[ok].astype(np.int64))
    if not times:
        return None, None
    return min(int(t.min()) for t in times), max(int(t.max()) for t in times)


def _joined(frames: list[pd.DataFrame], columns: tuple[str, ...]) -> pd.DataFrame:
    """The windows' frames as one, these columns, as `_parse` gives the whole trace's."""
    full = [f for f in frames if len(f)]
    one = pd.concat(full, ignore_index=True) if len(full) > 1 else (full[0] if full else frames[0])
    return one.loc[:, list(columns)].reset_index(drop=True)
