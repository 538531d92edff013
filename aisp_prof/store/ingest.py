"""Turning files into a stored run: a collected run folder, or one export made by anyone.

Both `aisp-prof run` and `aisp-prof import` end here, so a run profiled on a GPU machine and a
folder copied to a laptop produce the same rows.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import re
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd

from ..errors import ExportParseError, RunExistsError, os_error_message, shorten
from ..export_rows import ExportRows, StreamedRows
from ..naming import (CHECK_JSON, NCU_CSV, NCU_CSV_GZ, NCU_REP, NSYS_SQLITE, RUN_JSON, TIMING_JSON, new_run_id,
                      stored, utc_now, variant_of)
from ..model.launch_metrics import LaunchMetrics
from ..parse.ncu.whole import check_launch_count
from ..paths import samples_dir
from . import identity
from .db import Reader, write_run
from .ingest_job import check_job_exports, fill_from_job, load_job_exports, run_dir_exports
from ..model.run_data import RunData


def _with_variant(df: pd.DataFrame | ExportRows, pair: str | None, column: str = "nvtx_range") -> pd.DataFrame:
    if isinstance(df, (ExportRows, StreamedRows)):
        return df.with_frame(lambda frame: _with_variant(frame, pair, column))
    if df.empty or column not in df:
        return df
    df = df.copy()
    variants = {r: variant_of(r, pair) for r in df[column].dropna().unique()}     # once per range
    df.insert(df.columns.get_loc(column) + 1, "variant", df[column].map(variants))
    return df


def _ncu(path: Path, pair: str | None, data: RunData) -> None:
    """Fill data's kernels and metrics from an ncu export."""
    from ..parse.ncu.export import parse_ncu_export

    parsed = parse_ncu_export(path)
    data.kernels, data.launch_metrics = _with_variant(parsed.launches, pair), parsed.launch_metrics


def _nsys(path: Path, pair: str | None, data: RunData, in_export: bool = False) -> dict[str, Any]:
    """Fill data's timeline, memory_ops, ranges (innermost), range_levels (every
    level of every thread) and graph_launches from an nsys export; return the GPU it describes.
    `in_export`: the timeline may be an ExportRows (for `store_path`, which stores it at once),
    or StreamedRows where the export can be read in windows (`parse.nsys.stream`): then the
    other tables are filled once the store has read the last window."""
    from ..parse.nsys.sqlite_export import KERNEL_COLUMNS, parse_nsys_sqlite
    from ..parse.nsys.stream import stream_nsys_sqlite

    streamed = stream_nsys_sqlite(path, KERNEL_COLUMNS) if in_export else None
    if streamed is not None:
        def windows() -> Iterator[pd.DataFrame]:
            yield from streamed.windows()
            rest = streamed.rest
            data.memory_ops = _with_variant(rest["memory_ops"], pair)
            data.ranges = _with_variant(rest["ranges"], pair)
            data.range_levels = _with_variant(rest["range_levels"], pair)
            data.graph_launches = rest["graph_launches"]

        data.timeline = _with_variant(StreamedRows(streamed.copy, windows, streamed.kernel_count), pair)
        return streamed.gpu
    parsed = parse_nsys_sqlite(path, kernels_in_export=in_export)
    data.timeline = _with_variant(parsed.kernels, pair)
    data.memory_ops = _with_variant(parsed.memory_ops, pair)
    data.ranges = _with_variant(parsed.ranges, pair)
    data.range_levels = _with_variant(parsed.range_levels, pair)
    data.graph_launches = parsed.graph_launches
    return parsed.gpu


def _run_row(info: dict[str, Any], source: str, run_dir: Path | None) -> dict[str, Any]:
    gpu = info.get("gpu", {})
    tools = info.get("tools", {})
    return {
        "run_id": info["run_id"], "pair": info.get("pair"), "label": info.get("label"),
        "source": source, "status": info.get("status"), "created_at": info.get("created_at"),
        "gpu_name": gpu.get("gpu_name"), "compute_capability": gpu.get("compute_capability"),
        "sm_count": gpu.get("sm_count"), "driver_version": gpu.get("driver_version"),
        "ncu_version": tools.get("ncu", {}).get("version"),
        "nsys_version": tools.get("nsys", {}).get("version"),
        "git_sha": info.get("git_sha"),
        "run_dir": identity.stored_folder(run_dir) if run_dir else None,     # absolute: read from any folder
        "job": info.get("job"),
        "info_json": json.dumps(info, sort_keys=True, default=str),
    }


