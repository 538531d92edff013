"""What makes a stored run the one it is: the content key of what its import read, whether a
run folder holds every export its run.json says was made, where a stored run's folder is now,
and removing a stored run.

Every import is keyed by a sha256 of the bytes it read (`content_key`): an export file's bytes
(whatever its name), a run folder's files (each with its path in the folder), a job's exports in
the order given. The key is stored as `runs.content_sha256`; a second import of the same content
stores nothing and names the stored run (`find_stored`), as a run folder whose run id is stored
already does. `write_run` asks again under the write lock, so two imports at once store one run;
with `replace` it removes the runs of that content or run id in the same transaction first.

A run folder is complete when every export its run.json's `commands` say was made is there
(`missing_exports`): `check` made check.json, `timing_pN` timing_pN.json, `ncu_export`
ncu_raw.csv, `nsys_export` nsys.sqlite and `nsys_export_rank<r>` rank r's (each plain or
gzipped). An import of one that is not is refused (ExportParseError, exit 6) naming what is
missing, before anything is stored: it is never stored as if complete, to be "already there"
when the whole folder comes.

A run's identity is its content key, not its folder's path: a database is copied to another
machine and a checkout moves. `runs.run_dir` keeps the folder's absolute path (`stored_folder`; a
database written before kept the path as typed, often relative to the folder it was imported in),
and the readers of files only the folder holds (generated/: `aisp-prof code`, the report's
Generated code) ask `find_run_folder` where it is now: the first of the stored path, then that
path (or its end, for a moved tree) under the database's folder and each folder above it, the
current folder and aisp-prof's own checkout, that holds a run.json of the same run id. Where none
does, `RunFolder.missing_message` says so in one line with what to do.
"""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import InstallError
from ..naming import CHECK_JSON, NCU_CSV, NSYS_SQLITE, RUN_JSON, TIMING_JSON, rank_path, stored
from ..parse.code.generated_code import read_index
from ..paths import data_root

CONTENT_COLUMN = "content_sha256"
_CHUNK_BYTES = 1 << 20


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


def content_key(paths: Sequence[Path]) -> str:
    """sha256 of what an import of `paths` reads: each file's bytes, each folder's files with
    their paths in it (sorted), in the order given. Raises OSError for an unreadable file."""
    h = hashlib.sha256()
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file())
            for f in files:
                h.update(f"folder file {f.relative_to(path).as_posix()} {_file_digest(f)}\n".encode())
        else:
            h.update(f"file {_file_digest(path)}\n".encode())
    return h.hexdigest()


def made_exports(info: dict[str, Any]) -> list[str]:
    """The files a run folder's run.json says its steps made (names without .gz)."""
    names = []
    for step in info.get("commands") or {}:
        rank = re.fullmatch(r"nsys_export_rank(\d+)", step)
        timing = re.fullmatch(r"timing_p(\d+)", step)
        if step == "check":
            names.append(CHECK_JSON)
        elif timing:
            names.append(TIMING_JSON.format(process=timing.group(1)))
        elif step == "ncu_export":
            names.append(NCU_CSV)
        elif step == "nsys_export":
            names.append(NSYS_SQLITE)
        elif rank:
            names.append(rank_path(Path(NSYS_SQLITE), int(rank.group(1))).name)
    return names


def missing_exports(run_dir: Path, info: dict[str, Any]) -> list[str]:
    """What `made_exports` names that the folder lacks (neither plain nor gzipped). A run.json
    that names no step at all, in a folder holding none of the exports, lacks them all."""
    made = made_exports(info) or [CHECK_JSON, NCU_CSV, NSYS_SQLITE]
    missing = [name for name in made if stored(run_dir / name) is None]
    return missing if info.get("commands") or len(missing) == len(made) else []


def stored_folder(run_dir: Path) -> str:
    """What `runs.run_dir` keeps of a run folder: its absolute path, links resolved, so that a
    reader in any other folder finds it."""
    return str(Path(run_dir).resolve())


