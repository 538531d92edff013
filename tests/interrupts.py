"""Ctrl-C in the middle of a write, for the tests that check an interrupted command stores
nothing: a stand-in for one function that does the real work until its n-th call, which raises
KeyboardInterrupt as a terminal's Ctrl-C would at that moment."""
from __future__ import annotations

from typing import Callable


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
