"""One run as every stage after collection sees it: a `runs` row and a frame per child table.

Ingest builds it from files, the database stores it and reads it back, analysis computes from
it. It is plain data (pandas and numpy), so analysis never needs the database.

Every raw ncu metric is held as a matrix, a row per launch (`launch_metrics`); `metrics` is its
long form (launch_id, metric, unit, value), built only when asked for: 4.6M rows at 10k
launches, which neither storing nor the roofline needs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .launch_metrics import LaunchMetrics

TABLES = ("kernels", "metrics", "timeline", "memory_ops", "ranges", "checks", "timings", "samples", "verdicts",
          "compiles", "range_levels", "graph_launches", "ranks")


@dataclass
class RunData:
    """Everything one run stores. `run` is its `runs` row (run.json as `info_json`)."""

    run: dict[str, Any]
    kernels: pd.DataFrame = field(default_factory=pd.DataFrame)      # one row per ncu-profiled launch
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)     # one row per kernel nsys saw
    memory_ops: pd.DataFrame = field(default_factory=pd.DataFrame)   # one row per memcpy/memset nsys saw
    ranges: pd.DataFrame = field(default_factory=pd.DataFrame)       # one row per innermost NVTX range
    range_levels: pd.DataFrame = field(default_factory=pd.DataFrame)  # every level per thread, children included
    graph_launches: pd.DataFrame = field(default_factory=pd.DataFrame)  # whole-graph launches (nsys default)
    checks: pd.DataFrame = field(default_factory=pd.DataFrame)       # correctness, per variant and trial
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)      # CUDA-event timing summary, per variant
    samples: pd.DataFrame = field(default_factory=pd.DataFrame)      # every timed call, with the GPU's clocks
    verdicts: pd.DataFrame = field(default_factory=pd.DataFrame)     # `bench run`: per variant, against expectations
    compiles: pd.DataFrame = field(default_factory=pd.DataFrame)     # first-call cost and torch.compile's events, per variant and phase
    ranks: pd.DataFrame = field(default_factory=pd.DataFrame)        # a multi-rank run's ranks: identity, clock offset (parse.nsys.job)
    # per variant, nsys calls and least/most kernel time per call (analyze.rule_input.call_spread), as the
    # store keeps it: read instead of `timeline` where that is all a reader needs (a summary); None: not read
    call_spread: pd.DataFrame | None = None
    # every raw ncu metric: the matrix, and/or the long frame it was given as or is read as
    _launch_metrics: LaunchMetrics | None = field(default=None, repr=False)
    _metrics: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def launch_metrics(self) -> LaunchMetrics:
        """Every raw ncu metric, a row per launch (from the long frame if given one)."""
        if self._launch_metrics is None:
            self._launch_metrics = (LaunchMetrics.from_long(self._metrics) if self._metrics is not None
                                    else LaunchMetrics.empty())
        return self._launch_metrics

    @launch_metrics.setter
    def launch_metrics(self, value: LaunchMetrics) -> None:
        self._launch_metrics, self._metrics = value, None

    @property
    def metrics(self) -> pd.DataFrame:
        """Every raw ncu metric in long form: launch_id, metric, unit, value (empty and without
        columns when the run has none, as a table read with no rows)."""
        if self._metrics is None:
            lm = self.launch_metrics
            self._metrics = lm.long() if lm.n_values else pd.DataFrame()
        return self._metrics

    @metrics.setter
    def metrics(self, frame: pd.DataFrame) -> None:
        self._metrics, self._launch_metrics = frame, None

    def set_metrics(self, metrics: LaunchMetrics, long_view: pd.DataFrame | None = None) -> None:
        """The run's metrics, and what `metrics` shows of them when not the whole long form (a
        read of the device attributes only)."""
        self._launch_metrics, self._metrics = metrics, long_view

    @property
    def run_id(self) -> str:
        return self.run["run_id"]

    @property
    def info(self) -> dict[str, Any]:
        """run.json as recorded (empty for runs that have none)."""
        return json.loads(self.run.get("info_json") or "{}")

    @property
    def gpu_name(self) -> str | None:
        info = self.info
        return (self.run.get("gpu_name") or (info.get("gpu") or {}).get("gpu_name")
                or (info.get("env") or {}).get("gpu_name"))

    def device_attributes(self) -> dict[str, float]:
        """ncu's device__attribute_* values of the profile (SM count, memory size, L2 size...):
        each one's first value."""
        if self._launch_metrics is not None:
            return self._launch_metrics.device_attributes()
        m = self.metrics
        if m.empty or "metric" not in m:
            return {}
        attrs = m[m["metric"].astype(str).str.startswith("device__attribute_")].drop_duplicates("metric")
        return {name: float(v) for name, v in attrs[["metric", "value"]].itertuples(index=False)}
