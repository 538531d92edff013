"""The profiled child as one rank of a torchrun job (pairs with world_size > 1).

torchrun starts one child per GPU with RANK, WORLD_SIZE and LOCAL_RANK in its environment; the
child then joins the NCCL process group before it builds inputs, so that a pair's factories can
call `torch.distributed`. Every rank runs the same calls in the same order (the check, the
timing, the nsys capture): a collective on one rank waits for the others. Two things would break
that order, and this module holds both answers:
  - reports: each rank writes its own (rank 0 the file the single-process runner reads, rank r
    `<name>.rank<r>.<ext>` beside it: `naming.rank_path`);
  - the timing's stop rule (a time budget, a confidence target) reads each rank's own clock and
    samples: `agree` makes rank 0's decision everyone's, or the ranks would leave the timing loop
    at different rounds and the next collective would hang.
torch is imported inside the functions: importing this module needs no torch.
"""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import Mapping

TIMEOUT_S = 300       # a rank that waits longer for the others fails instead of hanging the run


@dataclass(frozen=True)
class RankEnv:
    """Where this process sits in the job (torchrun's environment variables)."""

    rank: int
    world_size: int
    local_rank: int


# (rank, world size, local rank) as each launcher names them; torchrun's first (torchrun under srun
# also sees srun's), then srun's own tasks (`launch.slurm_agent`)
LAUNCHER_ENV = (("RANK", "WORLD_SIZE", "LOCAL_RANK"), ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"))


def from_env(environ: Mapping[str, str] = os.environ) -> RankEnv | None:
    """This process's rank, or None when it is not one of several (no world size, or 1): torchrun's
    RANK/WORLD_SIZE/LOCAL_RANK, else srun's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID."""
    for rank_name, world_name, local_name in LAUNCHER_ENV:
        if environ.get(world_name):
            world = int(environ[world_name])
            if world <= 1:
                return None
            rank = int(environ.get(rank_name, "0"))
            return RankEnv(rank, world, int(environ.get(local_name, str(rank))))
    return None


def join(env: RankEnv, device: str = "cuda") -> None:
    """Select this rank's GPU and join the process group (NCCL on GPUs, gloo on the CPU)."""
    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=TIMEOUT_S)
    if device == "cuda":
        torch.cuda.set_device(env.local_rank)
        _address_from_slurm()
        dist.init_process_group("nccl", rank=env.rank, world_size=env.world_size, timeout=timeout,
                                device_id=torch.device("cuda", env.local_rank))
    else:
        _address_from_slurm()
        dist.init_process_group("gloo", rank=env.rank, world_size=env.world_size, timeout=timeout)


def _address_from_slurm() -> None:
    """torchrun sets MASTER_ADDR/MASTER_PORT; an srun task has them from `launch.slurm_agent`'s
    environment. Without them the process group cannot meet: one line, not a hang."""
    if "MASTER_ADDR" not in os.environ or "MASTER_PORT" not in os.environ:
        raise SystemExit("this rank has no MASTER_ADDR/MASTER_PORT: start it through torchrun, or srun from "
                         "`aisp-prof run --launcher slurm` (which sets them)")


def leave() -> None:
    """Leave the process group (NCCL warns at exit otherwise)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def in_group() -> bool:
    """Whether this process is one rank of a joined process group."""
    import torch.distributed as dist

    return bool(dist.is_available() and dist.is_initialized())


def agree(stop: bool) -> bool:
    """Rank 0's `stop`, on every rank; `stop` itself outside a process group."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return stop
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    flag = torch.tensor([1 if stop else 0], dtype=torch.int32, device=device)
    dist.broadcast(flag, src=0)
    return bool(flag.item())


def agree_max(value: int) -> int:
    """The largest `value` of all ranks, on every rank; `value` itself outside a process group.
    Counts a rank derives from its own measurements (the calls of a steady sample, from its own
    latency estimate: 2 on one rank and 3 on another at ~0.5 ms a call) must be one number, or
    one rank makes a collective call the others never make, and the job hangs."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return value
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    count = torch.tensor([int(value)], dtype=torch.int64, device=device)
    dist.all_reduce(count, op=dist.ReduceOp.MAX)
    return int(count.item())


def barrier() -> None:
    """Wait for every rank (nothing outside a process group). Before the profiled iterations:
    ranks leave the warm-up at different moments (each built its own inputs and closures), and
    the first collective would otherwise spin, on the early rank, for as long as the late one
    took (13.9 ms on the first 2-rank capture, tests/fixtures/multigpu_h100x2)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
