"""Print the markdown table of a folder of shipped `aisp-prof run` folders for a chapter README.

    python dev/run_table.py profiles/samples_h200_ch14

Each run folder is imported into a temporary database (removed after) and read back as
`aisp-prof summary --json` reads it; the table is render.readme.run_table's. Paste it between
`<!-- run-table: profiles/samples_h200_ch14 -->` and `<!-- /run-table -->`;
tests/integration/test_readme_runs.py keeps the two equal.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from aisp_prof import api
from aisp_prof.errors import AispError
from aisp_prof.render.readme.run_table import markdown


def run_folders(folder: Path) -> list[Path]:
    """The run folders directly in `folder` (those with a run.json), by name."""
    return sorted(p for p in folder.iterdir() if (p / "run.json").is_file())


def results_of(folder: Path) -> list[dict[str, Any]]:
    """Each run folder's `aisp-prof summary --json` result, read through a temporary database."""
    runs = run_folders(folder)
    if not runs:
        raise SystemExit(f"error: {folder}: no run folder (a folder with a run.json) in it")
    with tempfile.TemporaryDirectory(prefix="run_table_") as tmp:
        db = api.open_db(Path(tmp) / "runs.db")
        ids = [db.import_path(run) for run in runs]
        return [db.summary_result(run_id) for run_id in ids]


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python dev/run_table.py FOLDER (a folder of aisp-prof run folders)")
    try:
        print(markdown(results_of(Path(sys.argv[1]))))
    except AispError as e:
        sys.exit(f"error: {e}")
