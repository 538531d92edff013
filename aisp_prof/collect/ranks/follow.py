"""A real multi-node torchrun job (`aisp-prof run --nnodes N --node-rank K --rdzv-endpoint H:P`): node 0
leads, the other nodes follow its steps.

Every node runs the same command with its own --node-rank and a --profiles-dir on storage all of
them see. Node 0 runs aisp-prof's pipeline (check, timing, ncu: each a torchrun launch) and, for each
launch, posts the step on a board in that folder (`Board`, `.aisp-job-<host>_<port>/`): the file of
the ranks' command lines, the run folder, the rendezvous id. Node K > 0 (`follow`) reads the board
and starts its own agent for each step (its ranks write into the run folder's node<K>/, which node
0 links into the run), until node 0 posts that the run is done, and exits with its outcome. Node 0
stores the run; the followers store nothing. A board is tied to one run by a nonce; a follower takes
only a board posted after it started (or up to STALE_S before), never an older run's.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ...errors import ProfilerFailedError
from .launch import Agent, Launch, agents, node_folder

STALE_S = 120.0           # a board posted this long before the follower started still counts
WAIT_S = 3600.0           # how long a follower waits for the next step (ncu of a large pair takes minutes)


def board_dir(profiles_dir: Path, rdzv_endpoint: str) -> Path:
    return profiles_dir / (".aisp-job-" + re.sub(r"[^A-Za-z0-9]+", "_", rdzv_endpoint))


@dataclass
class Board:
    """Node 0's side: the job posted (`open`), each step (`step`), the end (`done`)."""

    path: Path
    nonce: str
    steps: int = 0

    @classmethod
    def open(cls, profiles_dir: Path, rdzv_endpoint: str) -> "Board":
        path = board_dir(profiles_dir, rdzv_endpoint)
        path.mkdir(parents=True, exist_ok=True)
        for old in path.glob("*.json"):
            old.unlink()
        board = cls(path, secrets.token_hex(8))
        _post(path / "job.json", {"nonce": board.nonce, "posted_at": time.time()})
        return board

    def step(self, name: str, rank_commands: Path, run_dir: Path, rdzv_id: str) -> None:
        _post(self.path / f"step{self.steps}.json", {"nonce": self.nonce, "name": name, "rdzv_id": rdzv_id,
                                                     "rank_commands": str(rank_commands), "run_dir": str(run_dir)})
        self.steps += 1

    def done(self, status: str) -> None:
        _post(self.path / "done.json", {"nonce": self.nonce, "status": status})


def _post(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _wait(find: Callable[[], Any], what: str, wait_s: float, poll_s: float) -> Any:
    until = time.time() + wait_s
    while (found := find()) is None:
        if time.time() > until:
            raise ProfilerFailedError(f"node 0 posted no {what} in {wait_s:.0f} s; is it running with the same "
                                      "--rdzv-endpoint and --profiles-dir?")
        time.sleep(poll_s)
    return found


RunAgents = Callable[[list[Agent], Path, dict[str, str]], tuple[int, str, float]]


def follow(launch: Launch, profiles_dir: Path, env: dict[str, str], run_agents: RunAgents,
           progress: Callable[[str], None] = lambda m: None, wait_s: float = WAIT_S, poll_s: float = 0.5) -> int:
    """Node `launch.node_rank`'s part of node 0's run: its agent for each step node 0 posts, run by
    `run_agents` (collect.process.agents.run_agents). Returns how many steps it took part in;
    ProfilerFailedError when a step of its own or node 0's run failed."""
    path, since = board_dir(profiles_dir, str(launch.rdzv_endpoint)), time.time() - STALE_S
    job = _wait(lambda: (j if (j := _read(path / "job.json")) and j.get("posted_at", 0) >= since else None),
                "job", wait_s, poll_s)
    nonce, seq = job["nonce"], 0
    mine = lambda d: d if d and d.get("nonce") == nonce else None                       # noqa: E731
    while True:
        post = _wait(lambda: mine(_read(path / f"step{seq}.json")) or mine(_read(path / "done.json")),
                     f"step {seq}", wait_s, poll_s)
        if "status" in post:
            if post["status"] != "ok":
                raise ProfilerFailedError(f"node 0's run ended {post['status']}")
            return seq
        run_dir = Path(post["run_dir"])
        progress(f"node {launch.node_rank}: {post['name']} (step {seq})")
        started = agents(launch, Path(post["rank_commands"]), run_dir, post["rdzv_id"])
        logs = run_dir / node_folder(int(launch.node_rank or 0))
        logs.mkdir(parents=True, exist_ok=True)
        rc, text, _ = run_agents(started, logs / f"{post['name']}.log", env)
        if rc != 0:
            raise ProfilerFailedError(f"node {launch.node_rank}'s agent for {post['name']} exited {rc}: "
                                      f"{text.strip().splitlines()[-1][:300] if text.strip() else ''}")
        seq += 1
