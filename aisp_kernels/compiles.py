"""Running nvcc: how many compiles at once, and stopping them all.

aisp_kernels.build decides what to compile (a library, or its parts) and where the result goes;
this module runs the compiles. Every nvcc a process starts, for whichever library or part, waits
for one of `nvcc_slots()` (CPUs, and memory at ~4 GB a compile), so a library's parts and the
prebuild's parallel libraries together never overcommit the machine. A failed compile or an
interrupt kills the others with every process under them (nvcc runs cudafe++, cicc, ptxas and the
host compiler as children, which a signal to nvcc alone leaves running), and `halt_compiles` does
the same for a caller whose worker threads wait on builds (the prebuild).
"""
from __future__ import annotations

import logging
import os
import re
import shlex
import signal
import subprocess
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path

from aisp_prof import tools
from aisp_prof.errors import BuildError

log = logging.getLogger(__name__)

PART_PEAK_BYTES = 4 << 30                       # one part's cicc at its peak (a CUTLASS kernel: ~3.6 GB)


def first_error_line(output: str) -> str:
    """The line of nvcc's output that says what went wrong: the first error, else the first fatal,
    else the last."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for pattern in (r"\berror\b", r"\bfatal\b"):
        for ln in lines:
            if re.search(pattern, ln, re.IGNORECASE):
                return ln
    return lines[-1] if lines else "(nvcc printed nothing)"


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def nvcc_slots(cpus: int | None = None, available: int | None = None) -> int:
    """How many nvcc compiles one process runs at once, whatever asked for them (the prebuild's
    libraries, a library's parts): no more than the CPUs, nor than the available memory holds at a
    compile's peak (PART_PEAK_BYTES each: more would swap or wake the OOM killer); at least one."""
    cpus = _cpus() if cpus is None else cpus
    if available is None:
        available = _available_memory()
    by_memory = available // PART_PEAK_BYTES if available is not None else cpus
    return max(1, min(cpus, by_memory))


_SLOTS: list[threading.Semaphore] = []          # made on the first build, sized by nvcc_slots()
_SLOTS_LOCK = threading.Lock()


def _slots() -> threading.Semaphore:
    with _SLOTS_LOCK:
        if not _SLOTS:
            _SLOTS.append(threading.Semaphore(nvcc_slots()))
        return _SLOTS[0]


_available_memory = tools.available_memory          # a name of this module's, for tests to replace

_HALTED = threading.Event()                       # halt_compiles(): none starts, the running ones are killed
_RUNNING: set[subprocess.Popen[str]] = set()      # every nvcc this process runs now
_RUNNING_LOCK = threading.Lock()


def halt_compiles() -> None:
    """Kill every nvcc this process runs now, with the processes under it, and start none until
    `resume_compiles()`: for a caller whose worker threads wait on builds (the prebuild) and that is
    stopped by a signal to its own pid (`kill PID`); a terminal's Ctrl-C reaches nvcc by itself."""
    with _RUNNING_LOCK:
        _HALTED.set()
        running = list(_RUNNING)
    _stop(running)


def resume_compiles() -> None:
    _HALTED.clear()


def run_all(commands: list[list[str]], source: Path, env: dict[str, str] | None = None) -> None:
    """Run nvcc `commands` at once, each when one of the process's nvcc slots is free (`nvcc_slots`);
    BuildError naming the first that failed. A failure or an interrupt kills the others (their whole
    process trees, waited for) and starts no more: no nvcc outlives its build. `env`: theirs."""
    started: list[subprocess.Popen[str]] = []
    lock, stopping = threading.Lock(), threading.Event()

    def one(cmd: list[str]) -> None:
        with _slots():
            with lock, _RUNNING_LOCK:
                if stopping.is_set():
                    return
                if _HALTED.is_set():
                    raise BuildError(f"the build of {source.name} was stopped before nvcc started")
                # in the caller's process group: a terminal's Ctrl-C or a CI timeout reaches nvcc's stages too
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                started.append(proc)
                _RUNNING.add(proc)
            try:
                out, err = proc.communicate()
            finally:
                with _RUNNING_LOCK:
                    _RUNNING.discard(proc)
            if proc.returncode == 0:
                return
            with lock:                   # set before the slot is given back: a waiting part starts nothing
                if _HALTED.is_set():
                    raise BuildError(f"the build of {source.name} was stopped (halt_compiles)")
                if stopping.is_set():
                    return               # stopped by another's failure or an interrupt: not the error to say
                stopping.set()
        output = err + out
        log.error("nvcc output for %s:\n%s", source, output)
        error = BuildError(f"nvcc could not build {source.name}: {first_error_line(output)} "
                           f"(command: {shlex.join(cmd)})")
        error.nvcc_output = output  # type: ignore[attr-defined]
        raise error

    pool = ThreadPoolExecutor(max_workers=len(commands), thread_name_prefix="aisp-nvcc")
    try:
        futures = [pool.submit(one, cmd) for cmd in commands]
        while not all(f.done() for f in futures):
            wait(futures, timeout=0.2, return_when=FIRST_EXCEPTION)     # a timeout: Ctrl-C is seen here
            for future in futures:
                if future.done():
                    future.result()      # the first failure, in the parts' order
    except BaseException:
        with lock:
            stopping.set()
        _stop(started)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    """Kill each running compile with every process under it, and wait for it. nvcc runs its stages
    (cudafe++, cicc, ptxas, the host compiler) as children, which a signal to nvcc alone leaves
    running; so each process is frozen (SIGSTOP: it starts nothing more) before its children are
    looked for, and the whole frozen tree is then killed, even if a second interrupt comes between."""
    procs = [proc for proc in procs if proc.poll() is None]
    frozen: list[int] = []
    try:
        for proc in procs:
            _freeze_tree(proc.pid, frozen)
    finally:
        for pid in [*frozen, *(proc.pid for proc in procs)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for proc in procs:
            proc.wait()


def _freeze_tree(root: int, frozen: list[int]) -> None:
    """SIGSTOP `root` and, breadth first, every process under it (each frozen before its own children
    are read, so none is started unseen), each pid added to `frozen` as it is stopped."""
    queue = [root]
    while queue:
        pid = queue.pop(0)
        try:
            os.kill(pid, signal.SIGSTOP)
        except (ProcessLookupError, PermissionError):
            continue
        frozen.append(pid)
        queue += _children(pid)


def _children(pid: int) -> list[int]:
    """The pids whose parent is `pid` (Linux /proc; none where it cannot be read)."""
    tasks = list(Path(f"/proc/{pid}/task").glob("*/children"))     # each thread's children
    if tasks:
        found = []
        for task in tasks:
            try:
                found += [int(x) for x in task.read_text().split()]
            except (OSError, ValueError):
                continue
        return found
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found
