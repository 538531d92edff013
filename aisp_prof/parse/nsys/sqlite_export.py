"""Parse an Nsight Systems SQLite export (`nsys export --type sqlite`) into GPU activity and range tables.

The public face of the nsys parser: `parse_nsys_sqlite(path) -> NsysParse`. It checks and opens
the file, then runs three stages, each in its own module so that each can be read (and tested)
on its own:

* `tables` reads the export's tables (kernels, memcpy/memset operations, the CUDA API calls
  that launched them, NVTX push/pop ranges) and `gpu` the GPU; every schema fact lives there.
* `attribution` gives each kernel and memory operation the NVTX range path that was open on
  its launching thread when its API call started (found through the correlationId, because the
  GPU usually runs the work after the CPU popped the range).
* `ranges` aggregates per range: counts, GPU busy time (kernels, memory operations and
  whole-graph launches), idle gaps, CPU wall time; per innermost range (`ranges`) and at every
  level of every thread (`range_levels`).

The NVTX range path is the column `nvtx_range` in every frame, as in the ncu parser's frames.

For an import (`store.ingest.store_path`) the kernels need not come out as a frame: with
`kernels_in_export` they are an `export_rows.ExportRows`, the few columns the parse works out
per kernel, and the store copies the rest from the export with SQL. The runtime calls are read
on a second connection in a second thread meanwhile (`_beside`). An import of a trace longer
than one window (50k kernels) is not parsed here but in windows, in flat memory (`stream`),
with the same stages and the same results.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

from aisp_prof.errors import ExportParseError
from aisp_prof.export_rows import ExportColumns, ExportRows
from aisp_prof.parse.nsys import tables as export
from aisp_prof.parse.nsys import kernels as nsys_kernels
from aisp_prof.parse.gunzip import gunzipped, is_gzipped
from aisp_prof.parse.nsys.attribution import attribute_all
from aisp_prof.parse.nsys.gpu import read_gpu
from aisp_prof.parse.nsys.ranges import LEVEL_COLUMNS, RANGE_COLUMNS, level_table, range_table

__all__ = ["GRAPH_LAUNCH_COLUMNS", "KERNEL_COLUMNS", "LEVEL_COLUMNS", "MEMORY_OP_COLUMNS", "RANGE_COLUMNS",
           "NsysParse", "parse_nsys_sqlite"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_SQLITE_MAGIC = b"SQLite format 3\x00"
REEXPORT_HINT = "gzip the export again, or re-run `nsys export --type sqlite` on the .nsys-rep"

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
GRAPH_LAUNCH_COLUMNS = (
    "correlation_id", "graph_id", "graph_exec_id", "start_ns", "end_ns", "duration_ns", "device_id", "stream_id",
    "launch_api", "launch_start_ns", "process_id", "thread_id", "nvtx_range", "nvtx_domain", "range_instance",
)


def _empty(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def _empty_memory_ops() -> pd.DataFrame:
    return _empty(MEMORY_OP_COLUMNS)


@dataclass(frozen=True, eq=False)
class NsysParse:
    """Tables from one nsys export. eq=False: DataFrames have no single truth value."""

    source: Path
    kernels: pd.DataFrame | ExportRows   # one row per kernel execution, KERNEL_COLUMNS (`parse_nsys_sqlite`)
    ranges: pd.DataFrame      # one row per (NVTX range path, domain) with GPU work, RANGE_COLUMNS
    gpu: dict[str, object]    # the GPU that ran the kernels (most kernels if several)
    memory_ops: pd.DataFrame = field(default_factory=lambda: _empty_memory_ops())
    # one row per GPU memcpy/memset, MEMORY_OP_COLUMNS
    range_levels: pd.DataFrame = field(default_factory=lambda: _empty(LEVEL_COLUMNS))
    # one row per (process, thread, domain, range path) at every level, children's work included
    graph_launches: pd.DataFrame = field(default_factory=lambda: _empty(GRAPH_LAUNCH_COLUMNS))
    # one row per CUDA graph launch traced as a whole graph (nsys's default), GRAPH_LAUNCH_COLUMNS


def parse_nsys_sqlite(path: str | Path, kernels_in_export: bool = False) -> NsysParse:
    """Read kernels, their launch-attributed NVTX ranges and the GPU from an nsys SQLite export.

    With `kernels_in_export`, `kernels` is an ExportRows where the export allows it: the columns
    SQLite can copy from the export's kernel table stay there (`nsys_kernels.kernel_copy`), for
    a store that attaches the export (a 1M-kernel import then reads and binds a few columns per
    kernel, not 21). The export must then stay in place until the rows are stored.

    A gzipped export (`nsys.sqlite.gz`) is read through a temporary plain copy (`gunzip`), so its
    kernels are always a frame: the copy is gone when this returns."""
    path = Path(path)
    if is_gzipped(path):
        with gunzipped(path, REEXPORT_HINT) as plain:
            return dataclasses.replace(parse_nsys_sqlite(plain), source=path)
    check_file(path)
    conn = connect(path)
    try:
        parsed = _parse(conn, path, kernels_in_export)
    except sqlite3.DatabaseError as exc:
        raise ExportParseError(
            f"{path}: unreadable SQLite export ({exc}); re-run `nsys export --type sqlite` on the .nsys-rep"
        ) from exc
    finally:
        conn.close()
    log.info("%s: %d kernels, %d memcpy/memset operations, %d whole-graph launches in %d NVTX ranges", path,
             len(parsed.kernels), len(parsed.memory_ops), len(parsed.graph_launches), len(parsed.ranges))
    return parsed


# --------------------------------------------------------------------------------------- opening


def check_file(path: Path) -> None:
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


def connect(path: Path, any_thread: bool = False) -> sqlite3.Connection:
    """Open read-only so that parsing can never modify (or journal next to) an export;
    `any_thread`: for a connection that a second thread reads on (`_beside`)."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        return sqlite3.connect(uri, uri=True, check_same_thread=not any_thread)
    except sqlite3.Error as exc:
        raise ExportParseError(f"{path}: cannot open SQLite export ({exc})") from exc


