"""One run as every stage after collection sees it: a `runs` row and a frame per child table.

Ingest builds it from files, the database stores it and reads it back, analysis computes from
it. It is plain data (pandas), so analysis never needs the database.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

TABLES = ("kernels", "metrics", "timeline", "memory_ops", "ranges", "checks", "timings", "samples", "verdicts",
          "compiles")


@dataclass
class RunData:
    """Everything one run stores. `run` is its `runs` row (run.json as `info_json`)."""

    run: dict[str, Any]
    kernels: pd.DataFrame = field(default_factory=pd.DataFrame)      # one row per ncu-profiled launch
    metrics: pd.DataFrame = field(default_factory=pd.DataFrame)      # every raw ncu metric, long form
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)     # one row per kernel nsys saw
    memory_ops: pd.DataFrame = field(default_factory=pd.DataFrame)   # one row per memcpy/memset nsys saw
    ranges: pd.DataFrame = field(default_factory=pd.DataFrame)       # one row per NVTX range
    checks: pd.DataFrame = field(default_factory=pd.DataFrame)       # correctness, per variant and trial
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)      # CUDA-event timing summary, per variant
    samples: pd.DataFrame = field(default_factory=pd.DataFrame)      # every timed call, with the GPU's clocks
    verdicts: pd.DataFrame = field(default_factory=pd.DataFrame)     # `bench run`: per variant, against expectations
    compiles: pd.DataFrame = field(default_factory=pd.DataFrame)     # first-call cost and torch.compile's events, per variant and phase

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
        """ncu's device__attribute_* values of the profile (SM count, memory size, L2 size...)."""
        m = self.metrics
        if m.empty or "metric" not in m:
            return {}
        attrs = m[m["metric"].astype(str).str.startswith("device__attribute_")].drop_duplicates("metric")
        return {name: float(v) for name, v in attrs[["metric", "value"]].itertuples(index=False)}
