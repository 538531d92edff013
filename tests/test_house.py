"""The shape issue 10 asked for, kept: small modules and functions, data moving one way, one
database open per report page. Static checks of the source, plus one counted report."""
from __future__ import annotations

import ast
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from repo_paths import ROOT

PACKAGE = ROOT / "aisp_prof"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 8
# what analysis and rendering must never reach for: they are handed data, they do not fetch it
FETCHING = {"sqlite3", "sqlite_utils", "aisp_prof.store.db", "aisp_prof.store.ingest", "aisp_prof.store.calibrations",
            "aisp_prof.store.history", "aisp_prof.api", "aisp_prof.collect", "aisp_prof.paths"}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """Absolute names of every module `path` imports (relative imports resolved)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def test_no_module_over_400_lines():
    big = {str(p.relative_to(PACKAGE)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not big, big


def test_no_function_over_60_lines_or_8_parameters():
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                params = [p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg not in ("self", "cls")]
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES or len(params) > MAX_PARAMETERS:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}: {lines} lines, "
                                 f"{len(params)} parameters")
    assert not found, found


@pytest.mark.parametrize("stage", ["analyze", "render"])
def test_analysis_and_rendering_are_handed_data(stage):
    """`analyze` and `render` never open the database, the calibration files or the profilers."""
    bad = {}
    for path in sorted((PACKAGE / stage).rglob("*.py")):
        reached = {name for name in _imports(path) if any(name == f or name.startswith(f + ".") for f in FETCHING)}
        if reached:
            bad[path.name] = sorted(reached)
    assert not bad, bad


def test_render_does_not_compute_analysis():
    """render draws what analysis computed: it imports no analysis module but the result types
    it draws (the roofline's and the precision labels)."""
    allowed = {"aisp_prof.analyze.roofline", "aisp_prof.analyze.roofline_points", "aisp_prof.analyze.ceilings"}
    for path in sorted((PACKAGE / "render").rglob("*.py")):
        used = {n for n in _imports(path) if n.startswith("aisp_prof.analyze")}
        modules = {".".join(n.split(".")[:3]) for n in used}
        assert modules <= allowed, (path.name, sorted(modules - allowed))


def test_a_report_page_opens_the_database_once(tmp_path, monkeypatch):
    """Listing the runs is one open; each page, one more (the run and the calibrations together)."""
    from aisp_prof import api

    db = api.open_db(tmp_path / "a.db")
    samples = api.sample_runs()[:3]
    for run in samples:
        db.import_path(run)
    opened = []
    real = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: opened.append(a) or real(*a, **k))
    report = db.report(out=tmp_path / "report")
    assert len(report.pages) == 3
    assert len(opened) == 1 + 3, opened


# ------------------------------------------------------------- the tree is a product (issue 30)

MAX_TREE_MB = 25        # a GPU call carries 64 MiB; the tree must leave room for what it builds
HISTORY = "0f4424e"     # the last commit holding notes/ and scripts/: pointers into git history


def _tracked(*paths: str) -> list[str]:
    """Files git tracks (under `paths`); skipped where this is not a git checkout (an installed copy)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *paths], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.stdout.decode().split("\0") if p]


def test_the_tracked_tree_is_under_25_mb():
    sizes = {p: (ROOT / p).stat().st_size for p in _tracked() if (ROOT / p).is_file()}
    total = sum(sizes.values()) / 2**20
    biggest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    assert total < MAX_TREE_MB, f"{total:.1f} MB tracked; the biggest: {biggest} (dev/shrink_samples.py gzips run folders)"


@pytest.mark.parametrize("folder", ["notes", "scripts"])
def test_no_diary_in_the_tree(folder):
    """What a GPU visit logged or ran once goes into the issue's closing note, its evidence beside the
    claim; reusable GPU-machine tooling lives in dev/."""
    assert not _tracked(f"{folder}/"), f"{folder}/ is tracked"


def test_every_dev_file_is_listed_in_its_index():
    index = (ROOT / "dev" / "README.md").read_text()
    files = [p for p in _tracked("dev/") if p != "dev/README.md"]
    assert files, "dev/ holds no tooling"
    missing = [p for p in files if f"| `{p[len('dev/'):]}` |" not in index]
    assert not missing, f"not in dev/README.md's table: {missing}"


def test_no_readme_points_into_notes_or_scripts():
    """A README names a removed visit's script or log only as a pointer into git history
    (`0f4424e:scripts/...`), never as a path of the tree."""
    bad = []
    for path in _tracked():
        if Path(path).name == "README.md" and (ROOT / path).is_file():
            for n, line in enumerate((ROOT / path).read_text().splitlines(), 1):
                if re.search(r"(?<![\w/.-])(notes|scripts)/[\w.*{-]", re.sub(f"{HISTORY}:\\S+", "", line)):
                    bad.append(f"{path}:{n}: {line.strip()[:100]}")
    assert not bad, bad
