"""The README's light install (issue 18): in a virtual environment that sees nothing of this
interpreter's packages, the quick start's no-GPU command installs no torch, and list, history and
bench list-targets work. It needs an index pip can reach (skips without).

And a non-editable install works from any folder: `pip install .` into the same virtual
environment, then `aisp-prof quickstart` (no GPU, no torch) from an empty directory finds the
shipped kernels and sample runs (setup.py installs them under <prefix>/share/aisp-prof) and writes
its report. One venv and one quickstart serve both (the `venv` fixture)."""
from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest
from repo_paths import ROOT

CLEAN = ("PYTHONPATH", "AISP_KERNELS", "AISP_ROOT", "AISP_PROF_DB")


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> SimpleNamespace:
    """ONE fresh virtual environment serves both tests, in this order: the README's light install
    (command 1's install part where nvidia-smi finds no GPU: `pip install -e .` from the index, no
    torch) and what runs on it from another folder (`light`); then `pip install --no-deps .` over
    it (non-editable) and `aisp-prof quickstart` from an empty folder on that copy (`quickstart`).
    Two venvs and two quickstarts of all 62 samples before; this one quickstart is the light
    install's and the non-editable one's. Without a package index: `light` is None and the venv
    sees this interpreter's packages instead (the non-editable test still runs)."""
    tmp = tmp_path_factory.mktemp("install")
    venv, bin_dir = tmp / "venv", tmp / "venv" / "bin"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
    env_no_gpu = {**env, "PATH": f"{_no_gpu(tmp)}:{env['PATH']}"}
    out = SimpleNamespace(venv=venv, light=None, skip_light="")
    one = _readme_command_1().replace(" && aisp-prof quickstart", "")
    proc = subprocess.run(["/bin/bash", "-c", one], cwd=ROOT, env=env_no_gpu, capture_output=True, text=True,
                          timeout=900)
    if proc.returncode and ("No matching distribution" in proc.stderr or "Could not find" in proc.stderr):
        out.skip_light = f"no package index reachable for the light install: {proc.stderr.strip().splitlines()[-1]}"
        _see_running_packages(bin_dir / "python")
    else:
        out.light = _light_checks(bin_dir, env, proc, tmp)
    out.install = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-deps",
                                  "--force-reinstall", str(ROOT)], capture_output=True, text=True)
    work = tmp / "elsewhere"
    work.mkdir()
    out.work = work
    out.where = subprocess.run([str(bin_dir / "python"), "-c", "import aisp_prof, aisp_kernels, aisp_prof.paths as p; "
                                "print(aisp_prof.__file__); print(aisp_kernels.__file__); print(p.data_root())"],
                               cwd=work, env=env, capture_output=True, text=True)
    out.quickstart = subprocess.run([str(bin_dir / "aisp-prof"), "quickstart"], cwd=work, env=env_no_gpu,
                                    capture_output=True, text=True, timeout=600)
    if out.light is not None:              # a reading command, on the database the quickstart stored
        out.light.runs[("history", "ch09.fused_l2norm")] = subprocess.run(
            [str(bin_dir / "aisp-prof"), "history", "ch09.fused_l2norm"], cwd=work, env=env, capture_output=True,
            text=True, timeout=300)
    return out


def _light_checks(bin_dir: Path, env: dict, install: subprocess.CompletedProcess, tmp: Path) -> SimpleNamespace:
    """What runs on the light (editable, no torch) install from a folder outside the checkout
    before any database exists there (`history` runs after the quickstart, in its folder)."""
    have = subprocess.run([str(bin_dir / "python"), "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
                          capture_output=True, text=True, env=env)
    work = tmp / "light"
    work.mkdir()
    runs = {tuple(args): subprocess.run([str(bin_dir / "aisp-prof"), *args], cwd=work, env=env, capture_output=True,
                                        text=True, timeout=300)
            for args in (["list"], ["bench", "list-targets"])}
    return SimpleNamespace(install=install, no_torch=have.stdout.strip(), runs=runs)


@pytest.mark.slow
def test_non_editable_install_runs_the_quickstart_elsewhere(venv):
    assert venv.install.returncode == 0, venv.install.stderr[-2000:]
    assert venv.where.returncode == 0, venv.where.stderr
    package, kernels_package, data_root = venv.where.stdout.split()
    assert package.startswith(str(venv.venv)) and kernels_package.startswith(str(venv.venv))     # the installed copy
    assert data_root == str(venv.venv / "share" / "aisp-prof")
    proc = venv.quickstart
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "report: reports/quickstart/index.html" in proc.stdout
    from aisp_prof.store.ingest import every_sample_run_dir

    shipped = len(every_sample_run_dir())          # the checkout's sample sets, all of them installed too
    assert shipped > 12 and f"reading {shipped} sample run(s)" in proc.stderr, proc.stderr[-2000:]
    assert (venv.work / "reports" / "quickstart" / "index.html").is_file()
    assert (venv.work / "profiles" / "aisp.db").is_file()


@pytest.mark.slow
def test_light_install_without_torch_runs_the_no_gpu_quick_start(venv):
    """README command 1 without a GPU: the install brings no torch, and list and bench list-targets
    work on it from another folder; its quickstart is the one the test above checks (the same venv,
    no torch, after the non-editable copy replaced the editable one), and history reads what it stored."""
    if venv.light is None:
        pytest.skip(venv.skip_light)
    assert venv.light.install.returncode == 0, venv.light.install.stderr[-2000:]
    assert venv.light.no_torch == "True"                     # the light install brought no torch
    for args, needle in ((("list",), "kernels extra not installed"),
                         (("history", "ch09.fused_l2norm"), "20261126T011557Z-ch09.fused_l2norm-90df"),
                         (("bench", "list-targets"), "skipped here: kernels extra not installed")):
        res = venv.light.runs[args]
        assert res.returncode == 0 and needle in res.stdout, (args, res.stdout[-1000:], res.stderr[-1000:])
    assert venv.quickstart.returncode == 0 and "report: reports/quickstart/index.html" in venv.quickstart.stdout


def _see_running_packages(python: Path) -> None:
    """Make the venv of `python` see the site-packages of the interpreter running pytest, after its
    own. `venv --system-site-packages` would show it the base interpreter's packages only, so when
    pytest itself runs inside a venv (README command 2) the inner one had no pandas. A .pth line is
    a plain sys.path entry: the running interpreter's own .pth files (its editable aisp-prof) are not
    run, and the inner venv's site-packages, where aisp-prof is installed, comes first."""
    paths = dict.fromkeys([*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    inner = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    (Path(inner) / "_running_interpreter.pth").write_text("".join(f"{p}\n" for p in paths if Path(p).is_dir()))


def _readme_command_1() -> str:
    from test_readme_quickstart import numbered

    return numbered(1)


def _no_gpu(tmp_path: Path) -> Path:
    """A folder with an nvidia-smi that finds no GPU, put first on PATH."""
    stub = tmp_path / "nogpu"
    stub.mkdir()
    (stub / "nvidia-smi").write_text("#!/bin/sh\nexit 9\n")
    (stub / "nvidia-smi").chmod(0o755)
    return stub
