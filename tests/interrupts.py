"""Ctrl-C in the middle of a write, for the tests that check an interrupted command stores
nothing: a stand-in for one function that does the real work until its n-th call, which raises
KeyboardInterrupt as a terminal's Ctrl-C would at that moment."""
from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Callable, Iterator


def interrupt_on_call(real: Callable, n: int) -> tuple[Callable, list[int]]:
    """(stand-in, calls): the stand-in calls `real` on calls 1 to n-1 and raises KeyboardInterrupt
    on call n; `calls` holds one entry per call made, so a test can say how far the work got."""
    calls: list[int] = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    return interrupted, calls


@contextmanager
def python_ctrl_c() -> Iterator[None]:
    """Python's own Ctrl-C handler for the block, as a fresh `aisp-prof` in a terminal has, for a test that
    sends itself SIGINT. The test process may have another: one left by an earlier test (torch's elastic
    launcher and Inductor's compile workers install their own), or SIG_IGN when the suite itself was started
    in the background (`cmd &` in a script: both of test_stream_import's Ctrl-C tests then ran on to exit 0)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
