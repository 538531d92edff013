"""The text of an ncu `--page raw` CSV as rows, with its errors in the order that reading the whole
file first would raise them.

`csv_page` reads the rows a chunk of launches at a time, so the cells of a 10k-launch export are
never all Python strings at once (4.6M of them: 300 MB). Errors still come as a whole-file read
met them: a malformed CSV where the reader meets it, else the first row with the wrong number
of cells, else a bad header, else the first bad cell (`FirstError`).
"""
from __future__ import annotations

import csv
import gzip
import logging
import zlib
import re
from collections.abc import Iterator
from pathlib import Path

from aisp_prof.errors import CounterPermissionError, ExportParseError

log = logging.getLogger("aisp_prof.parse.ncu.csv_page")

REEXPORT_HINT = (
    "re-export with `ncu --import X.ncu-rep --csv --page raw --print-units base > X_raw_base.csv`"
)
_TOOL_LINE = re.compile(r"==[A-Z]+==")


def read_text(path: Path) -> str:
    """The export's text; a `.gz` name is gunzipped first (a truncated or corrupt gzip is an
    ExportParseError, as a truncated CSV is)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExportParseError(f"{path}: cannot read the ncu export ({exc.strerror})") from exc
    if path.name.lower().endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ExportParseError(f"{path}: not a whole gzip file ({exc}); gzip the CSV again, or "
                                   f"{REEXPORT_HINT}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExportParseError(
            f"{path}: not text (byte {exc.start} is not UTF-8), so not an ncu CSV export; "
            f"{REEXPORT_HINT}"
        ) from exc


def csv_lines(path: Path, text: str) -> list[str]:
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


def _newline_lines(lines: list[str]) -> Iterator[str]:
    """The text of `lines` (str.splitlines pieces) as lines that end at "\\n" only, as
    io.StringIO would give them to the csv reader, without joining the whole file again."""
    held: list[str] = []
    for piece in lines:
        held.append(piece)
        if piece.endswith("\n"):
            yield piece if len(held) == 1 else "".join(held)
            held = []
    if held:
        yield "".join(held)


def csv_rows(path: Path, lines: list[str]) -> Iterator[list[str]]:
    """The non-blank CSV rows; a malformed file is an error where the reader meets it."""
    try:
        for row in csv.reader(_newline_lines(lines), strict=True):
            if row:
                yield row
    except csv.Error as exc:
        raise ExportParseError(
            f"{path}: malformed CSV ({exc}); the file is truncated or corrupt; {REEXPORT_HINT}"
        ) from exc


RAGGED, HEADER, CELL = 1, 2, 3       # FirstError ranks: a malformed CSV is raised where it is met


class FirstError:
    """The error reading the whole file first would have raised: a malformed CSV (raised where
    met), else the first row with the wrong number of cells, else a bad header, else the first
    bad cell. Reading goes on to the end after a later kind is held."""

    def __init__(self) -> None:
        self.held: tuple[int, ExportParseError] | None = None

    def hold(self, rank: int, exc: ExportParseError) -> None:
        if self.held is None or rank < self.held[0]:
            self.held = (rank, exc)

    def raise_held(self) -> None:
        if self.held is not None:
            raise self.held[1]


def ragged_row(path: Path, n: int, row: list[str], width: int) -> ExportParseError:
    return ExportParseError(
        f"{path}: CSV row {n} has {len(row)} cells, the header {width}; the file is "
        f"truncated or corrupt; {REEXPORT_HINT}"
    )
