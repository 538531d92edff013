"""Parse Nsight Compute `--csv --page raw` exports into two tables: one row per kernel launch, and
every numeric metric in long form.

The raw page is the only ncu text export with one column per metric; its first row names the
metrics, its second gives their units, and each later row is one profiled launch. Without
`--print-units base` ncu scales each column to a "readable" unit (us, Mbyte, Ghz, Tbyte/s, ...),
so every value is converted to one base unit per dimension (byte, ns, hz, .../second) with a
table (`ncu_units`), not guesswork. Neither CSV form keeps every digit: scaled units print six
decimals (1.917473 Ghz), base units two (0.26 for a stall ratio); a `.ncu-rep` does (see
`ncu_rep`). The unit conversion and the table assembly are shared with `ncu_rep`, so a CSV and a
`.ncu-rep` of the same run give the same frames.
"""
from __future__ import annotations

import csv
import io
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from aisp_prof.errors import CounterPermissionError, ExportParseError
from aisp_prof.parse.metric_table import BY_RAW, METRICS, Metric
from aisp_prof.parse.ncu_units import base_unit, number_text, scale_value

log = logging.getLogger(__name__)

REEXPORT_HINT = (
    "re-export with `ncu --import X.ncu-rep --csv --page raw --print-units base > X_raw_base.csv`"
)


@dataclass(frozen=True)
class NcuParse:
    """What one ncu export holds.

    launches: one row per profiled launch; identity columns (`IDENTITY_COLUMNS`) then one float
        column per `metric_table.METRICS` entry present in the export, in its base unit.
    metrics: long form of every numeric metric: launch_id, metric (raw ncu name), unit (base
        unit after conversion), value (float).
    """

    launches: pd.DataFrame
    metrics: pd.DataFrame


# Identity columns of `launches`. `block_dim`/`grid_dim` are ncu's "Block Size"/"Grid Size"
# strings such as "(128, 1, 1)"; `block_size`/`grid_size` are the metric-table columns
# (launch__block_size threads, launch__grid_size blocks), so the strings get other names.
IDENTITY_COLUMNS = (
    "launch_id", "process_id", "kernel", "nvtx_range", "nvtx_domain",
    "context", "stream", "block_dim", "grid_dim", "device", "cc",
)
_INT_IDENTITY = ("process_id", "context", "stream", "device")
METRICS_COLUMNS = ("launch_id", "metric", "unit", "value")

# dimensions that must come out right for a metric-table column, or the column is refused
_CHECKED_DIMENSIONS = frozenset({"byte", "ns", "hz"})


# ---------------------------------------------------------------------------------------------
# NVTX

def parse_nvtx_stack(cell: str) -> list[tuple[str, str]]:
    """(domain, range name) per pushed range, outermost first, from ncu's NVTX thread cell.

    The cell is `<thread id>  "<entry>"  "<entry>" `, each entry
    `Domain:Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg`. The domain is taken up to the
    first ':' (domain names with ':' are not supported); the name is what lies before the six
    trailing fields, and when Msg repeats it (Msg_Type REGISTERED/ASCII) a name with ':' still
    parses whole. A name containing `"  "` (quote, two spaces, quote) would split wrongly.
    """
    match = re.match(r"\s*\d*\s*(.*?)\s*$", cell, re.S)
    rest = match.group(1) if match else ""
    if not rest:
        return []
    if not (len(rest) >= 2 and rest.startswith('"') and rest.endswith('"')):
        log.warning("unrecognised NVTX cell %r; using it whole as the range name", cell)
        return [("", rest)]
    stack = []
    for entry in rest[1:-1].split('"  "'):
        domain, _, tail = entry.partition(":")
        repeated = re.fullmatch(r"(.*):[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:\1", tail, re.S)
        if repeated:
            name = repeated.group(1)
        else:
            fields = tail.rsplit(":", 6)
            name = fields[0] if len(fields) == 7 else tail
        stack.append((domain, name))
    return stack


def nvtx_columns(stack: Sequence[tuple[str, str]]) -> dict[str, str]:
    """nvtx_range: range names joined by "/"; nvtx_domain: the innermost range's domain."""
    return {
        "nvtx_range": "/".join(name for _, name in stack),
        "nvtx_domain": stack[-1][0] if stack else "",
    }


# ---------------------------------------------------------------------------------------------
# Table assembly shared with ncu_rep

def _check_dimension(metric: Metric, unit: str, path: Path) -> None:
    expected = metric.unit.split("/")[0]
    if expected in _CHECKED_DIMENSIONS and unit.split("/")[0] != expected:
        raise ExportParseError(
            f"{path}: metric {metric.raw} has unit {unit!r}, which does not convert to "
            f"{metric.unit!r}; {REEXPORT_HINT}"
        )


