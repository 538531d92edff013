"""L2 and L1 byte counts that an ncu export holds only as sector counts, turned into bytes as ncu
defines them.

`ncu --set full` (and the section sets generally) collects no `lts__t_bytes` or `l1tex__t_bytes`
at all, the byte counters aisp-prof's roofline places the L2 and L1 points with; it collects the
sector counters they are made of. ncu's own definitions (`ncu --query-metrics --chip gh100`, copied
in tests/fixtures/foreign_h100/query_metrics_t_bytes_sectors.txt):

    lts__t_bytes    = 32 B x lts__t_sectors          (a sector is 32 bytes)
    l1tex__t_bytes  = 32 B x l1tex__t_sectors
    l1tex__t_sectors = pipe_lsu (mem_lg: global ld/st/atom/red, local ld/st; mem_dshared:
                       ld/st/atom/redas) + pipe_tex (mem_texture; mem_surface: ld/st/atom/red)

Checked in one H100 capture that holds both sides (tests/fixtures/foreign_h100/identity_raw_base.csv:
an FP32 GEMM with LDGSTS, an add, a kernel with global atomics and reductions, an index_add): every
identity holds to the byte, and the L2 peak and % of peak with it. The L1 partitions of local,
distributed-shared, texture and surface traffic are zero in every kernel captured, so their place in
the sum rests on ncu's descriptions, not on a measurement. Sector counts are integers, so the bytes
derived are exact, whatever the CSV's rounding.

Also derived, exactly: the L2 peak in bytes per cycle (`lts__t_bytes.sum.peak_sustained` = 32 x the
per-slice sector peak x the number of L2 slices, the slices counted as `lts__cycles_elapsed.sum /
.avg`; `device__attribute_l2s_count` is not that number on an H200: 96 attributes, 94 slices counted)
and the L2 % of peak (the same ratio in sectors as in bytes). Left absent, because the export has
nothing exact to make them of: the L1 peak and the L1 % of peak (`--set full` holds no l1tex__t
peak at all).

Each column derived is listed in the launch's `derived_from_rates` marker, as counts derived from
rates are (`rate_counts`).
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from aisp_prof.model.launch_metrics import LaunchMetrics

SECTOR_BYTES = 32

L1_SECTOR_PARTS = tuple(
    f"l1tex__t_sectors_pipe_{part}.sum" for part in (
        *(f"lsu_mem_global_op_{op}" for op in ("ld", "st", "atom", "red")),
        *(f"lsu_mem_local_op_{op}" for op in ("ld", "st")),
        *(f"lsu_mem_dshared_op_{op}" for op in ("ld", "st", "atom", "redas")),
        "tex_mem_texture",
        *(f"tex_mem_surface_op_{op}" for op in ("ld", "st", "atom", "red")),
    ))

# tidy column -> how it is derived, as the notes print it
HOW = {
    "l2_bytes": "lts__t_sectors x 32 B",
    "l1_bytes": "l1tex__t_sectors (sum of its 15 partitions) x 32 B",
    "peak_l2_bytes_per_cycle": "32 B x lts__t_sectors peak per slice x slices",
    "sol_l2_pct": "lts__t_sectors % of peak",
}
_SLICE_TOLERANCE = 1e-3        # sum/avg of the slices' cycles lies this close to a whole number of slices


def _sum_of(metrics: LaunchMetrics, names: Iterable[str], have: set[str]) -> np.ndarray | None:
    """The per-launch sum of these metrics, or None unless every one is in the export."""
    names = list(names)
    if not all(n in have for n in names):
        return None
    columns = [metrics.column_values(n) for n in names]
    if any(c is None for c in columns):
        return None
    return np.sum(columns, axis=0)


def l2_slices(metrics: LaunchMetrics, have: set[str]) -> np.ndarray | None:
    """The number of L2 slices (LTS units) ncu sums over, per launch: `lts__cycles_elapsed.sum /
    .avg`, where that is a whole number; NaN where it is not (or a value is missing)."""
    total, mean = (_sum_of(metrics, [f"lts__cycles_elapsed.{r}"], have) for r in ("sum", "avg"))
    if total is None or mean is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = total / mean
    whole = np.round(ratio)
    return np.where((np.abs(ratio - whole) <= _SLICE_TOLERANCE) & (whole > 0), whole, np.nan)


def derive_sector_bytes(metrics: LaunchMetrics, present: Iterable[str]) -> dict[str, np.ndarray]:
    """Tidy column -> one value per launch (NaN where a launch lacks a part), for each L2/L1 byte
    figure the export has only as sectors. Columns the export has themselves are never derived."""
    have = set(present)
    out: dict[str, np.ndarray] = {}
    sectors = {
        "l2_bytes": ("lts__t_bytes.sum", ["lts__t_sectors.sum"]),
        "l1_bytes": ("l1tex__t_bytes.sum", ["l1tex__t_sectors.sum"] if "l1tex__t_sectors.sum" in have
                     else list(L1_SECTOR_PARTS)),
    }
    for column, (raw, parts) in sectors.items():
        if raw not in have and (total := _sum_of(metrics, parts, have)) is not None:
            out[column] = SECTOR_BYTES * total
    if "lts__t_bytes.sum.peak_sustained" not in have:
        per_slice = _sum_of(metrics, ["lts__t_sectors.avg.peak_sustained"], have)
        slices = l2_slices(metrics, have)
        if per_slice is not None and slices is not None:
            out["peak_l2_bytes_per_cycle"] = SECTOR_BYTES * per_slice * slices
    if "lts__t_bytes.sum.pct_of_peak_sustained_elapsed" not in have:
        pct = _sum_of(metrics, ["lts__t_sectors.sum.pct_of_peak_sustained_elapsed"], have)
        if pct is not None:
            out["sol_l2_pct"] = pct
    return {c: v for c, v in out.items() if not np.isnan(v).all()}