def load_run_dir(run_dir: Path, in_export: bool = False, complete: bool = False) -> RunData:
    """Parse a folder written by `aisp-prof run` (run.json + whatever exports it holds).
    `in_export`: the timeline of a one-process run may be an ExportRows (`_nsys`). `complete`
    (an import): a folder lacking an export its run.json says was made is an ExportParseError
    naming what is missing (`identity.missing_exports`), before anything is parsed."""
    info = _json_object(run_dir / RUN_JSON, f"{run_dir} is not a complete aisp-prof run folder")
    if not isinstance(info.get("run_id"), str) or not info["run_id"]:
        raise ExportParseError(f"{run_dir / RUN_JSON} has no run_id: not a run.json written by aisp-prof")
    with _wrong_shape(run_dir / RUN_JSON):
        missing = identity.missing_exports(run_dir, info) if complete else []
    if missing:
        raise ExportParseError(f"{run_dir} is an incomplete run folder: its {RUN_JSON} says {', '.join(missing)} "
                               f"{'were' if len(missing) > 1 else 'was'} made, but the folder lacks "
                               f"{'them' if len(missing) > 1 else 'it'}; nothing stored: copy the whole folder")
    pair = info.get("pair")
    with _wrong_shape(run_dir / RUN_JSON):
        data = RunData(run=_run_row(info, "run", run_dir))
        world = int(info.get("world_size") or 1)
    ncu_csv = stored(run_dir / NCU_CSV)
    if ncu_csv is not None:
        _ncu(ncu_csv, pair, data)
        check_launch_count(ncu_csv, len(data.kernels), _profiled(info, run_dir / RUN_JSON), PROFILED_WHERE)
        if world > 1:                    # ncu watched one rank
            data.kernels.insert(0, "rank", int(info.get("ncu_rank") or 0))
    nsys = stored(run_dir / NSYS_SQLITE)
    if world > 1 and nsys is not None:
        warnings = fill_from_job(run_dir_exports(run_dir, world), pair, data, _with_variant)["warnings"]
        if warnings:
            data.run = _run_row({**info, "rank_warnings": warnings}, "run", run_dir)
    elif nsys is not None:
        _nsys(nsys, pair, data, in_export)
    check_json = stored(run_dir / CHECK_JSON)
    if check_json is not None:
        check = _json_object(check_json, f"{run_dir} holds a broken {check_json.name}")
        with _wrong_shape(check_json):
            data.checks = pd.DataFrame([_flat(c) for c in check.get("check", {}).get("checks", [])])
            data.samples, data.timings = _timing(run_dir, check)
            data.compiles = _compiles(run_dir, check)
    return data


@contextlib.contextmanager
def _wrong_shape(path: Path) -> Iterator[None]:
    """A JSON object whose fields are not what aisp-prof writes (a list for an object, a string
    for a number) is an ExportParseError naming the file, not a traceback."""
    try:
        yield
    except (AttributeError, TypeError, KeyError, ValueError) as exc:
        raise ExportParseError(f"{path} is not what aisp-prof writes ({type(exc).__name__}: {exc})") from exc


def _json_object(path: Path, problem: str) -> dict[str, Any]:
    """A JSON file that must hold an object (run.json, check.json[.gz], timing_pN.json); anything
    else (unreadable, a cut gzip, not JSON, a list, a field of the wrong type) is an ExportParseError."""
    try:
        data = path.read_bytes()
        value = json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportParseError(f"{problem} ({path.name}: {exc})") from exc
    if not isinstance(value, dict):
        raise ExportParseError(f"{problem} ({path.name} holds a JSON {type(value).__name__}, not an object)")
    return value


def _compiles(run_dir: Path, check: dict[str, Any]) -> pd.DataFrame:
    """The first calls' wall times and torch.compile's events (`collect.code.dynamo.compile_row`), of
    the check (per trial), its timing and each further timing process; none in older runs."""
    rows = list((check.get("check") or {}).get("compiles") or []) + list(check.get("compiles") or [])
    for path in timing_files(run_dir):
        rows += json.loads(path.read_text()).get("compiles") or []
    frame = pd.DataFrame([_flat(r) for r in rows])
    for col in _COMPILE_NUMBERS:       # a column None in every row must not be stored as TEXT
        if col in frame:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    return frame


_COMPILE_NUMBERS = ("trial", "factory_wall_ns", "first_call_wall_ns", "second_call_wall_ns", "dynamo_compile_time_ns")


def timing_files(run_dir: Path) -> list[Path]:
    """The further timing processes' reports, timing_p1.json, timing_p2.json, ... in order; not the
    ranks' own files of a multi-rank run (timing_p1.rank1.json: rank 0's file holds every rank's samples)."""
    found = [(int(m.group(1)), p) for p in run_dir.glob(TIMING_JSON.format(process="*"))
             if (m := re.fullmatch(TIMING_JSON.format(process=r"(\d+)").replace(".", r"\."), p.name))]
    return [p for _, p in sorted(found)]


