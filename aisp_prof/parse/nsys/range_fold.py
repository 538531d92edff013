"""`range_table` and `level_table` of a trace read in windows of GPU start time (`stream`).

Every number of those tables is a sum, a least or a most over the operations of a call (one push
of a range), then over the calls of a range: each window's share folds into running per-range
totals, and only two numbers per push are carried from window to window, the latest end of its
operations so far and whether it had any (an array indexed by the push's range id, 9 bytes a
push). A window holds every operation whose GPU start falls in it, so each call's operations
arrive in the order `ranges.call_totals` takes them (by start, then end; kernels before memory
operations before graph launches), and the busy time and gaps of the first one in a window
continue from the carried end exactly as in one sweep over the whole trace.

A push's own numbers (its CPU wall time, one more occurrence of its range) are counted once, in
the window that first holds it (`add_pushes`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from aisp_prof.parse.nsys.ranges import (LEVEL_COLUMNS, LEVEL_KEYS, RANGE_COLUMNS, RANGE_KEYS, SUM_COLUMNS,
                                         attributed_work, call_ids, call_totals, empty_frame, level_keys,
                                         with_graph_columns, work_items)
from aisp_prof.parse.nsys.tables import OPEN_END


class _Carry:
    """Per push (global range id): the latest end of its call's operations so far, if any; calls
    not keyed by their push alone (a path merged over several NVTX domains) by their whole key."""

    def __init__(self, n_ranges: int):
        self.end, self.seen = np.zeros(n_ranges, np.int64), np.zeros(n_ranges, bool)
        self.other: dict[tuple[object, ...], int] = {}

    def rows(self, push: np.ndarray, by_push: np.ndarray, keys: list[tuple[object, ...]],
             sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per call (its push, whether keyed by it, its whole key), repeated over its `sizes` rows."""
        end, seen = self.end[push].copy(), self.seen[push].copy()
        for i in np.flatnonzero(~by_push):
            found = self.other.get(keys[i])
            end[i], seen[i] = (found, True) if found is not None else (0, False)
        return np.repeat(end, sizes), np.repeat(seen, sizes)

    def keep(self, push: np.ndarray, by_push: np.ndarray, keys: list[tuple[object, ...]], until: np.ndarray) -> None:
        self.end[push[by_push]], self.seen[push[by_push]] = until[by_push], True
        for i in np.flatnonzero(~by_push):
            self.other[keys[i]] = int(until[i])


class RangeFold:
    """Running `range_table` / `level_table` totals of the windows given so far."""

    def __init__(self, n_ranges: int):
        self.inner, self.level = _Carry(n_ranges), _Carry(n_ranges)
        self.inner_sums, self.level_sums = _Sums(RANGE_KEYS), _Sums(LEVEL_KEYS)

    def add_work(self, kernels: pd.DataFrame, memory_ops: pd.DataFrame, graphs: pd.DataFrame,
                 nvtx: pd.DataFrame, open_ranges: pd.DataFrame) -> None:
        """One window's attributed operations (`attribution.attribute_all` of the window, whose
        `nvtx` holds every range open at its calls, range_id the push's id in the whole trace)."""
        self._add_inner(kernels, memory_ops, graphs, nvtx)
        self._add_levels(kernels, memory_ops, graphs, nvtx, open_ranges)

    def _add_inner(self, kernels: pd.DataFrame, memory_ops: pd.DataFrame, graphs: pd.DataFrame,
                   nvtx: pd.DataFrame) -> None:
        work = attributed_work(kernels, memory_ops, graphs if len(graphs) else None)
        if work.empty:
            return
        call = call_ids(work, RANGE_KEYS + ["range_instance"])
        first = np.flatnonzero(np.r_[True, call[1:] != call[:-1]])
        sizes = np.diff(np.r_[first, len(work)])
        path, domain = (work[c].to_numpy(dtype=object)[first] for c in RANGE_KEYS)
        push = work["range_instance"].to_numpy()[first].astype(np.int64)
        own = pd.DataFrame({"path": nvtx["nvtx_range"].to_numpy(dtype=object),
                            "domain": nvtx["nvtx_domain"].to_numpy(dtype=object)},
                           index=nvtx["range_id"].to_numpy(dtype=np.int64)).reindex(push)
        by_push = (own["path"].to_numpy() == path) & (own["domain"].to_numpy() == domain)
        keys = list(zip(path, domain, push.tolist()))
        totals = call_totals(work, call, self.inner.rows(push, by_push, keys, sizes))
        self.inner.keep(push, by_push, keys, totals.pop("busy_until_ns").to_numpy())
        self.inner_sums.add_calls([path, domain], totals)

    def _add_levels(self, kernels: pd.DataFrame, memory_ops: pd.DataFrame, graphs: pd.DataFrame,
                    nvtx: pd.DataFrame, open_ranges: pd.DataFrame) -> None:
        keys = ["global_tid", "launch_start_ns"]
        frames = [f for f in (kernels, memory_ops, graphs) if f is not None and len(f)]
        if not frames or open_ranges is None or open_ranges.empty:
            return
        items = pd.concat([work_items(f) for f in frames], ignore_index=True).dropna(subset=keys)
        items = items.astype({k: np.int64 for k in keys}).merge(open_ranges, on=keys)
        if items.empty:
            return
        items = items.sort_values(["range_pos", "start_ns", "end_ns"], kind="stable")
        pos = items["range_pos"].to_numpy()
        first = np.flatnonzero(np.r_[True, pos[1:] != pos[:-1]])
        push = nvtx["range_id"].to_numpy(dtype=np.int64)[pos[first]]
        every = np.ones(len(first), bool)
        carried = self.level.rows(push, every, [], np.diff(np.r_[first, len(items)]))
        per_push = call_totals(items, pos, carried)
        del items
        self.level.keep(push, every, [], per_push.pop("busy_until_ns").to_numpy())
        levels = level_keys(nvtx).iloc[pos[first]]
        self.level_sums.add_calls([levels[k].to_numpy() for k in LEVEL_KEYS], per_push)

    def add_pushes(self, nvtx: pd.DataFrame) -> None:
        """Pushes seen for the first time, with their own path and depth: their wall time and
        occurrence, towards their range's and level's."""
        if nvtx.empty:
            return
        wall = np.where(nvtx["end"].to_numpy() != OPEN_END, (nvtx["end"] - nvtx["start"]).to_numpy(), 0)
        self.inner_sums.add_pushes([nvtx[k].to_numpy(dtype=object) for k in RANGE_KEYS], wall)
        level = level_keys(nvtx)
        self.level_sums.add_pushes([level[k].to_numpy() for k in LEVEL_KEYS], wall)

    def ranges(self, graphs: pd.DataFrame | None) -> pd.DataFrame:
        """`range_table` of every window given (`graphs`: the trace's whole-graph launches)."""
        out = self.inner_sums.frame()
        if out is None:
            return empty_frame(RANGE_COLUMNS, RANGE_KEYS)
        return with_graph_columns(out.reset_index(), graphs).loc[:, list(RANGE_COLUMNS)]

    def levels(self, graphs: pd.DataFrame | None) -> pd.DataFrame:
        """`level_table` of every window given."""
        out = self.level_sums.frame()
        if out is None:
            return empty_frame(LEVEL_COLUMNS, ["nvtx_domain", "nvtx_range", "name"])
        out = with_graph_columns(out.reset_index(), graphs)
        return out.sort_values(["process_id", "thread_id", "nvtx_domain", "nvtx_range"], kind="stable").loc[
            :, list(LEVEL_COLUMNS)].reset_index(drop=True)


