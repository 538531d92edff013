"""Read the kernel table of an Nsight Systems SQLite export: every stored column (`read_kernels`),
or only what the parse needs (`read_kernel_keys`) with the rest left for SQLite to copy into the
run database (`kernel_copy`). Split from `tables`, which reads the export's other tables
and holds the schema facts both rely on.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from aisp_prof.export_rows import ExportColumns
from aisp_prof.parse.nsys.tables import (ID_BITS, KERNEL_TABLE, packed_id_sql, read_frame, read_int_frame, string_ids,
                                         table_columns)


def read_kernels(conn: sqlite3.Connection) -> pd.DataFrame:
    """Kernel executions with names resolved and the process key the launch join needs.

    Names and launch configurations repeat across launches: they are read as string ids and
    resolved once per distinct value, every row pointing at the same string object (a million
    launches of one kernel hold its name once, not a million copies)."""
    cols = table_columns(conn, KERNEL_TABLE)
    graph_node = "k.graphNodeId" if "graphNodeId" in cols else "NULL"
    df = _kernel_rows(conn, f"""
        k.correlationId AS correlation_id, k.demangledName AS kernel, k.shortName AS short_name,
        k.start AS start_ns, k."end" AS end_ns, k.deviceId AS device_id,
        k.streamId AS stream_id, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,
        k.registersPerThread AS registers_per_thread,
        k.staticSharedMemory AS static_shared_bytes,
        k.dynamicSharedMemory AS dynamic_shared_bytes,
        {graph_node} AS graph_node_id
    """)
    if df.empty:
        return df.assign(grid=[], block=[], duration_ns=[], process_key=[], process_id=[])
    df = _named_and_keyed(conn, df)
    df["grid"] = _dim3(df, "grid")
    df["block"] = _dim3(df, "block")
    df["graph_node_id"] = df["graph_node_id"].astype("Int64")
    return df.drop(columns=[f"{p}{a}" for p in ("grid", "block") for a in "XYZ"])


def read_kernel_keys(conn: sqlite3.Connection) -> pd.DataFrame:
    """`read_kernels` less the columns the store can copy from the export itself
    (`kernel_copy`): each kernel's rowid in the export (`kernel_rowid`), its names, and what
    the launch join, attribution, the range tables and the GPU need, in the same row order."""
    df = _kernel_rows(conn, """
        k.rowid AS kernel_rowid, k.correlationId AS correlation_id, k.demangledName AS kernel,
        k.shortName AS short_name, k.start AS start_ns, k."end" AS end_ns, k.deviceId AS device_id
    """, read=read_int_frame)
    return df if df.empty else _named_and_keyed(conn, df)


def _named_and_keyed(conn: sqlite3.Connection, df: pd.DataFrame) -> pd.DataFrame:
    """Kernel names resolved, duration, and the process key (and id) of the launch join."""
    names = string_ids(conn, pd.concat([df["kernel"], df["short_name"]]).dropna().unique())
    df["kernel"] = df["kernel"].map(names)
    df["short_name"] = df["short_name"].map(names)
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    df["correlation_id"] = df["correlation_id"].astype("Int64")
    pid = df["global_pid"].astype("Int64")
    df["process_key"] = pid // (1 << ID_BITS)
    df["process_id"] = df["process_key"] % (1 << ID_BITS)
    return df.drop(columns=["global_pid"])


def _kernel_rows(conn: sqlite3.Connection, columns: str,
                 read: Callable[..., pd.DataFrame] = read_frame) -> pd.DataFrame:
    """The kernel table's rows (these columns and global_pid) in (start, end) order. Sorted here
    (a stable sort: rows that tie keep the export's order) rather than by ORDER BY, which costs
    SQLite 0.8 s at 1M kernels; columns that are not plain integers throughout are left to
    SQLite's ORDER BY, as before."""
    global_pid = "k.globalPid" if "globalPid" in table_columns(conn, KERNEL_TABLE) else "NULL"
    sql = f"SELECT {columns.strip()}, {global_pid} AS global_pid FROM {KERNEL_TABLE} AS k"
    df = read(conn, sql)
    if df.empty:
        return df
    if not (df["start_ns"].dtype == np.int64 and df["end_ns"].dtype == np.int64):
        return read_frame(conn, sql + ' ORDER BY k.start, k."end"')
    order = np.lexsort((df["end_ns"].to_numpy(), df["start_ns"].to_numpy()))
    if (order[1:] > order[:-1]).all():
        return df
    return df.take(order).reset_index(drop=True)


# the kernel table's columns nsys declares INTEGER NOT NULL -> the stored columns that copy them
_COPIED_NOT_NULL = {"start": "start_ns", "end": "end_ns", "deviceId": "device_id", "streamId": "stream_id",
                    "registersPerThread": "registers_per_thread", "staticSharedMemory": "static_shared_bytes",
                    "dynamicSharedMemory": "dynamic_shared_bytes",
                    **{f"{p}{a}": p for p in ("grid", "block") for a in "XYZ"}}


def kernel_copy(conn: sqlite3.Connection, path: Path, order: tuple[str, ...]) -> ExportColumns | None:
    """The stored kernel columns that SQLite can copy from the export's kernel table itself,
    as `read_kernels` would make them (`order`: every stored column, in order); None when the
    table's columns are not declared as nsys declares them (then it is `read_kernels`).

    SQLite writes these values as `read_kernels` does: integers as they are, a launch
    configuration as "(x, y, z)" of its integers, the process id as (globalPid >> 24) & 0xFFFFFF
    (pandas' floor division and modulo of an int64). That holds for integers, which columns
    declared INTEGER NOT NULL hold in what nsys writes. The rows must also be in read_kernels'
    order: read_kernel_keys sorts them the same way when start and end are integers (the
    caller checks; else SQLite sorted them, and the caller takes read_kernels)."""
    declared = {row[1]: (str(row[2]).upper(), bool(row[3])) for row in conn.execute(f"PRAGMA table_info({KERNEL_TABLE})")}
    if any(declared.get(c) != ("INTEGER", True) for c in _COPIED_NOT_NULL):
        return None
    optional = {c: f"k.{c}" for c in ("correlationId", "graphNodeId", "globalPid") if c in declared}
    if any(declared[c][0] != "INTEGER" for c in optional):
        return None
    dim3 = {p: f"printf('(%d, %d, %d)', k.{p}X, k.{p}Y, k.{p}Z)" for p in ("grid", "block")}
    columns = {
        "correlation_id": optional.get("correlationId", "NULL"), "start_ns": "k.start", "end_ns": 'k."end"',
        "duration_ns": 'k."end" - k.start', "device_id": "k.deviceId", "stream_id": "k.streamId",
        "grid": dim3["grid"], "block": dim3["block"], "registers_per_thread": "k.registersPerThread",
        "static_shared_bytes": "k.staticSharedMemory", "dynamic_shared_bytes": "k.dynamicSharedMemory",
        "graph_node_id": optional.get("graphNodeId", "NULL"),
        "process_id": packed_id_sql(optional["globalPid"], "process_id") if "globalPid" in optional else "NULL",
    }
    types = {c: "TEXT" if c in ("grid", "block") else "INTEGER" for c in columns}
    return ExportColumns(path=path, table=KERNEL_TABLE, key="kernel_rowid", columns=columns, types=types,
                         order=order)


def _dim3(df: pd.DataFrame, prefix: str) -> pd.Series:
    """"(x, y, z)" strings, the form launch configurations are usually written in: made once per
    distinct configuration, every row pointing at its one string."""
    cols = [f"{prefix}{a}" for a in "XYZ"]
    if all(df[c].dtype == np.int64 for c in cols):          # one int code per row: no MultiIndex
        codes, uniques = _factorize_ints([df[c].to_numpy() for c in cols])
    else:
        dims = df[cols] if not df[cols].isna().any().any() else df[cols].astype(str)   # NaN: as astype(str) writes it
        codes, uniques = pd.MultiIndex.from_frame(dims).factorize()
    labels = np.array([f"({x}, {y}, {z})" for x, y, z in uniques], dtype=object)
    return pd.Series(labels[codes], index=df.index, dtype=object)


def _factorize_ints(columns: list[np.ndarray]) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Codes of the distinct rows of integer columns, and those rows (Python ints) by code."""
    codes = pd.factorize(columns[0])[0]
    for col in columns[1:]:
        col_codes, col_uniques = pd.factorize(col)
        codes = pd.factorize(codes * len(col_uniques) + col_codes)[0]    # never overflows: codes < rows
    firsts = np.unique(codes, return_index=True)[1]                        # a row of each code, by code
    return codes, [tuple(int(c[i]) for c in columns) for i in firsts]
