"""A pair's runs against each other: two runs variant by variant with the gate's verdict (`diff`),
and every stored run of it over time (`history`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from .. import arguments as arg
from ..pairs.declared import declared
from ..store import db as store_db
from ..store.history import pair_history

HISTORY_TABLES = ("kernels", "ranges", "range_levels", "timings")


class Comparing:
    """`RunDatabase`'s comparisons of runs; they read `self.path` and call its `open_runs`."""

    path: Path

    def diff(self, run_a: str, run_b: str) -> dict[str, Any]:
        """Two runs of one pair compared per variant, with the gate's verdict (analyze.run_diff):
        both read in one open, each one's roofline points computed once."""
        from ..analyze.run_diff import RunSide, compare

        sides = [RunSide(r.result(), r.points_frame(), r.data.samples) for r in self.open_runs([run_a, run_b])]
        return compare(*sides)

    def history(self, pair: str) -> pd.DataFrame:
        """One row per (run, variant) of `pair`, oldest first: the run's one primary speedup
        (`analyze.timing.speedup`, the summary's) with its timer, its own time (`speedup_time_ns`,
        `speedup_baseline_time_ns`) and spread (`speedup_rel_spread`), and the secondary figures by the
        other timers; the CUDA-event median apart (`cuda_event_median_ns`). A name with no stored run
        that is no pair here either is UnknownTargetError (exit 2) with close names."""
        from ..analyze.timing.speedup import add_history_speedups
        from ..pairs.discovery import check_name

        rows = pair_history(self.path, arg.text(pair, "pair", "a pair's name"))
        if not rows:
            check_name(pair)
        with store_db.Reader(self.path) as conn:
            add_history_speedups(rows, lambda rid: declared(conn.read_run(rid, False, HISTORY_TABLES)))
        return pd.DataFrame(rows)
