"""What every verdict rule reads and returns: `RuleInput` (a run's stored frames and its summary)
and `Finding` (one sentence the numbers say). The rules live in `analyze.verdict.rules` and `validity`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

from ..pairs.roles import BASELINE


@dataclass(frozen=True)
class Finding:
    """One thing the numbers say, in a sentence; `variant` is None for the run as a whole."""

    rule: str                    # host_bound | timers_disagree | mechanism | skipped | ...
    severity: str                # warning | info
    message: str
    variant: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "variant": self.variant, "message": self.message}


@dataclass
class RuleInput:
    """What the rules read: run.json, the per-variant summary, and the frames it came from."""

    info: Mapping[str, Any]
    summary: Sequence[Mapping[str, Any]]
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)    # CUDA-event timing, per variant
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)   # nsys kernels, with range_instance
    kernels: pd.DataFrame = field(default_factory=pd.DataFrame)    # ncu launches
    samples: pd.DataFrame = field(default_factory=pd.DataFrame)    # every timed call (collect.timing.timer)
    compiles: pd.DataFrame = field(default_factory=pd.DataFrame)   # the check's walls per variant and trial
    # `call_spread` of the timeline as the store keeps it (a summary reads 3 rows, not 1M); None: from `timeline`
    call_spread: pd.DataFrame | None = None

    def spread(self) -> pd.DataFrame:
        """Per variant, its nsys calls and the least and most kernel time of one call."""
        if self.call_spread is None:
            self.call_spread = call_spread(self.timeline)
        return self.call_spread

    def row(self, variant: str) -> Mapping[str, Any] | None:
        return next((r for r in self.summary if r["variant"] == variant), None)

    def baseline(self) -> Mapping[str, Any] | None:
        return next((r for r in self.summary if r.get("role", r["variant"] == "baseline" and BASELINE) == BASELINE),
                    None)

    def claims(self) -> list[Mapping[str, Any]]:
        """The rows whose speed the pair claims (optimizations), or shows (references), not the baseline."""
        return [r for r in self.summary if r.get("role") != BASELINE and r["variant"] != "baseline"]


CALL_SPREAD_COLUMNS = ("variant", "calls", "call_kernel_min_ns", "call_kernel_max_ns")


def call_spread(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per variant: its nsys calls (range instances) with kernels, and the least and most summed
    kernel time of one call. All a verdict reads of the timeline (the timers' noise); the store
    writes the same at import (`store.aggregates`, in SQL) so that a summary of a 1M-kernel run
    reads a row per variant instead of the timeline."""
    if timeline.empty or not {"variant", "range_instance", "duration_ns"} <= set(timeline):
        return pd.DataFrame(columns=list(CALL_SPREAD_COLUMNS))
    per_call = timeline.groupby(["variant", "range_instance"])["duration_ns"].sum().groupby(level=0)
    return pd.DataFrame({"calls": per_call.size(), "call_kernel_min_ns": per_call.min(),
                         "call_kernel_max_ns": per_call.max()}).rename_axis("variant").reset_index()
