""".ci/run fails when any step of README command 2 fails, though the build checks run after it.

Under `set -e`, bash does not stop for a failed command inside an `a && b` list unless it is the
last one; while command 2 (`pip install ... && pytest -q`) was CI's last line its status was the
script's, but with the build checks after it a failed install would be forgotten, and the build
checks (all skipped on a CPU-only runner without nvcc) would end the script with 0."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from repo_paths import ROOT


def _ci(tmp_path, fail: str) -> int:
    """.ci/run with stand-ins for python3 (its `-m pip` / `-m pytest` calls fail as `fail` says,
    each call logged) and chromium; its return code."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/calls"\n'
                                     f'case "$*" in "{fail}"*) exit 1;; esac\nexit 0\n')
    (bin_dir / "chromium").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run(["bash", str(tmp_path / ".ci" / "run")], env=env, capture_output=True).returncode


@pytest.mark.parametrize("fail", ["-m pip", "-m pytest -q -m build", "-m pytest -q"])
def test_a_failed_step_fails_ci(tmp_path, fail):
    assert _ci(tmp_path, fail) != 0


def test_ci_passes_when_every_step_passes(tmp_path):
    assert _ci(tmp_path, "no such call") == 0
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[-2:] == ["-m pytest -q", "-m pytest -q -m build"]
