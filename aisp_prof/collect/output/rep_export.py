"""An `.nsys-rep` report made by anyone, exported to SQLite on the fly so that it imports directly.

aisp-prof reads Nsight Systems' SQLite export; a `.nsys-rep` needs nsys to become one. Where
nsys is found ($AISP_NSYS, else `nsys` on PATH) the report is exported into a temporary folder
and imported from there; where it is not, the error says the one command to run by hand
(ToolNotFoundError, exit 4). Only these two places are searched, unlike `find_nsys` for
profiling: importing must not pick up an unrelated install the user never named.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

from ...errors import ExportParseError, ToolNotFoundError
from ..commands import nsys_export_command

REPORT_SUFFIXES = (".nsys-rep", ".qdrep")      # .qdrep: the name before Nsight Systems 2021.4


def is_nsys_report(path: Path) -> bool:
    return path.name.lower().endswith(REPORT_SUFFIXES)


def manual_export_command(report: Path) -> str:
    """What to run where nsys is not here: `nsys export --type sqlite -o X.sqlite X.nsys-rep`."""
    sqlite = report.with_name(report.name[: -len(report.suffix)] + ".sqlite")
    return f"nsys export --type sqlite -o {sqlite} {report}"


def find_exporter() -> Path | None:
    """$AISP_NSYS (which must then be an executable), else `nsys` on PATH, else None."""
    named = os.environ.get("AISP_NSYS")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise ToolNotFoundError(f"$AISP_NSYS={named} is not an executable file; point it at nsys or unset it")
        return Path(named)
    found = shutil.which("nsys")
    return Path(found) if found else None


@contextlib.contextmanager
def exported_sqlite(report: Path) -> Iterator[tuple[Path, list[str]]]:
    """The report exported to SQLite in a temporary folder (removed afterwards), and the command
    that exported it (for provenance)."""
    nsys = find_exporter()
    if nsys is None:
        raise ToolNotFoundError(f"{report}: nsys is needed to read a .nsys-rep and is not on PATH ($AISP_NSYS "
                                f"unset); run `{manual_export_command(report)}` and import the .sqlite")
    with tempfile.TemporaryDirectory(prefix="aisp-nsys-export-") as tmp:
        sqlite = Path(tmp) / "export.sqlite"
        cmd = nsys_export_command(nsys, report.resolve(), sqlite)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as exc:
            raise ToolNotFoundError(f"{report}: could not run {nsys} ({exc}); run `{manual_export_command(report)}` "
                                    "where nsys works and import the .sqlite") from exc
        if proc.returncode != 0 or not sqlite.is_file():
            said = " ".join((proc.stderr or proc.stdout or "").strip().splitlines()[-2:])[:300]
            raise ExportParseError(f"{report}: `nsys export` failed (exit {proc.returncode}: {said or 'no output'}); "
                                   "is it a complete .nsys-rep?")
        yield sqlite, cmd
