"""`parse.nsys.prefetch.ahead`: a generator run one item ahead in a thread of its own (the streamed
nsys import parses window i+1 while the store writes window i)."""
from __future__ import annotations

import threading
import time

import pytest

from aisp_prof.parse.nsys.prefetch import ahead


def test_items_come_in_order_and_the_generator_runs_in_its_own_thread():
    seen = []

    def make():
        for i in range(5):
            seen.append(threading.current_thread().name)
            yield i

    assert list(ahead(make, name="aisp-test-ahead")) == [0, 1, 2, 3, 4]
    assert set(seen) == {"aisp-test-ahead"}


def test_what_the_generator_raises_is_raised_to_the_caller_at_that_item():
    def make():
        yield 1
        raise ValueError("window 2 unreadable")

    got = []
    with pytest.raises(ValueError, match="window 2 unreadable"):
        for item in ahead(make):
            got.append(item)
    assert got == [1]


def test_a_caller_that_stops_early_cuts_the_item_being_made_short_and_waits_for_the_thread():
    """Ctrl-C or a failed write while the next item is being made: `on_stop` cuts it short (the
    streamed import interrupts its SQL) and the generator's `finally` has run when the caller's
    generator is closed."""
    cut, closed = threading.Event(), threading.Event()

    def make():
        try:
            yield 1
            cut.wait(timeout=10)             # a long SQL statement, until interrupted
            yield 2
        finally:
            closed.set()

    items = ahead(make, on_stop=cut.set)
    assert next(items) == 1
    time.sleep(0.05)                          # the thread is in the long statement
    t0 = time.perf_counter()
    items.close()
    assert closed.is_set() and time.perf_counter() - t0 < 5
    assert not [t for t in threading.enumerate() if t.name == "aisp-prefetch"]
