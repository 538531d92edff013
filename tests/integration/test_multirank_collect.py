"""A multi-rank collection's decisions, without a GPU: how many ranks, each rank's command line,
torchrun starting them (for real, on the CPU), and the ranks' checks merged into one."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from aisp_prof import pairs
from aisp_prof.collect import commands
from aisp_prof.collect.ranks import launch, rank_exec
from aisp_prof.collect.process import agents, runner, steps
from aisp_prof.errors import ArgumentError, RequirementError
from aisp_prof.naming import rank_path
from aisp_prof.pairs.capabilities import Machine, runnable


@pytest.fixture
def allreduce():
    return pairs.find("ch14.quantized_allreduce")


def test_rank_files_keep_rank_zero_on_the_one_process_name():
    assert rank_path(Path("r/check.json"), 0) == Path("r/check.json")
    assert rank_path(Path("r/check.json"), 3) == Path("r/check.rank3.json")
    assert rank_path(Path("r/nsys.nsys-rep"), 1) == Path("r/nsys.rank1.nsys-rep")


def test_world_size_defaults_to_the_pair_and_is_bounded_by_the_gpus(allreduce):
    l2norm = pairs.find("ch09.fused_l2norm")
    assert runner.world_size(l2norm, None, 1) == 1
    with pytest.raises(ArgumentError, match="runs as one process"):        # options at odds: exit 2
        runner.world_size(l2norm, 2, 8)
    assert runner.world_size(allreduce, None, 2) == allreduce.world_size == 2
    assert runner.world_size(allreduce, 4, 4) == 4
    with pytest.raises(ArgumentError, match="at least 2 ranks"):
        runner.world_size(allreduce, 1, 8)
    with pytest.raises(RequirementError, match="this machine has 2; pass --nproc-per-node 2"):
        runner.world_size(allreduce, 4, 2)
    with pytest.raises(ArgumentError, match="--ncu-rank 2 is not a rank"):
        runner.world_size(allreduce, 2, 2, ncu_rank=2)


def test_one_gpu_machine_skips_the_pair_with_the_reason(allreduce):
    answer = runnable(allreduce, Machine.of("gpu", "triton", gpu_count=1))
    assert not answer.ok and "needs 2 GPUs" in answer.reason and "has 1" in answer.reason
    assert runnable(allreduce, Machine.of("gpu", "triton", gpu_count=2)).ok


def test_ncu_leaves_out_nccl_kernels_only_when_asked():
    child = ["python", "-m", "x"]
    plain = commands.ncu_command(Path("ncu"), child, ["aisp/p/v"], ["m"], Path("r.ncu-rep"))
    assert "--kernel-name" not in plain
    multi = commands.ncu_command(Path("ncu"), child, ["aisp/p/v"], ["m"], Path("r.ncu-rep"),
                                 exclude_kernels=commands.COLLECTIVE_KERNELS)
    i = multi.index("--kernel-name")
    assert multi[i + 1] == "regex:^(?!nccl)" and multi[-3:] == child


def test_launch_writes_each_ranks_line_and_starts_torchrun(tmp_path):
    info: dict = {}
    one = steps.StepContext(tmp_path, info)
    assert one.launch("check", lambda r: ["child", str(r)]) == ["child", "0"]
    ctx = steps.StepContext(tmp_path, info, world_size=2, ncu_rank=1)
    cmd = ctx.launch("ncu", lambda r: ["ncu", "child"] if r == ctx.ncu_rank else ["child"])
    assert cmd[1:] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                       "--log-dir", str(tmp_path / ".torchrun-ncu-node0"), "-m", rank_exec.MODULE,
                       str(tmp_path / "ncu.ranks.json")]
    assert json.loads((tmp_path / "ncu.ranks.json").read_text()) == {"0": ["child"], "1": ["ncu", "child"]}
    assert info["rank_commands"]["ncu"]["1"] == ["ncu", "child"]


def test_rank_exec_refuses_a_rank_it_has_no_line_for():
    with pytest.raises(SystemExit, match="RANK='2' has no command"):
        rank_exec.command_for({"0": ["a"], "1": ["b"]}, {"RANK": "2"})
    with pytest.raises(SystemExit, match="through torchrun"):
        rank_exec.command_for({"0": ["a"]}, {})


@pytest.mark.slow
def test_torchrun_starts_each_rank_on_its_own_line_and_leaves_no_folder_behind(tmp_path):
    """A real torchrun (CPU, two ranks) as a step starts it (agents.run_agents): rank r runs its own
    command and sees its RANK; torchrun's log folder stays in the run folder and goes with the step
    (without --log-dir every launch left a torchelastic_* folder in the temp folder: TMPDIR here)."""
    pytest.importorskip("torch.distributed.run")
    script = "import os, sys; open(sys.argv[1], 'w').write(os.environ['RANK'] + ' ' + os.environ['WORLD_SIZE'])"
    lines = rank_exec.write_rank_commands(tmp_path / "x.ranks.json", 2,
                                          lambda r: [sys.executable, "-c", script, str(tmp_path / f"out{r}.txt")])
    assert len(lines) == 2
    [agent] = launch.agents(launch.Launch(2), tmp_path / "x.ranks.json", tmp_path, "job")
    assert agent.argv == rank_exec.torchrun_command(2, tmp_path / "x.ranks.json")
    temp = tmp_path / "temp"
    temp.mkdir()
    rc, text, _ = agents.run_agents([agent], tmp_path / "x.log", {**os.environ, "TMPDIR": str(temp)})
    assert rc == 0, text[-2000:]
    assert (tmp_path / "out0.txt").read_text() == "0 2"
    assert (tmp_path / "out1.txt").read_text() == "1 2"
    assert list(temp.iterdir()) == [] and not list(tmp_path.glob(".torchrun-*"))


def _report(passed: bool, failed=()):
    return {"ok": True, "timing": {"baseline": {"median_ns": 1.0}},
            "check": {"passed": passed, "failed_variants": list(failed),
                      "checks": [{"variant": "int8", "passed": passed}]}}


def test_a_check_fails_when_any_rank_fails():
    merged = steps.merge_rank_checks([_report(True), _report(False, ["int8"])])
    assert merged["check"]["passed"] is False and merged["check"]["failed_variants"] == ["int8"]
    assert [(c["rank"], c["passed"]) for c in merged["check"]["checks"]] == [(0, True), (1, False)]
    assert merged["timing"] == {"baseline": {"median_ns": 1.0}}          # rank 0's timing
    assert steps.merge_rank_checks([_report(True), _report(True)])["check"]["passed"] is True
