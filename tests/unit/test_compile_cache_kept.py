"""`bench run --compile-cache DIR`: torch.compile's and Triton's caches kept between gates (issue 28's
10 minutes, for a runner that keeps its caches). Every process of the gate gets DIR, the gate's own
environment is given back after, the runs say so, and a recording refuses it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from aisp_prof.cli import cli
from aisp_prof.collect.code.compile_cache import CACHE_VARS, compile_cache_kind, kept_compile_cache
from aisp_prof.collect.code.generated import cache_env
from aisp_prof.collect.process.steps import child_env
from aisp_prof.errors import OutputError
from aisp_prof.naming import FRESH_COMPILE_CACHE, KEPT_COMPILE_CACHE, SHARED_COMPILE_CACHE


@pytest.fixture(autouse=True)
def no_cache_vars(monkeypatch):
    for var in CACHE_VARS:
        monkeypatch.delenv(var, raising=False)


def test_the_folder_is_every_process_s_and_the_environment_comes_back(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_CACHE_DIR", "/somewhere/else")
    with kept_compile_cache(tmp_path / "cc"):
        env = child_env()
        assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cc" / "inductor")
        assert env["TRITON_CACHE_DIR"] == str(tmp_path / "cc" / "triton")
        assert cache_env(tmp_path / "run", os.environ) == {}        # the run folder gets no cache of its own
        assert compile_cache_kind(False) == KEPT_COMPILE_CACHE
    assert os.environ["TRITON_CACHE_DIR"] == "/somewhere/else" and "TORCHINDUCTOR_CACHE_DIR" not in os.environ
    with kept_compile_cache(None):
        assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ


def test_what_a_run_says_of_its_compile_cache():
    assert compile_cache_kind(False, {}) == SHARED_COMPILE_CACHE
    assert compile_cache_kind(False, {"TORCHINDUCTOR_CACHE_DIR": "/c"}) == KEPT_COMPILE_CACHE
    assert compile_cache_kind(True, {"TORCHINDUCTOR_CACHE_DIR": "/c"}) == FRESH_COMPILE_CACHE


@pytest.mark.parametrize("where", ["file/cc", "proc"])
def test_a_folder_that_cannot_be_made_or_written_is_one_line(tmp_path, where):
    """Under a file; an existing folder whose caches cannot be made in it (/proc, as root too)."""
    (tmp_path / "file").write_text("x")
    folder = tmp_path / where if where != "proc" else Path("/proc")
    with pytest.raises(OutputError, match="cannot be made or written"):
        with kept_compile_cache(folder):
            pass
    assert not any(var in os.environ for var in CACHE_VARS)


def test_an_existing_folder_it_cannot_write_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(OutputError, match="cannot be made or written"):
        with kept_compile_cache(tmp_path / "cc"):
            pass


def test_bench_run_hands_the_folder_to_the_server_and_the_pairs(monkeypatch, tmp_path):
    from stub_gate import stubbed_bench_run

    res, seen = stubbed_bench_run(monkeypatch, tmp_path, ["--targets", "ch09.fused_l2norm", "--compile-cache", "cc"],
                                  lambda: {"pair_env": child_env(), "kind": compile_cache_kind(False)})
    assert res.exit_code == 0, res.output
    for env in (seen["pair_env"], seen["server_env"]):
        assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cc" / "inductor")
    assert seen["kind"] == KEPT_COMPILE_CACHE and (tmp_path / "cc").is_dir()
    assert not any(var in os.environ for var in CACHE_VARS)


def test_a_recording_refuses_a_kept_cache():
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", "ch09", "--compile-cache", "cc",
                                   "--update-expectations"])
    assert res.exit_code == 2 and "a recording compiles each timing process anew" in res.output
