"""The README's light install (issue 18): in a virtual environment that sees nothing of this
interpreter's packages, the quick start's no-GPU command installs no torch, and list, history and
bench list-targets work. It needs an index pip can reach (skips without).

And a non-editable install works from any folder: `pip install .` into the same virtual
environment, then `aisp-prof quickstart` (no GPU, no torch) from an empty directory finds the
shipped kernels and sample runs (setup.py installs them under <prefix>/share/aisp-prof) and writes
its report. One venv and one quickstart serve both, and the rest of the session: the conftest.py
fixture `installed_quickstart` (tests/installed_quickstart.py), which test_sample_run and
test_report read as `quickstart_without_gpu`."""
from __future__ import annotations

import pytest


@pytest.fixture
def venv(installed_quickstart):
    """The session's virtual environment, light install, non-editable copy and quickstart."""
    return installed_quickstart


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
