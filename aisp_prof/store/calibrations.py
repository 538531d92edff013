"""Where measured ceilings live: the `ceilings` table (one row per hardware key) and JSON files.

Every calibration available is the database's rows, then `profiles/calibration/<hardware_key>.json`
files for keys the database lacks (shipped with aisp-prof, so a laptop with an empty database
still draws measured ceilings). Which one fits a run is analysis
(`analyze.calibration.find_calibration`), done on this list without opening anything.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..errors import AispError
from ..naming import hardware_key
from ..paths import calibration_dir
from .db import Reader, writing

log = logging.getLogger(__name__)

TABLE = "ceilings"


def calibration_dirs() -> list[Path]:
    """Folders searched for <hardware_key>.json: ./profiles/calibration, then the shipped one."""
    here = Path("profiles") / "calibration"
    dirs = [here.resolve()] if here.is_dir() else []
    try:
        shipped = calibration_dir().resolve()
    except AispError:                 # an install without its data files: the database still counts
        return dirs
    return dirs + ([shipped] if shipped not in dirs and shipped.is_dir() else [])


def save_calibration(db: Path, calibration: dict[str, Any]) -> str:
    """Store (replace) the calibration of its hardware key; returns the key."""
    key = calibration.get("hardware_key") or hardware_key(calibration.get("gpu_name"))
    with writing(db) as database, database.atomic():
        database[TABLE].upsert({
            "hardware_key": key, "gpu_name": calibration.get("gpu_name"),
            "created_at": calibration.get("created_at"),
            "sm_count": calibration.get("sm_count"),
            "gpu_memory_bytes": calibration.get("gpu_memory_bytes"),
            "calibration_json": json.dumps(calibration, sort_keys=True, default=str),
        }, pk="hardware_key", alter=True)
    return key


def write_calibration_file(calibration: dict[str, Any], folder: Path) -> Path:
    """<folder>/<hardware_key>.json, pretty-printed (meant to be committed)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = calibration.get("hardware_key") or hardware_key(calibration.get("gpu_name"))
    path = folder / f"{key}.json"
    path.write_text(json.dumps(calibration, indent=2, sort_keys=True, default=str) + "\n")
    return path


def db_calibrations(conn: Reader) -> list[dict[str, Any]]:
    """The calibrations stored in an open database."""
    if not conn.has(TABLE):
        return []
    return [json.loads(r["calibration_json"]) for r in conn.query(f"SELECT calibration_json FROM [{TABLE}]")]


def _file_rows(dirs: list[Path] | None = None) -> list[tuple[dict[str, Any], Path]]:
    out = []
    for folder in dirs if dirs is not None else calibration_dirs():
        for path in sorted(folder.glob("*.json")):
            try:
                out.append((json.loads(path.read_text()), path))
            except (OSError, json.JSONDecodeError) as exc:
                log.warning("skipping unreadable calibration %s: %s", path, exc)
    return out


def file_calibrations(dirs: list[Path] | None = None) -> list[dict[str, Any]]:
    """The calibration files, each with `_source` "file:<path>"."""
    return [{**cal, "_source": f"file:{path}"} for cal, path in _file_rows(dirs)]


def merge_calibrations(in_db: list[dict[str, Any]], files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Database rows (`_source` "db"), then files for hardware keys the database lacks."""
    out = [{**c, "_source": "db"} for c in in_db]
    seen = {c.get("hardware_key") for c in out}
    for cal in files:
        if cal.get("hardware_key") not in seen:
            out.append(cal)
            seen.add(cal.get("hardware_key"))
    return out


def stored_calibrations(db: Path | None, dirs: list[Path] | None = None) -> list[dict[str, Any]]:
    """Every calibration available: database rows, then files for keys the database lacks.

    Each carries `_source`: "db" or "file:<path>".
    """
    in_db: list[dict[str, Any]] = []
    if db is not None and Path(db).exists():
        with Reader(Path(db)) as conn:
            in_db = db_calibrations(conn)
    return merge_calibrations(in_db, file_calibrations(dirs))

