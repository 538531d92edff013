"""Read the tables of an Nsight Systems SQLite export into raw frames, one function per table.

Kernels (in `kernels`), GPU memcpy/memset operations, whole-graph launches, the CUDA runtime/driver calls that
launched them, NVTX push/pop ranges are each read here (the GPU in `gpu`), with names resolved
through the export's own string and enum tables and nothing attributed or aggregated yet (`attribution` and
`ranges` do that). Keeping the schema facts here (and the GPU tables' in `gpu`) means
a new nsys schema version is a change here only.

Schema facts this relies on (checked against the real exports in tests/fixtures/h200):

* globalTid / globalPid are serialized ids: pid = (id >> 24) & 0xFFFFFF, tid = id & 0xFFFFFF; the
  bits above 48 identify the host/VM. A kernel's globalPid is its process's globalTid with the
  tid bits zeroed, so `id >> 24` is the process key on both sides of the join.
* Kernels launched from a CUDA graph recorded with --cuda-graph-trace=node carry the
  correlationId of the cudaGraphLaunch call, and a non-null graphNodeId. With the default
  --cuda-graph-trace=graph the graph's kernels are absent; each launch is one row of
  CUPTI_ACTIVITY_KIND_GRAPH_TRACE with that same correlationId (`read_graph_launches`).
* Push/pop ranges are NVTX_EVENTS rows of eventType NvtxPushPopRange (59 in schema 3.20); their
  name is `text`, or `textId` -> StringIds for registered strings. Ranges in a named domain carry
  a domainId that a NvtxDomainCreate event (75) maps to the domain's name; 0 is the default.
* Runtime API names carry a version suffix (cudaLaunchKernel_v7000); it is stripped.
* The kernel columns the store copies straight from the export (`kernel_copy`) are declared
  INTEGER NOT NULL by nsys (start, end, deviceId, streamId, grid/block, registers, shared
  memory); correlationId, graphNodeId and globalPid INTEGER.
* Memcpy rows carry copyKind (ENUM_CUDA_MEMCPY_OPER: 8 = Device-to-Device) and srcKind/dstKind,
  memset rows memKind (ENUM_CUDA_MEM_KIND: 2 = Device); both carry `bytes`, start/end, deviceId,
  streamId, correlationId and globalPid like kernels. Names come from the export's enum tables.
  Exports without these tables (nothing was copied or set) simply have none.
"""
from __future__ import annotations

import logging
import re
import sqlite3
from typing import Any

import numpy as np
import pandas as pd

from aisp_prof.sqlite_frames import integer_frame, query_frame

log = logging.getLogger(__name__)

OPEN_END = np.iinfo(np.int64).max           # end of a range that was never popped
ID_BITS = 24                                 # width of the id fields nsys packs into globalPid/globalTid
ID_MASK = (1 << ID_BITS) - 1
_PACKED_SQL = {"process_key": f"({{}} >> {ID_BITS})", "process_id": f"(({{}} >> {ID_BITS}) & {ID_MASK})",
               "thread_id": f"({{}} & {ID_MASK})"}
_PUSH_POP_RANGE = "NvtxPushPopRange"
_DOMAIN_CREATE = "NvtxDomainCreate"
_DEFAULT_EVENT_TYPES = {_PUSH_POP_RANGE: 59, _DOMAIN_CREATE: 75}   # schema 3.20 values
API_VERSION_SUFFIX = re.compile(r"_v\d+$")         # cudaLaunchKernel_v7000 -> cudaLaunchKernel
_UNNAMED_RANGE = "(unnamed)"
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
GRAPH_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"      # whole-graph launches (default --cuda-graph-trace)

