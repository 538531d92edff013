"""Shared fixtures: the checkout's root and the shipped sample runs imported once per session.
Tests marked `gpu` skip cleanly where torch sees no CUDA GPU; torch is imported only to ask."""
from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest
from repo_paths import FIXTURES, ROOT


def _have_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.hookimpl(tryfirst=True)                      # before -m selects: the fast loop leaves these out
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "build" in item.keywords and "slow" not in item.keywords:
            item.add_marker(pytest.mark.slow)           # a build check is always slow
    if not any("gpu" in item.keywords for item in items) or _have_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the GPU machine: pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout (aisp_prof/, kernels/, profiles/, tests/): tests/repo_paths.ROOT."""
    return ROOT


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


class SampleDatabases:
    """Databases of the shipped sample runs (profiles/samples), each set of runs imported once per
    session; a test gets its own copy, so what it writes stays its own."""

    def __init__(self, root: Path):
        self.root = root
        self._made: dict[tuple[str, ...], Path] = {}

    def original(self, *runs: str | Path) -> Path:
        """The session's database of `runs` (run ids or run folders, imported in that order; none:
        every sample). Shared with every other test: read it, never write it."""
        from aisp_prof.store.ingest import sample_run_dirs, store_path

        samples = {d.name: d for d in sample_run_dirs()}
        dirs = [Path(r) if isinstance(r, Path) else samples[r] for r in runs] or list(samples.values())
        key = tuple(str(d) for d in dirs)
        if key not in self._made:
            path = self.root / f"samples-{len(self._made)}.db"
            for run_dir in dirs:
                store_path(path, run_dir)
            self._made[key] = path
        return self._made[key]

    def copy(self, dest: Path, *runs: str | Path) -> Path:
        """A private copy at `dest` of the database of `runs` (see `original`)."""
        with closing(sqlite3.connect(self.original(*runs))) as src, closing(sqlite3.connect(dest)) as dst:
            src.backup(dst)          # what is still in the -wal file too
        return dest


@pytest.fixture(scope="session")
def sample_dbs(tmp_path_factory) -> SampleDatabases:
    """Sample-run databases imported once per session; `sample_dbs.copy(tmp_path / "a.db", RUN_ID)`."""
    return SampleDatabases(tmp_path_factory.mktemp("sample_dbs"))


@pytest.fixture(scope="session")
def every_sample_results(sample_dbs) -> dict[str, dict]:
    """{run id: its summary result (`Run.result()`, what `summary_result` gives)} of every shipped
    sample run, computed once per session from the session's database of them all; shared by
    test_one_speedup and test_fast_queries: read them, never change them."""
    from aisp_prof.api import open_db
    from repo_paths import every_sample_run

    db = open_db(sample_dbs.original(*every_sample_run()))
    run_ids = [r["run_id"] for r in db.run_list()]
    return {r.run_id: r.result() for r in db.open_runs(run_ids)}


@pytest.fixture
def samples_db(sample_dbs, tmp_path) -> Path:
    """A private database holding every shipped sample run (imported once per session)."""
    return sample_dbs.copy(tmp_path / "samples.db")


@pytest.fixture(scope="session")
def installed_quickstart(tmp_path_factory) -> SimpleNamespace:
    """README command 1's light install in a fresh venv, a non-editable copy over it and
    `aisp-prof quickstart` from an empty folder on that copy, no GPU (tests/installed_quickstart.py):
    the session's one quickstart of every shipped sample run. Shared: read it, never write it."""
    from installed_quickstart import install_and_quickstart

    return install_and_quickstart(tmp_path_factory.mktemp("install"))


@pytest.fixture(scope="session")
def quickstart_without_gpu(installed_quickstart) -> SimpleNamespace:
    """`aisp-prof quickstart` where there is no GPU (it stores and summarizes the shipped samples
    and writes <folder>/reports/quickstart): the session's one, run by the installed copy from an
    empty folder (`installed_quickstart`): `folder`, `db`, `exit_code`, `stdout`, `output`.
    Shared: read it, never write it."""
    if _have_gpu():
        pytest.skip("on a GPU quickstart profiles instead")
    proc, folder = installed_quickstart.quickstart, installed_quickstart.work
    install = installed_quickstart.install
    output = proc.stdout + proc.stderr + ("" if install.returncode == 0 else f"\ninstall failed: {install.stderr[-2000:]}")
    return SimpleNamespace(folder=folder, db=folder / "profiles" / "aisp.db", exit_code=proc.returncode,
                           stdout=proc.stdout, output=output)


@pytest.fixture(autouse=True)
def _triton_store_of_the_test(monkeypatch, tmp_path_factory):
    """A gate keeps Triton's binaries in ~/.cache/aisp-prof/triton-binaries (collect.code.binary_store):
    a test's gate keeps them in a temporary folder instead, never in the user's cache."""
    monkeypatch.setenv("AISP_TRITON_STORE", str(tmp_path_factory.mktemp("triton-binaries")))
