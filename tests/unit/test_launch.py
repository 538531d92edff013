"""How the ranks of a multi-rank collection start (collect.ranks.launch), pinned as argv and
environment: one torchrun agent, several agents standing in for nodes on one host, srun inside
a Slurm allocation; NVLink multicast off in every child's environment."""
from __future__ import annotations

from pathlib import Path

import pytest

from aisp_prof import pairs
from aisp_prof.collect.process import agents, runner, steps
from aisp_prof.collect.ranks import group, launch, rank_exec
from aisp_prof.errors import ArgumentError, RequirementError, ToolNotFoundError

FILE = Path("/runs/.partial-x/check.ranks.json")
RUN_DIR = Path("/runs/.partial-x")
OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def test_one_node_is_one_standalone_torchrun_with_multicast_off():
    [agent] = launch.agents(launch.Launch(4), FILE, RUN_DIR, "job")
    log_dir = str(RUN_DIR / ".torchrun-check-node0")       # not /tmp/torchelastic_*, and removed after the step
    assert agent.argv[1:] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
                              "--log-dir", log_dir, "-m", rank_exec.MODULE, str(FILE)]
    assert agent.env == OFF and agent.folder == "" and agent.scratch == log_dir
    assert rank_exec.torchrun_command(4, FILE) == agent.argv


def test_two_nodes_on_one_host_are_two_agents_splitting_the_gpus():
    a, b = launch.agents(launch.Launch(2, nnodes=2), FILE, RUN_DIR, "job42", port=29611)
    for i, agent in enumerate((a, b)):
        assert agent.argv[3:] == ["--nnodes", "2", "--nproc-per-node", "2", "--node-rank", str(i), "--rdzv-backend",
                                  "c10d", "--rdzv-endpoint", "127.0.0.1:29611", "--rdzv-id", "job42",
                                  "--max-restarts", "0", "--log-dir", str(RUN_DIR / f".torchrun-check-node{i}"),
                                  "-m", rank_exec.MODULE, str(FILE)]
        assert agent.scratch == str(RUN_DIR / f".torchrun-check-node{i}")
        assert {k: agent.env[k] for k in OFF} == OFF
        assert agent.folder == f"node{i}" and agent.env["AISP_NODE_DIR"] == str(RUN_DIR / f"node{i}")
    assert (a.env["CUDA_VISIBLE_DEVICES"], b.env["CUDA_VISIBLE_DEVICES"]) == ("0,1", "2,3")
    assert a.env["AISP_NODE_NAME"] != b.env["AISP_NODE_NAME"]
    c, d = launch.agents(launch.Launch(2, nnodes=2, rdzv_endpoint="10.0.0.5:29500"), FILE, RUN_DIR, "j",
                         visible=["4", "5", "6", "7"])
    assert (c.env["CUDA_VISIBLE_DEVICES"], d.env["CUDA_VISIBLE_DEVICES"]) == ("4,5", "6,7")
    assert "10.0.0.5:29500" in c.argv


def test_one_node_of_a_real_job_starts_its_agent_only_and_keeps_the_gpus():
    [agent] = launch.agents(launch.Launch(8, nnodes=2, node_rank=1, rdzv_endpoint="head:29500"), FILE, RUN_DIR, "j")
    assert agent.node == 1 and "CUDA_VISIBLE_DEVICES" not in agent.env
    assert agent.argv[agent.argv.index("--node-rank") + 1] == "1"


def test_slurm_is_one_srun_task_per_rank():
    agent = launch.slurm_agent(launch.Launch(4, nnodes=2, launcher="slurm"), FILE, environ={"MASTER_ADDR": "n001"})
    assert agent.argv[:6] == ["srun", "--nodes=2", "--ntasks=8", "--ntasks-per-node=4", "--kill-on-bad-exit=1",
                              "--export=ALL"]
    assert agent.argv[-3:] == ["-m", rank_exec.MODULE, str(FILE)]
    assert agent.env == {**OFF, "MASTER_ADDR": "n001", "MASTER_PORT": "29500"}
    given = launch.slurm_agent(launch.Launch(4, launcher="slurm", rdzv_endpoint="n002:1234"), FILE, environ={})
    assert (given.env["MASTER_ADDR"], given.env["MASTER_PORT"]) == ("n002", "1234")


@pytest.mark.parametrize("bad, message", [
    (launch.Launch(2, nnodes=2, node_rank=2, rdzv_endpoint="h:1"), "not a node"),
    (launch.Launch(2, nnodes=2, node_rank=1), "needs --rdzv-endpoint"),
    (launch.Launch(2, nnodes=2, rdzv_endpoint="nohost"), "not HOST:PORT"),
    (launch.Launch(2, launcher="mpirun"), "unknown launcher"),
])
def test_launches_that_cannot_work_are_one_line_errors(bad, message):
    with pytest.raises(ArgumentError, match=message):        # options at odds: exit 2, not 9 (README)
        bad.check()


