"""`aisp-prof import A B C`: every path tried, each reported with its run id.

Per path one record: `path`, `run_id`, `status` and `message`. The status is `stored`,
`replaced` (with --replace: `replaced` lists the runs that gave way), `already stored` (the same
content, or a run folder's run id, is in the database: nothing stored, `run_id` names the stored
run) or `failed` (`message` says why in one line, `exit_code` is the error's own: 6 for an export
that is truncated, corrupt, incomplete or not one, 4 for a .nsys-rep without nsys; nothing of that
path is stored, and the next path is tried). A database that cannot be written (StorageError:
locked, read-only, full, not aisp-prof's) stops the import at once, exit 13: every later path
would meet the same database.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import AispError, RunExistsError, StorageError


def import_each(db: Any, paths: list[Path], label: str | None, replace: bool) -> list[dict[str, Any]]:
    """The record of each path (module docstring), in the order given; `db` is the RunDatabase."""
    return [_import_one(db, path, label, replace) for path in paths]


def _import_one(db: Any, path: Path, label: str | None, replace: bool) -> dict[str, Any]:
    record: dict[str, Any] = {"path": str(path), "run_id": None, "status": "failed", "message": None}
    replaced: list[str] = []
    try:
        record["run_id"] = db.import_path(path, label, replace=replace, replaced=replaced)
        record["status"] = "replaced" if replaced else "stored"
        if replace:
            record["replaced"] = replaced
    except RunExistsError as exc:
        record.update(run_id=exc.run_id, status="already stored", message=f"{path}: {exc}")
    except StorageError:
        raise
    except AispError as exc:
        text = str(exc)
        record.update(message=text if str(path) in text else f"{path}: {text}", exit_code=exc.exit_code)
    return record
