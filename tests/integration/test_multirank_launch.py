"""The launches of collect.ranks.launch run for real on the CPU (gloo): two torchrun agents standing
in for two nodes on one host, srun's tasks (processes started with SLURM_PROCID/SLURM_NTASKS/
SLURM_LOCALID set, as srun sets them), and the timing child's multi-rank path (time_rounds on a
simulated GPU under a real process group), merged and judged by each call's slowest rank."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from repo_paths import FIXTURES, ROOT, TESTS

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.collect.process import agents, steps
from aisp_prof.collect.ranks import launch, rank_exec
from aisp_prof.naming import rank_path

pytest.importorskip("torch.distributed.run")
pytestmark = pytest.mark.slow

# each rank: join the group from its launcher's environment, all-reduce a one, write what it saw
RANK_SCRIPT = ("import os, sys, torch, torch.distributed as dist; from aisp_prof.collect.ranks import group; "
               "e = group.from_env(); group.join(e, device='cpu'); t = torch.ones(1); dist.all_reduce(t); "
               "open(sys.argv[1], 'w').write(' '.join(map(str, (e.rank, e.world_size, e.local_rank, int(t.item()), "
               "os.environ.get('AISP_NODE_NAME'), os.environ.get('CUDA_VISIBLE_DEVICES'), "
               "os.environ.get('NCCL_NVLS_ENABLE'))))); group.leave()")


def _lines(run: Path, world: int) -> Path:
    path = run / "x.ranks.json"
    rank_exec.write_rank_commands(path, world, lambda r: [sys.executable, "-c", RANK_SCRIPT,
                                                          str(rank_path(run / "seen.txt", r))])
    return path


def test_two_agents_on_one_host_are_one_job_each_node_in_its_folder(tmp_path):
    run = tmp_path / ".partial-job"
    run.mkdir()
    started = launch.agents(launch.Launch(2, nnodes=2), _lines(run, 4), run, "job-x")
    rc, text, _ = agents.run_agents(started, run / "x.log", steps.child_env())
    assert rc == 0, text[-3000:]
    agents.assemble(run, [a.folder for a in started])
    seen = {}
    for node in ("node0", "node1"):
        for path in sorted((run / node).glob("seen*.txt")):
            rank, world, local, total, name, gpus, nvls = path.read_text().split()
            seen[int(rank)] = (node, int(world), int(local), int(total), name, gpus, nvls)
            assert (run / path.name).read_text() == path.read_text()        # linked into the run folder
    assert sorted(seen) == [0, 1, 2, 3]
    for node in ("node0", "node1"):
        mine = [v for v in seen.values() if v[0] == node]
        assert len(mine) == 2 and {v[2] for v in mine} == {0, 1}             # two local ranks per node
        assert len({v[4] for v in mine}) == 1 and mine[0][4].endswith(node)  # its node name
        assert {v[5] for v in mine} == {"0,1" if node == "node0" else "2,3"}  # its share of the GPUs
    assert {(v[1], v[3], v[6]) for v in seen.values()} == {(4, 4, "0")}      # one group of 4, multicast off


def test_srun_tasks_take_their_rank_from_slurm(tmp_path):
    """What srun starts (launch.slurm_agent's last words) on each task, with the variables srun
    sets: rank_exec picks SLURM_PROCID's line and the group joins with SLURM_NTASKS ranks."""
    lines = _lines(tmp_path, 2)
    agent = launch.slurm_agent(launch.Launch(2, launcher="slurm"), lines, port=launch.free_port(),
                               environ={"MASTER_ADDR": "127.0.0.1"})
    task = agent.argv[agent.argv.index("--export=ALL") + 1:]
    env = {k: v for k, v in steps.child_env().items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    procs = [subprocess.Popen(task, env={**env, **agent.env, "SLURM_PROCID": str(r), "SLURM_NTASKS": "2",
                                         "SLURM_LOCALID": str(r), "SLURM_JOB_ID": "42"},
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    seen = [rank_path(tmp_path / "seen.txt", r).read_text().split()[:4] for r in range(2)]
    assert seen == [["0", "2", "0", "2"], ["1", "2", "1", "2"]]


def test_a_slurm_task_without_the_groups_address_is_one_line(tmp_path):
    lines = _lines(tmp_path, 2)
    env = {k: v for k, v in steps.child_env().items() if k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")}
    proc = subprocess.run([sys.executable, "-m", rank_exec.MODULE, str(lines)], capture_output=True, text=True,
                          env={**env, "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0"}, timeout=120)
    assert proc.returncode != 0 and "MASTER_ADDR" in proc.stderr.strip().splitlines()[-1]


def test_the_timing_child_keeps_ranks_in_step_and_the_slowest_rank_decides(tmp_path):
    out = tmp_path / "timing.json"
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "--log-dir", str(tmp_path / "torchrun"), str(TESTS / "multirank_timing.py"), str(out)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads(rank_path(out, r).read_text()) for r in range(2)]
    rounds = [max(s["round"] for s in rep["samples"]) for rep in reports]
    assert rounds[0] == rounds[1] > 10        # rank 1 alone would have stopped at 10: rank 0 decided for both
    samples = pd.DataFrame(steps.merge_rank_checks(reports)["samples"])
    steady = samples[samples["kind"] == "steady"].groupby(["variant", "rank"])["calls"].unique()
    assert steady["edge"].tolist() == [[3], [3]]             # rank 1 alone would make 2: the ranks agree on 3
    slow = exp.of_kind(samples, "gpu")
    int8 = slow[slow["variant"] == "int8"]
    assert (int8["slowest_rank"] == 1).all()                  # the straggler's time is the call's
    assert 1.08 < int8["time_ns"].median() / samples.query("variant == 'int8' and rank == 0 and kind == 'gpu'")["time_ns"].median() < 1.12


def test_the_planted_int8_slowdown_loads_as_the_real_pair_on_the_cpu(monkeypatch):
    """The fixture is the real pair (same name, sizes, collective sizes) with only int8 replaced;
    on the CPU (a gloo check) it slows nothing."""
    monkeypatch.setenv("AISP_KERNELS", str(FIXTURES / "gate_kernels"))
    from aisp_prof import pairs

    planted = pairs.find("ch14.quantized_allreduce")
    monkeypatch.delenv("AISP_KERNELS")
    real = pairs.find("ch14.quantized_allreduce")
    assert planted.variants["int8"].__name__ == "slowed_int8" and real.variants["int8"] is not planted.variants["int8"]
    assert planted.collective_bytes({"numel": 1 << 20}, 4) == real.collective_bytes({"numel": 1 << 20}, 4)
    assert list(planted.variants) == list(real.variants) and planted.sizes == real.sizes
    assert all(planted.variants[v].__qualname__ == real.variants[v].__qualname__ for v in real.variants if v != "int8")


# a stand-in for the profiled child: writes its rank's report where the child would (rank_path of --out)
CHILD = ("import json, os, sys; from pathlib import Path; from aisp_prof.naming import rank_path; "
         "r = int(os.environ['RANK']); out = rank_path(Path(sys.argv[1]), r); "
         "out.write_text(json.dumps({'ok': True, 'check': {'passed': True, 'checks': [{'variant': 'int8', "
         "'passed': True}]}, 'samples': [{'process': 0, 'round': 0, 'variant': 'int8', 'kind': 'gpu', "
         "'time_ns': 100.0 + r}], 'sensor': {'node': os.environ['AISP_NODE_NAME']}}))")


def test_a_step_through_two_agents_reads_as_one_job(tmp_path):
    """steps.check_step with the launch of two 'nodes': each agent's ranks write into its node
    folder, the run folder gets every rank's file, the merged report holds every rank's samples,
    and rank 0's own report stays as it was in its node folder."""
    folder = tmp_path / ".partial-r"
    folder.mkdir()
    ctx = steps.StepContext(folder, {"run_id": "r"}, world_size=4, launch_plan=launch.Launch(2, nnodes=2))
    report = steps.check_step(ctx, [sys.executable, "-c", CHILD, str(folder / "check.json")], folder / "check.json")
    assert report["check"]["passed"] and len(report["check"]["checks"]) == 4
    assert sorted((s["rank"], s["time_ns"]) for s in report["samples"]) == [(r, 100.0 + r) for r in range(4)]
    assert set(ctx.info["commands"]) == {"check", "check_node1"} and ctx.node_folders == ["node0", "node1"]
    nodes = {n: sorted(p.name for p in (folder / n).glob("check*.json")) for n in ctx.node_folders}
    assert sorted(nodes["node0"] + nodes["node1"]) == ["check.json", "check.rank1.json", "check.rank2.json",
                                                       "check.rank3.json"]
    own = json.loads(next((folder / n / "check.json") for n in nodes if "check.json" in nodes[n]).read_text())
    assert "rank" not in own["samples"][0]                     # the node's file is rank 0's own, not the merge
    assert (folder / "check.log").exists() and (folder / "check.node1.log").exists()


def test_node_one_follows_node_zeros_steps_through_the_board(tmp_path):
    """A real multi-node launch played on one host: node 0 (--node-rank 0) runs a step and posts it,
    node 1 (collect.ranks.follow, in a thread here, another host's `aisp-prof run --node-rank 1` on a
    cluster) starts its own agent for it at the same rendezvous; each node's ranks write into their
    node folder; node 0's done ends node 1's loop."""
    import threading

    from aisp_prof.collect.ranks.follow import Board, follow

    endpoint = f"127.0.0.1:{launch.free_port()}"
    profiles = tmp_path / "profiles"
    folder = profiles / ".partial-r"
    folder.mkdir(parents=True)
    env = steps.child_env()
    followed: dict = {}

    def node_one() -> None:
        try:
            followed["steps"] = follow(launch.Launch(1, nnodes=2, node_rank=1, rdzv_endpoint=endpoint), profiles, env,
                                       agents.run_agents, wait_s=120, poll_s=0.1)
        except Exception as exc:         # noqa: BLE001 - reported by the assertion below
            followed["error"] = exc

    board = Board.open(profiles, endpoint)
    thread = threading.Thread(target=node_one)
    thread.start()
    ctx = steps.StepContext(folder, {"run_id": "r"}, world_size=2,
                            launch_plan=launch.Launch(1, nnodes=2, node_rank=0, rdzv_endpoint=endpoint), board=board)
    report = steps.check_step(ctx, [sys.executable, "-c", CHILD, str(folder / "check.json")], folder / "check.json")
    board.done("ok")
    thread.join(timeout=120)
    assert followed == {"steps": 1}
    assert sorted((s["rank"], s["time_ns"]) for s in report["samples"]) == [(0, 100.0), (1, 101.0)]
    names = {s["rank"]: s for s in report["samples"]}
    assert {n: sorted(p.name for p in (folder / n).glob("check*.json")) for n in ("node0", "node1")} in (
        {"node0": ["check.json"], "node1": ["check.rank1.json"]}, {"node0": ["check.rank1.json"], "node1": ["check.json"]})
    assert (folder / "node1" / "check.log").exists() and len(names) == 2


def test_a_follower_stops_with_node_zeros_failure(tmp_path):
    from aisp_prof.collect.ranks.follow import Board, follow
    from aisp_prof.errors import ProfilerFailedError

    board = Board.open(tmp_path, "head:29500")
    board.done("failed_check")
    with pytest.raises(ProfilerFailedError, match="node 0's run ended failed_check"):
        follow(launch.Launch(1, nnodes=2, node_rank=1, rdzv_endpoint="head:29500"), tmp_path, {}, agents.run_agents,
               wait_s=5, poll_s=0.05)
    stale = tmp_path / "old"
    Board.open(stale, "head:29500")
    (stale / ".aisp-job-head_29500" / "job.json").write_text('{"nonce": "x", "posted_at": 0}')   # an old run's board
    with pytest.raises(ProfilerFailedError, match="posted no job"):
        follow(launch.Launch(1, nnodes=2, node_rank=1, rdzv_endpoint="head:29500"), stale, {}, agents.run_agents,
               wait_s=0.3, poll_s=0.05)
