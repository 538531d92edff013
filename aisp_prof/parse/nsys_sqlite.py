"""Parse an Nsight Systems SQLite export (`nsys export --type sqlite`) into GPU activity and range tables.

The point of this module is NVTX attribution. A kernel usually runs on the GPU after the CPU has
already popped the NVTX range it was launched in, so a kernel's range is found through its
*launch*: kernel -> CUDA runtime/driver call with the same correlationId (and process) -> the
push/pop ranges on that call's thread that were open when the call started. Time overlap of the
kernel itself with a range would attribute it to the wrong range (or to none).

GPU memcpy and memset operations (CUPTI_ACTIVITY_KIND_MEMCPY / _MEMSET, issued by
cudaMemcpy*/cudaMemset* or a graph launch) are attributed by the same rule through their own
correlationId, and count towards a range's GPU time: `x.copy_(y)` of two contiguous device
tensors is a cudaMemcpyAsync, not a kernel, and leaving it out would make a variant look faster
than it is. Exports without these tables (nothing was copied or set) simply have none.

Schema facts this relies on (checked against the real exports in tests/fixtures/h200):

* globalTid / globalPid are serialized ids: pid = (id >> 24) & 0xFFFFFF, tid = id & 0xFFFFFF; the
  bits above 48 identify the host/VM. A kernel's globalPid is its process's globalTid with the
  tid bits zeroed, so `id >> 24` is the process key on both sides of the join.
* Kernels launched from a CUDA graph recorded with --cuda-graph-trace=node carry the
  correlationId of the cudaGraphLaunch call, and a non-null graphNodeId.
* Push/pop ranges are NVTX_EVENTS rows of eventType NvtxPushPopRange (59 in schema 3.20); their
  name is `text`, or `textId` -> StringIds for registered strings. Ranges in a named domain carry
  a domainId that a NvtxDomainCreate event (75) maps to the domain's name; 0 is the default.
* Runtime API names carry a version suffix (cudaLaunchKernel_v7000); it is stripped.
* Memcpy rows carry copyKind (ENUM_CUDA_MEMCPY_OPER: 8 = Device-to-Device) and srcKind/dstKind,
  memset rows memKind (ENUM_CUDA_MEM_KIND: 2 = Device); both carry `bytes`, start/end, deviceId,
  streamId, correlationId and globalPid like kernels. Names come from the export's enum tables.

Everything is vectorized: the enclosing ranges of every launch are found with one sorted sweep
per (thread, domain) range stack, never a loop over kernels x ranges.
"""
from __future__ import annotations

import logging
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from aisp_prof.errors import ExportParseError

log = logging.getLogger(__name__)

_SQLITE_MAGIC = b"SQLite format 3\x00"
_ID_BITS = 24
_OPEN_END = np.iinfo(np.int64).max          # end of a range that was never popped
_PUSH_POP_RANGE = "NvtxPushPopRange"
_DOMAIN_CREATE = "NvtxDomainCreate"
_DEFAULT_EVENT_TYPES = {_PUSH_POP_RANGE: 59, _DOMAIN_CREATE: 75}   # schema 3.20 values
_API_VERSION_SUFFIX = re.compile(r"_v\d+$")
_UNNAMED_RANGE = "(unnamed)"

KERNEL_COLUMNS = (
    "correlation_id", "kernel", "short_name", "start_ns", "end_ns", "duration_ns", "device_id",
    "stream_id", "grid", "block", "registers_per_thread", "static_shared_bytes",
    "dynamic_shared_bytes", "graph_node_id", "launch_api", "launch_start_ns", "process_id",
    "thread_id", "nvtx_range", "nvtx_domain", "range_instance",
)
MEMORY_OP_COLUMNS = (
    "operation", "correlation_id", "copy_kind", "src_kind", "dst_kind", "size_bytes", "start_ns",
    "end_ns", "duration_ns", "throughput_bytes_per_s", "device_id", "stream_id", "graph_node_id",
    "launch_api", "launch_start_ns", "process_id", "thread_id", "nvtx_range", "nvtx_domain",
    "range_instance",
)
RANGE_COLUMNS = (
    "range", "nvtx_domain", "kernel_count", "kernel_time_ns", "memcpy_count", "memcpy_bytes",
    "memcpy_time_ns", "memset_count", "memset_bytes", "memset_time_ns", "gpu_time_ns",
    "first_start_ns", "last_end_ns", "span_ns", "gap_total_ns", "gap_max_ns", "range_wall_ns",
    "occurrences",
)

