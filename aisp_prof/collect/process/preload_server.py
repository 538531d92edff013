"""The preloaded torch process of `collect.process.preload`: `python -m aisp_prof.collect.process.preload_server`.

It imports torch (and the pair child's modules, and Triton where it is installed) once, says it is ready, then
forks one child per request line on stdin and answers the child's pid and, when it ends, its exit code. Each child becomes what `python
-m aisp_prof.collect.process.child ARGS` would be, as far as its work can tell: the request's environment,
folder and log as stdin-less stdout and stderr, the signal handlers a fresh interpreter starts with (a
signal the caller ignored stays ignored, as across an exec), only fds 0-2, its exit through the
interpreter's own steps (non-daemon threads joined, exit handlers run; an uncaught Ctrl-C ends it by SIGINT,
exit -2). What it cannot be: its string hash seed is the server's (every child of one server orders a set of
strings the same way; fresh processes each draw one), the objects `import torch` made are frozen out of its
garbage collector (`gc.freeze`), and `__main__` is this module.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import warnings
from typing import Any

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """SIGKILL this process when the one that started it ends (Linux; elsewhere nothing)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _send(fd: int, message: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())


def serve() -> int:
    """The server: import torch once, then fork one child per request line until stdin ends."""
    _die_with_parent()
    # what a fresh child would start with: Python's Ctrl-C handler, SIG_DFL for SIGTERM, but a signal the caller
    # ignored (a gate started in the background: `cmd &` ignores SIGINT) stays ignored, as across an exec
    inherited = {sig: signal.getsignal(sig) == signal.SIG_IGN for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in (signal.SIGINT, signal.SIGTERM):     # it ends with its stdin or its caller, not a group signal
        signal.signal(sig, signal.SIG_IGN)
    replies = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)                                # what imports print must not mix with the replies
    os.close(null)
    began = time.perf_counter()
    try:
        import gc

        import torch

        from . import child as child_module       # noqa: F401  (its imports, too, paid once)
        with contextlib.suppress(Exception):      # every GPU-timed child builds the hold kernel (timing.hold);
            import triton.language                # noqa: F401  a broken Triton is the child's to report
    except BaseException as exc:                  # noqa: BLE001 (said to the caller, who runs fresh processes)
        _send(replies, {"ready": False, "error": f"import failed: {type(exc).__name__}: {exc}"})
        return 1
    gc.collect()
    gc.freeze()             # a child's collections leave torch's objects alone (their refcounts still change)
    me = os.getpid()
    _send(replies, {"ready": True, "torch": torch.__version__, "import_s": round(time.perf_counter() - began, 3)})
    for line in sys.stdin:
        if torch.cuda.is_initialized():           # never: nothing here touches CUDA; a child would inherit it
            _send(replies, {"error": "CUDA was initialized in the preloaded process"})
            return 1
        request = json.loads(line)
        with warnings.catch_warnings():            # 3.12 warns of forking beside native threads (OpenBLAS's
            warnings.simplefilter("ignore", DeprecationWarning)     # own, fork-safe); as an error it would
            pid = os.fork()                                          # kill this process after the fork
        if pid == 0:
            os.close(replies)
            _child(request, me, inherited)
        _send(replies, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        _send(replies, {"pid": pid, "rc": os.waitstatus_to_exitcode(status)})
    return 0


def _child(request: dict[str, Any], server: int, ignored: dict[int, bool]) -> None:
    """In the forked child: the request's files, environment, folder and signals, then the child's
    main as `python -m aisp_prof.collect.process.child ARGS` would run it, exit handlers included.
    Never returns."""
    code: Any = 1
    interrupted = False
    try:
        _die_with_parent()
        if os.getppid() != server:                # the server died before the line above: no orphan
            os._exit(1)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        for fd, target in ((null, 0), (log, 1), (log, 2)):
            os.dup2(fd, target)
        os.close(null)
        os.close(log)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        signal.signal(signal.SIGINT, signal.SIG_IGN if ignored[signal.SIGINT] else signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_IGN if ignored[signal.SIGTERM] else signal.SIG_DFL)
        _reseed()
        from . import child as child_module

        sys.argv = [child_module.__file__, *request["argv"]]
        code = child_module.main(list(request["argv"]))
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        interrupted = True
    except BaseException:                         # noqa: BLE001 (as the interpreter would: traceback, exit 1)
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        code = _finish(code)
        if interrupted:                           # as CPython ends on an uncaught Ctrl-C: by SIGINT itself
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(code)


def _reseed() -> None:
    """numpy's global generator, had the server's imports created it (torch 2.11-2.13 leave numpy.random
    unimported: each child then seeds its own on import, as a fresh process does)."""
    random_module = sys.modules.get("numpy.random")
    if random_module is not None:
        random_module.seed()


def _finish(code: Any) -> int:
    """What the interpreter does at exit: join the non-daemon threads (and concurrent.futures' workers),
    run the exit handlers, flush; the exit code of `code`."""
    import atexit
    import threading

    for step in (threading._shutdown, atexit._run_exitfuncs):    # type: ignore[attr-defined]
        with contextlib.suppress(BaseException):
            step()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(BaseException):
        print(code, file=sys.stderr)
        sys.stderr.flush()
    return 1


if __name__ == "__main__":
    sys.exit(serve())