@dataclass(frozen=True)
class RunFolder:
    """Where a stored run's folder is on this machine (`find_run_folder`)."""

    run_id: str
    stored: str | None          # runs.run_dir: None for a run imported from export files
    path: Path | None           # where it is now; None where it is not here (or none was stored)

    @property
    def missing(self) -> bool:
        """The run came from a folder that is not on this machine (moved, or the database was copied)."""
        return self.stored is not None and self.path is None

    def missing_message(self) -> str:
        return (f"run {self.run_id}'s folder is not on this machine: no run.json of this run at {self.stored}, "
                "nor at that path or its end under the database's folder or any folder above it, this folder "
                "or aisp-prof's checkout; copy the folder here and store where it is: "
                "aisp-prof import FOLDER --replace")


def find_run_folder(run_id: str, run_dir: str | None, db: Path, triton_kernels: int | None = None) -> RunFolder:
    """Where the folder of stored run `run_id` (its `runs.run_dir`) is now: the stored path if it holds a
    run.json of that run id, else the first other candidate (`_candidates`) that does and whose generated
    index keeps the `triton_kernels` the stored run.json counts (where it counts any): a cut-down copy of a
    run keeps its run.json whole (tests/fixtures/generated_h100 beside profiles/samples_h100_ch14) and is
    not the stored run; `path` None where none is."""
    if not run_dir:
        return RunFolder(run_id, None, None)
    stored, *others = _candidates(Path(run_dir), Path(db))
    if _holds_run(stored, run_id):
        return RunFolder(run_id, run_dir, stored)
    found = next((c for c in others if _holds_run(c, run_id) and _keeps(c, triton_kernels)), None)
    return RunFolder(run_id, run_dir, found)


def _candidates(stored_dir: Path, db: Path) -> list[Path]:
    """The stored path as it is (a relative one from the current folder), then each end of it,
    longest first, under the database's folder and the folders above it, the current folder and
    aisp-prof's data root: an old relative path, or a tree moved or copied with its database."""
    folder = db.absolute().parent
    bases = [folder, *folder.parents]
    for base in (Path.cwd, data_root):
        try:
            bases.append(base())
        except (InstallError, OSError):          # no checkout; a current folder since removed
            pass
    parts = stored_dir.parts[1:] if stored_dir.is_absolute() else stored_dir.parts
    return [stored_dir] + [base.joinpath(*parts[start:]) for start in range(len(parts))
                           for base in dict.fromkeys(bases)]


def _holds_run(folder: Path, run_id: str) -> bool:
    try:
        info = json.loads((folder / RUN_JSON).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info.get("run_id") == run_id


def _keeps(folder: Path, triton_kernels: int | None) -> bool:
    """Whether the folder's generated index (`read_index`: index.json or the samples' index.json.gz) keeps
    as many Triton kernels as its run counted (True where the run counts none)."""
    if not triton_kernels:
        return True
    index = read_index(folder)
    return isinstance(index, dict) and len(index.get("kernels") or []) == triton_kernels


def find_stored(conn: sqlite3.Connection, run_id: str | None, key: str | None) -> list[dict[str, Any]]:
    """The stored runs (run_id, label, by: 'run id' or 'content') with this run id or content key."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "runs" not in tables:
        return []
    columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    found = [{"run_id": r[0], "label": r[1], "by": "run id"}
             for r in conn.execute("SELECT run_id, label FROM runs WHERE run_id = ?", [run_id])] if run_id else []
    if key and CONTENT_COLUMN in columns:
        found += [{"run_id": r[0], "label": r[1], "by": "content"} for r in conn.execute(
            f"SELECT run_id, label FROM runs WHERE {CONTENT_COLUMN} = ? ORDER BY created_at, run_id", [key])
            if r[0] != run_id]
    return found


def delete_run(conn: sqlite3.Connection, run_id: str) -> int:
    """Remove a run's rows from every table that has a run_id column, its `runs` row last (inside
    the caller's transaction); how many rows went."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    removed = 0
    for table in [t for t in tables if t != "runs"] + (["runs"] if "runs" in tables else []):
        if "run_id" in {r[1] for r in conn.execute(f"PRAGMA table_info([{table}])")}:
            removed += conn.execute(f"DELETE FROM [{table}] WHERE run_id = ?", [run_id]).rowcount
    return removed