# CUPTI memory operation tables -> MEMORY_OP_COLUMNS["operation"]
_MEMORY_TABLES = {"memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY", "memset": "CUPTI_ACTIVITY_KIND_MEMSET"}
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

# TARGET_INFO_GPU column -> key of NsysParse.gpu (units in the key name)
_GPU_FIELDS = {
    "name": "gpu_name",          # the key the rest of aisp-prof uses (collect, store)
    "chipName": "chip_name",
    "busLocation": "bus_location",
    "uuid": "uuid",
    "smCount": "sm_count",
    "clockRate": "sm_clock_hz",
    "totalMemory": "memory_total_bytes",
    "memoryBandwidth": "memory_bandwidth_bytes_per_s",
    "l2CacheSize": "l2_cache_bytes",
    "maxShmemPerSm": "max_shared_per_sm_bytes",
    "maxShmemPerBlockOptin": "max_shared_per_block_optin_bytes",
    "maxRegistersPerSm": "max_registers_per_sm",
    "maxRegistersPerBlock": "max_registers_per_block",
    "maxWarpsPerSm": "max_warps_per_sm",
    "maxBlocksPerSm": "max_blocks_per_sm",
    "maxThreadsPerBlock": "max_threads_per_block",
    "threadsPerWarp": "threads_per_warp",
    "asyncEngines": "async_engines",
}


@dataclass(frozen=True, eq=False)
class NsysParse:
    """Tables from one nsys export. eq=False: DataFrames have no single truth value."""

    source: Path
    kernels: pd.DataFrame     # one row per kernel execution, KERNEL_COLUMNS
    ranges: pd.DataFrame      # one row per (NVTX range path, domain) with GPU work, RANGE_COLUMNS
    gpu: dict[str, object]    # the GPU that ran the kernels (most kernels if several)
    memory_ops: pd.DataFrame = field(default_factory=lambda: _empty_memory_ops())
    # one row per GPU memcpy/memset, MEMORY_OP_COLUMNS


def parse_nsys_sqlite(path: str | Path) -> NsysParse:
    """Read kernels, their launch-attributed NVTX ranges and the GPU from an nsys SQLite export."""
    path = Path(path)
    _check_file(path)
    conn = _connect(path)
    try:
        kernels, memory_ops, ranges, gpu = _parse(conn, path)
    except sqlite3.DatabaseError as exc:
        raise ExportParseError(
            f"{path}: unreadable SQLite export ({exc}); re-run `nsys export --type sqlite` on the .nsys-rep"
        ) from exc
    finally:
        conn.close()
    log.info("%s: %d kernels, %d memcpy/memset operations in %d NVTX ranges", path, len(kernels),
             len(memory_ops), len(ranges))
    return NsysParse(source=path, kernels=kernels, ranges=ranges, gpu=gpu, memory_ops=memory_ops)


# --------------------------------------------------------------------------------------- opening


def _check_file(path: Path) -> None:
    """Fail early with an actionable message: missing file, not SQLite, or cut short."""
    if not path.is_file():
        raise ExportParseError(f"{path}: no such nsys export; check the path or re-run the collect step")
    with path.open("rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        hint = (
            "convert it with `nsys export --type sqlite`"
            if path.suffix in (".nsys-rep", ".qdrep")
            else "expected the output of `nsys export --type sqlite`"
        )
        raise ExportParseError(f"{path}: not an SQLite file; {hint}")
    expected = _header_size_bytes(header)
    actual = path.stat().st_size
    if expected is not None and actual < expected:
        raise ExportParseError(
            f"{path}: truncated SQLite export ({actual} of {expected} bytes); "
            "re-run `nsys export --type sqlite` on the .nsys-rep"
        )


def _header_size_bytes(header: bytes) -> int | None:
    """Database size promised by the SQLite header, or None when the header's count is stale."""
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    page_count = int.from_bytes(header[28:32], "big")
    change_counter, valid_for = header[24:28], header[92:96]
    if page_count == 0 or change_counter != valid_for:
        return None
    return page_size * page_count


