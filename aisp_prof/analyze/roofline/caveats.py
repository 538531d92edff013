"""The warnings that say when a roofline misleads, each a pure function of points and runs.

A roofline point can be right by its counters and still mislead: a point above its theoretical
roof means a roof or a count is wrong; TMA traffic bypasses the L1 byte counters; a working set
that fits in L2 makes the DRAM point a cold start; HFMA2.MMA register moves count as fp16 FLOPs;
baseline and optimized profiled under different ncu settings or SM clocks are not comparable;
counted FLOPs far from the pair's formula mean wasted or missing work. Each check here returns
`RooflineWarning`s (severity "warning", or "info" for what only explains a number), so the
report, the terminal table and the chart can say why a number should not be read at face value.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ...parse.metrics.rate_counts import DERIVED_COLUMN, derivation_note
from ..kernels.ncu_command import NCU_DEFAULT_SETTINGS, ncu_settings
from .points import Point, analytic_for, flops_by_precision

if TYPE_CHECKING:
    from .compare import Comparison, FlopCheck
    from .run_input import RunInput

ABOVE_ROOF_TOLERANCE = 1.02  # a point more than 2% above its theoretical roof is flagged
CLOCK_DIFF = 0.05           # SM clocks of compared variants differing by more than 5%


@dataclass(frozen=True)
class RooflineWarning:
    """One reason a roofline number may mislead, with the run, range and kernel it is about."""

    code: str          # above_roof | tma_l1 | fits_in_l2 | settings_differ | clock_differs | flop_mismatch
                       # | no_flops | hfma_moves | other_gpu | counts_from_rates
    message: str
    run_id: str | None = None
    nvtx_range: str | None = None
    kernel: str | None = None
    severity: str = "warning"    # "warning" | "info"

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _WARNING_FIELDS}


_WARNING_FIELDS = tuple(f.name for f in fields(RooflineWarning))    # asdict() without its deep copies


def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB"


def _where(p: Point) -> str:
    return f"{p.nvtx_range}" + (f" kernel {p.kernel[:60]}" if p.kernel else " (all kernels)")


def point_warnings(points: Sequence[Point]) -> list[RooflineWarning]:
    """A point above its theoretical roof; L1 intensity of TMA kernels; points with no FLOPs."""
    out = []
    for p in points:
        if p.pct_of_roof is not None and p.pct_of_roof > 100.0 * ABOVE_ROOF_TOLERANCE:
            out.append(RooflineWarning(
                "above_roof", f"{_where(p)} runs at {p.pct_of_roof:.0f}% of its theoretical {p.bound} roof: "
                "a roof or a count is wrong (a sparse tensor peak, a clock, a duration, or FLOPs counted twice)",
                p.run_id, p.nvtx_range, p.kernel))
        if p.tma_bytes > 0 and not p.is_aggregate:
            out.append(RooflineWarning(
                "tma_l1", f"{_where(p)} moves {_mb(p.tma_bytes)} by TMA, which bypasses the L1 counters "
                "(l1tex__t_bytes): its L1 intensity is overstated; read the L2 and DRAM points",
                p.run_id, p.nvtx_range, p.kernel))
        if p.is_aggregate and p.flops_counted == 0 and (p.flops_analytic or 0) == 0:
            out.append(RooflineWarning(
                "no_flops", f"{p.nvtx_range} counts no floating-point work: it has no place on a FLOP/s roofline "
                "(its bandwidth is in the table)", p.run_id, p.nvtx_range, None, "info"))
    return out


def hfma_move_warnings(run: RunInput) -> list[RooflineWarning]:
    """Half-precision FMAs in kernels that do no other half-precision work.

    ptxas materializes constants (often zero) with `HFMA2.MMA Rd, -RZ, RZ, imm, imm`, and ncu counts
    those as HFMA instructions, so an fp32 kernel "does" fp16 FLOPs: one per thread in this
    project's FMA probe, ten HFMA2.MMA zero moves in the SASS of ch09's fused L2 norm.
    """
    k = run.kernels
    need = {"inst_hfma", "inst_hadd", "inst_hmul"}
    if k.empty or not need <= set(k):
        return []
    by_prec = flops_by_precision(k)
    hfma = _or_zero(k["inst_hfma"])
    other = _or_zero(k["inst_hadd"]) + _or_zero(k["inst_hmul"])
    with np.errstate(invalid="ignore"):
        moves = (hfma > 0) & (other == 0) & (by_prec["fp32"].to_numpy() > by_prec["fp16"].to_numpy())
    picked = np.flatnonzero(moves)
    ranges = k["nvtx_range"].take(picked).tolist() if "nvtx_range" in k else [None] * len(picked)
    kernels = k["kernel"].take(picked).tolist() if "kernel" in k else [None] * len(picked)
    out = []
    for i, nvtx, kernel in zip(picked.tolist(), ranges, kernels):
        h = float(hfma[i])
        out.append(RooflineWarning(
            "hfma_moves", f"{nvtx} kernel {str(kernel)[:60]}: {h:.4g} HFMA "
            f"instructions and no other half-precision work: likely HFMA2.MMA register moves, not arithmetic; "
            f"they add {4 * h:.4g} 'fp16' FLOPs to the counted total",
            run.run_id, nvtx, str(kernel), "info"))
    return out


def rate_count_warnings(run: RunInput) -> list[RooflineWarning]:
    """One note per run whose export held counters only as rates or sectors (`ncu --set full`): its
    FLOPs are rate x elapsed cycles (`parse.metrics.rate_counts`), as ncu's own roofline computes them,
    within the export's rounding of the true counts; its L2/L1 bytes are sectors x 32 B
    (`parse.metrics.sector_bytes`), exact."""
    from ..summary import derived_columns

    derived = derived_columns(run.kernels) if not run.kernels.empty else []
    if not derived:
        return []
    n = int(run.kernels[DERIVED_COLUMN].notna().sum())
    return [RooflineWarning(
        "counts_from_rates", f"{run.run_id}: {n} kernel(s) have FLOP/byte {derivation_note(derived)}; "
        "the export has no .sum counts of them",
        run.run_id, None, None, "info")]


def _or_zero(col: pd.Series) -> np.ndarray:
    """Each cell as `float(cell or 0)`: None is 0, NaN stays NaN (a float column has no None)."""
    if col.dtype.kind == "f":
        return col.to_numpy(dtype=np.float64)
    return np.array([float(v or 0) for v in col.tolist()], dtype=np.float64)


def l2_fit_warnings(run: RunInput, points: Sequence[Point]) -> list[RooflineWarning]:
    """Working sets that fit in L2: in a loop their data would come from L2, not DRAM."""
    l2 = (run.info.get("gpu") or {}).get("l2_cache_bytes") or run.device.get("device__attribute_l2_cache_size")
    if not l2:
        return []
    settings = ncu_settings(run.info) or dict(NCU_DEFAULT_SETTINGS)
    flushed = settings.get("cache_control", "all") == "all"
    out = []
    for p in points:
        if not p.is_aggregate or p.run_id != run.run_id:
            continue
        analytic = analytic_for(run.info, p.variant)
        ws = analytic.get("working_set_bytes") if analytic else None
        if ws and ws <= float(l2):
            how = ("ncu flushed the caches before each replay (--cache-control all), so its DRAM bytes are a "
                   "cold start" if flushed else "caches were not flushed, so DRAM bytes depend on what ran before")
            out.append(RooflineWarning(
                "fits_in_l2", f"{p.nvtx_range}: the working set ({_mb(ws)}) fits in the {_mb(float(l2))} L2; "
                f"the DRAM roofline misleads ({how}); the L2 point is the one to read", run.run_id, p.nvtx_range))
    return out


def comparison_warnings(comparisons: Sequence[Comparison], runs: Mapping[str, RunInput]) -> list[RooflineWarning]:
    """Baseline and optimized profiled with different ncu clock/cache settings, or at different SM clocks."""
    out = []
    for c in comparisons:
        b, o = c.baseline, c.optimized
        sb, so = ncu_settings(runs[b.run_id].info), ncu_settings(runs[o.run_id].info)
        if sb and so and sb != so:
            diff = ", ".join(f"{k} {sb[k]} vs {so[k]}" for k in sb if sb[k] != so.get(k))
            out.append(RooflineWarning(
                "settings_differ", f"{b.nvtx_range} and {o.nvtx_range} were profiled with different ncu settings "
                f"({diff}): their points are not comparable", o.run_id, o.nvtx_range))
        cb, co = b.clocks_hz.get("sm"), o.clocks_hz.get("sm")
        if cb and co and abs(cb - co) / max(cb, co) > CLOCK_DIFF:
            out.append(RooflineWarning(
                "clock_differs", f"{b.nvtx_range} ran at {cb / 1e9:.2f} GHz and {o.nvtx_range} at {co / 1e9:.2f} GHz "
                f"(SM clock, duration-weighted): {abs(cb - co) / max(cb, co):.0%} apart, part of the speedup "
                "may be the clock", o.run_id, o.nvtx_range))
    return out


def card_warning(keys: Sequence[str], comparisons: Sequence[Comparison], cards: Mapping[str, str]) -> RooflineWarning:
    """Runs from several cards: say that each is judged against its own card's roofs, and that an
    arrow from one card to another measures the hardware as well as the code."""
    across = sum(cards[c.baseline.run_id] != cards[c.optimized.run_id] for c in comparisons)
    joined = (f"; {across} arrow(s) join runs on different GPUs: their speedups include the hardware"
              if across else "")
    return RooflineWarning("other_gpu", f"runs from different GPUs ({', '.join(sorted(keys))}): each point is judged "
                           f"against its own GPU's ceilings (ceilings_by_hardware_key){joined}")


def flop_warnings(checks: Sequence[FlopCheck]) -> list[RooflineWarning]:
    """Variants whose counted FLOPs differ from the pair's formula (`FlopCheck.flagged`)."""
    out = []
    for f in checks:
        if not f.flagged:
            continue
        parts = ", ".join(f"{k} {v:.3g}" for k, v in f.counted_flops_by_precision.items()) or "none"
        ratio = f"{f.ratio:.2f}x" if f.ratio is not None else "n/a"
        out.append(RooflineWarning(
            "flop_mismatch", f"{f.nvtx_range}: ncu counted {f.counted_flops:.4g} FLOPs per call ({parts}), the "
            f"pair's formula says {f.analytic_flops:.4g} ({ratio}): hidden recomputation or expanded "
            "operations, a tensor path not taken, or a wrong formula", f.run_id, f.nvtx_range))
    return out
