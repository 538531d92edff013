"""Scaled profiler exports built from the real shipped samples, for timing aisp-prof at scale
(issue 17: a million kernels on a laptop).

Nothing here invents a number. An export of k copies is the shipped export's own rows written k
times: copy c keeps every value of the original row except

* timestamps (`start`, `end`), shifted by c x (the export's time span + a gap), so copies follow
  one another on the timeline and never overlap;
* the ids the parser joins on or that nsys promises unique, offset by c x (their maximum + 1):
  `correlationId` (kernel/memcpy/memset <-> runtime call), NVTX `rangeId`, `gridId`,
  `eventSyncId`. `globalTid`/`globalPid` stay: copy c is the same process and thread running the
  same work again later, so a launch of copy c finds exactly the NVTX ranges of copy c (ranges
  enclose a launch by time on its thread). `graphNodeId` stays too: a graph node repeats on
  every replay of its graph.

Tables nsys fills per event (every `CUPTI_ACTIVITY_KIND_*` table and `NVTX_EVENTS`) are
replicated; string, enum, target and metadata tables are kept as they are, so names resolve
exactly as in the original. The copy is made inside SQLite (ATTACH the original, one
`INSERT ... SELECT` per table with arithmetic on ids and times), so a million kernels take
seconds. For an ncu `--page raw` CSV, each launch row is written k times with a fresh `ID`.

What must come out of the tool is then exactly k times the original's: per NVTX range the
kernel/memcpy/memset counts, bytes, times, gaps, wall time and calls (`scale_check`), and for
ncu the launch count and per-variant sums of bytes, FLOPs and durations.

    python benchmarks/scale_exports.py nsys profiles/samples/<run>/ /tmp/k1m.sqlite --kernels 1000000
    python benchmarks/scale_exports.py ncu profiles/samples/<run>/ /tmp/l10k.csv --launches 10000
"""
from __future__ import annotations

import argparse
import atexit
import csv
import functools
import gzip
import io
import shutil
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SAMPLE = ROOT / "profiles" / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"
DEFAULT_GAP_NS = 1_000_000          # idle time between two copies on the timeline
EVENT_TABLE_PREFIX = "CUPTI_ACTIVITY_KIND_"
EVENT_TABLES_EXTRA = ("NVTX_EVENTS",)
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
TIME_COLUMNS = ("start", "end")
ID_COLUMNS = ("correlationId", "rangeId", "gridId", "eventSyncId")
NSYS_FILE, NCU_FILE = "nsys.sqlite", "ncu_raw.csv"


def copies_for(target: int, per_copy: int) -> int:
    """Copies of an export holding `per_copy` items that come closest to `target` items."""
    if per_copy <= 0:
        raise ValueError("the export holds no kernels/launches to replicate")
    return max(1, round(target / per_copy))


def resolve_export(source: Path, name: str) -> Path:
    """A run folder or the export itself. The shipped samples keep theirs gzipped (`nsys.sqlite.gz`,
    `ncu_raw.csv.gz`): such an export is a plain copy in a temporary folder, removed at exit."""
    path = source / name if source.is_dir() else source
    gz = path.with_name(path.name + ".gz")
    if not path.exists() and gz.exists():
        path = gz
    return _gunzipped(path.resolve()) if path.name.endswith(".gz") else path


@functools.lru_cache(maxsize=None)
def _gunzipped(path: Path) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="aisp_scale_source_"))
    atexit.register(shutil.rmtree, folder, True)
    plain = folder / path.name[: -len(".gz")]
    with gzip.open(path, "rb") as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return plain


def nsys_kernel_count(source: Path) -> int:
    """Kernels in an nsys export (a run folder or the .sqlite): the unit one copy adds."""
    path = resolve_export(Path(source), NSYS_FILE)
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {KERNEL_TABLE}").fetchone()[0]


def ncu_launch_count(source: Path) -> int:
    """Launch rows in an ncu raw-page CSV (a run folder or the .csv)."""
    return len(_ncu_parts(resolve_export(Path(source), NCU_FILE).read_text(encoding="utf-8-sig"))[2])


# ------------------------------------------------------------------------------------------ nsys


@dataclass(frozen=True)
class NsysScaling:
    """What `scale_nsys_export` wrote: enough to predict what the tool must report."""

    source: Path
    path: Path
    copies: int
    shift_ns: int                                 # copy c is the original shifted by c x shift_ns
    rows_per_copy: dict[str, int] = field(default_factory=dict)   # replicated table -> original rows
    id_strides: dict[str, int] = field(default_factory=dict)
    build_s: float = 0.0

    @property
    def kernels(self) -> int:
        return self.copies * self.rows_per_copy.get(KERNEL_TABLE, 0)