# --------------------------------------------------------------------------------------- parsing


def _parse(conn: sqlite3.Connection, path: Path, kernels_in_export: bool) -> NsysParse:
    """kernels, memory ops and graph launches -> their API calls -> the ranges open at each call
    -> per-range totals (innermost, and every level)."""
    tables = export.table_names(conn)
    if "StringIds" not in tables:
        raise ExportParseError(f"{path}: SQLite file is not an Nsight Systems export (no StringIds table)")
    if export.KERNEL_TABLE not in tables:
        raise ExportParseError(f"{path}: no CUDA kernels recorded; was nsys run with --trace=cuda?")
    with _beside(path, lambda other: export.read_launches(other, tables)) as launched:
        kernels, copy = _read_kernels(conn, path, kernels_in_export)
        if kernels.empty:
            raise ExportParseError(f"{path}: no CUDA kernels recorded; was nsys run with --trace=cuda?")
        graphs = export.read_graph_launches(conn, tables)
        memory_ops = export.read_memory_ops(conn, tables)
        nvtx = export.read_push_pop_ranges(conn, tables)
        launches = launched()
    on = ["process_key", "correlation_id"]
    kernels = kernels.merge(launches, on=on, how="left")
    memory_ops = memory_ops.merge(launches, on=on, how="left")
    graphs = graphs.astype({c: "Int64" for c in on}).merge(launches, on=on, how="left")
    del launches                       # each of these frames is a million rows at 1M kernels:
    done = attribute_all(kernels, memory_ops, nvtx, graphs)
    del kernels, memory_ops, nvtx      # let each go once a newer one replaces it
    graphs = done.graphs if len(done.graphs) else None
    ranges = range_table(done.kernels, done.memory_ops, done.nvtx, graphs)
    levels = level_table(done.kernels, done.memory_ops, done.nvtx, done.open_ranges, graphs)
    gpu = read_gpu(conn, tables, done.kernels)
    kept = list(KERNEL_COLUMNS) if copy is None else [copy.key] + [c for c in KERNEL_COLUMNS if c not in copy.columns]
    frame = done.kernels.loc[:, kept].reset_index(drop=True)
    return NsysParse(
        source=path, kernels=frame if copy is None else ExportRows(frame, copy), ranges=ranges,
        gpu=gpu, memory_ops=done.memory_ops.loc[:, list(MEMORY_OP_COLUMNS)].reset_index(drop=True),
        range_levels=levels, graph_launches=done.graphs.loc[:, list(GRAPH_LAUNCH_COLUMNS)].reset_index(drop=True))


@contextlib.contextmanager
def _beside(path: Path, read: Callable[[sqlite3.Connection], T]) -> Iterator[Callable[[], T]]:
    """`read` on a connection of its own in a second thread, while the caller reads on: SQLite
    runs a query without holding Python's GIL, so two cores read two tables at once (at 1M
    kernels the runtime calls' 10M-row scan takes ~2 s, as long as the kernels and NVTX
    together). Yields the function that waits for what `read` returns (or raises what it
    raised); leaving early interrupts it."""
    other = connect(path, any_thread=True)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aisp-export-read")
    future = pool.submit(read, other)
    try:
        yield future.result
    finally:
        while not future.done():        # SQLite interrupts the statement running now: each in turn
            other.interrupt()
            wait([future], timeout=0.05)
        pool.shutdown()
        other.close()


def _read_kernels(conn: sqlite3.Connection, path: Path, in_export: bool) -> tuple[pd.DataFrame, ExportColumns | None]:
    """Every kernel column (`read_kernels`), or, `in_export` and where SQLite can copy the rest
    exactly, only those the parse needs (`read_kernel_keys`) and what SQLite copies."""
    copy = nsys_kernels.kernel_copy(conn, path, KERNEL_COLUMNS) if in_export else None
    if copy is not None:
        keys = nsys_kernels.read_kernel_keys(conn)
        if keys["start_ns"].dtype == np.int64 and keys["end_ns"].dtype == np.int64:   # as kernel_copy needs
            return keys, copy
    return nsys_kernels.read_kernels(conn), None