def _connect(path: Path) -> sqlite3.Connection:
    """Open read-only so that parsing can never modify (or journal next to) an export."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        return sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise ExportParseError(f"{path}: cannot open SQLite export ({exc})") from exc


def _query(conn: sqlite3.Connection, sql: str) -> pd.DataFrame:
    """Run SQL into a DataFrame; sqlite3 errors propagate (pd.read_sql would rewrap them)."""
    cur = conn.execute(sql)
    columns = [d[0] for d in cur.description]
    return pd.DataFrame.from_records(cur.fetchall(), columns=columns)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _event_type_ids(conn: sqlite3.Connection, tables: set[str]) -> dict[str, int]:
    """NVTX event type ids by name, from the export's own enum table when it has one."""
    ids = dict(_DEFAULT_EVENT_TYPES)
    if "ENUM_NSYS_EVENT_TYPE" in tables:
        names = ", ".join(f"'{n}'" for n in ids)
        for type_id, name in conn.execute(f"SELECT id, name FROM ENUM_NSYS_EVENT_TYPE WHERE name IN ({names})"):
            ids[name] = int(type_id)
    return ids


# --------------------------------------------------------------------------------------- parsing


def _parse(conn: sqlite3.Connection, path: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[str, object]]:
    """kernels and memory ops -> their API calls -> the ranges open at each call -> per-range totals."""
    tables = _tables(conn)
    if "StringIds" not in tables:
        raise ExportParseError(f"{path}: SQLite file is not an Nsight Systems export (no StringIds table)")
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
        raise ExportParseError(f"{path}: no CUDA kernels recorded; was nsys run with --trace=cuda?")
    kernels = _read_kernels(conn)
    if kernels.empty:
        raise ExportParseError(f"{path}: no CUDA kernels recorded; was nsys run with --trace=cuda?")
    _warn_whole_graphs(conn, tables)
    memory_ops = _read_memory_ops(conn, tables)
    launches = _read_launches(conn, tables)
    kernels = kernels.merge(launches, on=["process_key", "correlation_id"], how="left")
    memory_ops = memory_ops.merge(launches, on=["process_key", "correlation_id"], how="left")
    nvtx = _read_push_pop_ranges(conn, tables)
    kernels, memory_ops, nvtx = _attribute_all(kernels, memory_ops, nvtx)
    ranges = _range_table(kernels, memory_ops, nvtx)
    gpu = _read_gpu(conn, tables, kernels)
    return (kernels.loc[:, list(KERNEL_COLUMNS)].reset_index(drop=True),
            memory_ops.loc[:, list(MEMORY_OP_COLUMNS)].reset_index(drop=True), ranges, gpu)


def _read_kernels(conn: sqlite3.Connection) -> pd.DataFrame:
    """Kernel executions with names resolved and the process key the launch join needs."""
    cols = _columns(conn, "CUPTI_ACTIVITY_KIND_KERNEL")
    graph_node = "k.graphNodeId" if "graphNodeId" in cols else "NULL"
    global_pid = "k.globalPid" if "globalPid" in cols else "NULL"
    df = _query(conn, f"""
        SELECT k.correlationId AS correlation_id, d.value AS kernel, s.value AS short_name,
               k.start AS start_ns, k."end" AS end_ns, k.deviceId AS device_id,
               k.streamId AS stream_id, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,
               k.registersPerThread AS registers_per_thread,
               k.staticSharedMemory AS static_shared_bytes,
               k.dynamicSharedMemory AS dynamic_shared_bytes,
               {graph_node} AS graph_node_id, {global_pid} AS global_pid
        FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
        LEFT JOIN StringIds AS d ON d.id = k.demangledName
        LEFT JOIN StringIds AS s ON s.id = k.shortName
        ORDER BY k.start, k."end"
    """)
    if df.empty:
        return df
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    df["grid"] = _dim3(df, "grid")
    df["block"] = _dim3(df, "block")
    df["graph_node_id"] = df["graph_node_id"].astype("Int64")
    df["correlation_id"] = df["correlation_id"].astype("Int64")
    pid = df["global_pid"].astype("Int64")
    df["process_key"] = pid // (1 << _ID_BITS)
    df["process_id"] = df["process_key"] % (1 << _ID_BITS)
    return df.drop(columns=[f"{p}{a}" for p in ("grid", "block") for a in "XYZ"] + ["global_pid"])