def event_tables(conn: sqlite3.Connection, schema: str = "main") -> list[str]:
    """The tables nsys fills with one row per traced event: the ones a longer trace grows."""
    names = [r[0] for r in conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")]
    return sorted(n for n in names if n.startswith(EVENT_TABLE_PREFIX) or n in EVENT_TABLES_EXTRA)


def _columns(conn: sqlite3.Connection, table: str, schema: str = "main") -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA {schema}.table_info([{table}])")]


def time_span_ns(conn: sqlite3.Connection, tables: list[str], schema: str = "main") -> tuple[int, int]:
    """(first start, last end) over the event tables: the stretch of timeline one copy occupies."""
    first, last = None, None
    for t in tables:
        cols = _columns(conn, t, schema)
        if "start" not in cols:
            continue
        end = 'MAX(COALESCE("end", start))' if "end" in cols else "MAX(start)"
        lo, hi = conn.execute(f"SELECT MIN(start), {end} FROM {schema}.[{t}]").fetchone()
        if lo is not None:
            first = lo if first is None else min(first, lo)
            last = hi if last is None else max(last, hi)
    if first is None:
        raise ValueError("the export has no timed events to replicate")
    return int(first), int(last)


def id_strides(conn: sqlite3.Connection, tables: list[str], schema: str = "main") -> dict[str, int]:
    """Per id column, max + 1 over every event table that has it: offsets by c x stride keep ids
    unique across copies and equal ids (a kernel and its runtime call) equal within a copy."""
    strides: dict[str, int] = {}
    for t in tables:
        cols = _columns(conn, t, schema)
        for c in ID_COLUMNS:
            if c in cols:
                (top,) = conn.execute(f"SELECT MAX([{c}]) FROM {schema}.[{t}]").fetchone()
                strides[c] = max(strides.get(c, 1), int(top or 0) + 1)
    return strides


def _select_list(cols: list[str], shift_ns: int, strides: dict[str, int]) -> str:
    """The SELECT expressions of copy n.c: times shifted, ids offset, everything else as is."""
    out = []
    for c in cols:
        if c in TIME_COLUMNS:
            out.append(f"t.[{c}] + n.c * {shift_ns}")
        elif c in strides:
            out.append(f"t.[{c}] + n.c * {strides[c]}")
        else:
            out.append(f"t.[{c}]")
    return ", ".join(out)


def scale_nsys_export(source: Path, dest: Path, copies: int, gap_ns: int = DEFAULT_GAP_NS) -> NsysScaling:
    """Write `dest`: the nsys SQLite export `source` (a run folder or the .sqlite) with its event
    rows replicated `copies` times (the original is copy 0)."""
    if copies < 1:
        raise ValueError("copies must be at least 1")
    t0 = time.perf_counter()
    source = resolve_export(Path(source), NSYS_FILE)
    dest = Path(dest)
    dest.unlink(missing_ok=True)
    shutil.copyfile(source, dest)
    conn = sqlite3.connect(dest, uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("ATTACH DATABASE ? AS orig", (f"{source.resolve().as_uri()}?mode=ro",))
        tables = event_tables(conn, "orig")
        first, last = time_span_ns(conn, tables, "orig")
        shift_ns = last - first + gap_ns
        strides = id_strides(conn, tables, "orig")
        rows = {t: conn.execute(f"SELECT COUNT(*) FROM orig.[{t}]").fetchone()[0] for t in tables}
        conn.execute("CREATE TEMP TABLE copies (c INTEGER PRIMARY KEY)")
        conn.execute("WITH RECURSIVE n(c) AS (SELECT 1 UNION ALL SELECT c + 1 FROM n WHERE c < ?) "
                     "INSERT INTO temp.copies SELECT c FROM n", (copies - 1,))
        conn.execute("BEGIN")
        for t in tables:
            cols = _columns(conn, t, "orig")
            names = ", ".join(f"[{c}]" for c in cols)
            if copies > 1:                       # CROSS JOIN: copies is the outer loop, so rows land in time order
                conn.execute(f"INSERT INTO main.[{t}] ({names}) SELECT {_select_list(cols, shift_ns, strides)} "
                             f"FROM temp.copies AS n CROSS JOIN orig.[{t}] AS t")
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE orig")
    finally:
        conn.close()
    return NsysScaling(source, dest, copies, shift_ns, rows, strides, time.perf_counter() - t0)


def check_nsys_rows(scaling: NsysScaling) -> list[str]:
    """Problems with the written export itself (before the tool reads it): every event table
    holds exactly copies x its rows, and correlation ids of GPU work stay unique per copy."""
    problems = []
    conn = sqlite3.connect(f"{scaling.path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        for t, n in scaling.rows_per_copy.items():
            (got,) = conn.execute(f"SELECT COUNT(*) FROM [{t}]").fetchone()
            if got != scaling.copies * n:
                problems.append(f"{t}: {got} rows, expected {scaling.copies} x {n}")
        for t in (KERNEL_TABLE, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
            if t in scaling.rows_per_copy and "correlationId" in _columns(conn, t):
                distinct, total = conn.execute(
                    f"SELECT COUNT(DISTINCT correlationId), COUNT(correlationId) FROM [{t}]").fetchone()
                if distinct != total:
                    problems.append(f"{t}: {total - distinct} repeated correlationIds")
    finally:
        conn.close()
    return problems


# ------------------------------------------------------------------------------------------- ncu


@dataclass(frozen=True)
class NcuScaling:
    """What `scale_ncu_csv` wrote."""

    source: Path
    path: Path
    copies: int
    launches_per_copy: int
    id_stride: int                                 # launch ID of copy c = original ID + c x id_stride
    build_s: float = 0.0

    @property
    def launches(self) -> int:
        return self.copies * self.launches_per_copy


def _csv_line(cells: list[str]) -> str:
    """One row in ncu's own CSV form (every cell quoted, "\\n" line ends): a shipped CSV
    re-written this way is byte-identical to the original."""
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(cells)
    return buf.getvalue()


def _ncu_parts(text: str) -> tuple[str, list[list[str]], list[list[str]]]:
    """(lines before the header, header and units rows, launch rows) of a raw-page CSV."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no ncu CSV header (a line starting with \"ID\")")
    rows = [r for r in csv.reader(io.StringIO("".join(lines[start:])), strict=True) if r]
    head = 2 if len(rows) > 1 and rows[1][0] == "" else 1
    return "".join(lines[:start]), rows[:head], rows[head:]


def scale_ncu_csv(source: Path, dest: Path, copies: int) -> NcuScaling:
    """Write `dest`: the ncu `--page raw` CSV `source` (a run folder or the .csv) with every
    launch row written `copies` times, copy c's IDs offset by c x (max ID + 1)."""
    if copies < 1:
        raise ValueError("copies must be at least 1")
    t0 = time.perf_counter()
    source = resolve_export(Path(source), NCU_FILE)
    preamble, head, launches = _ncu_parts(source.read_text(encoding="utf-8-sig"))
    if not launches:
        raise ValueError(f"{source}: no launch rows")
    ids = [int(r[0]) for r in launches]
    stride = max(ids) + 1
    tails = [_csv_line(r[1:]) for r in launches]        # everything after the ID, serialized once
    with open(dest, "w", encoding="utf-8", newline="") as out:
        out.write(preamble)
        out.writelines(_csv_line(r) for r in head)
        for c in range(copies):
            out.writelines(f'"{i + c * stride}",{tail}' for i, tail in zip(ids, tails))
    return NcuScaling(source, Path(dest), copies, len(launches), stride, time.perf_counter() - t0)


# ------------------------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    n = sub.add_parser("nsys", help="replicate an nsys SQLite export")
    n.add_argument("source", type=Path, nargs="?", default=DEFAULT_SAMPLE, help="run folder or nsys .sqlite")
    n.add_argument("dest", type=Path)
    n.add_argument("--kernels", type=int, default=10_000, help="about this many kernels (default 10000)")
    n.add_argument("--gap-ns", type=int, default=DEFAULT_GAP_NS)
    c = sub.add_parser("ncu", help="replicate an ncu --page raw CSV")
    c.add_argument("source", type=Path, nargs="?", default=DEFAULT_SAMPLE, help="run folder or ncu .csv")
    c.add_argument("dest", type=Path)
    c.add_argument("--launches", type=int, default=1_000, help="about this many launches (default 1000)")
    args = parser.parse_args(argv)
    if args.kind == "nsys":
        per_copy = nsys_kernel_count(args.source)
        s = scale_nsys_export(args.source, args.dest, copies_for(args.kernels, per_copy), args.gap_ns)
        problems = check_nsys_rows(s)
        print(f"{s.path}: {s.kernels} kernels ({s.copies} copies of {per_copy}), shift {s.shift_ns} ns, "
              f"{s.build_s:.1f} s")
    else:
        per_copy = ncu_launch_count(args.source)
        s = scale_ncu_csv(args.source, args.dest, copies_for(args.launches, per_copy))
        problems = []
        print(f"{s.path}: {s.launches} launches ({s.copies} copies of {per_copy}), {s.build_s:.1f} s")
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