def build_parse(
    path: Path,
    identities: list[dict],
    records: Iterable[tuple[int, str, str, float]],
    present_raw: Iterable[str],
) -> NcuParse:
    """NcuParse from identity rows, long-form (launch_id, metric, unit, value) records and the
    raw metric names the export has (so a metric-table column exists even where every cell is
    empty)."""
    if not identities:
        raise ExportParseError(f"{path}: no kernels in the export (nothing was profiled?)")
    launches = pd.DataFrame(identities, columns=list(IDENTITY_COLUMNS))
    launches["launch_id"] = launches["launch_id"].astype("int64")
    for col in _INT_IDENTITY:
        launches[col] = launches[col].astype("Int64")
    dup = launches["launch_id"].duplicated()
    if dup.any():
        raise ExportParseError(
            f"{path}: launch ID {int(launches['launch_id'][dup].iloc[0])} appears twice "
            f"(two exports concatenated?); {REEXPORT_HINT}"
        )
    metrics = pd.DataFrame(list(records), columns=list(METRICS_COLUMNS))
    metrics = metrics.astype({"launch_id": "int64", "value": "float64"})

    tidy = metrics[metrics["metric"].isin(BY_RAW)]
    for raw, unit in tidy[["metric", "unit"]].drop_duplicates().itertuples(index=False):
        _check_dimension(BY_RAW[raw], unit, path)
    wide = tidy.pivot(index="launch_id", columns="metric", values="value")
    present = set(present_raw)
    columns = {
        m.column: wide[m.raw] if m.raw in wide.columns else float("nan")
        for m in METRICS if m.raw in present
    }
    wide = pd.DataFrame(columns, index=wide.index.rename("launch_id"), dtype="float64")
    launches = launches.join(wide, on="launch_id")
    return NcuParse(launches=launches.reset_index(drop=True), metrics=metrics)


# ---------------------------------------------------------------------------------------------
# CSV

_IDENTITY_HEADERS = {
    "ID": "launch_id", "Process ID": "process_id", "Kernel Name": "kernel", "Context": "context",
    "Stream": "stream", "Block Size": "block_dim", "Grid Size": "grid_dim", "Device": "device",
    "CC": "cc",
}
_OTHER_HEADERS = {"Process Name", "Host Name"}
_NVTX_PUSH_POP = "thread Domain:Push/Pop_Range"
_NVTX_START_END = "Id:Domain:Start/Stop_Range"
_TOOL_LINE = re.compile(r"==[A-Z]+==")
_MISSING = {"", "n/a"}  # ncu's "not collected for this launch": NaN in the launches table


def _is_metric_header(name: str) -> bool:
    return not (name in _IDENTITY_HEADERS or name in _OTHER_HEADERS
                or name.startswith((_NVTX_PUSH_POP, _NVTX_START_END)))


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExportParseError(f"{path}: cannot read the ncu export ({exc.strerror})") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExportParseError(
            f"{path}: not text (byte {exc.start} is not UTF-8), so not an ncu CSV export; "
            f"{REEXPORT_HINT}"
        ) from exc


def _csv_lines(path: Path, text: str) -> list[str]:
    """The CSV lines of the file: ncu's own `==PROF==`/`==WARNING==` lines dropped, `==ERROR==`
    lines turned into errors."""
    if not text.strip():
        raise ExportParseError(f"{path}: the ncu export is empty; {REEXPORT_HINT}")
    lines = text.splitlines(keepends=True)
    errors = [ln.strip() for ln in lines if ln.startswith("==ERROR==")]
    if any("ERR_NVGPUCTRPERM" in ln for ln in errors):
        raise CounterPermissionError(
            f"{path}: ncu could not read GPU performance counters (ERR_NVGPUCTRPERM); allow "
            "non-admin profiling (NVreg_RestrictProfilingToAdminUsers=0) or run ncu as root"
        )
    if errors:
        raise ExportParseError(f"{path}: ncu reported an error instead of data: {errors[0]}")
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise ExportParseError(
            f"{path}: no ncu CSV header (a line starting with \"ID\") found; {REEXPORT_HINT}"
        )
    kept = []
    for ln in lines[start:]:
        if _TOOL_LINE.match(ln):
            log.debug("%s: skipping ncu output line %r", path, ln.strip())
        else:
            kept.append(ln)
    return kept


def _read_rows(path: Path, lines: list[str]) -> list[list[str]]:
    try:
        rows = list(csv.reader(io.StringIO("".join(lines)), strict=True))
    except csv.Error as exc:
        raise ExportParseError(
            f"{path}: malformed CSV ({exc}); the file is truncated or corrupt; {REEXPORT_HINT}"
        ) from exc
    rows = [r for r in rows if r]  # blank lines
    width = len(rows[0])
    for n, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise ExportParseError(
                f"{path}: CSV row {n} has {len(row)} cells, the header {width}; the file is "
                f"truncated or corrupt; {REEXPORT_HINT}"
            )
    return rows


def _int_or_none(cell: str) -> int | None:
    text = number_text(cell)
    return int(float(text)) if text is not None else None


