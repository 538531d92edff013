"""Issue 18: the README's quick start as printed. Command 1 is the light install (no torch) where
there is no GPU and the kernels extra where there is, after a virtual environment (PEP 668);
command 2 is what .ci/run runs; both install the same torch. The snippet's choice is run
through bash with stand-ins for nvidia-smi, python3 and aisp-prof."""
from __future__ import annotations

import configparser
import re
import subprocess
import sys

import pytest
from installed_quickstart import numbered, quick_start
from repo_paths import ROOT


def test_quick_start_has_a_venv_then_the_two_commands():
    lines = quick_start()
    assert lines[0] == "python3 -m venv .venv && . .venv/bin/activate"
    one, two = numbered(1), numbered(2)
    assert lines[1:] == [one, two]
    assert "python3 -m pip install -e .;" in one and "-e '.[kernels]'" in one and one.endswith("aisp-prof quickstart")
    assert two.endswith("python3 -m pytest -q") and "'.[kernels,rep,test]'" in two


BUILD_CHECKS = "python3 -m pytest -q -m build"


def test_command_2_is_what_ci_runs_then_the_build_checks():
    """CI runs command 2 as printed, then the build checks it leaves out, as the README prints them."""
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert ci[-2:] == [numbered(2), BUILD_CHECKS]    # the last two things CI does
    assert f"```bash\n{BUILD_CHECKS}\n```" in (ROOT / "README.md").read_text()


@pytest.mark.slow
def test_the_build_checks_line_collects_tests():
    """pytest exits 5 when it collects nothing: CI's second line selects the build checks (they live
    in tests/pairs; command 2's line is this very run, and setup.cfg's addopts, checked below, is
    what leaves them out of it)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", "build", "tests/pairs"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    builds = [line for line in proc.stdout.splitlines() if "::" in line]
    assert builds and all("cutlass" in test.split("::")[0] for test in builds)


@pytest.mark.parametrize("gpu", [True, False])
def test_command_1_picks_the_install_by_whether_there_is_a_gpu(tmp_path, gpu):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    stubs = {"nvidia-smi": f"exit {0 if gpu else 9}", "python3": f'echo "python3 $*" >> {log}',
             "aisp-prof": f'echo "aisp-prof $*" >> {log}'}
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    proc = subprocess.run(["/bin/bash", "-c", numbered(1)], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    ran = log.read_text().splitlines()
    pin = re.search(r"torch==[\w.+]+", numbered(1)).group(0)
    install = f"python3 -m pip install {pin} -e .[kernels]" if gpu else "python3 -m pip install -e ."
    assert ran == [install, "aisp-prof quickstart"]


def test_the_fast_loop_is_documented_and_its_marker_registered():
    """The README's fast loop leaves out `slow`, a marker setup.cfg registers (an unregistered
    marker only warns, so a typo would silently run everything)."""
    text = (ROOT / "README.md").read_text()
    assert '```bash\npython3 -m pytest -m "not slow" -q\n```' in text
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    markers = [line.split(":")[0].strip() for line in cfg["tool:pytest"]["markers"].strip().splitlines()]
    assert "slow" in markers and "build" in markers
    assert cfg["tool:pytest"]["addopts"].strip() == '-m "not build"'     # command 2 leaves the build checks out