class _Sums:
    """Running totals per key (a tuple of `names`' values): of calls (`SUM_COLUMNS` summed, the least
    first start, the most last end, the longest gap) and of pushes (wall time, count); numpy
    arrays by key, in order of first appearance."""

    def __init__(self, names: list[str]):
        self.names, self.ids = names, {}
        self.values = {c: np.zeros(0, np.int64) for c in (*SUM_COLUMNS, *_EXTREMES, "range_wall_ns", "occurrences")}
        self.worked = np.zeros(0, bool)

    def _of(self, columns: list[np.ndarray]) -> np.ndarray:
        """Each row's key id (new keys get the next ones)."""
        code = np.zeros(len(columns[0]), np.int64)
        for col in columns:
            col_code, uniques = pd.factorize(col)
            code = code * max(len(uniques), 1) + col_code
        _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
        found = [self.ids.setdefault(key, len(self.ids)) for key in zip(*(c[first].tolist() for c in columns))]
        self._grow(len(self.ids))
        return np.asarray(found, np.int64)[inverse.reshape(-1)]

    def _grow(self, n: int) -> None:
        if n <= len(self.worked):
            return
        size = max(n, 2 * len(self.worked))
        for c, v in self.values.items():
            fill = np.iinfo(np.int64).max if c == "first_start_ns" else (np.iinfo(np.int64).min if c in _EXTREMES else 0)
            self.values[c] = np.r_[v, np.full(size - len(v), fill, np.int64)]
        self.worked = np.r_[self.worked, np.zeros(size - len(self.worked), bool)]

    def add_calls(self, columns: list[np.ndarray], totals: pd.DataFrame) -> None:
        ids = self._of(columns)
        for c in SUM_COLUMNS:
            np.add.at(self.values[c], ids, totals[c].to_numpy(dtype=np.int64))
        np.minimum.at(self.values["first_start_ns"], ids, totals["first_start_ns"].to_numpy(dtype=np.int64))
        for c in ("last_end_ns", "gap_max_ns"):
            np.maximum.at(self.values[c], ids, totals[c].to_numpy(dtype=np.int64))
        self.worked[ids] = True

    def add_pushes(self, columns: list[np.ndarray], wall: np.ndarray) -> None:
        ids = self._of(columns)
        np.add.at(self.values["range_wall_ns"], ids, wall.astype(np.int64))
        np.add.at(self.values["occurrences"], ids, 1)

    def frame(self) -> pd.DataFrame | None:
        """The keys with calls, sorted, as `ranges.sum_calls` gives them, with span, wall time and
        count of pushes; None when no key has any."""
        rows = sorted((k, i) for k, i in self.ids.items() if self.worked[i])
        if not rows:
            return None
        at = np.array([i for _, i in rows], np.int64)
        index = pd.MultiIndex.from_tuples([k for k, _ in rows], names=self.names)
        out = pd.DataFrame({c: self.values[c][at]
                            for c in (*SUM_COLUMNS, "first_start_ns", "last_end_ns", "gap_max_ns")},
                           index=index)
        out["span_ns"] = out["last_end_ns"] - out["first_start_ns"]
        out["range_wall_ns"], out["occurrences"] = self.values["range_wall_ns"][at], self.values["occurrences"][at]
        return out


_EXTREMES = ("first_start_ns", "last_end_ns", "gap_max_ns")
