"""The shape of the house, measured: module sizes, modules per folder, the largest function, import circles and
arrows back up (tests/test_house.py's rules), database opens per report page, per summary and
per diff, and the start-up cost of a light command.

    python benchmarks/house_shape.py [--json] [--root CHECKOUT]

Runs from a source checkout (any commit since 48bc4fc; `--root` measures another one, e.g. a
`git worktree` of an older commit, with this checkout's rules), CPU only: the report is built
from the shipped sample runs. Results are recorded in benchmarks/results/house_shape.md with
the commit and machine they came from.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE                  # the checkout measured (--root)
PACKAGE = ROOT / "aisp_prof"
DIFF_RUNS = ("profiles/samples/20261126T011557Z-ch09.fused_l2norm-90df",
             "profiles/samples_h100/20261126T045251Z-ch09.fused_l2norm-ba93")


def house_rules():
    """tests/test_house.py of this checkout (wherever tests/ keeps it): the import graph's rules."""
    path = next(HERE.glob("tests/**/test_house.py"))
    for folder in (HERE / "tests", path.parent):       # where its helpers (repo_paths) are
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location("house_rules", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_shape() -> dict:
    """Import circles and arrows back up of the measured package, by this checkout's stage order
    where the measured one has none."""
    rules = house_rules()
    graph = rules.import_graph(PACKAGE)
    order = rules.stages(PACKAGE) or rules.stages(HERE / "aisp_prof")
    circles, arrows = rules.import_circles(graph), rules.arrows_back_up(graph, order)
    return {"import_circles": len(circles), "circles": [" <-> ".join(c) for c in circles],
            "arrows_back_up": len(arrows), "arrows": arrows}


def module_sizes() -> dict[str, int]:
    """Lines per module of the package."""
    return {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in sorted(PACKAGE.rglob("*.py"))}


def folder_sizes() -> dict[str, int]:
    """Modules directly in each folder of the package (its __init__ aside): how flat its piles are."""
    out = {}
    for folder in sorted({p.parent for p in PACKAGE.rglob("*.py")}):
        name = str(folder.relative_to(ROOT))
        out[name] = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
    return out


def functions() -> list[dict]:
    """Every function of the package: lines and parameter count."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
                n = len([p for p in params if p.arg not in ("self", "cls")])
                out.append({"where": f"{path.relative_to(ROOT)}:{node.lineno} {node.name}",
                            "lines": node.end_lineno - node.lineno + 1, "params": n})
    return out


def report_opens(db_dir: Path) -> dict[str, float]:
    """sqlite3 connections opened while `aisp-prof report` writes a report of the samples."""
    from click.testing import CliRunner

    from aisp_prof.cli import cli

    samples = sorted(p for p in (ROOT / "profiles" / "samples").iterdir() if (p / "run.json").exists())
    db = db_dir / "shape.db"
    runner = CliRunner()
    res = runner.invoke(cli, ["import", *map(str, samples), "--db", str(db)])
    assert res.exit_code == 0, res.output
    real = sqlite3.connect
    count = {"n": 0}

    def counting(*args, **kwargs):
        count["n"] += 1
        return real(*args, **kwargs)

    sqlite3.connect = counting
    try:
        res = runner.invoke(cli, ["report", "--db", str(db), "--out", str(db_dir / "report")])
    finally:
        sqlite3.connect = real
    assert res.exit_code == 0, res.output
    pages = len(samples)
    return {"pages": pages, "opens": count["n"], "opens_per_page": count["n"] / pages}


def read_opens(db_dir: Path) -> dict[str, int]:
    """sqlite3 connections opened by `summary --json` of one run and `diff --json` of two (CLI)."""
    from click.testing import CliRunner

    from aisp_prof.cli import cli

    db = db_dir / "reads.db"
    runner = CliRunner()
    ids = []
    for run in DIFF_RUNS:
        res = runner.invoke(cli, ["import", str(ROOT / run), "--db", str(db)])
        assert res.exit_code == 0, res.output
        ids.append(Path(run).name)
    out = {}
    for name, args in (("summary", ["summary", ids[0]]), ("diff", ["diff", *ids])):
        real, count = sqlite3.connect, {"n": 0}

        def counting(*a, **k):
            count["n"] += 1
            return real(*a, **k)

        sqlite3.connect = counting
        try:
            res = runner.invoke(cli, [*args, "--db", str(db), "--json"])
        finally:
            sqlite3.connect = real
        assert res.exit_code == 0, res.output
        out[f"{name}_opens"] = count["n"]
    return out


def import_time_s(db_dir: Path, repeats: int = 7) -> float:
    """Median wall time of `aisp-prof runs` on an empty database, in a fresh process."""
    times = []
    sqlite3.connect(db_dir / "empty.db").close()      # an empty database (a missing one is exit 13)
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "aisp_prof", "runs", "--db", str(db_dir / "empty.db")],
                       check=True, capture_output=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--root", type=Path, default=HERE, help="the checkout to measure (default: this one)")
    args = ap.parse_args()
    global ROOT, PACKAGE
    ROOT, PACKAGE = args.root.resolve(), args.root.resolve() / "aisp_prof"
    sys.path.insert(0, str(ROOT))
    sizes = module_sizes()
    folders = folder_sizes()
    funcs = functions()
    shape = import_shape()
    with tempfile.TemporaryDirectory() as tmp:
        opens = report_opens(Path(tmp))
        reads = read_opens(Path(tmp))
        startup = import_time_s(Path(tmp))
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    result = {
        "commit": sha, "modules": len(sizes), "lines_total": sum(sizes.values()),
        "largest_modules": sorted(sizes.items(), key=lambda kv: -kv[1])[:6],
        "modules_over_400_lines": sum(1 for n in sizes.values() if n > 400),
        "largest_functions": [f"{f['where']} ({f['lines']} lines)" for f in sorted(funcs, key=lambda f: -f["lines"])[:3]],
        "functions_over_60_lines": sum(1 for f in funcs if f["lines"] > 60),
        "most_parameters": [f"{f['where']} ({f['params']} params)" for f in sorted(funcs, key=lambda f: -f["params"])[:3]],
        "functions_over_8_params": sum(1 for f in funcs if f["params"] > 8),
        "largest_folders": sorted(folders.items(), key=lambda kv: -kv[1])[:6],
        "folders_over_12_modules": sum(1 for n in folders.values() if n > 12),
        **shape, "report": opens, **reads, "aisp_prof_runs_wall_s": round(startup, 3),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for k, v in result.items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main()
