"""The run orchestration's decisions and failure handling, without a GPU."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from repo_paths import FIXTURES

from aisp_prof import pairs
from aisp_prof.collect.output import run_folder
from aisp_prof.collect.process import runner, steps
from aisp_prof.errors import (CounterPermissionError, ProfilerFailedError, ToolNotFoundError,
                              UnknownTargetError)
from aisp_prof.naming import CHECK_JSON
from aisp_prof.pairs.capabilities import Machine, runnable

BROKEN = FIXTURES / "broken_kernels"


@pytest.fixture
def l2norm():
    return pairs.find("ch09.fused_l2norm")


def choose_variants(pair, asked, have):
    return runnable(pair, Machine.of(*have), asked).require()


def test_variants_baseline_first_and_unmet_needs_skipped(l2norm):
    assert choose_variants(l2norm, [], {"gpu", "nvcc", "triton"}) == ["baseline", "cuda", "triton"]
    assert choose_variants(l2norm, [], {"gpu", "nvcc"}) == ["baseline", "cuda"]
    assert choose_variants(l2norm, ["triton"], {"gpu", "triton"}) == ["baseline", "triton"]


def test_variant_asked_for_but_not_runnable_is_an_error(l2norm):
    # a missing tool is exit 4 (ToolNotFoundError), named; an unknown variant is exit 2
    with pytest.raises(ToolNotFoundError, match="needs nvcc"):
        choose_variants(l2norm, ["cuda"], {"gpu"})
    with pytest.raises(UnknownTargetError, match="no variant fast"):
        choose_variants(l2norm, ["fast"], {"gpu"})


def test_counter_permission_is_recognized(tmp_path):
    text = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    with pytest.raises(CounterPermissionError, match="ERR_NVGPUCTRPERM"):
        steps.raise_for_profiler("ncu", 1, text, tmp_path / "ncu.log")
    with pytest.raises(ProfilerFailedError, match="ncu exited 3"):
        steps.raise_for_profiler("ncu", 3, "boom\nlast line", tmp_path / "ncu.log")
    steps.raise_for_profiler("ncu", 0, "fine", tmp_path / "ncu.log")


def test_interrupted_collection_leaves_no_partial_folder(tmp_path, monkeypatch, l2norm):
    def crash(ctx, *args, **kwargs):
        (ctx.folder / "ncu_raw.csv").write_text("half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "collect_into", crash)
    monkeypatch.setattr(runner, "provenance", lambda: {"gpu": {}})
    opts = runner.RunOptions(pair=l2norm, profiles_dir=tmp_path / "profiles", with_ncu=False, with_nsys=False)
    with pytest.raises(KeyboardInterrupt):
        runner.collect(opts, machine=Machine.of("gpu"))
    assert list((tmp_path / "profiles").iterdir()) == []


def test_failed_check_message_names_variant(tmp_path):
    check = {"check": {"checks": [
        {"variant": "baseline", "passed": True, "message": ""},
        {"variant": "wrong", "passed": False, "message": "rel err 0.99 > 1e-05"}]}}
    (tmp_path / CHECK_JSON).write_text(json.dumps(check))
    info = {"status": "failed_check", "pair": "ch99.wrong_norm", "run_id": "r1"}
    error = runner.failed_check_error(info, tmp_path)
    assert error is not None and error.exit_code == 7
    assert re.search("wrong failed the correctness check.*rel err 0.99", str(error))
    assert runner.failed_check_error({"status": "ok"}, tmp_path) is None


def test_gzip_replaces_the_report(tmp_path):
    rep = tmp_path / "ncu.ncu-rep"
    rep.write_bytes(b"x" * 1000)
    run_folder.gzip_file(rep)
    assert not rep.exists()
    assert gzip.decompress((tmp_path / "ncu.ncu-rep.gz").read_bytes()) == b"x" * 1000


def test_git_sha_override_is_validated(monkeypatch):
    monkeypatch.setenv("AISP_GIT_SHA", "4855aa1d78b169a3776a32d287285e68cd5bc9d3")
    assert run_folder.git_sha(Path(".")) == "4855aa1d78b169a3776a32d287285e68cd5bc9d3"
    monkeypatch.setenv("AISP_GIT_SHA", "HEAD")
    assert run_folder.git_sha(Path("/nonexistent")) == ""


def test_wrong_pair_is_rejected_by_check_on_cpu(monkeypatch):
    """The same broken pair the GPU test runs: the check catches it on CPU tensors too."""
    from aisp_prof.collect.correctness.check import check_pair

    monkeypatch.setenv("AISP_KERNELS", str(BROKEN))
    pair = pairs.find("ch99.wrong_norm")
    result = check_pair(pair, {"rows": 64, "cols": 128}, device="cpu")
    assert not result.passed and result.failed_variants == ["wrong"]
