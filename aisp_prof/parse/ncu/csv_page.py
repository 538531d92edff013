"""Parse Nsight Compute `--csv --page raw` exports into two tables: one row per kernel launch, and
every numeric metric (`LaunchMetrics`: a row per launch, a column per metric; long form on demand).

The raw page is the only ncu text export with one column per metric; its first row names the
metrics, its second gives their units, and each later row is one profiled launch. Without
`--print-units base` ncu scales each column to a "readable" unit (us, Mbyte, Ghz, Tbyte/s, ...),
so every value is converted to one base unit per dimension (byte, ns, hz, .../second) with a
table (`parse.metrics.units`), not guesswork. Neither CSV form keeps every digit: scaled units print six
decimals (1.917473 Ghz), base units two (0.26 for a stall ratio); a `.ncu-rep` does (see
`rep`). The unit conversion and the table assembly are shared with `rep`, so a CSV and a
`.ncu-rep` of the same run give the same frames.

Launch rows are read a chunk at a time (`csv_text`) and their metric cells converted a
column at a time (`columns`), with the results and errors of the cell-by-cell rule.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from aisp_prof.errors import ExportParseError
from aisp_prof.model.launch_metrics import LONG_COLUMNS, LaunchMetrics
from aisp_prof.parse.metrics.table import BY_RAW, METRICS, Metric
from aisp_prof.parse.ncu.columns import cell_values, fast_values
from aisp_prof.parse.ncu.csv_text import (CELL, HEADER, RAGGED, REEXPORT_HINT, FirstError, csv_lines, csv_rows,
                                          ragged_row, read_text)
from aisp_prof.parse.metrics.units import base_unit, number_text
from aisp_prof.parse.ncu.whole import check_launches_whole
from aisp_prof.parse.metrics.rate_counts import DERIVED_COLUMN, derivation_note, derive_counts, derived_labels
from aisp_prof.parse.metrics.sector_bytes import derive_sector_bytes

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class NcuParse:
    """What one ncu export holds.

    launches: one row per profiled launch; identity columns (`IDENTITY_COLUMNS`) then one float
        column per `metric_table.METRICS` entry present in the export, in its base unit.
    launch_metrics: every numeric metric of every launch, a row per launch (`LaunchMetrics`).
    metrics: the same in long form: launch_id, metric (raw ncu name), unit (base unit after
        conversion), value (float); built when first asked for.
    """

    launches: pd.DataFrame
    launch_metrics: LaunchMetrics

    @property
    def metrics(self) -> pd.DataFrame:
        return self.launch_metrics.long()


# Identity columns of `launches`. `block_dim`/`grid_dim` are ncu's "Block Size"/"Grid Size"
# strings such as "(128, 1, 1)"; `block_size`/`grid_size` are the metric-table columns
# (launch__block_size threads, launch__grid_size blocks), so the strings get other names.
IDENTITY_COLUMNS = (
    "launch_id", "process_id", "kernel", "nvtx_range", "nvtx_domain",
    "context", "stream", "block_dim", "grid_dim", "device", "cc",
)
_INT_IDENTITY = ("process_id", "context", "stream", "device")
METRICS_COLUMNS = LONG_COLUMNS          # the long form of every metric value

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
    metrics: LaunchMetrics,
    present_raw: Iterable[str],
) -> NcuParse:
    """NcuParse from identity rows, every numeric metric value (`LaunchMetrics`) and the raw
    metric names the export has (so a metric-table column exists even where every cell is
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
    # metric-table units, each (metric, unit) once, in the order the long form first holds them
    mask = metrics.mask()
    tidy = [j for j, raw in enumerate(metrics.metrics) if raw in BY_RAW]
    checked = set()
    for _, j in sorted((int(mask[:, j].argmax()), j) for j in tidy if mask[:, j].any()):
        key = (metrics.metrics[j], metrics.units[j])
        if key not in checked:
            checked.add(key)
            _check_dimension(BY_RAW[key[0]], key[1], path)
    check_launches_whole(path, launches, metrics)
    present = set(present_raw)
    derived = derive_sector_bytes(metrics, present)          # exact (integer sectors) before rates
    derived.update({c: v for c, v in derive_counts(metrics, present).items() if c not in derived})
    derived = {m.column: derived[m.column] for m in METRICS if m.column in derived}   # table order
    columns = {}
    for m in METRICS:
        if m.raw in present:
            values = metrics.column_values(m.raw)
            columns[m.column] = values if values is not None else float("nan")
        elif m.column in derived:
            columns[m.column] = derived[m.column]
    wide = pd.DataFrame(columns, index=pd.Index(metrics.launch_ids, name="launch_id"), dtype="float64")
    if derived:       # only then: exports with the counts themselves keep their columns as they were
        wide[DERIVED_COLUMN] = pd.Series(derived_labels(derived, len(wide)), index=wide.index, dtype=object)
        log.info("%s: %s", path, derivation_note(derived))
    launches = launches.join(wide, on="launch_id")
    return NcuParse(launches=launches.reset_index(drop=True), launch_metrics=metrics)


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
_MISSING = {"", "n/a"}  # ncu's "not collected for this launch": NaN in the launches table


def _is_metric_header(name: str) -> bool:
    return not (name in _IDENTITY_HEADERS or name in _OTHER_HEADERS
                or name.startswith((_NVTX_PUSH_POP, _NVTX_START_END)))


CHUNK_ROWS = 2048          # launches converted at a time: their cells as Python strings stay small


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
    has_units_row: bool
    first_row: int                               # CSV row number of the first launch, for messages
    nvtx_seen: dict[str, dict[str, str]] = field(default_factory=dict)   # NVTX cell -> its columns


def _layout(path: Path, header: list[str], second: list[str] | None) -> _CsvLayout:
    """Check the header and find the identity, NVTX and metric cells; `second` is the row after
    the header (the units row, or the first launch)."""
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
    has_units_row = second is not None and second[col["ID"]].strip() == ""
    units = second if has_units_row else [""] * len(header)
    metric_cols = [(i, name, *base_unit(units[i]))
                   for i, name in enumerate(header) if _is_metric_header(name)]
    return _CsvLayout(
        col=col,
        nvtx_col=next((i for i, h in enumerate(header) if h.startswith(_NVTX_PUSH_POP)), None),
        metric_cols=metric_cols,
        tidy_cols={i for i, name, _, _ in metric_cols if name in BY_RAW},
        has_units_row=has_units_row,
        first_row=3 if has_units_row else 2,
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
    if layout.nvtx_col is None:
        ident.update(nvtx_columns([]))
    else:                                   # a few distinct NVTX cells behind thousands of launches
        cell = row[layout.nvtx_col]
        if cell not in layout.nvtx_seen:
            layout.nvtx_seen[cell] = nvtx_columns(parse_nvtx_stack(cell))
        ident.update(layout.nvtx_seen[cell])
    return ident


def _metric_block(
    path: Path, layout: _CsvLayout, first: int, rows: list[list[str]], identities: list[dict]
) -> np.ndarray:
    """The metric values of consecutive launch rows (CSV row numbers from `first`), a column at
    a time (`columns`): one row per launch, NaN where a cell is not a number. Their
    identities are appended to `identities`. The first bad cell (a launch ID that is not an
    integer, a metric-table cell that is neither a number nor missing) is an error, as reading
    row by row would meet it; a missing metric-table value is logged."""
    id_error = None
    for k, row in enumerate(rows):
        try:
            identities.append(_identity_row(path, layout, first + k, row))
        except ExportParseError as exc:
            id_error, rows = exc, rows[:k]         # the rows before it may hold an earlier bad cell
            break
    idents = identities[len(identities) - len(rows):]
    cells_of = list(zip(*rows))
    block = np.empty((len(layout.metric_cols), len(rows)))          # column by column
    bad: list[tuple[int, int]] = []
    blank: list[tuple[int, int]] = []
    for j, (i, _, _, exp) in enumerate(layout.metric_cols if rows else ()):
        cells = cells_of[i]
        values = fast_values(cells, exp)
        if values is None:
            values, missing = cell_values(cells, exp)
            if i in layout.tidy_cols:
                for r in missing:
                    (blank if cells[r].strip() in _MISSING else bad).append((r, j))
        block[j] = values
    stop = min(bad) if bad else (len(rows), 0)     # row by row, nothing after the first bad cell is read
    for r, j in sorted(blank):
        if (r, j) < stop:
            log.warning("%s: launch %d has no value for %s", path, idents[r]["launch_id"],
                        layout.metric_cols[j][1])
    if bad:
        r, j = stop
        i, name = layout.metric_cols[j][:2]
        raise ExportParseError(
            f"{path}: launch {idents[r]['launch_id']}: {name} is {rows[r][i]!r}, not a number; "
            f"{REEXPORT_HINT}"
        )
    if id_error is not None:
        raise id_error
    return block.T


def parse_ncu_csv(path: str | Path) -> NcuParse:
    """Parse an `ncu --csv --page raw` export (with or without `--print-units base`)."""
    path = Path(path)
    lines = csv_lines(path, read_text(path))
    rows = csv_rows(path, lines)
    header = next(rows)
    width = len(header)
    first_error = FirstError()
    second = next(rows, None)
    layout = None
    if second is not None and len(second) != width:
        first_error.hold(RAGGED, ragged_row(path, 2, second, width))
    else:
        try:
            layout = _layout(path, header, second)
        except ExportParseError as exc:
            first_error.hold(HEADER, exc)
    # the launch rows not converted yet, and the CSV row number of the first of them
    units_row = layout is not None and layout.has_units_row
    pending, first = ([] if second is None or units_row else [second]), (3 if units_row else 2)
    identities: list[dict] = []
    blocks: list[np.ndarray] = []
    n = 2                                             # CSV row number of the last row read

    def flush() -> None:
        nonlocal pending, first
        if pending and first_error.held is None:
            try:
                blocks.append(_metric_block(path, layout, first, pending, identities))
            except ExportParseError as exc:
                first_error.hold(CELL, exc)
        first += len(pending)
        pending = []

    for row in rows:
        n += 1
        if len(row) != width:
            first_error.hold(RAGGED, ragged_row(path, n, row, width))
        pending.append(row)
        if len(pending) == CHUNK_ROWS:
            flush()
    flush()
    del lines
    if layout is not None and not identities and first_error.held is None:
        first_error.hold(HEADER, ExportParseError(
            f"{path}: no kernels in the export (header only); "
            "was anything profiled? check ncu's --nvtx-include/--kernel-name"))
    first_error.raise_held()
    names = [name for _, name, _, _ in layout.metric_cols]
    values = np.concatenate([b.T for b in blocks], axis=1).T if blocks else np.empty((0, len(names)))
    metrics = LaunchMetrics(np.array([i["launch_id"] for i in identities], dtype=np.int64), tuple(names),
                            tuple(unit for _, _, unit, _ in layout.metric_cols), values)
    log.debug("%s: %d launches, %d metric values", path, len(identities), metrics.n_values)
    return build_parse(path, identities, metrics, names)
