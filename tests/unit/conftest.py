"""Fixtures the unit tests share."""
from __future__ import annotations

import pytest


@pytest.fixture
def fake_nvcc(monkeypatch, tmp_path):
    """An nvcc stand-in writing a dummy library (the cache logic only), the cache in tmp_path; a
    source whose output name holds "broken" fails as nvcc would. Each compile's arguments are one
    line of tmp_path/compiles.log (`nvcc_log`)."""
    from aisp_kernels import build

    script, log = tmp_path / "fake-nvcc", tmp_path / "compiles.log"
    script.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "fake nvcc, release 0.0"; exit 0; fi\n'
                      f'echo "$*" >> "{log}"\n'
                      'while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; fi; shift; done\n'
                      'case "$out" in *broken*) echo "broken.cu(1): error: expected a declaration" >&2; exit 1;; esac\n'
                      'echo library > "$out"\n')
    script.chmod(0o755)
    monkeypatch.setenv("AISP_NVCC", str(script))
    monkeypatch.setenv("AISP_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setattr(build, "BUILT", [])
    return tmp_path


@pytest.fixture
def nvcc_log(fake_nvcc):
    """The `fake_nvcc` log: one line per compile (a cache miss), its nvcc arguments."""
    return fake_nvcc / "compiles.log"
