"""Run folders for a report of N pages, from the shipped samples only.

The repository ships 24 real runs: chapter 9 on an H200 (profiles/samples) and on an H100
(profiles/samples_h100). A report of N pages takes them in that order and, past 24, copies of
them whose run.json carries a new run id ("<id>-c1", "<id>-c2", ...): same files, same numbers,
one page each (pages of runs that share a pair are named by run id). Nothing else in a copy
changes, so every page costs what a real page of that pair costs.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIRS = (ROOT / "profiles" / "samples", ROOT / "profiles" / "samples_h100")


def shipped_runs() -> list[Path]:
    """The shipped run folders: H200 first, then H100, each sorted by run id."""
    return [p for d in SAMPLE_DIRS for p in sorted(d.iterdir()) if (p / "run.json").is_file()]


def report_folders(pages: int, dest: Path) -> tuple[list[Path], list[str], str]:
    """(run folders, their run ids, how they were chosen) for a report of `pages` pages; copies go
    under `dest`."""
    runs = shipped_runs()
    if not runs:
        raise FileNotFoundError("no shipped sample runs under profiles/")
    folders, ids = [], []
    for i in range(pages):
        src, copy = runs[i % len(runs)], i // len(runs)
        run_id = json.loads((src / "run.json").read_text())["run_id"]
        if copy:
            run_id = f"{run_id}-c{copy}"
            folder = dest / run_id
            shutil.copytree(src, folder)
            info = json.loads((folder / "run.json").read_text())
            info["run_id"] = run_id
            (folder / "run.json").write_text(json.dumps(info, indent=2))
            src = folder
        folders.append(src)
        ids.append(run_id)
    h200 = sum(1 for f in folders if f.parent == SAMPLE_DIRS[0])
    h100 = sum(1 for f in folders if f.parent == SAMPLE_DIRS[1])
    parts = [f"{n} shipped {gpu}" for n, gpu in ((h200, "H200"), (h100, "H100")) if n]
    copies = pages - h200 - h100
    how = " + ".join(parts) + " run folders" + (f" + {copies} copies of them under new run ids" if copies else "")
    return folders, ids, how
