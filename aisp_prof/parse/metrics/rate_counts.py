"""Counts that an ncu export holds only as rates, turned back into counts as ncu's roofline does.

`ncu --set full` and the section sets (the way most people profile) collect the instruction
counters as rates (`smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed`), not
as the `.sum` counts aisp-prof asks for; without this an FP32 GEMM imported from such an export
has no FLOPs and no roofline point.

ncu's own roofline (`SpeedOfLight_RooflineChart.section`, a copy in tests/fixtures/h200/) plots
achieved work as `<counter>.sum.per_cycle_elapsed x smsp__cycles_elapsed.avg.per_second`: events
per elapsed cycle of the counter's unit times that unit's clock. Over the kernel that is

    count = <unit>__<counter>.sum.per_cycle_elapsed x <unit>__cycles_elapsed.avg
    count = <counter>.sum.per_second x gpu__time_duration.sum      (a per-second rate)

(the unit's elapsed cycles are its clock times the elapsed time). Checked on the H100 `--set full`
export (tests/fixtures/foreign_h100/full_raw_base.csv): all 428 pairs of a `.sum` count and its
`.sum.per_cycle_elapsed` / `.sum.per_second` rate in it (smsp, sm, l1tex, lts, dram, ...) agree
within the CSV's rounding. The table is `metric_table.METRICS`: every counting metric (instructions,
FLOPs, bytes, wavefronts, requests) whose `.sum` is absent is derived when a rate of it is there.
A CSV prints base-unit values with two decimals, so a derived count is within
0.005 x cycles + 0.005 x rate of the true one; a `.ncu-rep` keeps every digit.

L2/L1 bytes that the export holds as sector counts are derived from those first, exactly
(`sector_bytes`); a rate stands in only where no sector count does. Both kinds are listed in the
same per-launch marker (`DERIVED_COLUMN`, a name kept from when rates were the only kind).
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from aisp_prof.model.launch_metrics import LaunchMetrics
from aisp_prof.parse.metrics.table import METRICS, Metric

DERIVED_COLUMN = "derived_from_rates"          # per launch: the tidy columns derived, comma-joined
COUNT_UNITS = frozenset({"inst", "flop", "byte", "wavefront", "request"})
DURATION = "gpu__time_duration.sum"            # ns in base units


def counting_metrics() -> list[Metric]:
    """The metric-table counters a rate can stand in for: `.sum` counts of events."""
    return [m for m in METRICS if m.raw.endswith(".sum") and m.unit in COUNT_UNITS]


def rate_sources(raw: str) -> list[tuple[str, str, float]]:
    """(rate metric, what it is multiplied by, scale) in order of preference for a `.sum` count."""
    unit = raw.split("__", 1)[0]
    return [(f"{raw}.per_cycle_elapsed", f"{unit}__cycles_elapsed.avg", 1.0),
            (f"{raw}.per_second", DURATION, 1e-9)]


def derive_counts(metrics: LaunchMetrics, present: Iterable[str]) -> dict[str, np.ndarray]:
    """Tidy column -> one count per launch (NaN where a launch lacks the rate or the cycles), for
    each counting metric the export has only as a rate."""
    have = set(present)
    out: dict[str, np.ndarray] = {}
    for m in counting_metrics():
        if m.raw in have:
            continue
        for rate_name, by_name, scale in rate_sources(m.raw):
            if rate_name not in have or by_name not in have:
                continue
            rate, by = metrics.column_values(rate_name), metrics.column_values(by_name)
            if rate is None or by is None:
                continue
            values = rate * by * scale
            if np.isnan(values).all():
                continue
            out[m.column] = values
            break
    return out


def derivation_note(columns: Iterable[str]) -> str:
    """How each derived column was made, grouped: "rate x elapsed cycles (as ncu's roofline):
    inst_ffma; from sector counts: l2_bytes (lts__t_sectors x 32 B)"."""
    from aisp_prof.parse.metrics.sector_bytes import HOW

    columns = list(dict.fromkeys(columns))
    rates = [c for c in columns if c not in HOW]
    sectors = [f"{c} ({HOW[c]})" for c in columns if c in HOW]
    parts = ([f"rate x elapsed cycles, as ncu's roofline computes them: {', '.join(rates)}"] if rates else []) + \
            ([f"from sector counts, exactly: {', '.join(sectors)}"] if sectors else [])
    return "counters the export holds only as rates or sectors, derived (" + "; ".join(parts) + ")"


def derives_flops(columns: str | Iterable[str] | None) -> bool:
    """Whether FLOPs rest on a derived counter: `columns` is a launch's marker ("inst_ffma,l2_bytes")
    or a list of derived columns."""
    if not columns:
        return False
    names = columns.split(",") if isinstance(columns, str) else columns
    return any(c.startswith(("inst_", "flops_")) for c in names)


def derived_labels(derived: dict[str, np.ndarray], n: int) -> list[str | None]:
    """Per launch, the derived columns it has a value for ("inst_dfma,inst_ffma"), or None."""
    labels: list[str | None] = []
    for i in range(n):
        cols = [c for c, v in derived.items() if not np.isnan(v[i])]
        labels.append(",".join(cols) if cols else None)
    return labels
