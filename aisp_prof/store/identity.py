"""What makes a stored run the one it is: the content key of what its import read, whether a
run folder holds every export its run.json says was made, and removing a stored run.

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
"""
from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path
from typing import Any, Sequence

from ..naming import CHECK_JSON, NCU_CSV, NSYS_SQLITE, TIMING_JSON, rank_path, stored

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
