"""Charts drawn in parallel: a report's pages are independent, matplotlib is single-threaded and
most of a page's cost (0.8 of ~1 s on the 2-core machine), so pages are drawn by a pool of
processes (fork: the drawing code is already loaded) while the next pages' data are read.

`AISP_REPORT_WORKERS` sets the pool's size (default: the CPU count, at most 8); 1 draws in the
calling process, as before.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from typing import Any, Callable

MAX_WORKERS = 8


def workers() -> int:
    """How many processes draw: $AISP_REPORT_WORKERS, else the CPUs (at most MAX_WORKERS)."""
    env = os.environ.get("AISP_REPORT_WORKERS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


class _Inline(cf.Executor):
    """An executor that runs each call at once, in this process (one worker, or no fork)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
            future.set_exception(exc)
        return future


def pool(count: int | None = None) -> cf.Executor:
    """A process pool of `count` (default `workers()`) drawing processes, or an inline executor."""
    count = count or workers()
    if count <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return _Inline()
    return cf.ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("fork"))
