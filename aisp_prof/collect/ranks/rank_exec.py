"""What torchrun starts on each rank of a multi-rank collection: that rank's own command.

torchrun gives every rank the same command line; the collection needs them to differ (nsys
writes each rank's report under its own name, ncu watches one chosen rank only, since replaying
one rank's NCCL kernel while its peers run on would wait forever). The runner writes each rank's
command line into a JSON file of the run folder (`write_rank_commands`), and torchrun starts
`python -m aisp_prof.collect.ranks.rank_exec FILE` on every rank, which replaces itself with the line
for its RANK: no shell, the command lines stay visible in the run folder, signals reach the
profiler directly.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable

from ..commands import python_module

MODULE = "aisp_prof.collect.ranks.rank_exec"


def write_rank_commands(path: Path, world_size: int, command_of: Callable[[int], list[str]]) -> dict[int, list[str]]:
    """Each rank's command line, into `path` (JSON: {"0": [...], "1": [...]}); returned too."""
    commands = {rank: [str(a) for a in command_of(rank)] for rank in range(world_size)}
    path.write_text(json.dumps({str(r): c for r, c in commands.items()}, indent=1))
    return commands


def torchrun_command(world_size: int, rank_commands: Path) -> list[str]:
    """torchrun on this host, `world_size` ranks, each running its line of `rank_commands`.

    --standalone: a rendezvous on a free local port, so two runs on one host never collide
    (torchrun, "Single-node multi-worker": https://pytorch.org/docs/stable/elastic/run.html)."""
    return python_module("torch.distributed.run", "--standalone", "--nproc-per-node", str(world_size),
                         "-m", MODULE, str(rank_commands))


def command_for(rank_commands: dict[str, list[str]], environ: dict[str, str]) -> list[str]:
    """The command of this process's RANK (set by torchrun)."""
    rank = environ.get("RANK")
    if rank is None or rank not in rank_commands:
        raise SystemExit(f"rank_exec: RANK={rank!r} has no command in this file "
                         f"(ranks {', '.join(sorted(rank_commands))}); start it through torchrun")
    return rank_commands[rank]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise SystemExit("usage: python -m aisp_prof.collect.ranks.rank_exec RANK_COMMANDS.json (under torchrun)")
    cmd = command_for(json.loads(Path(args[0]).read_text()), dict(os.environ))
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
