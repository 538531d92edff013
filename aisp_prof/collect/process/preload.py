"""Check and timing processes forked from one that has already imported torch: the gate's start-up.

On the H200 machines `import torch` costs 3.4-4.0 s of a fresh process (2026-11-29: 5.2-5.7 s of CPU,
the Xeon's single thread; the gate's check processes reported `phases_s.import_torch` 3.2-5.6 s of
their 5.5-10 s). The whole-book gate starts ~60 such processes: ~3.5 of its minutes were spent importing
torch again. A child forked from a process that has imported torch (and Triton), and nothing else (no CUDA context,
no allocator, no compiled code, no pair loaded: the server checks `torch.cuda.is_initialized()` before
every fork), starts in ~0.01 s and then does what a fresh process does: creates its own CUDA context
(0.4-0.5 s to its first kernel on an H200), loads the pair, builds its inputs, compiles, checks, times.
What it shares with its siblings is what `import torch` leaves, which a fresh process rebuilds the same,
and what `preload_server` lists: the string hash seed, torch's objects frozen out of the collector.
Python's `random` reseeds itself in a forked child (numpy's global generator, should the server have
created it, is reseeded), so no two children draw the same numbers.

The server (`python -m aisp_prof.collect.process.preload_server`) reads one JSON request a line on stdin (the
child's arguments, environment, working folder and log file), forks, answers the child's pid, waits for
it and answers its exit code: one child at a time, as the gate runs them. The child stays in the
caller's process group (Ctrl-C and a CI job's SIGTERM reach it as they reach a subprocess), dies with
the server (PR_SET_PDEATHSIG), and the server dies with its caller: no process outlives the command.
A request whose environment differs from the server's in anything `import torch` may read (all but the
per-run compile caches, CACHE_VARS) gets a new server started with it. A server that does not say it is
ready within READY_TIMEOUT_S, or dies, serves no more: that step and the rest run as fresh processes.

`serving(env)` makes a server current for a block (the gate's pairs); `steps.StepContext.run` asks
`current()` whether it serves a step's command, and runs it as a fresh process otherwise (profilers,
ranks, a server that could not start, and a pair `paused` for).

Only GPU time is measured in forked children. Host-side time is not the same there: on one H200
(2026-11-29, code 7a6c850) ch14.triton_persistent's baseline, judged by its steady (host-side) time,
came out +13.5% against its evidence in a forked process and -9.2% in a fresh one, one after the other
(+36.2% in a forked process of the whole-book gate; -9.2% to -17.4% in fresh ones on three leases). Why
is not established (one candidate: the interpreter's hot path on pages the fork shares copy-on-write,
split into small pages, where a fresh process has its own). The gate therefore starts the processes of a
pair it judges by latency or steady time (`analyze.gate.rules.gate_kind`) afresh (`paused`); the
GPU-timed pairs (every kernel held behind a spin: the host's speed is not in their time) are forked.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..code.compile_cache import CACHE_VARS
from ..commands import python_module
from .agents import command_header

SERVER_MODULE = "aisp_prof.collect.process.preload_server"
CHILD_MODULE = "aisp_prof.collect.process.child"
LAZY_ENV = frozenset(CACHE_VARS)      # read when the first compile happens, never by `import torch`
READY_TIMEOUT_S = 180.0      # import torch: ~4 s on the GPU machines, far longer from a cold page cache
_current: contextvars.ContextVar["Preloaded | None"] = contextvars.ContextVar("preloaded", default=None)


def current() -> "Preloaded | None":
    """The server of the enclosing `serving` block, if any."""
    return _current.get()


@contextlib.contextmanager
def serving(env: Mapping[str, str], enabled: bool = True) -> Iterator["Preloaded | None"]:
    """A server started now (its import of torch runs while the caller goes on, e.g. building the
    pairs' CUDA libraries) and current inside the block; stopped, with any child of it, when the
    block ends however it ends. `enabled` False, or no os.fork (Windows): no server, every child a fresh
    process."""
    if not enabled or not hasattr(os, "fork"):
        yield None
        return
    server = Preloaded(env)
    token = _current.set(server)
    try:
        yield server
    finally:
        _current.reset(token)
        server.close()


@contextlib.contextmanager
def paused(when: bool = True) -> Iterator[None]:
    """Inside the block (when `when`), no server is current: every child a fresh process. For a pair
    whose gate judges host-side time, which a forked child does not reproduce (see the module's note)."""
    if not when:
        yield
        return
    token = _current.set(None)
    try:
        yield
    finally:
        _current.reset(token)


def import_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of a child's environment that its `import torch` may have read."""
    return {k: v for k, v in env.items() if k not in LAZY_ENV}


class Preloaded:
    """The caller's end of one server: `serves` (can this command be forked from it?) and
    `run_logged` (run it, its output into a log, as `agents.run_logged` runs a fresh process)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.forked = 0                        # children it ran, over every server it started
        self._start(env)

    def _start(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.broken = ""                       # why it cannot serve (then every child is a fresh process)
        self.ready: dict[str, Any] | None = None
        self._errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(python_module(SERVER_MODULE), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._errors, env=self.env, text=True, bufsize=1)

    def serves(self, argv: Sequence[str], env: Mapping[str, str]) -> bool:
        """True when `argv` is a pair child's command of this interpreter and the server, started
        with the same import-time environment (else it is restarted with this one), is up."""
        if list(argv[:3]) != python_module(CHILD_MODULE) or self.broken:
            return False
        if import_env(env) != import_env(self.env):
            self.close()
            self._start(env)
        if self.ready is not None and self.proc.poll() is not None:
            self._break(f"the preloaded torch process ended (exit {self.proc.returncode})")
        return self._wait_ready()

    def _wait_ready(self) -> bool:
        if self.ready is None and not self.broken:
            import select

            assert self.proc.stdout is not None      # nothing else is sent before this first line
            if not select.select([self.proc.stdout], [], [], READY_TIMEOUT_S)[0]:
                self._break(f"it did not import torch within {READY_TIMEOUT_S:.0f} s")
                return False
            reply = self._reply()
            if reply.get("ready"):
                self.ready = reply
            else:
                self._break(reply.get("error") or "it ended while importing torch")
        return not self.broken

    def _reply(self) -> dict[str, Any]:
        """The server's next line; {} at its end (or should a line not be its JSON)."""
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        try:
            return json.loads(line) if line.strip() else {}
        except ValueError:
            return {}

    def _break(self, why: str) -> None:
        self._errors.seek(0)
        tail = self._errors.read().decode(errors="replace").strip().splitlines()[-1:]
        self.broken = f"{why}{': ' + tail[0][:200] if tail else ''}"
        self.close()

    def run_logged(self, argv: Sequence[str], log_path: Path,
                   env: Mapping[str, str]) -> tuple[int, str, float] | None:
        """Fork the child `argv` names, its stdout and stderr into `log_path` after the command line;
        (exit code, log text, wall seconds). None when the server failed it (it died, before or while
        the child ran, which then died with it): the caller runs the step as a fresh process, and
        this server serves no more. Interrupted (Ctrl-C), the child is killed and the server stopped."""
        started = time.time()
        log_path.write_text(command_header(argv))
        request = {"argv": list(argv[3:]), "env": dict(env), "cwd": os.getcwd(), "log": str(log_path)}
        pid, done = 0, {}
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            pid = int(self._reply().get("pid") or 0)
            done = self._reply() if pid else {}
        except OSError:                        # its stdin closed: it has died
            pass
        except BaseException:
            _kill(pid)
            self.close()
            raise
        if "rc" not in done:
            _kill(pid)
            self._break("the preloaded torch process ended" + (" while its child ran" if pid else ""))
            return None
        self.forked += 1
        return int(done["rc"]), log_path.read_text(errors="replace"), time.time() - started

    def close(self) -> None:
        """End the server (its stdin closed: it exits; killed if it does not within 5 s); from then on
        it serves nothing."""
        self.broken = self.broken or "stopped"
        if self.ready is None:                 # still importing (ignoring Ctrl-C): no wait for it
            self.proc.kill()
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self._errors):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.close()


def _kill(pid: int) -> None:
    if pid > 0:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


