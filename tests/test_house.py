"""The shape issue 10 asked for, kept: small modules and functions, data moving one way, one
database open per report page. Static checks of the source, plus one counted report."""
from __future__ import annotations

import ast
import re
import sqlite3
import subprocess
from collections.abc import Sequence
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


def test_no_module_imports_another_modules_private_names():
    """A leading underscore says "only this module relies on it": a name another module needs is
    public, with a name that says what it is (child.load_pair, charts.save_figure)."""
    private = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                private += [f"{path.relative_to(PACKAGE)}: {'.' * node.level}{node.module or ''} {a.name}"
                            for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert not private, private


def test_every_error_raised_has_its_own_class():
    """A bare AispError exits 1 whatever failed: each failure raises the subclass whose exit code
    the README's table documents (issue 30: sanitize's unwritable --log-dir exited 1, not 14)."""
    bare = [f"{path.relative_to(PACKAGE)}:{node.lineno}" for path in _modules()
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
            and getattr(node.exc.func, "id", None) == "AispError"]
    assert not bare, bare


def test_the_cli_collects_and_stores_only_through_the_api():
    """A command is one call into aisp_prof.api: no cli module reaches into collect/ or store/."""
    reaching = {f"{path.relative_to(PACKAGE)} -> {name}" for path in sorted((PACKAGE / "cli").glob("*.py"))
                for name in _imports(path) if name.startswith(("aisp_prof.collect", "aisp_prof.store"))}
    assert not reaching, sorted(reaching)


@pytest.mark.slow
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


@pytest.mark.slow
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
    allowed = {"aisp_prof.analyze.roofline.build", "aisp_prof.analyze.roofline.points",
               "aisp_prof.analyze.roofline.ceilings"}
    analysis = {name for name in import_graph() if name.startswith("aisp_prof.analyze.")}
    for path in sorted((PACKAGE / "render").rglob("*.py")):
        used = {n for n in _imports(path) if n.startswith("aisp_prof.analyze")}
        modules = {max((m for m in analysis if n == m or n.startswith(m + ".")), key=len, default=n) for n in used}
        assert modules <= allowed, (path.name, sorted(modules - allowed))


@pytest.mark.slow
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
    monkeypatch.setenv("AISP_REPORT_WORKERS", "1")       # pages computed here: the drawing workers' opens are theirs
    report = db.report(out=tmp_path / "report")
    assert len(report.pages) == 3
    assert len(opened) == 1 + 3, opened


# ------------------------------------------------------------- one way, no circles (issue 30)

def import_graph(package_dir: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its source (module level, under
    TYPE_CHECKING, inside functions); `from pkg import name` counts as pkg.name where that is a module."""
    def module_name(path: Path) -> str:
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    names = {module_name(p): p for p in sorted(package_dir.rglob("*.py"))}
    graph = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names}
        graph[name] = {m for m in found if m in names and m != name}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def stages(package_dir: Path = PACKAGE) -> tuple[tuple[str, ...], ...] | None:
    """aisp_prof.STAGES as written in the package's __init__.py (None where it has none)."""
    for node in ast.parse((package_dir / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "STAGES" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def _stage_of(module: str, order: Sequence[Sequence[str]]) -> tuple[int, str]:
    """(stage, folder or shared module) of a module of the package."""
    top = module.split(".")[1] if "." in module else ""
    for level, members in enumerate(order):
        if top in members:
            return level, top
    raise AssertionError(f"{module}: its folder {top!r} has no stage in aisp_prof.STAGES")


def arrows_back_up(graph: dict[str, set[str]], order: Sequence[Sequence[str]]) -> list[str]:
    """Imports of a folder of the same or a higher stage (shared modules may import each other)."""
    bad = []
    for module, imported in sorted(graph.items()):
        level, top = _stage_of(module, order)
        for other in sorted(imported):
            other_level, other_top = _stage_of(other, order)
            if other_top != top and (other_level > level or (other_level == level and level > 0)):
                bad.append(f"{module} -> {other}")
    return bad


def test_no_import_circles():
    assert import_circles(import_graph()) == []


def test_no_arrows_back_up():
    """Each module imports its own folder and stages below it, never above (aisp_prof.STAGES)."""
    assert arrows_back_up(import_graph(), stages()) == []


MAX_FOLDER_MODULES = 12


def test_no_folder_is_a_flat_pile():
    """A package folder holds at most 12 modules directly (its __init__ aside); more are grouped into
    subpackages by the question they answer, as analyze/ (35 flat modules before), parse/ (23) and
    collect/ (20) are. 12 is where the folders of one kind of thing sit today, every module one
    command (cli/) or one drawing (render/), a list read in one glance; every grouped folder holds
    at most 8."""
    piles = {}
    for folder in sorted({p.parent for p in _modules()}):
        name = str(folder.relative_to(PACKAGE)) if folder != PACKAGE else "aisp_prof"
        count = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
        if count > MAX_FOLDER_MODULES:
            piles[name] = count
    assert not piles, f"modules directly in a folder, over {MAX_FOLDER_MODULES}: {piles}"


def test_the_store_runs_no_tool():
    """The store reads and writes runs; exporting a .nsys-rep or finding a profiler is collect's
    (the API calls it): no store module imports collect, tools or subprocess."""
    tools = ("aisp_prof.collect", "aisp_prof.tools", "subprocess")
    bad = {p.name: sorted(n for n in _imports(p) if any(n == t or n.startswith(t + ".") for t in tools))
           for p in sorted((PACKAGE / "store").rglob("*.py"))}
    assert not {k: v for k, v in bad.items() if v}


def test_the_circle_finder_finds_circles():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert arrows_back_up({"aisp_prof.store.db": {"aisp_prof.analyze.summary"},
                           "aisp_prof.analyze.summary": {"aisp_prof.model.run_data"},
                           "aisp_prof.model.run_data": set()}, stages()) == [
        "aisp_prof.store.db -> aisp_prof.analyze.summary"]


@pytest.mark.slow
def test_a_summary_and_a_diff_read_each_run_once(tmp_path, monkeypatch):
    """`summary` is one open of the database; `diff` one for both runs. Neither builds a whole
    roofline: the verdict's bounds and the diff's positions need only its points, once per run."""
    from aisp_prof import api
    from aisp_prof.analyze.roofline import build as roofline

    db = api.open_db(tmp_path / "a.db")
    samples = {p.name: p for p in api.sample_runs()}
    h200 = db.import_path(samples["20261126T011557Z-ch09.fused_l2norm-90df"])
    h100 = db.import_path(ROOT / "profiles" / "samples_h100" / "20261126T045251Z-ch09.fused_l2norm-ba93")
    opened, built, points = [], [], []
    real_connect, real_build, real_points = sqlite3.connect, roofline.build_roofline, roofline.roofline_points_of
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: opened.append(a) or real_connect(*a, **k))
    monkeypatch.setattr(roofline, "build_roofline", lambda *a, **k: built.append(1) or real_build(*a, **k))
    monkeypatch.setattr(roofline, "roofline_points_of", lambda *a, **k: points.append(1) or real_points(*a, **k))
    result = db.summary_result(h200)
    assert (len(opened), len(built), len(points)) == (1, 0, 1)
    assert result["verdict"] and "warnings" in result
    opened.clear(), points.clear()
    diff = db.diff(h200, h100)
    assert diff["variants"]
    assert (len(opened), len(built), len(points)) == (1, 0, 2)
    run = db.open(h200)
    assert run.roofline is run.roofline and run.summary is run.summary and run.verdict is run.verdict
    assert len(built) == 1 and run.points is run.roofline.points

# ------------------------------------------------------------- the tree is a product (issue 30)

# A GPU call carries 64 MiB (the tree, and ~7 MB of carried wheels, nsys libraries and headers); the tree must
# leave room for what it builds. 25 until 2026-11-30, when every pair of chapters 9 and 10 was profiled again on
# an H200 for issue 28 (36 run folders, 4.3 MB gzipped, profiles/samples_h200_ch09 and _ch10): 27.2 MB.
MAX_TREE_MB = 30
HISTORY = "0f4424e"     # the last commit holding notes/ and scripts/: pointers into git history


def _tracked(*paths: str) -> list[str]:
    """Files git tracks (under `paths`); skipped where this is not a git checkout (an installed copy)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *paths], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.stdout.decode().split("\0") if p]


def test_the_tracked_tree_is_under_25_mb():
    """Measured as issue 30 measures it (`git ls-files -z | xargs -0 stat -c %s`, in 10^6 bytes)."""
    sizes = {p: (ROOT / p).stat().st_size for p in _tracked() if (ROOT / p).is_file()}
    total = sum(sizes.values()) / 1e6
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
