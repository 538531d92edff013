"""One step's processes: a command run with its output logged into the run folder, or the
torchrun agents of a multi-node step side by side (one failing stops the others, whose ranks
would wait for it until the group's timeout), and the node folders those agents wrote assembled
into the one run folder. `steps` decides what each step runs; this module only runs it.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Sequence

from ..ranks.launch import Agent, removing_scratch


def command_header(cmd: Sequence[str]) -> str:
    """The first line of a step's log: the command line it ran."""
    return "$ " + " ".join(map(str, cmd)) + "\n"


def run_logged(cmd: Sequence[str], log_path: Path, env: dict[str, str]) -> tuple[int, str, float]:
    """Run `cmd` with stdout+stderr into `log_path`; (exit code, log text, wall seconds)."""
    started = time.time()
    with open(log_path, "w") as fh:
        fh.write(command_header(cmd))
        fh.flush()
        proc = subprocess.run(list(cmd), stdout=fh, stderr=subprocess.STDOUT, env=env)
    return proc.returncode, log_path.read_text(errors="replace"), time.time() - started


def run_agents(started: list[Agent], log_path: Path, env: dict[str, str]) -> tuple[int, str, float]:
    """Run the agents of one step side by side, each logged (the first into `log_path`, node n's
    into `<stem>.node<n><suffix>`); when one fails, the others are stopped (their ranks would wait
    for the failed ones until the group's timeout); each agent's scratch folder (torchrun's log
    folder) removed at the end. (first non-zero exit code, the logs, wall s)."""
    with removing_scratch(started):
        if len(started) == 1:
            return run_logged(started[0].argv, log_path, {**env, **started[0].env})
        return _side_by_side(started, log_path, env)


def _side_by_side(started: list[Agent], log_path: Path, env: dict[str, str]) -> tuple[int, str, float]:
    began, procs, logs = time.time(), [], []
    try:
        for agent in started:
            path = log_path if agent is started[0] else log_path.with_name(f"{log_path.stem}.node{agent.node}{log_path.suffix}")
            logs.append(path)
            with open(path, "w") as fh:
                fh.write(command_header(agent.argv))
                fh.flush()
                procs.append(subprocess.Popen(agent.argv, stdout=fh, stderr=subprocess.STDOUT,
                                              env={**env, **agent.env}, start_new_session=True))
        codes = _wait_all(procs)
    finally:
        _stop(procs)
    rc = next((c for c in codes if c != 0), 0)
    return rc, "\n".join(p.read_text(errors="replace") for p in logs), time.time() - began


def _wait_all(procs: list[subprocess.Popen], poll_s: float = 0.2) -> list[int]:
    """Every process's exit code; the first failure stops the rest."""
    while True:
        codes = [p.poll() for p in procs]
        if any(c not in (None, 0) for c in codes) or all(c is not None for c in codes):
            _stop(procs)
            return [p.wait() for p in procs]
        time.sleep(poll_s)


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def assemble(folder: Path, node_folders: list[str]) -> None:
    """What each node's agent wrote into its own folder, linked into the run folder (a rank's files
    carry its rank, so no two nodes' names meet), and each node folder given the run folder's SQLite
    export of every nsys report it holds: each node folder stays importable on its own
    (`import --job` of the node folders), the run folder reads as one job."""
    for name in node_folders:
        node = folder / name
        if not node.is_dir():
            continue
        for path in sorted(node.iterdir()):
            top = folder / path.name
            if path.is_file() and not top.exists() and not top.with_name(top.name + ".gz").exists():
                _link(path, top)              # (a report the run folder keeps gzipped is not linked again)
            if path.name.endswith(".nsys-rep"):
                export = folder / path.name.replace(".nsys-rep", ".sqlite")
                if export.exists() and not (node / export.name).exists():
                    _link(export, node / export.name)


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
