"""`aisp-prof`: a thin click layer over the library (`aisp_prof.api`).

Each command parses options, makes one library call and prints; library errors become one
line on stderr and the error's own exit code (see aisp_prof.errors). Commands import what they
use when they run, so `aisp-prof runs` does not pay for matplotlib or torch.
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
from typing import Any

import click

from .. import __version__
from ..errors import INTERRUPTED_EXIT_CODE
from .bench import bench_group
from .check import check_cmd
from .code import code_cmd
from .common import AispGroup, db_option, json_option, wide_option
from .own import diff_cmd, new_cmd
from .profile import calibrate_cmd, quickstart_cmd, run_cmd
from .ranks import ranks_cmd, samples_cmd
from .report import compare_cmd, report_cmd, roofline_cmd
from .sanitize import sanitize_cmd
from .runs import history_cmd, import_cmd, kernels_cmd, list_cmd, ranges_cmd, rm_cmd, runs_cmd, summary_cmd

EXAMPLES = """
\b
Examples:
  aisp-prof list                          # the pairs, and whether each runs here
  aisp-prof run ch09.fused_l2norm         # check, profile (ncu + nsys), store, summarize
  aisp-prof check ch10 --fuzz 20          # correctness at 20 shapes per pair, no profiler
  aisp-prof import profiles/samples/*/    # store saved runs/exports, no GPU needed
  aisp-prof summary latest                # per-variant summary of the newest run
  aisp-prof samples latest --kind steady  # every timed call's statistics, per variant (--rounds: each)
  aisp-prof kernels latest --json         # one record per profiled kernel launch
  aisp-prof report latest --open          # HTML report (offline, one page per pair)
  aisp-prof code latest --show sass       # what torch.compile / Triton generated, per kernel
  aisp-prof diff RUN_A RUN_B              # two runs of one pair: what moved, with a verdict
  aisp-prof new mine.fused_relu           # a template pair of your own (then: run mine/fused_relu.py)
"""


@click.group(cls=AispGroup, epilog=EXAMPLES)
@click.version_option(__version__, prog_name="aisp-prof")
@click.option("-v", "--verbose", is_flag=True, help="Log what the library does (to stderr).")
@lambda f: db_option(f, expose_value=False)
@lambda f: json_option(f, expose_value=False)
@wide_option
def cli(verbose: bool) -> None:
    """Profile baseline/optimized GPU kernel pairs with Nsight Compute and Nsight Systems,
    store the runs in SQLite, and read them back anywhere, GPU or not.

    --db, --json and --wide may come before the subcommand or after it. Tables fit the
    terminal (120 columns when output is not a terminal, or $COLUMNS): long cells wrap or are
    cut and low-priority columns are hidden, with a line saying which; --wide prints all."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="aisp-prof: %(levelname)s: %(message)s", stream=sys.stderr)


for _command in (list_cmd, run_cmd, check_cmd, import_cmd, rm_cmd, runs_cmd, kernels_cmd, ranges_cmd, ranks_cmd,
                 samples_cmd, summary_cmd, quickstart_cmd, roofline_cmd, calibrate_cmd, report_cmd, bench_group, history_cmd,
                 sanitize_cmd, code_cmd, new_cmd, diff_cmd, compare_cmd):
    cli.add_command(_command)


def main() -> None:
    """The `aisp-prof` program: the command, then the interpreter's shutdown, during which a SIGTERM
    no longer turns the command's exit code into a death by signal (`_exit_code_stands`)."""
    _redeliver_interrupts()
    try:
        cli(prog_name="aisp-prof")
    except SystemExit as done:
        _no_redelivery()
        _STATUS[:] = [done.code]
        _exit_code_stands(done.code)
        raise


def _redeliver_interrupts() -> None:
    """A Ctrl-C that lands while Python runs a callback whose exceptions it ignores (an import lock's weakref
    callback, during the many imports of a command's start) was printed as "Exception ignored ... Traceback
    ... KeyboardInterrupt" and lost: the command ran on. A clean-clone CI run caught it (a quick start's first
    SIGINT lost, the traceback on stderr). Such an interrupt is now raised again 10 ms later, once the callback
    has returned (a one-shot SIGALRM, `_interrupt_again`: a signal raised from the hook itself would land in
    the hook), and nothing is printed; any other unraisable goes to the hook before. Where SIGALRM is someone
    else's, or there is no timer (Windows), it is left as Python has it."""
    before = sys.unraisablehook
    if getattr(before, "redelivers_interrupts", False) or not hasattr(signal, "setitimer"):
        return

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and signal.getsignal(signal.SIGALRM) in (
                signal.SIG_DFL, _interrupt_again):
            with contextlib.suppress(ValueError):       # not the main thread: as Python has it, below
                signal.signal(signal.SIGALRM, _interrupt_again)
                signal.setitimer(signal.ITIMER_REAL, REDELIVER_AFTER_S)
                return
        before(unraisable)
    hook.redelivers_interrupts = True                   # type: ignore[attr-defined]
    sys.unraisablehook = hook


REDELIVER_AFTER_S = 0.01


def _interrupt_again(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    raise KeyboardInterrupt


def _no_redelivery() -> None:
    """The command has ended: an interrupt still to be raised again would only change its exit code."""
    if hasattr(signal, "setitimer") and signal.getsignal(signal.SIGALRM) is _interrupt_again:
        with contextlib.suppress(ValueError):
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
_STATUS: list[object] = []     # the code main()'s command exited with (`_exit_interrupted`)
_ENDED: list[int] = []         # the exit code of the command main() ran: what is left is the shutdown


def _exit_code_stands(code: object) -> None:
    """Once the command has ended with `code`, a SIGTERM while the interpreter shuts down (a `report`
    killed then died of it, its folder whole) changes nothing: while threads are joined and atexit
    functions run, the first is ignored and a second ends the process at once with `code` (a shutdown
    that hangs still ends); from the last atexit function on (`_ignore_sigterm`), through the ~0.1 s
    of freeing the modules (pandas, matplotlib), where Python has already set SIGTERM back to its
    default, it is ignored. Where the caller ignores SIGTERM, or set a handler, that stays."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    status = code if isinstance(code, int) else 0 if code is None else 1
    came: list[int] = []

    def ending(signum: int, frame: object) -> None:
        if came:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(status)
        came.append(signum)
    with contextlib.suppress(ValueError):          # not the main thread: nothing to keep
        signal.signal(signal.SIGTERM, ending)
        _ENDED.append(status)


@atexit.register       # on import: it runs after the atexit functions of what the command imported later
def _ignore_sigterm() -> None:
    if _ENDED:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _STATUS == [INTERRUPTED_EXIT_CODE]:
        _exit_interrupted()


def _exit_interrupted() -> None:
    """An interrupted command has said so and its writers removed what they half-wrote; every other atexit
    function has run. It ends here with 130, skipping only the modules' teardown: after that teardown CPython
    sometimes killed the process with SIGINT (exit -2, no message) though the command had caught the Ctrl-C
    and said "interrupted": 2 of ~24 runs of tests/integration/test_faults.py on this project's CPU machine,
    0 of 45 since (2026-11-30). Why is not established (a candidate: CPython's mark of an unhandled
    KeyboardInterrupt, which code a C extension runs through PyRun_* sets and nothing clears)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(INTERRUPTED_EXIT_CODE)
