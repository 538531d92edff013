"""How the ranks of a multi-rank collection are started, as pure functions of a `Launch` (tested
without a GPU): each returns the `Agent`s to start on this host, their command lines and the
environment each adds.

  - one node (the default): one torchrun agent, `--standalone` (a free local port);
  - `nnodes` > 1 on one host (no `node_rank`): one torchrun agent per "node", all here, meeting at a
    c10d rendezvous (`rdzv_endpoint`, default 127.0.0.1 on a free port), the GPUs split between them
    through CUDA_VISIBLE_DEVICES, each with its own node name (AISP_NODE_NAME, which the nsys exports
    record, so `import --job` keeps the "hosts" apart) and its own folder under the run folder
    (AISP_NODE_DIR: `rank_exec.relocate` points its ranks' files there, as on shared storage);
  - `node_rank` given: only that node's agent starts here (a real multi-node job; every node runs
    the same `aisp-prof run` with its own --node-rank);
  - `launcher="slurm"`: one `srun` inside the allocation, a task per rank; ranks from SLURM_PROCID,
    SLURM_LOCALID (`group.from_env`), the process group's address from MASTER_ADDR/MASTER_PORT.

Every agent's environment turns NVLink multicast off (MULTICAST_OFF), as the GPU machines ask.
Every torchrun agent keeps its log folder (`--log-dir`, per-rank folders nobody reads) beside its
rank commands, as `Agent.scratch`, which `agents.run_agents` removes when the step ends: without it
torchrun made a /tmp/torchelastic_* folder per launch and left it there.
"""
from __future__ import annotations

import contextlib
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from ...errors import ArgumentError
from ..commands import python_module

MODULE = "aisp_prof.collect.ranks.rank_exec"
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
NODE_NAME_ENV = "AISP_NODE_NAME"     # the node name an agent's ranks carry (nsys records it)
NODE_DIR_ENV = "AISP_NODE_DIR"       # the folder an agent's ranks write into
RUN_DIR_ENV = "AISP_RUN_DIR"         # ... instead of this one (rank_exec.relocate)
LAUNCHERS = ("torchrun", "slurm")
DEFAULT_PORT = 29500


@dataclass(frozen=True)
class Launch:
    """Where the ranks run: `nproc_per_node` ranks (one GPU each) on each of `nnodes` nodes."""

    nproc_per_node: int
    nnodes: int = 1
    node_rank: int | None = None          # None with nnodes > 1: every node's agent starts on this host
    rdzv_endpoint: str | None = None      # HOST:PORT of the c10d rendezvous (Slurm: MASTER_ADDR:MASTER_PORT)
    launcher: str = "torchrun"

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes

    @property
    def one_host(self) -> bool:
        """Every rank on this host (one node, or several agents standing in for nodes)."""
        return self.launcher == "torchrun" and self.node_rank is None

    def gpus_here(self) -> int:
        """GPUs this host needs."""
        return self.world_size if self.one_host else self.nproc_per_node

    def check(self) -> "Launch":
        """The launch itself, or an ArgumentError (exit 2: options at odds) naming what does not fit."""
        if self.launcher not in LAUNCHERS:
            raise ArgumentError(f"unknown launcher {self.launcher!r}: one of {', '.join(LAUNCHERS)}")
        if self.nnodes < 1 or self.nproc_per_node < 1:
            raise ArgumentError("--nnodes and --nproc-per-node must be at least 1")
        if self.node_rank is not None and not 0 <= self.node_rank < self.nnodes:
            raise ArgumentError(f"--node-rank {self.node_rank} is not a node of --nnodes {self.nnodes}")
        if self.node_rank is not None and self.nnodes > 1 and not self.rdzv_endpoint:
            raise ArgumentError("--node-rank needs --rdzv-endpoint HOST:PORT, the same on every node")
        if self.rdzv_endpoint:
            endpoint(self.rdzv_endpoint)
        return self


def endpoint(text: str) -> tuple[str, int]:
    """'host:29500' -> ('host', 29500); ArgumentError for anything else."""
    host, _, port = text.rpartition(":")
    if not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise ArgumentError(f"--rdzv-endpoint {text!r} is not HOST:PORT (e.g. 127.0.0.1:29500)")
    return host, int(port)


@dataclass(frozen=True)
class Agent:
    """One launcher process started here: its command line, what it adds to the environment, and
    the folder (under the run folder) its ranks write into ('' = the run folder itself)."""

    node: int
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    folder: str = ""
    scratch: str = ""        # a folder the launcher writes and nobody reads (torchrun's --log-dir): removed after


