"""Your own pairs: `run`/`list` take a pair file (or a folder of them) from outside the
repository, the profiled child is told where it is, and `new` writes a template that imports and
passes its own test. CPU only (the template's test runs its Triton variant under TRITON_INTERPRET=1)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import ROOT
from click.testing import CliRunner

from aisp_prof.cli import cli
from aisp_prof.collect.process import child as child_mod
from aisp_prof.collect.process.runner import child_command
from aisp_prof.errors import OutputError, UnknownTargetError
from aisp_prof.pairs import discovery, files
from aisp_prof.pairs.new import render, write_new

torch_missing = pytest.mark.skipif(__import__("importlib").util.find_spec("torch") is None, reason="needs torch")


@pytest.fixture(scope="module")
def own(tmp_path_factory) -> Path:
    """A folder outside the repository with one template pair and its test."""
    folder = tmp_path_factory.mktemp("my_pairs")
    write_new("mine.fused_relu", folder, chapter=3)
    return folder


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


@torch_missing
def test_pair_file_loads_under_a_unique_module_name(own, tmp_path):
    pair = files.load_file(own / "fused_relu.py")
    assert pair.name == "mine.fused_relu" and pair.chapter == 3
    assert pair.source == str((own / "fused_relu.py").resolve())
    other = tmp_path / "fused_relu.py"               # the same file name in another folder
    other.write_text((own / "fused_relu.py").read_text().replace('"mine.fused_relu"', '"other.fused_relu"'))
    assert files.module_name(other) != files.module_name(own / "fused_relu.py")
    assert files.load_file(other).name == "other.fused_relu"
    assert files.is_external(pair)


@torch_missing
def test_select_takes_files_and_folders_beside_names(own):
    chosen = discovery.select([str(own / "fused_relu.py")])
    assert [p.name for p in chosen] == ["mine.fused_relu"]
    assert [p.name for p in discovery.select([str(own)])] == ["mine.fused_relu"]   # test_*.py skipped


@pytest.mark.parametrize("text, message", [
    (None, "does not exist"),
    ("x = (\n", "syntax error"),
    ("x = 1\n", r"is not a pair module \(no PAIR\)"),
    ("PAIR = 3\n", "PAIR is a int, not a KernelPair"),
    ("raise RuntimeError('boom')\n", "cannot import .*RuntimeError: boom"),
])
def test_bad_pair_files_are_one_line_errors_exit_2(tmp_path, text, message):
    path = tmp_path / "mine.py"
    if text is not None:
        path.write_text(text)
    with pytest.raises(UnknownTargetError, match=message):
        files.load_file(path)
    result = CliRunner().invoke(cli, ["run", str(path), "--profiles-dir", str(tmp_path / "profiles")])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and "error" in result.output
    assert not (tmp_path / "profiles").exists()          # nothing half-written
    assert not [m for m in sys.modules if m.startswith("aisp_pair_file_") and m.endswith("_mine")]


def test_folder_without_pairs_is_an_error(tmp_path):
    (tmp_path / "helper.py").write_text("x = 1\n")
    with pytest.raises(UnknownTargetError, match="no pair module in"):
        files.load_target(str(tmp_path))


def test_chapter_and_pair_names_are_not_paths():
    assert not files.is_pair_path("ch09") and not files.is_pair_path("ch09.fused_l2norm")
    assert files.is_pair_path("mine.py") and files.is_pair_path("my_pairs/") and files.is_pair_path("a/b.py")


@torch_missing
def test_child_command_carries_the_pair_file(own, tmp_path):
    pair = files.load_file(own / "fused_relu.py")
    cmd = child_command(pair, ["baseline", "triton"], {"n": 4096}, "check", tmp_path / "check.json")
    i = cmd.index("--pair-file")
    assert cmd[cmd.index("--pair") + 1] == "mine.fused_relu" and cmd[i + 1] == pair.source
    # the child resolves it from there, and refuses a file that now defines another pair
    assert child_mod.load_pair("mine.fused_relu", Path(pair.source)).name == "mine.fused_relu"
    with pytest.raises(UnknownTargetError, match="defines pair 'mine.fused_relu', not 'x.y'"):
        child_mod.load_pair("x.y", Path(pair.source))


@torch_missing
def test_shipped_pair_command_line_is_unchanged(tmp_path):
    pair = discovery.find("ch09.fused_l2norm")
    out = tmp_path / "check.json"
    assert child_command(pair, ["baseline"], {"rows": 8}, "check", out) == \
        child_command("ch09.fused_l2norm", ["baseline"], {"rows": 8}, "check", out)
    assert "--pair-file" not in child_command(pair, ["baseline"], {"rows": 8}, "check", out)


@torch_missing
def test_list_shows_a_pair_file(own):
    result = CliRunner().invoke(cli, ["list", str(own / "fused_relu.py"), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["name"] for r in rows] == ["mine.fused_relu"]
    assert rows[0]["source"] == str((own / "fused_relu.py").resolve())
    assert rows[0]["variants"] == ["baseline", "triton"]
    table = CliRunner().invoke(cli, ["list", str(own)])
    assert table.exit_code == 0 and "mine.fused_relu" in table.output


def test_new_refuses_to_overwrite_and_bad_names(tmp_path):
    write_new("a.b", tmp_path)
    before = (tmp_path / "b.py").read_text()
    with pytest.raises(OutputError, match="not overwriting"):
        write_new("a.b", tmp_path)
    assert (tmp_path / "b.py").read_text() == before
    (tmp_path / "c.py").write_text("mine")          # only the module exists: the test is not written either
    result = CliRunner().invoke(cli, ["new", "x.c", "--dir", str(tmp_path)])
    assert result.exit_code == 14 and not (tmp_path / "test_c.py").exists()
    assert CliRunner().invoke(cli, ["new", "bad name", "--dir", str(tmp_path)]).exit_code == 2


def test_template_fills_every_field():
    module, test = render("mine.fused_relu", 3)
    compile(module, "fused_relu.py", "exec")
    compile(test, "test_fused_relu.py", "exec")
    for needed in ("def make_inputs", "def reference", "flops=", "bytes=", "roles=", "expect=", "small_sizes=",
                   "Mechanism(", "float64"):
        assert needed in module
    assert "{name}" not in module and "{{" not in module


@pytest.mark.slow
@torch_missing
def test_readme_loop_runs_on_a_cpu(tmp_path):
    """The README's 'Your own pairs' loop, up to the step that needs a GPU: new, test, list. The
    generated template passes its own test (the loop's pytest line) and imports on its own, with no
    side effects required of it (what test_generated_template_imports_and_passes_its_own_test ran
    in a second pytest of the same template)."""
    text = (ROOT / "README.md").read_text().split("## Your own pairs", 1)[1].split("```bash", 1)[1]
    lines = [line.split("  #", 1)[0].strip() for line in text.split("```", 1)[0].splitlines()]
    cpu = [line for line in lines if line.startswith(("aisp-prof new", "TRITON_INTERPRET=1", "aisp-prof list"))]
    assert len(cpu) == 3, lines
    env = {**_env(), "TRITON_INTERPRET": "1"}
    outputs = []
    for line in cpu:
        cmd = line.replace("TRITON_INTERPRET=1 python", f"{sys.executable}").replace(
            "aisp-prof", f"{sys.executable} -m aisp_prof")
        proc = subprocess.run(cmd, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
        outputs.append(proc.stdout)
    assert "mine.fused_relu" in outputs[2]
    assert " passed" in outputs[1] and " failed" not in outputs[1], outputs[1]
    generated = next(tmp_path.glob("*/fused_relu.py"))
    proc = subprocess.run([sys.executable, "-c", "import runpy; print(runpy.run_path('fused_relu.py')['PAIR'].name)"],
                          cwd=generated.parent, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "mine.fused_relu", proc.stderr


RECORDING_CHILD = """
import json, sys
from pathlib import Path
argv = sys.argv[1:]
out = Path(argv[argv.index("--out") + 1])
out.write_text(json.dumps({"ok": True, "check": {"passed": True, "checks": []}, "env": {}, "timing": {},
                           "samples": [], "argv": argv}))
"""


@torch_missing
def test_a_collection_passes_the_pair_file_to_every_child(own, tmp_path, monkeypatch):
    """runner.collect_into with a stand-in child (no GPU): the check's recorded command line
    carries --pair-file, and the child it started received it."""
    from aisp_prof.collect.process import runner
    from aisp_prof.collect.process.steps import StepContext
    from aisp_prof.naming import CHECK_JSON, RUN_JSON

    (tmp_path / "recording_child.py").write_text(RECORDING_CHILD)
    monkeypatch.setattr(runner, "CHILD_MODULE", "recording_child")
    for var in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    pair = files.load_file(own / "fused_relu.py")
    folder = tmp_path / "run"
    folder.mkdir()
    ctx = StepContext(folder, {"gpu": {}, "wall_s": {}, "commands": {}, "tools": {}},
                      env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    plan = runner._Plan(pair, ["baseline", "triton"], dict(pair.small_sizes), None, None)
    runner.collect_into(ctx, plan, runner.RunOptions(pair=pair))
    cmd = json.loads((folder / RUN_JSON).read_text())["commands"]["check"]
    assert cmd[cmd.index("--pair-file") + 1] == pair.source
    argv = json.loads((folder / CHECK_JSON).read_text())["argv"]
    assert argv[argv.index("--pair-file") + 1] == pair.source and argv[argv.index("--pair") + 1] == "mine.fused_relu"
