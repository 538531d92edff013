"""What the roofline needs of one stored run (`RunInput`): the record its parts share, kept apart so
that the points, the comparisons and the warnings can name it without importing the assembly."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass
class RunInput:
    """What the roofline needs of one stored run."""

    run_id: str
    info: dict[str, Any]                  # run.json
    kernels: pd.DataFrame                 # tidy ncu rows (one per launch), with `variant`
    device: dict[str, float] = field(default_factory=dict)   # device__attribute_* of the profile
    gpu_name: str | None = None
    times: dict[str, dict[str, float | None]] = field(default_factory=dict)   # analyze.timing.speedup.run_times

    @property
    def label(self) -> str:
        return self.info.get("pair") or self.info.get("label") or self.run_id
