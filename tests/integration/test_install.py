"""A non-editable install works from any folder: `pip install .` into a fresh virtual
environment, then `aisp-prof quickstart` from an empty directory finds the shipped kernels and
sample runs (setup.py installs them under <prefix>/share/aisp-prof) and writes its report.

And the README's light install (issue 18): in a virtual environment that sees nothing of this
interpreter's packages, the quick start's no-GPU command installs no torch, and quickstart,
list, history and bench list-targets work. It needs an index pip can reach (skips without)."""
from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from repo_paths import ROOT



@pytest.mark.slow
def test_non_editable_install_runs_the_quickstart_elsewhere(tmp_path):
    venv = tmp_path / "venv"
    # the venv sees this interpreter's packages (pandas, torch...); only aisp-prof is installed into it
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    _see_running_packages(python)
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(ROOT)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AISP_KERNELS", "AISP_ROOT", "AISP_PROF_DB")}
    where = subprocess.run([str(python), "-c", "import aisp_prof, aisp_kernels, aisp_prof.paths as p; "
                            "print(aisp_prof.__file__); print(aisp_kernels.__file__); print(p.data_root())"],
                           cwd=work, env=env, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr
    package, kernels_package, data_root = where.stdout.split()
    assert package.startswith(str(venv)) and kernels_package.startswith(str(venv))     # the installed copy
    assert data_root == str(venv / "share" / "aisp-prof")
    proc = subprocess.run([str(venv / "bin" / "aisp-prof"), "quickstart"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "report: reports/quickstart/index.html" in proc.stdout
    from aisp_prof.store.ingest import every_sample_run_dir

    shipped = len(every_sample_run_dir())          # the checkout's sample sets, all of them installed too
    assert shipped > 12 and f"reading {shipped} sample run(s)" in proc.stderr, proc.stderr[-2000:]
    assert (work / "reports" / "quickstart" / "index.html").is_file()
    assert (work / "profiles" / "aisp.db").is_file()


@pytest.mark.slow
def test_light_install_without_torch_runs_the_no_gpu_quick_start(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AISP_KERNELS", "AISP_ROOT", "AISP_PROF_DB")}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
    # the README's command 1 where nvidia-smi fails (no GPU); the install part only, run in the checkout
    env_no_gpu = {**env, "PATH": f"{_no_gpu(tmp_path)}:{env['PATH']}"}
    one = _readme_command_1().replace(" && aisp-prof quickstart", "")
    proc = subprocess.run(["/bin/bash", "-c", one], cwd=ROOT, env=env_no_gpu, capture_output=True, text=True,
                          timeout=900)
    if proc.returncode and ("No matching distribution" in proc.stderr or "Could not find" in proc.stderr):
        pytest.skip(f"no package index reachable for the light install: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    python = str(bin_dir / "python")
    have = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
                          capture_output=True, text=True, env=env)
    assert have.stdout.strip() == "True"                     # the light install brought no torch
    work = tmp_path / "elsewhere"
    work.mkdir()
    aisp = str(bin_dir / "aisp-prof")
    quick = subprocess.run([aisp, "quickstart"], cwd=work, env=env_no_gpu, capture_output=True, text=True, timeout=600)
    assert quick.returncode == 0, quick.stderr[-2000:]
    assert "report: reports/quickstart/index.html" in quick.stdout
    for args, needle in ((["list"], "kernels extra not installed"),
                         (["history", "ch09.fused_l2norm"], "20261126T011557Z-ch09.fused_l2norm-90df"),
                         (["bench", "list-targets"], "skipped here: kernels extra not installed")):
        res = subprocess.run([aisp, *args], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0 and needle in res.stdout, (args, res.stdout[-1000:], res.stderr[-1000:])


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
