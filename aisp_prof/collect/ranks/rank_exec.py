"""What torchrun starts on each rank of a multi-rank collection: that rank's own command.

torchrun gives every rank the same command line; the collection needs them to differ (nsys
writes each rank's report under its own name, ncu watches one chosen rank only, since replaying
one rank's NCCL kernel while its peers run on would wait forever). The runner writes each rank's
command line into a JSON file of the run folder (`write_rank_commands`), and torchrun starts
`python -m aisp_prof.collect.ranks.rank_exec FILE` on every rank, which replaces itself with the line
for its RANK: no shell, the command lines stay visible in the run folder, signals reach the
profiler directly. Under srun the rank is SLURM_PROCID. An agent standing in for one node of
several (`launch.agents`) gives its ranks a folder of their own (AISP_NODE_DIR): `relocate` moves
every path under the run folder there, as each node would write to shared storage.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable, Mapping

from .launch import NODE_DIR_ENV, RUN_DIR_ENV

MODULE = "aisp_prof.collect.ranks.rank_exec"


def write_rank_commands(path: Path, world_size: int, command_of: Callable[[int], list[str]]) -> dict[int, list[str]]:
    """Each rank's command line, into `path` (JSON: {"0": [...], "1": [...]}); returned too."""
    commands = {rank: [str(a) for a in command_of(rank)] for rank in range(world_size)}
    path.write_text(json.dumps({str(r): c for r, c in commands.items()}, indent=1))
    return commands


def torchrun_command(world_size: int, rank_commands: Path) -> list[str]:
    """torchrun on this host, `world_size` ranks, each running its line of `rank_commands`
    (`launch.torchrun_argv` of one node: --standalone)."""
    from .launch import Launch, torchrun_argv

    return torchrun_argv(Launch(world_size), rank_commands)


def command_for(rank_commands: dict[str, list[str]], environ: Mapping[str, str]) -> list[str]:
    """The command of this process's rank: RANK (torchrun), else SLURM_PROCID (srun); its paths
    relocated into the agent's node folder when it has one (`relocate`)."""
    rank = environ.get("RANK", environ.get("SLURM_PROCID"))
    if rank is None or rank not in rank_commands:
        raise SystemExit(f"rank_exec: RANK={rank!r} has no command in this file "
                         f"(ranks {', '.join(sorted(rank_commands))}); start it through torchrun or srun")
    return relocate(rank_commands[rank], environ.get(RUN_DIR_ENV), environ.get(NODE_DIR_ENV))


def relocate(cmd: list[str], run_dir: str | None, node_dir: str | None) -> list[str]:
    """`cmd` with every argument under `run_dir` moved under `node_dir` (the same relative path);
    unchanged without both."""
    if not run_dir or not node_dir:
        return list(cmd)
    prefix = run_dir.rstrip("/") + "/"
    return [node_dir.rstrip("/") + "/" + a[len(prefix):] if a.startswith(prefix) else a for a in cmd]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise SystemExit("usage: python -m aisp_prof.collect.ranks.rank_exec RANK_COMMANDS.json (under torchrun)")
    cmd = command_for(json.loads(Path(args[0]).read_text()), dict(os.environ))
    if os.environ.get(NODE_DIR_ENV):
        Path(os.environ[NODE_DIR_ENV]).mkdir(parents=True, exist_ok=True)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