@contextlib.contextmanager
def removing_scratch(started: Sequence[Agent]) -> Iterator[None]:
    """Each agent's scratch folder (torchrun's log folder) removed when the step ends, however it ends."""
    try:
        yield
    finally:
        for agent in started:
            if agent.scratch:
                shutil.rmtree(agent.scratch, ignore_errors=True)


def node_folder(node: int) -> str:
    return f"node{node}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def agents(launch: Launch, rank_commands: Path, run_dir: Path, job_id: str,
           visible: Sequence[str] | None = None, port: int | None = None) -> list[Agent]:
    """The agents to start on this host for one step. `visible`: the GPUs this host may use (its
    CUDA_VISIBLE_DEVICES, else 0..n-1); `port`: the rendezvous port when none is given (a free one)."""
    launch.check()
    if launch.launcher == "slurm":
        return [slurm_agent(launch, rank_commands, port)]
    if launch.nnodes == 1:
        return [Agent(0, torchrun_argv(launch, rank_commands), dict(MULTICAST_OFF),
                      scratch=str(torchrun_log_dir(rank_commands)))]
    rdzv = launch.rdzv_endpoint or f"127.0.0.1:{port or free_port()}"
    nodes = range(launch.nnodes) if launch.node_rank is None else [launch.node_rank]
    gpus = list(visible) if visible is not None else [str(i) for i in range(launch.gpus_here())]
    out = []
    for i, node in enumerate(nodes):
        env = {**MULTICAST_OFF, NODE_NAME_ENV: f"{socket.gethostname()}-{node_folder(node)}",
               NODE_DIR_ENV: str(run_dir / node_folder(node)), RUN_DIR_ENV: str(run_dir)}
        if launch.one_host:       # several agents on one host: each its own share of the GPUs
            env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus[i * launch.nproc_per_node:(i + 1) * launch.nproc_per_node])
        out.append(Agent(node, torchrun_argv(launch, rank_commands, node, rdzv, job_id), env, node_folder(node),
                         str(torchrun_log_dir(rank_commands, node))))
    return out


def torchrun_argv(launch: Launch, rank_commands: Path, node: int = 0, rdzv: str | None = None,
                  job_id: str = "") -> list[str]:
    """torchrun for one agent: `--standalone` on one node (a rendezvous on a free local port, so two
    runs on one host never collide); else c10d at `rdzv` with this agent's node rank, no restarts
    (a failed rank fails the step); its log folder `torchrun_log_dir`. torchrun, "Single-node
    multi-worker" and "Multi-node": https://pytorch.org/docs/stable/elastic/run.html"""
    if launch.nnodes == 1:
        head = ["--standalone", "--nproc-per-node", str(launch.nproc_per_node)]
    else:
        head = ["--nnodes", str(launch.nnodes), "--nproc-per-node", str(launch.nproc_per_node),
                "--node-rank", str(node), "--rdzv-backend", "c10d", "--rdzv-endpoint", str(rdzv),
                "--rdzv-id", job_id, "--max-restarts", "0"]
    head += ["--log-dir", str(torchrun_log_dir(rank_commands, node))]
    return python_module("torch.distributed.run", *head, "-m", MODULE, str(rank_commands))


def torchrun_log_dir(rank_commands: Path, node: int = 0) -> Path:
    """torchrun's log folder for one agent, beside the step's rank commands ('.torchrun-check-node0'
    in the run folder): given, torchrun writes there instead of a /tmp/torchelastic_* folder it
    never removes. One per node, so agents on shared storage never remove each other's."""
    step = rank_commands.name.split(".")[0]
    return rank_commands.with_name(f".torchrun-{step}-node{node}")


def slurm_agent(launch: Launch, rank_commands: Path, port: int | None = None,
                environ: Mapping[str, str] | None = None) -> Agent:
    """One srun inside the allocation: a task per rank, `nproc_per_node` per node, each running its
    line of `rank_commands` (rank = SLURM_PROCID); the process group meets at MASTER_ADDR:MASTER_PORT
    (from --rdzv-endpoint, else this host: sbatch runs its script on the allocation's first node)."""
    import os

    environ = os.environ if environ is None else environ
    host, given = endpoint(launch.rdzv_endpoint) if launch.rdzv_endpoint else (
        environ.get("MASTER_ADDR") or socket.gethostname(), int(environ.get("MASTER_PORT") or port or DEFAULT_PORT))
    argv = ["srun", f"--nodes={launch.nnodes}", f"--ntasks={launch.world_size}",
            f"--ntasks-per-node={launch.nproc_per_node}", "--kill-on-bad-exit=1", "--export=ALL",
            *python_module(MODULE, str(rank_commands))]
    return Agent(0, argv, {**MULTICAST_OFF, "MASTER_ADDR": host, "MASTER_PORT": str(given)})