def test_children_run_with_nvlink_multicast_off(monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    env = steps.child_env()
    assert {k: env[k] for k in OFF} == OFF


def test_ranks_come_from_torchrun_else_slurm():
    assert group.from_env({"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1"}) == group.RankEnv(5, 8, 1)
    torchrun_in_srun = {"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "2", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}
    assert group.from_env(torchrun_in_srun) == group.RankEnv(2, 4, 2)
    assert group.from_env({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}) is None
    assert group.from_env({}) is None


def test_rank_exec_picks_the_slurm_task_and_relocates_into_its_node_folder():
    lines = {"0": ["a", "/runs/.partial-x/check.json"], "1": ["b", "-o", "/runs/.partial-x/nsys.rank1"]}
    assert rank_exec.command_for(lines, {"SLURM_PROCID": "1"}) == lines["1"]
    moved = rank_exec.command_for(lines, {"RANK": "1", "AISP_RUN_DIR": str(RUN_DIR),
                                          "AISP_NODE_DIR": str(RUN_DIR / "node1")})
    assert moved == ["b", "-o", "/runs/.partial-x/node1/nsys.rank1"]
    assert rank_exec.relocate(["/runs/.partial-xy/f"], str(RUN_DIR), "/n") == ["/runs/.partial-xy/f"]


def test_the_run_plans_nodes_times_ranks_and_needs_the_gpus(monkeypatch):
    pair = pairs.find("ch14.quantized_allreduce")
    opts = runner.RunOptions(pair=pair, nproc_per_node=2, nnodes=2)
    assert runner.launch_of(opts, 4).world_size == 4
    with pytest.raises(RequirementError, match="4 ranks need 4 GPUs"):
        runner.launch_of(opts, 2)
    monkeypatch.setattr(runner.shutil, "which", lambda name: "/usr/bin/srun")
    assert runner.launch_of(runner.RunOptions(pair=pair, nproc_per_node=4, launcher="slurm", nnodes=2), 4).world_size == 8
    monkeypatch.setattr(runner.shutil, "which", lambda name: None)
    with pytest.raises(ToolNotFoundError, match="srun is not on PATH"):
        runner.launch_of(runner.RunOptions(pair=pair, nproc_per_node=4, launcher="slurm", nnodes=2), 4)
    with pytest.raises(ArgumentError, match="--nnodes needs --nproc-per-node"):
        runner.launch_of(runner.RunOptions(pair=pair, nnodes=2), 8)
    with pytest.raises(ArgumentError, match="--node-rank needs --rdzv-endpoint"):
        runner.launch_of(runner.RunOptions(pair=pair, nproc_per_node=2, nnodes=2, node_rank=0), 8)
    lead = runner.launch_of(runner.RunOptions(pair=pair, nproc_per_node=8, nnodes=2, node_rank=0,
                                              rdzv_endpoint="head:29500"), 8)
    assert lead.world_size == 16 and lead.gpus_here() == 8 and not lead.one_host
    with pytest.raises(RequirementError, match="only node 0 collects"):
        runner.launch_of(runner.RunOptions(pair=pair, nproc_per_node=8, nnodes=2, node_rank=1,
                                           rdzv_endpoint="head:29500"), 8)
    with pytest.raises(ArgumentError, match="runs as one process"):
        runner.launch_of(runner.RunOptions(pair=pairs.find("ch09.fused_l2norm"), nnodes=2), 8)
    assert runner.launch_of(runner.RunOptions(pair=pairs.find("ch09.fused_l2norm")), 1) is None


def test_assemble_links_node_files_and_gives_each_node_its_exports(tmp_path):
    node1 = tmp_path / "node1"
    node1.mkdir()
    (node1 / "check.rank1.json").write_text("{}")
    (node1 / "nsys.rank1.nsys-rep").write_text("rep")
    agents.assemble(tmp_path, ["node1"])
    assert (tmp_path / "check.rank1.json").read_text() == "{}"
    (tmp_path / "nsys.rank1.sqlite").write_text("export")      # nsys export writes into the run folder
    agents.assemble(tmp_path, ["node1"])
    assert (node1 / "nsys.rank1.sqlite").read_text() == "export"


def test_a_ranks_sensors_are_read_from_its_own_gpu_when_the_agent_sees_a_share():
    from aisp_prof.collect.process.child import nvml_index

    assert nvml_index(1, None) == 1 and nvml_index(0, "") == 0
    assert nvml_index(0, "2,3") == 2 and nvml_index(1, "2,3") == 3
    assert nvml_index(0, "GPU-8f1c,GPU-77aa") == 0          # UUIDs: left as CUDA's index
