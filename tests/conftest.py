"""Shared fixtures: the checkout's root and the shipped sample runs imported once per session.
Tests marked `gpu` skip cleanly where torch sees no CUDA GPU; torch is imported only to ask."""
from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from repo_paths import FIXTURES, ROOT


def _have_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
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


@pytest.fixture(scope="session")
def sample_db_path(tmp_path_factory) -> Path:
    """A database holding every shipped sample run (profiles/samples), imported once per session.
    Shared: a test that only reads it takes this; one that writes takes `sample_db_copy`."""
    from aisp_prof.store.ingest import sample_run_dirs, store_path

    path = tmp_path_factory.mktemp("samples") / "samples.db"
    for run_dir in sample_run_dirs():
        store_path(path, run_dir)
    return path


@pytest.fixture
def sample_db_copy(sample_db_path, tmp_path) -> Path:
    """A private copy of `sample_db_path`, for a test that adds to it or removes from it."""
    copy = tmp_path / "samples.db"
    with closing(sqlite3.connect(sample_db_path)) as src, closing(sqlite3.connect(copy)) as dst:
        src.backup(dst)          # what is still in the -wal file too
    return copy