@dataclass(frozen=True)
class _CsvLayout:
    """Where everything is in a raw-page CSV, read once from its header (and units row)."""

    col: dict[str, int]                          # header name -> cell index (the last if repeated)
    nvtx_col: int | None                         # the push/pop NVTX cell, if ncu wrote one
    metric_cols: list[tuple[int, str, str, int]]  # (cell index, raw name, base unit, power of ten)
    tidy_cols: set[int]                          # the metric cells that are metric-table columns
    data: list[list[str]]                        # one row per profiled launch
    first_row: int                               # CSV row number of data[0], for messages


def _layout(path: Path, rows: list[list[str]]) -> _CsvLayout:
    """Check the header and find the identity, NVTX and metric cells and the launch rows."""
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    if "Metric Name" in col:
        raise ExportParseError(
            f"{path}: this is a `--page details` export, one metric per row; {REEXPORT_HINT}"
        )
    missing = [h for h in ("ID", "Kernel Name") if h not in col]
    if missing:
        raise ExportParseError(f"{path}: header lacks column(s) {missing}; {REEXPORT_HINT}")
    if len(col) != len(header):
        log.warning("%s: repeated column names; the last of each is used", path)
    has_units_row = len(rows) > 1 and rows[1][col["ID"]].strip() == ""
    units = rows[1] if has_units_row else [""] * len(header)
    data = rows[2:] if has_units_row else rows[1:]
    if not data:
        raise ExportParseError(f"{path}: no kernels in the export (header only); "
                               "was anything profiled? check ncu's --nvtx-include/--kernel-name")
    metric_cols = [(i, name, *base_unit(units[i]))
                   for i, name in enumerate(header) if _is_metric_header(name)]
    return _CsvLayout(
        col=col,
        nvtx_col=next((i for i, h in enumerate(header) if h.startswith(_NVTX_PUSH_POP)), None),
        metric_cols=metric_cols,
        tidy_cols={i for i, name, _, _ in metric_cols if name in BY_RAW},
        data=data,
        first_row=len(rows) - len(data) + 1,
    )


def _identity_row(path: Path, layout: _CsvLayout, n: int, row: list[str]) -> dict:
    """The identity columns of CSV row n: launch ID, process, kernel, NVTX range, launch config."""
    col = layout.col
    launch_text = number_text(row[col["ID"]])
    if launch_text is None or "." in launch_text:
        raise ExportParseError(
            f"{path}: row {n}: launch ID {row[col['ID']]!r} is not an integer; {REEXPORT_HINT}"
        )
    ident = {
        key: row[col[h]] if h in col else "" for h, key in _IDENTITY_HEADERS.items()
    }
    ident["launch_id"] = int(launch_text)
    for key in _INT_IDENTITY:
        ident[key] = _int_or_none(ident[key])
    nvtx = parse_nvtx_stack(row[layout.nvtx_col]) if layout.nvtx_col is not None else []
    ident.update(nvtx_columns(nvtx))
    return ident


def _metric_records(
    path: Path, layout: _CsvLayout, launch_id: int, row: list[str]
) -> list[tuple[int, str, str, float]]:
    """(launch_id, metric, base unit, value) per numeric metric cell of one launch; a
    metric-table cell that is neither a number nor missing ("", "n/a") is an error."""
    records = []
    for i, name, unit, exp in layout.metric_cols:
        cell = row[i]
        text = number_text(cell)
        if text is not None:
            records.append((launch_id, name, unit, scale_value(text, exp)))
        elif i in layout.tidy_cols:
            if cell.strip() not in _MISSING:
                raise ExportParseError(
                    f"{path}: launch {launch_id}: {name} is {cell!r}, not a number; "
                    f"{REEXPORT_HINT}"
                )
            log.warning("%s: launch %d has no value for %s", path, launch_id, name)
    return records


def parse_ncu_csv(path: str | Path) -> NcuParse:
    """Parse an `ncu --csv --page raw` export (with or without `--print-units base`)."""
    path = Path(path)
    layout = _layout(path, _read_rows(path, _csv_lines(path, _read_text(path))))
    identities: list[dict] = []
    records: list[tuple[int, str, str, float]] = []
    for n, row in enumerate(layout.data, start=layout.first_row):
        ident = _identity_row(path, layout, n, row)
        identities.append(ident)
        records.extend(_metric_records(path, layout, ident["launch_id"], row))
    log.debug("%s: %d launches, %d metric values", path, len(identities), len(records))
    return build_parse(path, identities, records, (name for _, name, _, _ in layout.metric_cols))


def parse_ncu_export(path: str | Path) -> NcuParse:
    """Parse any ncu export by its name: `.csv` (raw page) or `.ncu-rep` / `.ncu-rep.gz`."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".csv"):
        return parse_ncu_csv(path)
    if name.endswith((".ncu-rep", ".ncu-rep.gz")):
        from aisp_prof.parse.ncu_rep import parse_ncu_rep  # lazy: ncu_rep imports this module

        return parse_ncu_rep(path)
    raise ExportParseError(
        f"{path}: not an ncu export this tool reads (.csv, .ncu-rep, .ncu-rep.gz); {REEXPORT_HINT}"
    )