def _warn_whole_graphs(conn: sqlite3.Connection, tables: set[str]) -> None:
    """With the default --cuda-graph-trace=graph, graph kernels are missing from the kernel table."""
    if "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" not in tables:
        return
    (count,) = conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()
    if count:
        log.warning("%d CUDA graph launches were traced as whole graphs, so their kernels are not in "
                    "the kernel table; profile with `nsys profile --cuda-graph-trace=node`", count)


def _dim3(df: pd.DataFrame, prefix: str) -> pd.Series:
    """"(x, y, z)" strings, the form launch configurations are usually written in."""
    x, y, z = (df[f"{prefix}{a}"].astype(str) for a in "XYZ")
    return "(" + x + ", " + y + ", " + z + ")"


def _empty_memory_ops() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in MEMORY_OP_COLUMNS})


def _read_memory_ops(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    """GPU memcpy and memset executions with kind names and the process key the launch join needs."""
    parts = []
    for operation, table in _MEMORY_TABLES.items():
        if table not in tables:
            continue
        cols = _columns(conn, table)
        opt = {c: f"m.{c}" if c in cols else "NULL" for c in
               ("correlationId", "globalPid", "graphNodeId", "copyKind", "srcKind", "dstKind", "memKind")}
        if operation == "memset":            # a memset writes memory of one kind; no copy direction
            opt["copyKind"], opt["srcKind"], opt["dstKind"] = "NULL", "NULL", opt["memKind"]
        parts.append(_query(conn, f"""
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
    df["process_key"] = pid // (1 << _ID_BITS)
    df["process_id"] = df["process_key"] % (1 << _ID_BITS)
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


def _read_launches(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    """The runtime/driver call behind each kernel, memcpy and memset: API name, thread, start time."""
    columns = ["process_key", "correlation_id", "launch_api", "launch_start_ns", "global_tid", "thread_id"]
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in tables:
        log.warning("export has no CUDA API trace; kernels cannot be attributed to NVTX ranges")
        return pd.DataFrame({c: pd.Series(dtype="Int64") for c in columns})
    gpu_work = ["CUPTI_ACTIVITY_KIND_KERNEL"] + [t for t in _MEMORY_TABLES.values() if t in tables]
    correlated = " UNION ".join(f"SELECT correlationId FROM {t}" for t in gpu_work)
    df = _query(conn, f"""
        SELECT r.correlationId AS correlation_id, r.globalTid AS global_tid,
               r.start AS launch_start_ns, s.value AS launch_api
        FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
        LEFT JOIN StringIds AS s ON s.id = r.nameId
        WHERE r.correlationId IN ({correlated})
    """)
    for col in ("correlation_id", "global_tid", "launch_start_ns"):
        df[col] = df[col].astype("Int64")
    df["process_key"] = df["global_tid"] // (1 << _ID_BITS)
    df["thread_id"] = df["global_tid"] % (1 << _ID_BITS)
    df["launch_api"] = df["launch_api"].fillna("").str.replace(_API_VERSION_SUFFIX, "", regex=True)
    dupes = df.duplicated(["process_key", "correlation_id"])
    if dupes.any():
        log.debug("%d runtime calls share a correlationId within a process; keeping the first", dupes.sum())
    return df.loc[~dupes, columns]


def _read_push_pop_ranges(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    """Push/pop NVTX ranges with name, thread and domain name; one row per push."""
    columns = ["range_id", "global_tid", "domain_id", "start", "end", "name", "domain"]
    if "NVTX_EVENTS" not in tables:
        log.info("export has no NVTX trace; every kernel gets nvtx_range ''")
        ints = {c: pd.Series(dtype=np.int64) for c in columns[:5]}
        return pd.DataFrame({**ints, "name": pd.Series(dtype=str), "domain": pd.Series(dtype=str)})
    types = _event_type_ids(conn, tables)
    df = _query(conn, f"""
        SELECT n.globalTid AS global_tid, COALESCE(n.domainId, 0) AS domain_id,
               n.start AS start, n."end" AS "end", COALESCE(n.text, s.value) AS name
        FROM NVTX_EVENTS AS n
        LEFT JOIN StringIds AS s ON s.id = n.textId
        WHERE n.eventType = {types[_PUSH_POP_RANGE]}
        ORDER BY n.globalTid, n.start, n."end" DESC
    """)
    domains = _query(conn, f"""
        SELECT n.globalTid AS global_tid, n.domainId AS domain_id, COALESCE(n.text, s.value) AS domain
        FROM NVTX_EVENTS AS n
        LEFT JOIN StringIds AS s ON s.id = n.textId
        WHERE n.eventType = {types[_DOMAIN_CREATE]}
    """)
    df["range_id"] = np.arange(len(df), dtype=np.int64)
    df["end"] = df["end"].astype("Int64").fillna(_OPEN_END).astype(np.int64)
    df["start"] = df["start"].astype(np.int64)
    df["name"] = df["name"].fillna(_UNNAMED_RANGE).astype(str)
    df["domain"] = _domain_names(df, domains)
    return df.loc[:, columns]


def _domain_names(ranges: pd.DataFrame, domains: pd.DataFrame) -> pd.Series:
    """Domain name per range; "" for the default domain. Matched within the process first."""
    if ranges.empty:
        return pd.Series(dtype=str, index=ranges.index)
    proc = ranges["global_tid"] // (1 << _ID_BITS)
    names = pd.Series("", index=ranges.index, dtype=object)
    if domains.empty:
        return names.astype(str)
    domains = domains.assign(process_key=domains["global_tid"] // (1 << _ID_BITS), domain=domains["domain"].fillna(""))
    by_proc = domains.drop_duplicates(["process_key", "domain_id"]).set_index(["process_key", "domain_id"])["domain"]
    by_id = domains.drop_duplicates("domain_id").set_index("domain_id")["domain"]
    keys = pd.MultiIndex.from_arrays([proc, ranges["domain_id"]])
    found = pd.Series(by_proc.reindex(keys).to_numpy(), index=ranges.index)
    fallback = pd.Series(by_id.reindex(ranges["domain_id"]).to_numpy(), index=ranges.index)
    unknown = "domain_" + ranges["domain_id"].astype(str)    # never conflate with the default domain
    names = found.fillna(fallback).fillna(unknown)
    names[ranges["domain_id"] == 0] = ""
    return names.astype(str)


# ----------------------------------------------------------------------------------- attribution
#
# Tie rule, in ns: a range encloses a launch at time t when start <= t < end (a range popped at
# the very ns of the launch is already closed); a zero-length range encloses its own instant. A
# range's own path is the ranges open right after it was pushed. The sweep orders events at one
# timestamp so that every prefix is a valid push/pop stack: pops of older ranges, then pushes
# (outermost first, each followed by its own query), then launch queries, then zero-length pops.

_POP_OLDER, _PUSH, _LAUNCH, _POP_ZERO = 0, 1, 2, 3


def _attribute_all(kernels: pd.DataFrame, memory_ops: pd.DataFrame,
                   nvtx: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Kernels and memory ops attributed in one sweep: both are found through their API call."""
    keys = ["global_tid", "launch_start_ns"]
    calls = pd.concat([kernels.loc[:, keys], memory_ops.loc[:, keys]], ignore_index=True).astype("Int64")
    calls, nvtx = _attribute(calls.drop_duplicates().reset_index(drop=True), nvtx)
    found = ["nvtx_range", "nvtx_domain", "range_instance"]
    kernels = kernels.merge(calls.loc[:, keys + found], on=keys, how="left")
    memory_ops = memory_ops.astype({k: "Int64" for k in keys}).merge(calls.loc[:, keys + found], on=keys, how="left")
    return kernels, memory_ops, nvtx


def _attribute(kernels: pd.DataFrame, nvtx: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Give each kernel the range path open at its launch, and each range its own full path."""
    launches = (
        kernels.loc[:, ["global_tid", "launch_start_ns"]].dropna().drop_duplicates()
        .astype(np.int64).reset_index(drop=True)
    )
    launch_q = _launch_queries(launches["global_tid"], launches["launch_start_ns"])
    push_q = _push_queries(nvtx, first_id=len(launch_q))
    paths = _paths_at(nvtx, pd.concat([launch_q, push_q], ignore_index=True)).set_index("query_id")
    found = paths.reindex(launch_q["query_id"])
    launches[["nvtx_range", "nvtx_domain"]] = found[["nvtx_range", "nvtx_domain"]].fillna("").to_numpy()
    # which push of the innermost range: gaps are measured within one call, not between calls
    launches["range_instance"] = found["range_instance"].to_numpy()
    kernels = kernels.merge(
        launches.astype({"global_tid": "Int64", "launch_start_ns": "Int64"}),
        on=["global_tid", "launch_start_ns"], how="left",
    )
    kernels[["nvtx_range", "nvtx_domain"]] = kernels[["nvtx_range", "nvtx_domain"]].fillna("")
    nvtx = nvtx.copy()
    nvtx[["nvtx_range", "nvtx_domain"]] = paths.reindex(push_q["query_id"])[["nvtx_range", "nvtx_domain"]].fillna("").to_numpy()
    return kernels, nvtx


def _launch_queries(global_tid: pd.Series, t: pd.Series) -> pd.DataFrame:
    """Sweep queries "which ranges were open on thread global_tid at time t" (a CUDA API call)."""
    n = len(global_tid)
    return pd.DataFrame({
        "query_id": np.arange(n, dtype=np.int64),
        "global_tid": np.asarray(global_tid, dtype=np.int64),
        "time": np.asarray(t, dtype=np.int64),
        "rank": _LAUNCH, "tie": np.int64(0), "order": np.int64(0),
    })


def _push_queries(nvtx: pd.DataFrame, first_id: int) -> pd.DataFrame:
    """One query per range, sorted right behind its own push so that it sees itself and its parents."""
    return pd.DataFrame({
        "query_id": first_id + np.arange(len(nvtx), dtype=np.int64),
        "global_tid": nvtx["global_tid"].to_numpy(dtype=np.int64),
        "time": nvtx["start"].to_numpy(dtype=np.int64),
        "rank": _PUSH,
        "tie": -nvtx["end"].to_numpy(dtype=np.int64),
        "order": 2 * nvtx["range_id"].to_numpy(dtype=np.int64) + 1,
    })


def _paths_at(nvtx: pd.DataFrame, queries: pd.DataFrame) -> pd.DataFrame:
    """Per query: "/".join of the enclosing range names, outermost first, and the innermost's domain."""
    hits = _containing(nvtx, queries)
    if hits.empty:
        return pd.DataFrame({"query_id": pd.Series(dtype=np.int64), "nvtx_range": pd.Series(dtype=str),
                             "nvtx_domain": pd.Series(dtype=str), "range_instance": pd.Series(dtype=float)})
    hits = hits.merge(nvtx.loc[:, ["range_id", "start", "end", "name", "domain"]], on="range_id")
    hits = hits.assign(neg_end=-hits["end"]).sort_values(["query_id", "start", "neg_end", "range_id"])
    hits["level"] = hits.groupby("query_id").cumcount()
    wide = hits.pivot(index="query_id", columns="level", values="name")
    path = wide[0].astype(str)
    for level in wide.columns[1:]:
        part = wide[level]
        path = path.where(part.isna(), path + "/" + part.fillna(""))
    innermost = hits.groupby("query_id")["domain"].last().reindex(path.index)
    instance = hits.groupby("query_id")["range_id"].last().reindex(path.index)
    out = pd.DataFrame({"nvtx_range": path, "nvtx_domain": innermost, "range_instance": instance.astype(float)})
    return out.rename_axis("query_id").reset_index()


def _containing(nvtx: pd.DataFrame, queries: pd.DataFrame) -> pd.DataFrame:
    """(query_id, range_id) for every range open at each query, by one sweep per range stack.

    Push/pop ranges of one (thread, domain) nest properly, so at any point of the time-ordered
    event stream the range open at depth d is the last one pushed at depth d. A running depth
    plus a forward fill per depth level finds every enclosing range without comparing each
    query with each range.
    """
    keys = ["global_tid", "domain_id"]
    if nvtx.empty or queries.empty:
        return pd.DataFrame({"query_id": pd.Series(dtype=np.int64), "range_id": pd.Series(dtype=np.int64)})
    start, end, rid = (nvtx[c].to_numpy(dtype=np.int64) for c in ("start", "end", "range_id"))
    base = nvtx.loc[:, keys].reset_index(drop=True)
    pushes = base.assign(time=start, rank=_PUSH, tie=-end, order=2 * rid, delta=1, range_id=rid)
    pops = base.assign(time=end, rank=np.where(end > start, _POP_OLDER, _POP_ZERO), tie=0, order=0,
                       delta=-1, range_id=-1)
    stacks = nvtx.loc[:, keys].drop_duplicates()
    probes = queries.merge(stacks, on="global_tid").assign(delta=0, range_id=-1)   # one per stack
    events = pd.concat([pushes, pops, probes], ignore_index=True)
    events = events.sort_values(keys + ["time", "rank", "tie", "order"], kind="stable").reset_index(drop=True)
    events["depth"] = events.groupby(keys)["delta"].cumsum()
    is_push = events["delta"] == 1
    max_depth = int(events.loc[is_push, "depth"].max())
    pushed_at = pd.DataFrame(
        {d: events["range_id"].where(is_push & (events["depth"] == d)) for d in range(1, max_depth + 1)}
    )
    open_at = pushed_at.groupby([events[k] for k in keys]).ffill()
    is_probe = events["query_id"].notna()
    depth = events.loc[is_probe, "depth"].to_numpy()
    query_id = events.loc[is_probe, "query_id"].to_numpy()
    parts = [
        pd.DataFrame({"query_id": query_id[depth >= d], "range_id": open_at.loc[is_probe, d].to_numpy()[depth >= d]})
        for d in range(1, max_depth + 1)
    ]
    return pd.concat(parts, ignore_index=True).dropna().astype(np.int64)


# ----------------------------------------------------------------------------------- range table


def _range_table(kernels: pd.DataFrame, memory_ops: pd.DataFrame, nvtx: pd.DataFrame) -> pd.DataFrame:
    """Per (range path, domain): GPU time, its kernel/memcpy/memset parts, idle gaps, CPU wall time.

    `gpu_time_ns` is the GPU busy time of the range: the union of the [start, end) intervals of
    every kernel, memcpy and memset attributed to it, taken per call (push) of the range and summed
    over its calls; divide by `occurrences` for the time per call. Work on one stream never
    overlaps, so there it equals the sum of the durations. `kernel_time_ns`, `memcpy_time_ns`
    and `memset_time_ns` are plain sums of durations of each kind (kernel-only time, as
    before memory ops were counted, is `kernel_time_ns`). Gaps are idle GPU time between two
    operations of one call.
    """
    keys = ["nvtx_range", "nvtx_domain"]
    cols = keys + ["range_instance", "start_ns", "end_ns", "duration_ns"]
    k = kernels.loc[kernels["nvtx_range"] != "", cols].assign(operation="kernel", size_bytes=0)
    m = memory_ops.loc[memory_ops["nvtx_range"] != "", cols + ["operation", "size_bytes"]]
    work = pd.concat([k, m], ignore_index=True) if not m.empty else k
    if work.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("range", "nvtx_domain") else np.int64)
                             for c in RANGE_COLUMNS})
    work = work.astype({"start_ns": np.int64, "end_ns": np.int64, "duration_ns": np.int64})
    work["size_bytes"] = work["size_bytes"].fillna(0).astype(np.int64)
    work = work.sort_values(keys + ["start_ns", "end_ns"], kind="stable")
    group = [work[c] for c in keys + ["range_instance"]]   # busy time and gaps inside one call of the range
    busy_until = work.groupby(group)["end_ns"].cummax().groupby(group).shift()
    work["gap_ns"] = (work["start_ns"] - busy_until).clip(lower=0).fillna(0).astype(np.int64)
    # the part of each operation not already covered by an earlier one of the same call
    covered_from = np.maximum(work["start_ns"], busy_until.fillna(work["start_ns"]).astype(np.int64))
    work["busy_ns"] = (work["end_ns"] - covered_from).clip(lower=0).astype(np.int64)
    for op in ("kernel", "memcpy", "memset"):
        mine = work["operation"] == op
        work[f"{op}_count"] = mine.astype(np.int64)
        work[f"{op}_ns"] = work["duration_ns"].where(mine, 0)
        work[f"{op}_bytes"] = work["size_bytes"].where(mine, 0)
    out = work.groupby(keys, sort=True).agg(
        kernel_count=("kernel_count", "sum"),
        kernel_time_ns=("kernel_ns", "sum"),
        memcpy_count=("memcpy_count", "sum"),
        memcpy_bytes=("memcpy_bytes", "sum"),
        memcpy_time_ns=("memcpy_ns", "sum"),
        memset_count=("memset_count", "sum"),
        memset_bytes=("memset_bytes", "sum"),
        memset_time_ns=("memset_ns", "sum"),
        gpu_time_ns=("busy_ns", "sum"),
        first_start_ns=("start_ns", "min"),
        last_end_ns=("end_ns", "max"),
        gap_total_ns=("gap_ns", "sum"),
        gap_max_ns=("gap_ns", "max"),
    )
    out["span_ns"] = out["last_end_ns"] - out["first_start_ns"]
    closed = nvtx.loc[nvtx["end"] != _OPEN_END]
    wall = (closed["end"] - closed["start"]).groupby([closed["nvtx_range"], closed["nvtx_domain"]]).sum()
    pushes = nvtx.groupby(["nvtx_range", "nvtx_domain"]).size()
    out["range_wall_ns"] = wall.reindex(out.index).fillna(0).astype(np.int64)
    out["occurrences"] = pushes.reindex(out.index).fillna(0).astype(np.int64)
    out = out.reset_index().rename(columns={"nvtx_range": "range"})
    return out.loc[:, list(RANGE_COLUMNS)]


# ------------------------------------------------------------------------------------------- gpu


def _read_gpu(conn: sqlite3.Connection, tables: set[str], kernels: pd.DataFrame) -> dict[str, object]:
    """Describe the GPU that ran most kernels, mapping CUDA device ordinals through the process."""
    if "TARGET_INFO_GPU" not in tables:
        return {}
    gpus = _query(conn, "SELECT * FROM TARGET_INFO_GPU")
    if gpus.empty:
        return {}
    counts = kernels.groupby(["process_id", "device_id"]).size().sort_values(ascending=False)
    if kernels["device_id"].nunique() > 1:
        log.info("kernels ran on %d devices; describing the busiest", kernels["device_id"].nunique())
    if counts.empty:                                  # no process ids in this export
        process_id, cuda_id = None, int(kernels["device_id"].mode().iloc[0])
    else:
        process_id, cuda_id = (int(v) for v in counts.index[0])
    row = gpus.iloc[0]
    gpu_id = None if process_id is None else _gpu_id_for(conn, tables, process_id, cuda_id)
    if gpu_id is not None and (gpus["id"] == gpu_id).any():
        row = gpus.loc[gpus["id"] == gpu_id].iloc[0]
    elif "cuDevice" in gpus and (gpus["cuDevice"] == cuda_id).any():
        row = gpus.loc[gpus["cuDevice"] == cuda_id].iloc[0]
    info: dict[str, object] = {"device_id": cuda_id}
    for column, key in _GPU_FIELDS.items():
        if column in row.index and pd.notna(row[column]):
            info[key] = row[column].item() if hasattr(row[column], "item") else row[column]
    if {"computeMajor", "computeMinor"} <= set(row.index) and pd.notna(row["computeMajor"]):
        info["compute_capability"] = f"{int(row['computeMajor'])}.{int(row['computeMinor'])}"
    info.update(_read_system_env(conn, tables))
    return info


def _read_system_env(conn: sqlite3.Connection, tables: set[str]) -> dict[str, object]:
    """Driver versions, which nsys keeps as text properties of the target system."""
    if "TARGET_INFO_SYSTEM_ENV" not in tables:
        return {}
    props = dict(conn.execute(
        "SELECT name, value FROM TARGET_INFO_SYSTEM_ENV WHERE name IN ('NvDriverVersion', 'CudaDriverVersion')"
    ).fetchall())
    out: dict[str, object] = {}
    if props.get("NvDriverVersion"):
        out["driver_version"] = props["NvDriverVersion"]
    if str(props.get("CudaDriverVersion", "")).isdigit():      # 13000 -> "13.0", as cudaDriverGetVersion
        version = int(props["CudaDriverVersion"])
        out["cuda_driver_version"] = f"{version // 1000}.{version % 1000 // 10}"
    return out


def _gpu_id_for(conn: sqlite3.Connection, tables: set[str], process_id: int, cuda_id: int) -> int | None:
    """TARGET_INFO_GPU.id of a process's CUDA device ordinal (they differ under CUDA_VISIBLE_DEVICES)."""
    if "TARGET_INFO_CUDA_DEVICE" not in tables:
        return None
    row = conn.execute(
        "SELECT gpuId FROM TARGET_INFO_CUDA_DEVICE WHERE pid = ? AND cudaId = ?", (process_id, cuda_id)
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])
