"""A RooflineResult (aisp_prof.analyze.roofline.build) as terminal text: the chart's numbers.

Each card's ceilings, then the points, the arrows and the FLOP check, then the warnings. Where
the roofline holds several runs, every row says which run it is (`RooflineResult.run_names`:
the card, or the run id's time stamp), so that two runs' `baseline cuda 3.13x` rows are told apart.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..analyze.roofline.build import RooflineResult
from ..analyze.roofline.ceilings import Ceilings
from .roofline_plot import LEVEL_NAMES, PRECISION_NAMES
from ..units import duration, si
from .table import render, wrap_lines


def _f(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}g}"


POINTS_FIT = dict(drop=("basis", "AI L1", "AI L2", "% meas. roof", "FLOPs", "precision", "time"), clip=("kernel",),
                  min_width={"kernel": 32})


def _secondary(cmp: Any) -> str:
    """The arrow's speedup by the timers other than its primary one, each named."""
    return ", ".join(f"{label} {x:.2f}x" for label, x in cmp.secondary.items()) or "-"


def ceiling_lines(c: Ceilings, shown: Sequence[str], width: int | None, runs: str = "") -> list[str]:
    """One card's ceilings: where they come from, then a row per level and per shown precision
    (`runs`, where several cards show: which runs they judge)."""
    lines = wrap_lines([f"ceilings: {c.gpu_name or c.hardware_key} (hardware key {c.hardware_key}{runs}); theoretical = "
                        f"ncu peak x clock (SM {_f((c.clocks_hz.get('sm') or 0) / 1e9)} GHz), measured = "
                        + (c.measured_source or {}).get("source", "not calibrated (aisp-prof calibrate)")], width)
    rows = []
    for level in ("dram", "l2", "l1"):
        ce = c.bandwidth.get(level)
        if ce:
            rows.append([f"{LEVEL_NAMES[level]} bandwidth", si(ce.theoretical_per_s, "B/s"),
                         si(ce.measured_per_s, "B/s"), "", ""])
    for p in shown:
        ce = c.compute.get(p)
        if ce:
            measured = si(ce.measured_per_s, "FLOP/s") + (" (2x dense, derived)" if ce.measured_derived else "")
            rows.append([PRECISION_NAMES.get(p, p), si(ce.theoretical_per_s, "FLOP/s"), measured,
                         _f(c.ridge(p, "dram")), _f(c.ridge(p, "dram", "measured"))])
    lines.append(render(["ceiling", "theoretical", "measured", "ridge DRAM (theo.)", "ridge DRAM (meas.)"], rows, width,
                        wrap=("measured",)))
    return lines


def _ceilings_part(result: RooflineResult, precisions: Sequence[str] | None, width: int | None) -> list[str]:
    """Every card's ceilings; of several cards, each says which runs' points it judges."""
    cards, names = result.cards, result.run_names()
    lines: list[str] = []
    for key, c in cards.items():
        runs = [r["run_id"] for r in result.runs if r.get("hardware_key") == key] if len(cards) > 1 else []
        used = {pt.precision for pt in result.points if not runs or pt.run_id in runs}
        shown = precisions or [p for p in c.compute if p in used or p == "fp32"]
        lines += ([""] if lines else []) + ceiling_lines(c, shown, width, f"; runs {', '.join(names[r] for r in runs)}"
                                                                          if runs else "")
    return lines


def _points_part(result: RooflineResult, width: int | None) -> list[str]:
    """A row per point: each variant's aggregate, then its kernels (first the run's, of several)."""
    names = result.run_names() if len(result.runs) > 1 else {}
    body = []
    for p in result.points:
        name = "(variant)" if p.is_aggregate else (p.kernel if len(p.kernel) <= 48 else p.kernel[:45] + "...")
        body.append(([names[p.run_id]] if names else []) + [
            p.variant, name, duration(p.duration_ns), si(p.flops), p.flop_basis, si(p.flops_per_s, "FLOP/s"),
            _f(p.ai_dram_flop_per_byte), _f(p.ai_l2_flop_per_byte),
            _f(p.ai_l1_flop_per_byte) + ("" if p.ai_l1_valid else "*"), p.precision or "-",
            p.bound or "-", _f(p.pct_of_roof, 3) if p.pct_of_roof is not None else "-",
            _f(p.pct_of_measured_roof, 3) if p.pct_of_measured_roof is not None else "-"])
    headers = ["variant", "kernel", "time", "FLOPs", "basis", "FLOP/s", "AI DRAM", "AI L2", "AI L1",
               "precision", "bound", "% roof", "% meas. roof"]
    lines = [render((["run"] if names else []) + headers, body, width, **POINTS_FIT)]
    if any(not p.ai_l1_valid for p in result.points):
        lines.append("* TMA traffic bypasses the L1 counters: L1 intensity overstated")
    return lines


def _comparisons_part(result: RooflineResult, width: int | None) -> list[str]:
    """A row per arrow; of several runs, first the run it lies in, or the two runs it joins."""
    names = result.run_names() if len(result.runs) > 1 else {}
    rows = []
    for cmp in result.comparisons:
        b, o = cmp.baseline.run_id, cmp.optimized.run_id
        runs = ([names[b] if b == o else f"{names[b]} -> {names[o]}"] if names else [])
        rows.append(runs + [cmp.baseline.variant, cmp.optimized.variant, f"{cmp.speedup:.2f}x" if cmp.speedup else "-",
                            f"{cmp.time_source} ({duration(cmp.baseline_time_ns)} -> {duration(cmp.time_ns)})"
                            if cmp.speedup else "-", _secondary(cmp),
                            _f(cmp.to_dict()["ai_dram_flop_per_byte_change"]), _f(cmp.to_dict()["dram_bytes_change"])])
    headers = ["baseline", "optimized", "speedup", "by (times per call)", "other timers", "AI DRAM x", "DRAM bytes x"]
    return [render((["runs"] if names else []) + headers, rows, width, drop=("other timers",),
                   wrap=("runs", "other timers", "by (times per call)"),
                   min_width={"runs": 24, "other timers": 38, "by (times per call)": 24})]


def roofline_table(result: RooflineResult, precisions: Sequence[str] | None = None, width: int | None = None) -> str:
    """The same numbers as the chart, as text: ceilings, points, comparisons, FLOP check, warnings;
    fitted to `width` columns when given (`table.render`)."""
    names = result.run_names() if len(result.runs) > 1 else {}
    lines = _ceilings_part(result, precisions, width) + [""] + _points_part(result, width)
    if result.comparisons:
        lines += [""] + _comparisons_part(result, width)
    if result.flop_check:
        lines.append("")
        lines.append(render((["run"] if names else []) + ["variant", "counted FLOPs/call", "analytic FLOPs/call",
                                                          "counted/analytic", "flag"],
                            [([names[f.run_id]] if names else []) + [
                                f.variant, si(f.counted_flops), si(f.analytic_flops), _f(f.ratio),
                                "DIFFERS >10%" if f.flagged else "ok"] for f in result.flop_check], width))
    if result.warnings:
        lines.append("")
        lines += wrap_lines([f"{w.severity}: [{w.code}] " + (f"({names[w.run_id]}) " if w.run_id in names else "")
                             + w.message for w in result.warnings], width)
    return "\n".join(lines)
