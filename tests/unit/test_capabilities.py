"""One answer to "can this variant run here?", for `list`, `run`, `bench` and the tests, without a GPU."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from aisp_prof import pairs
from aisp_prof.cli import cli
from aisp_prof.errors import NoGpuError, RequirementError, ToolNotFoundError, UnknownTargetError
from aisp_prof.pairs import capabilities
from aisp_prof.pairs.capabilities import Machine, runnable

HOPPER_NO_NVCC = Machine.of("gpu", "triton", gpu_name="NVIDIA H100 80GB HBM3")


@pytest.fixture
def l2norm():
    return pairs.find("ch09.fused_l2norm")


def test_variants_follow_needs_and_baseline_comes_first(l2norm):
    assert runnable(l2norm, Machine.of("gpu", "nvcc", "triton")).variants == ("baseline", "cuda", "triton")
    answer = runnable(l2norm, Machine.of("gpu", "triton"))
    assert answer.ok and answer.variants == ("baseline", "triton")
    assert answer.skipped == {"cuda": "needs nvcc (install the CUDA toolkit or set AISP_NVCC)"}
    # no GPU: the CPU-able variants are still listed (the CPU tests check them), but the pair cannot be profiled
    cpu = runnable(l2norm, Machine.of("triton"))
    assert cpu.variants == ("baseline", "triton") and cpu.reason == "no CUDA GPU" and cpu.error is NoGpuError


def test_missing_tool_for_the_baseline_is_exit_4_naming_it():
    tma = pairs.find("ch09.tma_wgmma_pipeline")
    answer = runnable(tma, HOPPER_NO_NVCC)
    assert not answer.ok and "nvcc" in answer.reason and answer.error is ToolNotFoundError
    with pytest.raises(ToolNotFoundError, match="tma_wgmma_pipeline: the baseline needs nvcc") as err:
        answer.require()
    assert err.value.exit_code == 4


def test_wrong_generation_and_unknown_variants():
    nvfp4 = pairs.find("ch09.nvfp4_gemm")
    answer = runnable(nvfp4, Machine.of("gpu", "nvcc", "triton"))
    assert answer.reason.startswith("needs sm_100") and "this GPU is sm_90" in answer.reason
    assert answer.error is RequirementError and answer.error.exit_code == 9
    assert runnable(nvfp4, Machine.of("gpu", cc=(10, 0))).ok
    with pytest.raises(UnknownTargetError, match="no variant fast"):
        runnable(pairs.find("ch09.fused_l2norm"), Machine.of("gpu"), ["fast"])


def test_pair_level_needs_apply_to_every_variant(l2norm):
    strict = replace(l2norm, requires=replace(l2norm.requires, needs=("nvcc",)))
    assert runnable(strict, Machine.of("gpu", "triton")).variants == ()
    assert strict.needs("triton") == ("nvcc", "triton")


@pytest.mark.slow
def test_no_torch_is_a_requirement_not_a_crash(l2norm):
    answer = runnable(l2norm, Machine(frozenset(), None, None, torch=False))
    assert answer.error is RequirementError and "torch" in answer.reason


@pytest.mark.slow
def test_list_and_run_agree_on_a_gpu_without_nvcc(monkeypatch, tmp_path):
    """The case the issue names: `list` said the pair runs where `run` then failed with exit 8.
    Now both say why, and `run` exits 4 naming nvcc before anything is written."""
    monkeypatch.setattr(capabilities, "detect_machine", lambda: HOPPER_NO_NVCC)
    runner = CliRunner()
    rows = {r["name"]: r for r in json.loads(runner.invoke(cli, ["list", "--json"]).stdout)}
    tma = rows["ch09.tma_wgmma_pipeline"]
    assert tma["can_run"] is False and "nvcc" in tma["reason"]
    assert rows["ch09.sdpa_attention"]["can_run"] is True
    assert rows["ch09.fused_l2norm"]["variants_skipped_here"] == {
        "cuda": "needs nvcc (install the CUDA toolkit or set AISP_NVCC)"}
    res = runner.invoke(cli, ["run", "ch09.tma_wgmma_pipeline", "--profiles-dir", str(tmp_path / "p"),
                              "--db", str(tmp_path / "a.db")])
    assert res.exit_code == 4, res.output
    assert "nvcc" in res.stderr and len(res.stderr.strip().splitlines()) == 2    # the "== pair" line + the error
    assert not (tmp_path / "p").exists() and not (tmp_path / "a.db").exists()
    listed = runner.invoke(cli, ["bench", "list-targets", "--json"])
    assert {r["name"]: r["can_run"] for r in json.loads(listed.stdout)}["ch09.tma_wgmma_pipeline"] is False


@pytest.mark.slow
def test_bad_sizes_get_their_own_error(monkeypatch, tmp_path):
    monkeypatch.setattr(capabilities, "detect_machine", lambda: HOPPER_NO_NVCC)
    res = CliRunner().invoke(cli, ["run", "ch09.fused_l2norm", "--sizes", "rows=-1", "--db", str(tmp_path / "a.db")])
    assert res.exit_code == 12, res.output
    assert "bad size 'rows=-1'" in res.stderr and "rows=N, cols=N" in res.stderr and "unknown target" not in res.stderr
    res = CliRunner().invoke(cli, ["run", "ch09.fused_l2norm", "--sizes", "depth=3", "--db", str(tmp_path / "a.db")])
    assert res.exit_code == 12 and "this pair takes rows=N, cols=N" in res.stderr


def test_several_targets_skip_what_cannot_run(monkeypatch, tmp_path):
    """A chapter run on a GPU without nvcc skips the pairs that need it (with the reason) and
    profiles the rest; here the rest fails for want of ncu, which still fails the command."""
    from aisp_prof import tools

    def no_ncu(explicit=None):
        raise ToolNotFoundError("ncu (Nsight Compute) not found; install it")

    monkeypatch.setattr(capabilities, "detect_machine", lambda: HOPPER_NO_NVCC)
    monkeypatch.setattr(tools, "find_ncu", no_ncu)
    res = CliRunner().invoke(cli, ["run", "ch09.tma_wgmma_pipeline", "ch09.sdpa_attention",
                                   "--profiles-dir", str(tmp_path / "p"), "--db", str(tmp_path / "a.db")])
    assert "skipped: the baseline needs nvcc" in res.stderr
    assert res.exit_code == 4 and "ncu (Nsight Compute) not found" in res.stderr


def test_no_gpu_device_node_on_linux_is_surely_no_gpu(monkeypatch):
    """`quickstart` skips importing torch (1-2 s of its minute) only where CUDA could not see a GPU:
    Linux without /dev/nvidiactl, /dev/nvidia0 or WSL's /dev/dxg; elsewhere torch is asked."""
    import os
    import sys

    present: set[str] = set()
    monkeypatch.setattr(os.path, "exists", lambda p: p in present)
    monkeypatch.setattr(sys, "platform", "linux")
    assert capabilities.surely_no_gpu()
    for node in ("/dev/nvidia0", "/dev/dxg"):
        present.clear()
        present.add(node)
        assert not capabilities.surely_no_gpu(), node
    present.clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not capabilities.surely_no_gpu()
