"""Every numeric metric of an ncu export as one matrix: a row per launch, a column per metric.

An ncu `--page raw` export is a table already (a row per launch, a column per metric), and that
is the shape every reader wants: the tidy kernel columns are some of its columns, the device
attributes are columns whose value is the same on every row. The long form (launch_id, metric,
unit, value; 455 rows per launch of the shipped samples) is kept as a view (`long()`), built
only when someone asks for it: at 10k launches it is 4.5M rows, 1.3 GB while parsing.

The long form is defined by the matrix: launch by launch (in `launch_ids` order), the columns
that launch has a value for, in column order. A CSV column is a cell position of the header
(a name ncu repeats is two columns); a `.ncu-rep` column is a (metric, unit, n-th time in the
launch) key in the order the report first lists it (`from_long`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

LONG_COLUMNS = ("launch_id", "metric", "unit", "value")
DEVICE_PREFIX = "device__attribute_"
# `metric LIKE 'device__attribute_%'` as SQLite reads it: `_` is any one character, ASCII letters
# match either case. The stored-table reads of device attributes select with it (`device_rows`).
_DEVICE_LIKE = re.compile(r"device..attribute.", re.IGNORECASE | re.ASCII | re.DOTALL)


def _empty_long() -> pd.DataFrame:
    """The long frame of no values, as the parser always made it."""
    return pd.DataFrame([], columns=list(LONG_COLUMNS)).astype({"launch_id": "int64", "value": "float64"})


_TEXT = pd.DataFrame([("",)], columns=["s"])["s"].dtype      # what a frame of Python rows makes of text


@dataclass(frozen=True, eq=False)
class LaunchMetrics:
    """Every numeric metric of every launch: `values[i, j]` is column j's value for launch
    `launch_ids[i]`, NaN where that launch has none. `present` is given only when some value a
    launch has is NaN itself (a `.ncu-rep` can hold one); else a value is present where it is
    not NaN (a CSV cell is a number or nothing)."""

    launch_ids: np.ndarray                    # int64 (n,)
    metrics: tuple[str, ...]                  # raw ncu name of each column (m,)
    units: tuple[str, ...]                    # base unit of each column (m,)
    values: np.ndarray                        # float64 (n, m)
    present: np.ndarray | None = None         # bool (n, m), or None: ~isnan(values)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def empty(cls) -> LaunchMetrics:
        return cls(np.zeros(0, dtype=np.int64), (), (), np.zeros((0, 0)))

    @property
    def n_values(self) -> int:
        """How many (launch, metric) values there are: the long form's rows."""
        return int(self.mask().sum())

    @property
    def empty_long(self) -> bool:
        return self.n_values == 0

    def mask(self) -> np.ndarray:
        """bool (n, m): where a launch has a value."""
        return self.present if self.present is not None else ~np.isnan(self.values)

    # ------------------------------------------------------------------ views
    def long(self) -> pd.DataFrame:
        """The long form: launch_id, metric (raw name), unit (base unit), value; launch by
        launch, each launch's values in column order (the frame the parser used to build).
        Built once, then shared."""
        if "long" not in self._cache:
            self._cache["long"] = self._long(self.mask())
        return self._cache["long"]

    def _long(self, mask: np.ndarray) -> pd.DataFrame:
        rows, cols = np.nonzero(mask)                        # row-major: launch by launch
        if not len(rows):
            return _empty_long()
        names = np.array(self.metrics, dtype=object)
        units = np.array(self.units, dtype=object)
        return pd.DataFrame({
            "launch_id": self.launch_ids[rows].astype(np.int64),
            "metric": pd.array(names[cols], dtype=_TEXT),
            "unit": pd.array(units[cols], dtype=_TEXT),
            "value": self.values[rows, cols].astype(np.float64),
        })

    def _first_cells(self, wanted: Iterable[int]) -> dict[str, tuple[int, int]]:
        """For each metric name among the `wanted` columns, the (row, column) of its first value
        in the long form (the first launch that has it; there, its first column)."""
        mask = self.mask()
        first: dict[str, tuple[int, int]] = {}
        for j in wanted:
            col = mask[:, j]
            if not col.any():
                continue
            cell = (int(col.argmax()), j)
            name = self.metrics[j]
            if name not in first or cell < first[name]:
                first[name] = cell
        return first

    def device_attributes(self) -> dict[str, float]:
        """ncu's device__attribute_* values (SM count, memory size, L2 size...): each one's first
        value in the long form."""
        wanted = [j for j, name in enumerate(self.metrics) if name.startswith(DEVICE_PREFIX)]
        first = self._first_cells(wanted)
        return {name: float(self.values[i, j]) for name, (i, j) in sorted(first.items(), key=lambda kv: kv[1])}

    def first_value(self, name: str) -> float | None:
        """The first value of one metric in the long form (None if no launch has it)."""
        cell = self._first_cells(j for j, n in enumerate(self.metrics) if n == name).get(name)
        return None if cell is None else float(self.values[cell])

    def device_rows(self) -> pd.DataFrame:
        """The rows of the long form that are the first of each device attribute (metric LIKE
        'device__attribute_%', as the long table was queried), in long-form order; an empty
        frame without columns when there are none (what reading no rows gave)."""
        first = self._first_cells(j for j, name in enumerate(self.metrics) if _DEVICE_LIKE.match(name))
        if not first:
            return pd.DataFrame()
        mask = np.zeros(self.values.shape, dtype=bool)
        for i, j in first.values():
            mask[i, j] = True
        return self._long(mask)

    # ------------------------------------------------------------------ building
    @classmethod
    def from_long(cls, frame: pd.DataFrame) -> LaunchMetrics:
        """The matrix of a long frame (launch_id, metric, unit, value). Launches in order of first
        appearance; columns keyed by (metric, unit, n-th time in the launch) in order of first
        appearance. `long()` gives the frame back in that order: the same frame whenever every
        launch lists its metrics in one order (ncu's exports do)."""
        if frame is None or frame.empty or "metric" not in frame:
            return cls.empty()
        f = frame.reset_index(drop=True)
        lid = f["launch_id"].astype(np.int64).to_numpy()
        metric = f["metric"].astype(object).to_numpy()
        unit = f["unit"].astype(object).to_numpy()
        value = f["value"].astype(np.float64).to_numpy()
        nth = pd.DataFrame({"l": lid, "m": metric, "u": unit}).groupby(["l", "m", "u"], sort=False).cumcount().to_numpy()
        rows, launch_ids = pd.factorize(lid)
        keys = pd.MultiIndex.from_arrays([metric, unit, nth])
        cols, uniques = pd.factorize(keys)
        values = np.full((len(launch_ids), len(uniques)), np.nan)
        values[rows, cols] = value
        present = None
        if np.isnan(value).any():
            present = np.zeros(values.shape, dtype=bool)
            present[rows, cols] = True
        names = tuple(str(k[0]) for k in uniques)
        units = tuple(str(k[1]) for k in uniques)
        return cls(np.asarray(launch_ids, dtype=np.int64), names, units, values, present)

    @classmethod
    def from_records(cls, records: list[tuple[int, str, str, float]]) -> LaunchMetrics:
        """`from_long` of (launch_id, metric, unit, value) records."""
        return cls.from_long(pd.DataFrame(records, columns=list(LONG_COLUMNS)))

    def column_values(self, name: str) -> np.ndarray | None:
        """One value per launch of metric `name` (NaN where a launch has none; where a name has
        several columns, a launch's last value); None if no column has the name."""
        cols = [j for j, n in enumerate(self.metrics) if n == name]
        if not cols:
            return None
        out = self.values[:, cols[0]].copy()
        if len(cols) > 1:
            mask = self.mask()
            for j in cols[1:]:
                out = np.where(mask[:, j], self.values[:, j], out)
        return out