# CUPTI memory operation tables -> the memory_ops frame's `operation`
MEMORY_TABLES = {"memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY", "memset": "CUPTI_ACTIVITY_KIND_MEMSET"}
# ENUM_CUDA_MEMCPY_OPER name -> copy_kind (the short form nsys itself prints, e.g. "DtoD")
_COPY_KINDS = {
    "CUDA_MEMCPY_KIND_UNKNOWN": "unknown", "CUDA_MEMCPY_KIND_HTOD": "HtoD", "CUDA_MEMCPY_KIND_DTOH": "DtoH",
    "CUDA_MEMCPY_KIND_HTOA": "HtoA", "CUDA_MEMCPY_KIND_ATOH": "AtoH", "CUDA_MEMCPY_KIND_ATOA": "AtoA",
    "CUDA_MEMCPY_KIND_ATOD": "AtoD", "CUDA_MEMCPY_KIND_DTOA": "DtoA", "CUDA_MEMCPY_KIND_DTOD": "DtoD",
    "CUDA_MEMCPY_KIND_HTOH": "HtoH", "CUDA_MEMCPY_KIND_PTOP": "PtoP", "CUDA_MEMCPY_KIND_UVM_HTOD": "UVM HtoD",
    "CUDA_MEMCPY_KIND_UVM_DTOH": "UVM DtoH", "CUDA_MEMCPY_KIND_UVM_DTOD": "UVM DtoD",
}
_DEFAULT_COPY_KIND_IDS = dict(enumerate(_COPY_KINDS))          # schema 3.20 ids, for exports without the enum
_DEFAULT_MEMORY_KINDS = dict(enumerate(                         # ENUM_CUDA_MEM_KIND labels, schema 3.20
    ("Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static", "Unknown")))

# ---------------------------------------------------------------------------------------- schema


def read_frame(conn: sqlite3.Connection, sql: str) -> pd.DataFrame:
    """Run SQL into a DataFrame, a chunk of rows at a time, each column converted on its own
    (`sqlite_frames`); sqlite3 errors propagate (pd.read_sql would rewrap them)."""
    return query_frame(conn, sql)


def read_int_frame(conn: sqlite3.Connection, sql: str) -> pd.DataFrame:
    """`read_frame` of columns nsys declares INTEGER (or rowids), read as whole columns when they
    are integers throughout (`sqlite_frames.integer_frame`, the same frame 2-3x faster), else
    as `read_frame` reads them."""
    frame = integer_frame(conn, sql)
    return frame if frame is not None else query_frame(conn, sql)


def packed_id_sql(column: str, part: str) -> str:
    """The SQL of one field of the nsys packed id in `column` (a globalPid or globalTid, see the
    module's doc): "process_key" (id >> 24: the pid and the bits above it, what a GPU operation
    and its runtime call are joined on), "process_id" ((id >> 24) & 0xFFFFFF) or "thread_id"
    (id & 0xFFFFFF). One place for the arithmetic every query of the ids repeats."""
    return _PACKED_SQL[part].format(column)


def table_names(conn: sqlite3.Connection) -> set[str]:
    """Names of the export's tables: which parts of the trace nsys recorded."""
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The column names of an export's table."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _event_type_ids(conn: sqlite3.Connection, tables: set[str]) -> dict[str, int]:
    """NVTX event type ids by name, from the export's own enum table when it has one."""
    ids = dict(_DEFAULT_EVENT_TYPES)
    if "ENUM_NSYS_EVENT_TYPE" in tables:
        names = ", ".join(f"'{n}'" for n in ids)
        for type_id, name in conn.execute(f"SELECT id, name FROM ENUM_NSYS_EVENT_TYPE WHERE name IN ({names})"):
            ids[name] = int(type_id)
    return ids


# -------------------------------------------------------------------------------------- strings


def string_ids(conn: sqlite3.Connection, ids: Any) -> dict[int, str]:
    """StringIds values of the given ids (those the export has)."""
    wanted = [int(i) for i in ids]
    if not wanted:
        return {}
    out: dict[int, str] = {}
    for first in range(0, len(wanted), 900):          # SQLite's bound-parameter limit
        chunk = wanted[first:first + 900]
        marks = ",".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT id, value FROM StringIds WHERE id IN ({marks})", chunk).fetchall())
    return out


# -------------------------------------------------------------------------------- whole graphs


