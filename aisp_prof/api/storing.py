"""What goes into the database and what leaves it: run folders and exports imported (one, several,
one job's ranks) and runs removed."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import arguments as arg
from ..errors import ExportParseError
from ..store import db as store_db
from ..store.ingest import store_job, store_path


class Storing:
    """`RunDatabase`'s writes to the database at `self.path`."""

    path: Path

    def import_path(self, path: str | Path, label: str | None = None, skip_stored: bool = False,
                    replace: bool = False, replaced: list[str] | None = None) -> str:
        """Store a run folder, an ncu CSV (.csv[.gz])/.ncu-rep, an nsys SQLite export (.sqlite[.gz]) or
        a .nsys-rep (exported to SQLite on the fly by `collect.output.rep_export`); its id. Content
        already stored is a RunExistsError naming the stored run (with `skip_stored`: its id);
        `replace` replaces it (`store.identity`), the replaced ids appended to `replaced`."""
        from ..collect.output.rep_export import exported_sqlite, is_nsys_report

        path = arg.path(path, "path")
        via = exported_sqlite if is_nsys_report(path) and path.exists() else None
        if via is not None and not path.is_file():
            raise ExportParseError(f"{path}: not a file")
        return store_path(self.path, path, label, skip_stored, replace, via, replaced)

    def import_paths(self, paths: Sequence[str | Path], label: str | None = None,
                     replace: bool = False) -> list[dict[str, Any]]:
        """`import_path` of each path, every one tried: per path its run id and status (stored,
        already stored, failed with the one-line message and exit code; `api.imports`)."""
        from .imports import import_each

        return import_each(self, arg.paths(paths, "paths"), label, replace)       # one path is one item

    def import_job(self, paths: Sequence[str | Path], job: str, label: str | None = None, replace: bool = False) -> str:
        """One job's per-rank nsys SQLite exports (or folders) as one run (`store.ingest_job`); its id."""
        return store_job(self.path, arg.paths(paths, "paths"), arg.text(job, "job"), label, replace)

    def remove(self, runs: Sequence[str]) -> list[dict[str, Any]]:
        """Remove runs (ids, prefixes, 'latest', pair or job names) and every row of them, in one
        transaction; per run its id, pair, label and rows removed. An unknown name removes nothing."""
        return store_db.remove_runs(self.path, runs)
