"""A generator run one item ahead in a thread of its own (issue 33: a 1M-kernel import in 10 s).

A streamed import (`stream.StreamedParse.windows`) parses window i+1 of an export while the store
writes window i: both spend most of their time in SQLite and numpy, which let the other thread
run, so on two cores the parse and the store overlap instead of taking turns (~15 s -> ~12 s of
wall time at 1M kernels, the same CPU time).

The generator is made and run wholly in the thread (an SQLite connection it opens is used by the
thread that opened it), at most `depth` items ahead: memory stays a few windows, whatever the
trace's length. Whatever it raises is raised to the consumer, the same exception, at the item it
failed on. A consumer that stops early (an error storing a window, Ctrl-C) stops the thread
after the item it is making (cut short by `on_stop`, where given, called until the thread
ends), and waits for it, so the
generator's `finally` (closing its connection, removing its temp tables) has run when the
consumer's generator is closed.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")
_DONE = object()
_POLL_S = 0.1            # how often a blocked producer looks whether the consumer has gone


class _Failed:
    def __init__(self, exc: BaseException):
        self.exc = exc


def ahead(make: Callable[[], Iterator[T]], depth: int = 1, name: str = "aisp-prefetch",
          on_stop: Callable[[], None] | None = None) -> Iterator[T]:
    """The items of `make()`, made in a thread up to `depth` ahead of the caller's reads.
    `on_stop`: called when the caller stops before the last item, to cut short the item being
    made (e.g. interrupt its SQL), before waiting for the thread."""
    items: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            gen = make()
            try:
                for item in gen:
                    if not put(item):
                        return
            finally:
                close = getattr(gen, "close", None)
                if close is not None:
                    close()
        except BaseException as exc:            # raised to the consumer, where it is handled
            put(_Failed(exc))
            return
        put(_DONE)

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = items.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.exc
            yield item
    finally:
        stop.set()
        while on_stop is not None and thread.is_alive():   # again until it ends: SQLite's interrupt
            on_stop()                                      # misses a statement that starts just after
            thread.join(timeout=_POLL_S)
        thread.join()
