"""`aisp-prof bench run` as a whole: every selected pair in turn (`runner.bench_one`), and what a gate
cut off part way (Ctrl-C, or SIGTERM as a CI job's time limit sends it) still reports.

An interrupted gate keeps the outcomes of the pairs that finished; the pair in progress is abandoned
(its partial run folder removed, nothing of it stored: `collect.output` and `RunDatabase.profile`) and
it and every pair not reached are outcomes of status NOT_RUN. The payload of `--json`, `--junit` and
`--markdown` is then the finished gate's, with "interrupted": true. Exit: a failed check (7) or a
regression (11) among the finished pairs wins, since a wrong or slower kernel must never read as a
mere interrupt; else 130 (INTERRUPTED_EXIT_CODE).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..arguments import fields, texts
from ..errors import AispError, CorrectnessError, RegressionError
from ..store.history import gate_seconds
from . import runner

NOT_RUN = "not run"
ABANDONED = "interrupted while it ran: nothing of it stored"
NOT_REACHED = "not reached: the gate was interrupted"


@dataclass
class Gate:
    """What `bench run` found: the hardware key, one outcome per selected pair (NOT_RUN for those an
    interrupt left), and whether it was interrupted."""

    hardware_key: str
    outcomes: list[runner.PairOutcome]
    interrupted: bool = False

    @property
    def not_run(self) -> list[str]:
        return [o.pair for o in self.outcomes if o.status == NOT_RUN]

    def payload(self) -> dict[str, Any]:
        """`bench run --json` (and the CI files' source): a finished gate's fields, plus "interrupted"."""
        return {"hardware_key": self.hardware_key, "fails": any(o.fails for o in self.outcomes),
                "pairs": [o.to_dict() for o in self.outcomes], "interrupted": self.interrupted}

    def stop_line(self) -> str:
        """'interrupted: 43 of 49 pair(s) finished, 6 not run (ch10.a, ch10.b, ...)'."""
        left = self.not_run
        return (f"interrupted: {len(self.outcomes) - len(left)} of {len(self.outcomes)} pair(s) finished, "
                f"{len(left)} not run ({', '.join(left[:5])}{', ...' if len(left) > 5 else ''})")

    def error(self, updating: bool = False) -> AispError | None:
        """What fails the gate (`runner.gate_error`). Interrupted: a failed check (7) or a regression (11)
        among the finished pairs, its message saying the gate was cut off; anything else (a pair not
        recorded with --update-expectations, exit 1) yields to the interrupt: None, and the caller
        exits 130."""
        error = runner.gate_error(self.outcomes, updating)
        if not self.interrupted:
            return error
        if isinstance(error, (CorrectnessError, RegressionError)):
            return type(error)(f"{error} ({self.stop_line()})")
        return None


def time_left(pairs: Sequence[str], last: dict[str, float]) -> str:
    """', ~312 s left by the last gate here' (the pairs from this one on, each at its latest stored gate
    run's seconds on this kind of GPU: `store.history.gate_seconds`), naming how many pairs have no such
    run; '' when none has (a fresh database: a CI job's)."""
    known = [last[p] for p in pairs if p in last]
    if not known:
        return ""
    unknown = len(pairs) - len(known)
    return f", ~{sum(known):.0f} s left by the last gate here" + (f" (+ {unknown} pair(s) never gated here)"
                                                                   if unknown else "")


def estimated_by(kind: str) -> tuple[str, ...]:
    """The stored gates' compile-cache kinds a new gate of `kind` is estimated by: its own, and for a
    gate whose further processes compile anew (6d84cc2) the gates before it too, whose processes all
    shared the run's cache: a one-process pair took the same time in both."""
    from ..naming import FRESH_AFTER_FIRST, SHARED_COMPILE_CACHE

    return (kind, SHARED_COMPILE_CACHE) if kind == FRESH_AFTER_FIRST else (kind,)


def run_gate(runs: Any, targets: Sequence[str], options: dict[str, Any],
             progress: Callable[[str], None] = lambda m: None, tick: Callable[[], None] = lambda: None) -> Gate:
    """Every pair of `targets` checked, timed and judged into the RunDatabase `runs` (`runner.bench_one`);
    first the pending CUDA libraries of the pairs that run here are built in parallel
    (`collect.code.prebuild`), while a process imports torch once for every check and timing process
    to be forked from (`collect.process.preload`; `preload` False: each a fresh process). `progress` hears each pair's start (with the time so far), its steps and
    its outcome in one line. KeyboardInterrupt (Ctrl-C, or raised by `tick`, called at every progress
    line of the main thread: SIGTERM) stops it: the Gate holds the finished pairs' outcomes and NOT_RUN
    for the rest."""
    from ..collect.code.binary_store import default_store, kept_binaries
    from ..collect.code.compile_cache import compile_cache_kind, kept_compile_cache
    from ..collect.code.prebuild import prebuild
    from ..collect.process.preload import serving
    from ..collect.process.steps import child_env
    from ..pairs import select
    from ..pairs.capabilities import detect_machine, runnable

    opts = runner.BenchOptions(**fields(options, runner.BenchOptions, "options"))   # a typo: said before any work
    selected, key = select(list(texts(targets, "targets"))), runner.current_hardware_key()   # "ch09" is one target
    machine = detect_machine()

    def say(message: str) -> None:
        progress(message)
        if threading.current_thread() is threading.main_thread():
            tick()
    outcomes: list[runner.PairOutcome] = []
    running = -1                         # the index of the pair in progress
    try:
        can_run = [p for p in selected if runnable(p, machine).ok]
        with kept_compile_cache(opts.compile_cache), \
                kept_binaries(None if opts.fresh_binaries or not can_run else default_store()), \
                serving(child_env(), enabled=opts.preload and any(not p.distributed for p in can_run)):
            prebuild(can_run, say)         # (the preloaded process imports torch meanwhile)
            kind = compile_cache_kind(opts.update_expectations, fresh_further=True)     # a recording: its own kind
            last, here = gate_seconds(runs.path, key, estimated_by(kind)), {p.name for p in can_run}
            started = time.monotonic()
            for i, pair in enumerate(selected, 1):
                running = i - 1
                say(f"== {pair.name} ({i}/{len(selected)}), {time.monotonic() - started:.0f} s into the bench"
                    + time_left([p.name for p in selected[i - 1:] if p.name in here], last))
                began = time.monotonic()
                outcome = runner.bench_one(pair, runs, key, opts, say, machine)
                if outcome.status == "error":    # a SIGTERM to the process group (`timeout`) kills its child too:
                    tick()                       # the pair failed of the stop, not of its code: abandoned
                outcomes.append(outcome)
                say(f"   {outcome.line()} ({time.monotonic() - began:.1f} s)")
    except KeyboardInterrupt:
        left = [runner.PairOutcome(p.name, None, NOT_RUN, ABANDONED if i == running else NOT_REACHED)
                for i, p in enumerate(selected) if i >= len(outcomes)]
        return Gate(key, outcomes + left, bool(left))     # every pair finished: a whole gate
    return Gate(key, outcomes)