def read_graph_launches(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    """Whole-graph executions: one row per cudaGraphLaunch that nsys traced as one graph.

    nsys's default `--cuda-graph-trace=graph` writes a graph launch's GPU execution into
    CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start, end, deviceId, streamId, correlationId, globalPid,
    graphId, graphExecId: nsys 2025.3, schema of tests/fixtures/foreign_h100) and none of the
    graph's kernels into the kernel table. Its correlationId is the cudaGraphLaunch call's, so it
    is attributed to NVTX ranges the way kernels are. Per-node kernels need
    `--cuda-graph-trace=node`, which writes no such table."""
    columns = ["correlation_id", "graph_id", "graph_exec_id", "start_ns", "end_ns", "duration_ns", "device_id",
               "stream_id", "process_key", "process_id"]
    if GRAPH_TABLE not in tables:
        return pd.DataFrame({c: pd.Series(dtype="Int64") for c in columns})
    cols = table_columns(conn, GRAPH_TABLE)
    opt = {c: f"g.{c}" if c in cols else "NULL" for c in ("correlationId", "globalPid", "graphId", "graphExecId")}
    df = read_frame(conn, f"""
        SELECT {opt['correlationId']} AS correlation_id, {opt['graphId']} AS graph_id,
               {opt['graphExecId']} AS graph_exec_id, g.start AS start_ns, g."end" AS end_ns,
               g.deviceId AS device_id, g.streamId AS stream_id, {opt['globalPid']} AS global_pid
        FROM {GRAPH_TABLE} AS g ORDER BY g.start, g."end"
    """)
    for col in ("correlation_id", "graph_id", "graph_exec_id", "start_ns", "end_ns", "device_id", "stream_id",
                "global_pid"):
        df[col] = df[col].astype("Int64")
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    df["process_key"] = df["global_pid"] // (1 << ID_BITS)
    df["process_id"] = df["process_key"] % (1 << ID_BITS)
    if len(df):
        log.warning("%d CUDA graph launches were traced as whole graphs (nsys's default --cuda-graph-trace=graph): "
                    "each is counted with its GPU time in the range of its cudaGraphLaunch; per-node kernel "
                    "detail needs `nsys profile --cuda-graph-trace=node`", len(df))
    return df.loc[:, columns]


# ------------------------------------------------------------------------------------ memory ops


def read_memory_ops(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    """GPU memcpy and memset executions with kind names and the process key the launch join needs."""
    parts = []
    for operation, table in MEMORY_TABLES.items():
        if table not in tables:
            continue
        cols = table_columns(conn, table)
        opt = {c: f"m.{c}" if c in cols else "NULL" for c in
               ("correlationId", "globalPid", "graphNodeId", "copyKind", "srcKind", "dstKind", "memKind")}
        if operation == "memset":            # a memset writes memory of one kind; no copy direction
            opt["copyKind"], opt["srcKind"], opt["dstKind"] = "NULL", "NULL", opt["memKind"]
        parts.append(read_frame(conn, f"""
            SELECT '{operation}' AS operation, {opt['correlationId']} AS correlation_id,
                   {opt['copyKind']} AS copy_kind_id, {opt['srcKind']} AS src_kind_id,
                   {opt['dstKind']} AS dst_kind_id, m.bytes AS size_bytes, m.start AS start_ns,
                   m."end" AS end_ns, m.deviceId AS device_id, m.streamId AS stream_id,
                   {opt['graphNodeId']} AS graph_node_id, {opt['globalPid']} AS global_pid
            FROM {table} AS m
        """))
    raw = ["operation", "correlation_id", "copy_kind_id", "src_kind_id", "dst_kind_id", "size_bytes", "start_ns",
           "end_ns", "device_id", "stream_id", "graph_node_id", "global_pid"]
    parts = [p for p in parts if not p.empty] or [pd.DataFrame({c: pd.Series(dtype=object) for c in raw})]
    df = pd.concat(parts, ignore_index=True).sort_values(["start_ns", "end_ns"], kind="stable")
    for col in ("correlation_id", "graph_node_id", "size_bytes", "start_ns", "end_ns", "device_id", "stream_id"):
        df[col] = df[col].astype("Int64")
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    seconds = df["duration_ns"].astype(float).where(df["duration_ns"] > 0) / 1e9
    df["throughput_bytes_per_s"] = df["size_bytes"].astype(float) / seconds
    copy_kinds, memory_kinds = _memory_enums(conn, tables)
    df["copy_kind"] = df["copy_kind_id"].map(copy_kinds)
    df["src_kind"] = df["src_kind_id"].map(memory_kinds)
    df["dst_kind"] = df["dst_kind_id"].map(memory_kinds)
    pid = df["global_pid"].astype("Int64")
    df["process_key"] = pid // (1 << ID_BITS)
    df["process_id"] = df["process_key"] % (1 << ID_BITS)
    return df.drop(columns=["copy_kind_id", "src_kind_id", "dst_kind_id", "global_pid"]).reset_index(drop=True)


def _memory_enums(conn: sqlite3.Connection, tables: set[str]) -> tuple[dict[int, str], dict[int, str]]:
    """copyKind id -> "DtoD" etc., memory kind id -> "Device" etc., from the export's enums when present."""
    copy_kinds = {i: _COPY_KINDS[n] for i, n in _DEFAULT_COPY_KIND_IDS.items()}
    memory_kinds = dict(_DEFAULT_MEMORY_KINDS)
    if "ENUM_CUDA_MEMCPY_OPER" in tables:
        for kind_id, name in conn.execute("SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER"):
            copy_kinds[int(kind_id)] = _COPY_KINDS.get(name, str(name).removeprefix("CUDA_MEMCPY_KIND_"))
    if "ENUM_CUDA_MEM_KIND" in tables:
        for kind_id, label in conn.execute("SELECT id, label FROM ENUM_CUDA_MEM_KIND"):
            memory_kinds[int(kind_id)] = str(label)
    return copy_kinds, memory_kinds


# -------------------------------------------------------------------------------------- launches


def read_launches(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    """The runtime/driver call behind each kernel, memcpy and memset: API name, thread, start time."""
    columns = ["process_key", "correlation_id", "launch_api", "launch_start_ns", "global_tid", "thread_id"]
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in tables:
        log.warning("export has no CUDA API trace; kernels cannot be attributed to NVTX ranges")
        return pd.DataFrame({c: pd.Series(dtype="Int64") for c in columns})
    gpu_work = [KERNEL_TABLE] + [t for t in (*MEMORY_TABLES.values(), GRAPH_TABLE) if t in tables]
    correlated = " UNION ".join(f"SELECT correlationId FROM {t}" for t in gpu_work)
    df = read_int_frame(conn, f"""
        SELECT r.correlationId AS correlation_id, r.globalTid AS global_tid,
               r.start AS launch_start_ns, r.nameId AS launch_api
        FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
        WHERE r.correlationId IN ({correlated})
    """)
    for col in ("correlation_id", "global_tid", "launch_start_ns"):
        df[col] = df[col].astype("Int64")
    df["process_key"] = df["global_tid"] // (1 << ID_BITS)
    df["thread_id"] = df["global_tid"] % (1 << ID_BITS)
    # API names (a few distinct ones behind a million calls): resolved and unversioned once each
    apis = string_ids(conn, df["launch_api"].dropna().unique())
    names = {i: API_VERSION_SUFFIX.sub("", n or "") for i, n in apis.items()}
    df["launch_api"] = df["launch_api"].map(names).fillna("")
    dupes = df.duplicated(["process_key", "correlation_id"])
    if dupes.any():
        log.debug("%d runtime calls share a correlationId within a process; keeping the first", dupes.sum())
    return df.loc[~dupes, columns]


# ------------------------------------------------------------------------------------------ nvtx


def read_push_pop_ranges(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    """Push/pop NVTX ranges with name, thread and domain name; one row per push."""
    columns = ["range_id", "global_tid", "domain_id", "start", "end", "name", "domain"]
    if "NVTX_EVENTS" not in tables:
        log.info("export has no NVTX trace; every kernel gets nvtx_range ''")
        ints = {c: pd.Series(dtype=np.int64) for c in columns[:5]}
        return pd.DataFrame({**ints, "name": pd.Series(dtype=str), "domain": pd.Series(dtype=str)})
    types = _event_type_ids(conn, tables)
    df = _push_pop_rows(conn, types[_PUSH_POP_RANGE])
    df["range_id"] = np.arange(len(df), dtype=np.int64)
    df["end"] = df["end"].astype("Int64").fillna(OPEN_END).astype(np.int64)
    df["start"] = df["start"].astype(np.int64)
    return named_ranges(conn, df, read_domains(conn, tables)).loc[:, columns]


def push_pop_type(conn: sqlite3.Connection, tables: set[str]) -> int:
    """The eventType of push/pop ranges in this export's NVTX_EVENTS."""
    return _event_type_ids(conn, tables)[_PUSH_POP_RANGE]


def read_domains(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    """The NVTX domains created (thread, domain id, name), for `named_ranges`."""
    return read_frame(conn, f"""
        SELECT n.globalTid AS global_tid, n.domainId AS domain_id, COALESCE(n.text, s.value) AS domain
        FROM NVTX_EVENTS AS n
        LEFT JOIN StringIds AS s ON s.id = n.textId
        WHERE n.eventType = {_event_type_ids(conn, tables)[_DOMAIN_CREATE]}
    """)


def named_ranges(conn: sqlite3.Connection, df: pd.DataFrame, domains: pd.DataFrame,
                 strings: dict[int, str] | None = None) -> pd.DataFrame:
    """Push/pop rows (global_tid, domain_id, text, text_id) with their name and domain name
    (`strings`: registered strings already read, added to as more are read)."""
    strings = {} if strings is None else strings
    wanted = [i for i in df["text_id"].dropna().unique() if i not in strings]
    strings.update(string_ids(conn, wanted))
    registered = df["text_id"].map(strings)
    df["name"] = df["text"].where(df["text"].notna(), registered).fillna(_UNNAMED_RANGE).astype(str)
    df["domain"] = _domain_names(df, domains)
    return df


def _push_pop_rows(conn: sqlite3.Connection, event_type: int) -> pd.DataFrame:
    """Push/pop rows in (thread, start, end descending) order, the order range ids follow, with
    their own text and registered string id (a name is the text, else the string: resolved once
    per distinct id, not joined per row). Sorted here, stably (no shipped export has ties),
    rather than by ORDER BY (0.3 s of SQLite at 790k ranges); when a column is not plain integers
    throughout (a range never popped has no end) SQLite sorts, as before."""
    rows = f"FROM NVTX_EVENTS AS n WHERE n.eventType = {event_type}"
    times = 'n.globalTid AS global_tid, COALESCE(n.domainId, 0) AS domain_id, n.start AS start, n."end" AS "end"'
    df = integer_frame(conn, f"SELECT {times} {rows}")
    if df is not None:
        df = df.join(_push_pop_names(conn, rows))
    else:
        sql = f"SELECT {times}, n.text AS text, n.textId AS text_id {rows}"
        df = read_frame(conn, sql)
        if df.empty or not all(df[c].dtype == np.int64 for c in ("global_tid", "start", "end")):
            return read_frame(conn, sql + ' ORDER BY n.globalTid, n.start, n."end" DESC')
    order = np.lexsort((-df["end"].to_numpy(), df["start"].to_numpy(), df["global_tid"].to_numpy()))
    return df if (order[1:] > order[:-1]).all() else df.take(order).reset_index(drop=True)


def _push_pop_names(conn: sqlite3.Connection, rows: str) -> pd.DataFrame:
    """text and text_id of the push/pop rows (`rows`: their FROM ... WHERE), as `read_frame` reads
    them; as whole columns where no range has its own text (registered strings only)."""
    if conn.execute(f"SELECT count(n.text) {rows}").fetchone()[0] == 0:
        ids = integer_frame(conn, f"SELECT n.textId AS text_id {rows}")
        if ids is not None:
            return pd.DataFrame({"text": np.full(len(ids), None, dtype=object), "text_id": ids["text_id"]})
    return read_frame(conn, f"SELECT n.text AS text, n.textId AS text_id {rows}")


def _domain_names(ranges: pd.DataFrame, domains: pd.DataFrame) -> pd.Series:
    """Domain name per range; "" for the default domain. Matched within the process first."""
    if ranges.empty:
        return pd.Series(dtype=str, index=ranges.index)
    proc = ranges["global_tid"] // (1 << ID_BITS)
    names = pd.Series("", index=ranges.index, dtype=object)
    if domains.empty:
        return names.astype(str)
    domains = domains.assign(process_key=domains["global_tid"] // (1 << ID_BITS), domain=domains["domain"].fillna(""))
    by_proc = domains.drop_duplicates(["process_key", "domain_id"]).set_index(["process_key", "domain_id"])["domain"]
    by_id = domains.drop_duplicates("domain_id").set_index("domain_id")["domain"]
    keys = pd.MultiIndex.from_arrays([proc, ranges["domain_id"]])
    found = pd.Series(by_proc.reindex(keys).to_numpy(), index=ranges.index)
    fallback = pd.Series(by_id.reindex(ranges["domain_id"]).to_numpy(), index=ranges.index)
    unknown = "domain_" + ranges["domain_id"].astype(str)    # never conflate with the default domain
    names = found.fillna(fallback).fillna(unknown)
    names[ranges["domain_id"] == 0] = ""
    return names.astype(str)
