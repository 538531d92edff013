"""A non-editable install works from any folder: `pip install .` into a fresh virtual
environment, then `aisp-prof quickstart` from an empty directory finds the shipped kernels and
sample runs (setup.py installs them under <prefix>/share/aisp-prof) and writes its report."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_non_editable_install_runs_the_quickstart_elsewhere(tmp_path):
    venv = tmp_path / "venv"
    # the venv sees this interpreter's packages (pandas, torch...); only aisp-prof is installed into it
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
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
    assert "reading 12 sample run(s)" in proc.stderr
    assert (work / "reports" / "quickstart" / "index.html").is_file()
    assert (work / "profiles" / "aisp.db").is_file()
