"""Where measured ceilings live: the `ceilings` table (one row per hardware key) and JSON files.

A calibration is looked up by hardware key, database first, then
`profiles/calibration/<hardware_key>.json` (committed with the repository, so a laptop with an
empty database still draws measured ceilings). A run imported without a GPU name is matched to
a calibration by its SM count and memory size, read from the profile's device attributes.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..analyze.ceilings import hardware_key
from ..store import open_db

log = logging.getLogger(__name__)

TABLE = "ceilings"
CALIBRATION_DIR = Path(__file__).resolve().parents[2] / "profiles" / "calibration"


def calibration_dirs() -> list[Path]:
    """Folders searched for <hardware_key>.json: ./profiles/calibration, then the repository's."""
    here = Path("profiles") / "calibration"
    dirs = [here.resolve()] if here.is_dir() else []
    return dirs + ([CALIBRATION_DIR] if CALIBRATION_DIR not in dirs else [])


def save_calibration(db: Path, calibration: dict[str, Any]) -> str:
    """Store (replace) the calibration of its hardware key; returns the key."""
    key = calibration.get("hardware_key") or hardware_key(calibration.get("gpu_name"))
    database = open_db(db)
    try:
        with database.atomic():
            database[TABLE].upsert({
                "hardware_key": key, "gpu_name": calibration.get("gpu_name"),
                "created_at": calibration.get("created_at"),
                "sm_count": calibration.get("sm_count"),
                "gpu_memory_bytes": calibration.get("gpu_memory_bytes"),
                "calibration_json": json.dumps(calibration, sort_keys=True, default=str),
            }, pk="hardware_key", alter=True)
    finally:
        database.close()
    return key


def write_calibration_file(calibration: dict[str, Any], folder: Path) -> Path:
    """<folder>/<hardware_key>.json, pretty-printed (meant to be committed)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = calibration.get("hardware_key") or hardware_key(calibration.get("gpu_name"))
    path = folder / f"{key}.json"
    path.write_text(json.dumps(calibration, indent=2, sort_keys=True, default=str) + "\n")
    return path


def _db_rows(db: Path | None) -> list[dict[str, Any]]:
    if db is None or not Path(db).exists():
        return []
    database = open_db(Path(db))
    try:
        if TABLE not in database.table_names():
            return []
        return [json.loads(r["calibration_json"]) for r in database.query(f"SELECT calibration_json FROM [{TABLE}]")]
    finally:
        database.close()


def _file_rows(dirs: list[Path] | None = None) -> list[tuple[dict[str, Any], Path]]:
    out = []
    for folder in dirs if dirs is not None else calibration_dirs():
        for path in sorted(folder.glob("*.json")):
            try:
                out.append((json.loads(path.read_text()), path))
            except (OSError, json.JSONDecodeError) as exc:
                log.warning("skipping unreadable calibration %s: %s", path, exc)
    return out


def stored_calibrations(db: Path | None, dirs: list[Path] | None = None) -> list[dict[str, Any]]:
    """Every calibration available: database rows, then files for keys the database lacks.

    Each carries `_source`: "db" or "file:<path>".
    """
    out = [{**c, "_source": "db"} for c in _db_rows(db)]
    seen = {c.get("hardware_key") for c in out}
    for cal, path in _file_rows(dirs):
        if cal.get("hardware_key") not in seen:
            out.append({**cal, "_source": f"file:{path}"})
            seen.add(cal.get("hardware_key"))
    return out


def load_calibration(db: Path | None, key: str | None = None, sm_count: int | None = None,
                     gpu_memory_bytes: int | None = None,
                     dirs: list[Path] | None = None) -> tuple[dict[str, Any], str] | None:
    """(calibration, source) for a hardware key, or for a device signature when the key is unknown."""
    candidates = stored_calibrations(db, dirs)
    if key and key != "unknown":
        for cal in candidates:
            if cal.get("hardware_key") == key:
                return cal, cal.pop("_source")
        return None
    if sm_count is None or gpu_memory_bytes is None:
        return None
    matches = [c for c in candidates
               if c.get("sm_count") == sm_count and c.get("gpu_memory_bytes") == gpu_memory_bytes]
    if len(matches) == 1:
        cal = matches[0]
        return cal, cal.pop("_source")
    return None
