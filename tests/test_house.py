"""The shape issue 10 asked for, kept: small modules and functions, data moving one way, one
database open per report page. Static checks of the source, plus one counted report."""
from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "aisp_prof"
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