def _timing(run_dir: Path, check: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every timed sample (the check's process, then timing_p1.json, ...) and, per variant, the
    summary of all of them pooled. Runs from before interleaved timing have a summary only."""
    from ..stats import slowest_rank, summarize_samples

    samples = list(check.get("samples") or [])
    for path in timing_files(run_dir):
        samples += _json_object(path, f"{run_dir} holds a broken {path.name}").get("samples") or []
    first = check.get("timing") or {}
    if not samples:
        return pd.DataFrame(), pd.DataFrame([{"variant": v, **t} for v, t in first.items()])
    frame = pd.DataFrame(samples)
    stats = summarize_samples(slowest_rank(samples))     # a multi-rank call takes its slowest rank's time
    rows = []
    for v, g in frame.groupby("variant", sort=False):
        extra = {k: first.get(v, {}).get(k) for k in ("input_sets", "l2_flushed", "interleaved")}
        rows.append({"variant": v, **stats[str(v)], **extra, "processes": int(g["process"].nunique())})
    return frame, pd.DataFrame(rows)


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in row.items()}


def load_export(path: Path, label: str | None = None, in_export: bool = False,
                report: Path | None = None, export_command: list[str] | None = None) -> RunData:
    """Parse one ncu CSV / .ncu-rep / nsys SQLite export made by anyone into a run. `in_export`:
    the timeline of an nsys SQLite export may be an ExportRows (`_nsys`). `report`,
    `export_command`: the .nsys-rep that `path` was exported from, and the `nsys export` that made
    it (collect.output.rep_export runs it; the store runs no tool)."""
    name = path.name.lower()
    source = report or path
    info: dict[str, Any] = {
        "run_id": new_run_id("import"), "pair": None, "label": label or source.name,
        "status": "imported", "created_at": utc_now(),
        "imported_from": str(source.resolve()),
    }
    data = RunData(run={})
    if name.endswith((".csv", ".csv.gz", ".ncu-rep", ".ncu-rep.gz")):
        _ncu(path, None, data)
        if data.kernels.empty:
            raise ExportParseError(f"{path}: no kernel launches in this ncu export")
        check_launch_count(path, len(data.kernels), _own_run_profiled(path), PROFILED_WHERE)
        info["gpu"] = _gpu_from_metrics(data.launch_metrics)
    elif name.endswith((".sqlite", ".db", ".sqlite.gz", ".db.gz")):
        info["gpu"] = _nsys(path, None, data, in_export)
    elif name.endswith((".nsys-rep", ".qdrep")):
        raise ExportParseError(f"{path}: a .nsys-rep is read through its SQLite export: `aisp-prof import` makes "
                               f"one, or run `nsys export --type sqlite {path}` and import the .sqlite")
    else:
        raise ExportParseError(f"{path}: not an ncu .csv[.gz]/.ncu-rep or an nsys .sqlite[.gz]/.nsys-rep export "
                               "(export with `ncu --import R --csv --page raw` or `nsys export --type sqlite`)")
    if export_command is not None:
        info["nsys_export_command"] = export_command
    data.run = _run_row(info, "import", None)
    return data


PROFILED_WHERE = f"{RUN_JSON} ncu_kernels_profiled"


def _profiled(info: dict[str, Any], run_json: Path | None) -> int | None:
    """How many kernels ncu said it profiled for a run (run.json; None in runs from before it was
    recorded). A value of the wrong type is an error naming `run_json`, where given."""
    n = info.get("ncu_kernels_profiled")
    if n is None or (isinstance(n, int) and not isinstance(n, bool) and n >= 0):
        return n
    if run_json is not None:
        raise ExportParseError(f"{run_json}: ncu_kernels_profiled is {n!r}, not a count: not what aisp-prof writes")
    return None


def _own_run_profiled(path: Path) -> int | None:
    """For a run folder's own ncu export imported by itself (`ncu_raw.csv[.gz]`, `ncu.ncu-rep[.gz]`
    beside the run's run.json): the count ncu profiled; None for any other file."""
    run_json = path.parent / RUN_JSON
    if path.name not in (NCU_CSV, NCU_CSV_GZ, NCU_REP, NCU_REP + ".gz") or not run_json.is_file():
        return None
    try:
        info = json.loads(run_json.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return _profiled(info, None) if isinstance(info, dict) else None


def _gpu_from_metrics(metrics: LaunchMetrics) -> dict[str, Any]:
    sm_count = metrics.first_value("device__attribute_multiprocessor_count")
    return {} if sm_count is None else {"sm_count": int(sm_count)}


def store_job(db: Path, paths: list[Path], job: str, label: str | None = None, replace: bool = False) -> str:
    """`aisp-prof import --job NAME PATHS`: the nsys exports of one job's ranks as one run; its id.
    A folder among the paths stands for the nsys SQLite exports in it, gzipped or not (natural order).
    Keyed by the content of every rank's export, in the order given (`store_keyed`)."""
    files: list[Path] = []
    for p in paths:
        if not p.exists():
            raise ExportParseError(f"{p}: no such file or folder")
        files += sorted([*p.glob("*.sqlite"), *p.glob("*.sqlite.gz")], key=_natural) if p.is_dir() else [p]
    check_job_exports(files)
    return store_keyed(db, files, lambda _: load_job_exports(files, job, label, _with_variant, _run_row), replace)


def _natural(path: Path) -> list[Any]:
    """rank2 before rank10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


def store_path(db: Path, path: Path, label: str | None = None, skip_stored: bool = False, replace: bool = False,
               via: Callable[[Path], Any] | None = None, replaced: list[str] | None = None) -> str:
    """`aisp-prof import PATH`: a run folder or a single export; returns the new run id.

    Content already stored (`store_keyed`), or a run folder whose run id is, is a RunExistsError
    naming the stored run; with `skip_stored` its id is returned instead, so importing the
    shipped samples twice is harmless. `replace`: the stored run of that content or run id is
    replaced (its id appended to `replaced`). `via(path)`: a context giving the SQLite export
    of a .nsys-rep and the command that made it (`collect.output.rep_export`, run only when the
    report's content is not stored yet; the store runs no tool), kept until the run is written,
    so that its timeline is copied from it, or read in windows, as a .sqlite's is.
    """
    if not path.exists():
        raise ExportParseError(f"{path}: no such file or folder")
    if path.is_dir() and not (path / RUN_JSON).is_file():     # said before its files are hashed (a 1 GiB folder: 3 s)
        raise ExportParseError(f"{path} is not an aisp-prof run folder (it holds no {RUN_JSON}): import a run folder, "
                               "or the exports in it (.csv, .ncu-rep, .sqlite, .nsys-rep) by their file names")

    def load(keep: contextlib.ExitStack) -> RunData:
        if via is not None:
            sqlite, command = keep.enter_context(via(path))
            return load_export(sqlite, label, in_export=True, report=path, export_command=command)
        # the timeline may stay in the export until write_run copies it (`export_rows`)
        data = load_run_dir(path, True, complete=True) if path.is_dir() else load_export(path, label, in_export=True)
        if path.is_dir() and label:
            data.run["label"] = label
        return data

    try:
        return store_keyed(db, [path], load, replace, replaced)
    except RunExistsError as exc:
        if not skip_stored:
            raise
        return exc.run_id


def store_keyed(db: Path, read: list[Path], load: Callable[[contextlib.ExitStack], RunData], replace: bool = False,
                replaced: list[str] | None = None) -> str:
    """Store the run `load` parses, keyed by the content of the files it `read`
    (`identity.content_key`). Content already stored is a RunExistsError before anything is
    parsed (and again under the write lock); with `replace` the stored runs of that content or
    run id give way, their ids appended to `replaced`. What `load` enters on the stack it is
    given (a temporary export) stays until the run is written."""
    try:
        key = identity.content_key(read)
    except OSError as exc:
        raise ExportParseError(os_error_message(exc, f"reading {shorten(exc.filename or read[0])}")) from exc
    found = stored_as(db, None, key)
    if found and not replace:
        raise RunExistsError(found[0]["run_id"], db, True, found[0]["label"])
    with contextlib.ExitStack() as keep:
        data = load(keep)
        data.run[identity.CONTENT_COLUMN] = key
        if replace and replaced is not None:
            replaced += [f["run_id"] for f in stored_as(db, data.run_id, key)]
        return write_run(db, data, replace)


def stored_as(db: Path, run_id: str | None, key: str | None) -> list[dict[str, Any]]:
    """The stored runs of this run id or content key (none where there is no database yet)."""
    if not Path(db).is_file():
        return []
    with Reader(db) as reader:
        return reader.stored_as(run_id, key)


def sample_run_dirs() -> list[Path]:
    """The real runs shipped with aisp-prof (profiles/samples/<run-id>/)."""
    return sorted(p for p in samples_dir().glob("*") if (p / RUN_JSON).exists())


def every_sample_run_dir() -> list[Path]:
    """Every sample set shipped with aisp-prof (profiles/samples*/<run-id>/: chapters 9, 10 and 14
    on an H200 and an H100, and the 2-GPU runs), in path order: what the no-GPU quick start stores."""
    return sorted(p for p in samples_dir().parent.glob("samples*/*") if (p / RUN_JSON).exists())
