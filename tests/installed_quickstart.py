"""The README's quick start as printed (its bash block, command 1 and 2), and the suite's one
no-GPU quickstart: README command 1's light install in a fresh virtual environment, then a
non-editable copy over it and `aisp-prof quickstart` from an empty folder (conftest.py's session
fixtures `installed_quickstart` and `quickstart_without_gpu`; test_install, test_sample_run and
test_report read it). One quickstart of every shipped sample run serves them all: before, the
session also ran a second one in-process (~40 s of CPU on 2 cores)."""
from __future__ import annotations

import os
import re
import site
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace

from repo_paths import ROOT

CLEAN = ("PYTHONPATH", "AISP_KERNELS", "AISP_ROOT", "AISP_PROF_DB")


def quick_start() -> list[str]:
    """The quick start's bash block, one entry per command line (comments and blanks dropped)."""
    block = _quick_start_block()
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def numbered(n: int) -> str:
    """The command under the README's '# n.' comment."""
    after = _quick_start_block().split(f"\n# {n}.", 1)[1]
    return next(line for line in after.splitlines()[1:] if line.strip() and not line.startswith("#"))


def _quick_start_block() -> str:
    text = (ROOT / "README.md").read_text()
    return re.search(r"```bash\n(.*?)```", text[text.index("## Quick start"):], re.S).group(1)


def install_and_quickstart(tmp: Path) -> SimpleNamespace:
    """ONE fresh virtual environment under `tmp`, in this order: the README's light install
    (command 1's install part where nvidia-smi finds no GPU: `pip install -e .` from the index, no
    torch) and what runs on it from another folder (`light`); then `pip install --no-deps .` over
    it (non-editable) and `aisp-prof quickstart` from an empty folder on that copy (`quickstart`,
    run in `work`: its database is work/profiles/aisp.db, its report work/reports/quickstart).
    Without a package index: `light` is None (`skip_light` says why) and the venv sees this
    interpreter's packages instead (the non-editable install and the quickstart still run)."""
    venv, bin_dir = tmp / "venv", tmp / "venv" / "bin"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
    env_no_gpu = {**env, "PATH": f"{_no_gpu(tmp)}:{env['PATH']}"}
    out = SimpleNamespace(venv=venv, light=None, skip_light="")
    one = numbered(1).replace(" && aisp-prof quickstart", "")
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


def _no_gpu(tmp_path: Path) -> Path:
    """A folder with an nvidia-smi that finds no GPU, put first on PATH."""
    stub = tmp_path / "nogpu"
    stub.mkdir()
    (stub / "nvidia-smi").write_text("#!/bin/sh\nexit 9\n")
    (stub / "nvidia-smi").chmod(0o755)
    return stub
