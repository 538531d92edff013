"""Report charts drawn with matplotlib's Agg canvas into PNG files beside the page.

Each function takes plain data from `analyze.page.contents.page_data` (no database access) and a path, and
returns the path. Figures are made without pyplot, so drawing never touches global state or
needs a display. Colors are fixed per stall reason and per variant, so the same thing has the
same color on every page of a report.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from ..parse.metrics.table import STALL_REASONS
from ..units import si
from .drawing import save_png

DPI = 110
BASELINE_COLOR = "#8c8c8c"
VARIANT_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                  "#17becf", "#bcbd22")
OTHER_COLOR = "#d9d9d9"

# tab20, one fixed color per stall reason (19 reasons); "other" is light grey
_TAB20 = ("#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
          "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7",
          "#bcbd22", "#dbdb8d", "#17becf", "#9edae5")
_STALL_ORDER = ("long_scoreboard", "barrier", "short_scoreboard", "drain", "mio_throttle", "lg_throttle",
                "wait", "math_pipe_throttle", "not_selected", "no_instruction", "imc_miss",
                "branch_resolving", "dispatch_stall", "membar", "gmma", "tex_throttle", "sleeping",
                "misc", "selected")
STALL_COLORS = {r: _TAB20[i] for i, r in enumerate(_STALL_ORDER + tuple(r for r in STALL_REASONS
                                                                         if r not in _STALL_ORDER))}


def variant_colors(variants: Sequence[str]) -> dict[str, str]:
    """baseline grey, the others from a fixed palette in their order."""
    out, i = {}, 0
    for v in variants:
        if v == "baseline":
            out[v] = BASELINE_COLOR
        else:
            out[v] = VARIANT_COLORS[i % len(VARIANT_COLORS)]
            i += 1
    return out


def plain(text: str) -> str:
    """A label matplotlib draws literally ('$' would start mathtext)."""
    return str(text).replace("$", r"\$")


def save_figure(fig: Figure, path: Path) -> Path:
    """One draw, cropped to the drawing (what bbox_inches="tight" gave, without its second draw)."""
    return save_png(fig, path, DPI)


def stall_chart(stalls: dict[str, dict[str, float]], path: Path, min_share: float = 0.02) -> Path:
    """Stacked horizontal bars, one per variant: warp cycles stalled per issued instruction,
    one segment per reason ('selected' is not a stall and is left out).

    `stalls` maps variant -> {reason: cycles per issued instruction}. Reasons that never reach
    `min_share` of the largest bar are merged into 'other'.
    """
    variants = list(stalls)
    totals = {v: sum(stalls[v].values()) for v in variants}
    biggest = max(totals.values(), default=0.0) or 1.0
    reasons = sorted({r for v in variants for r in stalls[v]},          # ties by name: the same order
                     key=lambda r: (-sum(stalls[v].get(r, 0.0) for v in variants), r))   # in every process
    shown = [r for r in reasons if max(stalls[v].get(r, 0.0) for v in variants) >= min_share * biggest]
    merged = [r for r in reasons if r not in shown]
    fig = Figure(figsize=(9, 0.7 * len(variants) + 1.6))
    ax = fig.add_subplot()
    ys = list(range(len(variants)))[::-1]
    left = [0.0] * len(variants)
    for reason in shown + (["other"] if merged else []):
        vals = [sum(stalls[v].get(r, 0.0) for r in merged) if reason == "other" else stalls[v].get(reason, 0.0)
                for v in variants]
        ax.barh(ys, vals, left=left, height=0.6, label=reason,
                color=OTHER_COLOR if reason == "other" else STALL_COLORS.get(reason, OTHER_COLOR),
                edgecolor="white", linewidth=0.6)
        left = [a + b for a, b in zip(left, vals)]
    for y, v in zip(ys, variants):
        ax.text(totals[v] + biggest * 0.01, y, f"{totals[v]:.1f}", va="center", fontsize=9)
    ax.set_yticks(ys, [plain(v) for v in variants])
    ax.set_xlim(0, biggest * 1.12)
    ax.set_xlabel("warp cycles stalled per issued instruction")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False,
              title="stall reason", title_fontsize=8)
    return save_figure(fig, path)


MEMORY_LEVELS = (("dram_read_bytes", "DRAM read"), ("dram_write_bytes", "DRAM write"),
                 ("l2_bytes", "L2"), ("l1_bytes", "L1"), ("tma_load_bytes", "TMA load"),
                 ("tma_store_bytes", "TMA store"))


def memory_chart(traffic: list[dict[str, Any]], path: Path) -> Path:
    """Grouped horizontal bars: bytes per memory level, one bar per variant.

    `traffic` rows are {variant, dram_read_bytes, dram_write_bytes, l2_bytes, ...}; levels that
    every variant reports as 0 or unmeasured are dropped.
    """
    levels = [(c, name) for c, name in MEMORY_LEVELS if any(r.get(c) for r in traffic)]
    colors = variant_colors([r["variant"] for r in traffic])
    n = max(len(traffic), 1)
    fig = Figure(figsize=(9, 0.32 * n * len(levels) + 1.4))
    ax = fig.add_subplot()
    height = 0.8 / n
    for i, row in enumerate(traffic):
        ys = [len(levels) - 1 - j + 0.4 - height * (i + 0.5) for j in range(len(levels))]
        ax.barh(ys, [row.get(c) or 0 for c, _ in levels], height=height * 0.92, color=colors[row["variant"]],
                label=plain(row["variant"]))
    ax.set_yticks(range(len(levels))[::-1], [name for _, name in levels])
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: si(x, "B")))
    ax.set_xlabel("bytes moved per call (ncu, summed over the variant's kernels)")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    return save_figure(fig, path)


def thumbnail_frame(roof: dict[str, Any]) -> tuple[list[dict[str, Any]], float, float | None, float, float, float] | None:
    """What an index thumbnail draws (PNG here, SVG in output.bars): each variant's call with a DRAM
    intensity and FLOP/s, the DRAM bandwidth, the compute roof of the precision most variants use (on a
    tie the first variant's; None without one), the ridge point and the x range; None when nothing is
    plottable."""
    ceilings = roof.get("ceilings") or {}
    aggs = [p for p in roof.get("points") or [] if p.get("kernel") is None
            and (p.get("ai_dram_flop_per_byte") or 0) > 0 and (p.get("flops_per_s") or 0) > 0]
    bw = (ceilings.get("dram_bytes_per_s") or {}).get("theoretical_per_s")
    if not aggs or not bw:
        return None
    precs = [p.get("precision") for p in aggs if p.get("precision")] or ["fp32"]
    most_used = max(dict.fromkeys(precs), key=precs.count)
    peak = ((ceilings.get("flops_per_s") or {}).get(most_used) or {}).get("theoretical_per_s")
    xs = [p["ai_dram_flop_per_byte"] for p in aggs]
    ridge = peak / bw if peak else max(xs) * 10
    x0, x1 = min(min(xs), ridge) / 10, max(max(xs), ridge) * 10
    return aggs, bw, peak, ridge, x0, x1


def roofline_thumbnail(roof: dict[str, Any], path: Path) -> Path | None:
    """A small DRAM roofline for the index: the DRAM slope and the compute roof of the precision
    most variants use (on a tie, the first variant's), each variant's call as a dot, arrows
    baseline -> optimized. No legend: the pair's page has the full chart. None when no variant
    has a plottable point."""
    frame = thumbnail_frame(roof)
    if frame is None:
        return None
    aggs, bw, peak, ridge, x0, x1 = frame
    fig = Figure(figsize=(2.6, 1.9))
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    roof_x = [x0, ridge, x1] if peak else [x0, x1]
    roof_y = [bw * x0, peak, peak] if peak else [bw * x0, bw * x1]
    ax.plot(roof_x, roof_y, color="#d62728", lw=1.2)
    colors = variant_colors([p["variant"] for p in aggs])
    by_variant = {p["variant"]: p for p in aggs}
    base = by_variant.get("baseline")
    for p in aggs:
        if base is not None and p is not base:
            ax.annotate("", xy=(p["ai_dram_flop_per_byte"], p["flops_per_s"]),
                        xytext=(base["ai_dram_flop_per_byte"], base["flops_per_s"]),
                        arrowprops={"arrowstyle": "-|>", "color": "black", "lw": 0.8, "shrinkA": 3, "shrinkB": 3})
    for p in aggs:
        ax.scatter([p["ai_dram_flop_per_byte"]], [p["flops_per_s"]], s=22, color=colors[p["variant"]],
                   edgecolors="black", linewidths=0.5, zorder=5)
    ax.set_xlim(x0, x1)
    ax.set_ylim(min(p["flops_per_s"] for p in aggs) / 10, (peak or max(roof_y)) * 3)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(numticks=4))
        axis.set_minor_locator(NullLocator())
    ax.tick_params(labelsize=6)
    ax.set_xlabel("FLOP/byte (DRAM)", fontsize=6, labelpad=1)
    ax.set_ylabel("FLOP/s", fontsize=6, labelpad=1)
    return save_figure(fig, path)

