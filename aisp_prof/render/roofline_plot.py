"""Draw a RooflineResult (aisp_prof.analyze.roofline.build): log-log rooflines, nothing computed here.

`draw(result, path, level="dram"|"l2"|"l1"|"all", compare=True)` writes one PNG or SVG (by the
path's suffix) with one chart per pair (run). Ceilings: theoretical dashed, measured solid,
each labelled with its value. Points: a variant's aggregate is a large marker, its kernels
small faded ones; with `compare`, an arrow from baseline to each optimized variant (in its color)
carries the speedup. The layout is fixed (MARGINS_IN around each chart's axes), so the chart is
drawn once; names and speedups are placed on it, each where it overlaps no
other label, marker, arrow or legend (labels.place_labels), with a leader line when pushed away,
so variants that sit close together stay readable. `level="all"` is the hierarchical view: one
variant's L1, L2 and DRAM points lie on one horizontal line (same FLOP/s, three intensities),
joined by a thin line. Figures are made without pyplot (Agg canvas), so drawing leaves no global
matplotlib state behind. `figure` returns the Figure; `draw` writes it.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..arguments import path as arg_path
from ..analyze.roofline.ceilings import SPARSE_PRECISIONS, Ceilings, dense_precision
from ..analyze.roofline.build import RooflineResult
from ..analyze.roofline.points import Point
from .charts import variant_colors
from .drawing import decades, draw_png, minor_ticks_as_markers, share_mathtext
from .labels import Label, place_labels
from ..errors import ArgumentError, OutputError
from ..naming import card_name
from ..units import si

LEVEL_COLORS = {"dram": "#d62728", "l2": "#2ca02c", "l1": "#1f77b4"}
LEVEL_MARKERS = {"dram": "o", "l2": "s", "l1": "^"}
LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1"}
COMPUTE_COLOR = "#444444"
PRECISION_NAMES = {"fp64": "FP64", "fp32": "FP32", "fp16": "FP16 (HFMA2)", "tensor_fp16": "tensor FP16",
                   "tensor_bf16": "tensor BF16", "tensor_tf32": "tensor TF32", "tensor_fp8": "tensor FP8",
                   "tensor_int8": "tensor INT8", "tensor_fp64": "tensor FP64"}
# the 2:4-sparse roofs (twice the dense ones on Hopper), named so that neither is read for the other
PRECISION_NAMES.update({p: f"{PRECISION_NAMES[dense_precision(p)]} 2:4 sparse" for p in SPARSE_PRECISIONS})
DPI = 120
NAME_GID, SPEEDUP_GID = "roofline-name", "roofline-speedup"      # the placed labels, for tests
PANEL_IN = (9.5, 6.2)                     # one chart, inches
# inches around a chart's axes: the y tick labels and label; the x ones; half an x tick label that
# sits on the right edge; the title. What a constrained layout chose for every shipped sample.
MARGINS_IN = (0.65, 0.5, 0.17, 0.25)
Limits = tuple[tuple[float, float], tuple[float, float]]      # ((x low, x high), (y low, y high))


def _plain(text: str) -> str:
    return str(text).replace("$", r"\$")


def _plottable(p: Point, level: str) -> bool:
    ai = p.ai(level)
    return bool(p.flops_per_s and p.flops_per_s > 0 and ai and ai > 0 and math.isfinite(ai))


def chart_cards(result: RooflineResult, points: Sequence[Point]) -> list[Ceilings]:
    """The ceilings of each card the points ran on, in the runs' order: the roofs one chart draws."""
    run_ids = {p.run_id for p in points}
    keys = dict.fromkeys(r.get("hardware_key") for r in result.runs if r["run_id"] in run_ids)
    return [result.cards[k] for k in keys if k in result.cards] or [result.ceilings]


def chart_run_names(result: RooflineResult, points: Sequence[Point]) -> dict[str, str]:
    """{run_id: short name} where one chart holds several runs' points (their labels name the run), else {}."""
    return result.run_names() if len({p.run_id for p in points}) > 1 else {}


def _precisions(result: RooflineResult, points: Sequence[Point], asked: Sequence[str] | None) -> list[str]:
    have = {pr for c in chart_cards(result, points) for pr in c.compute}
    if asked:
        return [p for p in asked if p in have]
    seen = [p.precision for p in points if p.precision and p.flops_per_s]
    order = list(dict.fromkeys(seen)) or ["fp32"]
    return [p for p in order if p in have]


def _groups(result: RooflineResult) -> list[tuple[str, list[Point]]]:
    """One chart per run, or a single chart when comparisons cross runs."""
    cross = any(c.baseline.run_id != c.optimized.run_id for c in result.comparisons)
    if cross or len(result.runs) == 1:
        title = " vs ".join(r.get("pair") or r.get("label") or r["run_id"] for r in result.runs)
        return [(title, list(result.points))]
    return [(r.get("pair") or r.get("label") or r["run_id"], [p for p in result.points if p.run_id == r["run_id"]])
            for r in result.runs]


def _limits(result: RooflineResult, points: Sequence[Point], levels: Sequence[str],
            precisions: Sequence[str]) -> tuple[tuple[float, float], tuple[float, float]]:
    xs = [p.ai(lv) for p in points for lv in levels if _plottable(p, lv)]
    ys = [p.flops_per_s for p in points for lv in levels if _plottable(p, lv)]
    cards = chart_cards(result, points)
    tops = [v for c in cards for pr in precisions for v in (c.value(pr), c.value(pr, "measured")) if v]
    ridges = [c.ridge(pr, lv, w) for c in cards for pr in precisions for lv in levels
              for w in ("theoretical", "measured")]
    xs += [r for r in ridges if r]
    x_lo = min(xs) / 10 if xs else 1e-2
    x_hi = max(xs) * 10 if xs else 1e3
    y_hi = max(tops + ys) * 3 if tops or ys else 1e15
    y_lo = min(ys) / 10 if ys else y_hi / 1e5
    y_lo = min(y_lo, y_hi / 1e4)
    return (x_lo, x_hi), (y_lo, y_hi)


def _card_name(c: Ceilings) -> str:
    return card_name(c.gpu_name) if c.gpu_name else c.hardware_key


def _draw_ceilings(ax: Any, cards: Sequence[Ceilings], levels: Sequence[str], precisions: Sequence[str],
                   xlim: tuple[float, float]) -> list[Any]:
    """Draw each card's roofs (the first card's boldest); return legend handles naming each with
    its value and, of several cards, its card (labels on the lines collide)."""
    handles = []
    for i, c in enumerate(cards):
        handles += _draw_card_roofs(ax, c, levels, precisions, xlim, i if len(cards) > 1 else None)
    return handles


def _draw_card_roofs(ax: Any, c: Ceilings, levels: Sequence[str], precisions: Sequence[str],
                     xlim: tuple[float, float], index: int | None) -> list[Any]:
    """One card's roofs; `index` (None: the only card) names the card and fades all but the first."""
    x0, x1 = xlim
    handles = []
    card = f" ({_card_name(c)})" if index is not None else ""
    lw, alpha = (1.4, 0.9) if not index else (1.0, 0.5)
    legend = {"lw": 1.6} if not index else {"lw": 1.2, "alpha": alpha}
    top = {w: max([v for pr in precisions if (v := c.value(pr, w))] or [0.0]) for w in ("theoretical", "measured")}
    for level in levels:
        values = []
        for which, style in (("theoretical", "--"), ("measured", "-")):
            bw = c.value(level, which)
            cap = top[which] or top["theoretical"]
            if not bw or not cap:
                continue
            x_end = min(x1, cap / bw)
            ax.plot([x0, x_end], [bw * x0, bw * x_end], style, color=LEVEL_COLORS[level], lw=lw, alpha=alpha,
                    gid=f"roof-{level}")
            values.append(f"{si(bw, 'B/s')} {which[:4]}.")
        if values:
            handles.append(Line2D([], [], color=LEVEL_COLORS[level], **legend,
                                  label=f"{LEVEL_NAMES[level]}{card}: " + ", ".join(values)))
    left = levels[0] if "dram" not in levels else "dram"
    for pr in precisions:
        values = []
        for which, style in (("theoretical", "--"), ("measured", "-")):
            rate = c.value(pr, which)
            if not rate:
                continue
            bw = c.value(left, which) or c.value(left)
            x_start = max(x0, rate / bw) if bw else x0
            ax.plot([x_start, x1], [rate, rate], style, color=COMPUTE_COLOR, lw=lw, alpha=alpha, gid=f"roof-{pr}")
            if not values:      # one name per precision, on its upper roof (a later card's under it)
                ax.annotate(PRECISION_NAMES.get(pr, pr) + card, xy=(x1 / 1.15, rate), ha="right",
                            va="top" if index else "bottom", fontsize=7, color=COMPUTE_COLOR, gid=f"roof-{pr}")
            derived = which == "measured" and c.compute[pr].measured_derived
            values.append(f"{si(rate, 'FLOP/s')} {which[:4]}." + (" (2x dense, derived)" if derived else ""))
        if values:
            handles.append(Line2D([], [], color=COMPUTE_COLOR, **legend,
                                  label=f"{PRECISION_NAMES.get(pr, pr)}{card}: " + ", ".join(values)))
    return handles


def _draw_points(ax: Any, result: RooflineResult, points: Sequence[Point], levels: Sequence[str],
                 kernels: bool) -> tuple[list[Any], list[Label]]:
    """Markers of kernels and variants; returns legend handles and the variants' name labels
    (placed later, once the layout is known)."""
    variants = list(dict.fromkeys(p.variant for p in points))
    colors = variant_colors(variants)
    handles: list[Any] = []
    names: list[Label] = []
    hierarchical = len(levels) > 1
    index = {id(q): i for i, q in enumerate(result.points)}          # gid pt-<i>: the SVG's hover data
    runs = chart_run_names(result, points)
    for p in points:
        if p.is_aggregate:
            continue
        if not kernels:
            continue
        for level in levels:
            if _plottable(p, level):
                ax.scatter([p.ai(level)], [p.flops_per_s], s=14, marker=LEVEL_MARKERS[level] if hierarchical else "o",
                           color=colors[p.variant], alpha=0.35, edgecolors="none", zorder=3,
                           gid=f"pt-{index[id(p)]}")
    for p in points:
        if not p.is_aggregate:
            continue
        color = colors[p.variant]
        xs = [p.ai(lv) for lv in levels if _plottable(p, lv)]
        if not xs:
            continue
        if hierarchical and len(xs) > 1:
            ax.plot([min(xs), max(xs)], [p.flops_per_s] * 2, "-", color=color, lw=0.8, alpha=0.7, zorder=3)
        for level in levels:
            if _plottable(p, level):
                marker = LEVEL_MARKERS[level] if hierarchical else "o"
                ax.scatter([p.ai(level)], [p.flops_per_s], s=70, marker=marker, color=color,
                           edgecolors="black", linewidths=0.6, zorder=5, gid=f"pt-{index[id(p)]}")
        name_x = p.ai(levels[-1]) if _plottable(p, levels[-1]) else xs[-1]
        run = f" ({_plain(runs[p.run_id])})" if runs else ""
        names.append(Label(_plain(p.variant) + run, (name_x, p.flops_per_s), color=color, gid=NAME_GID, angle_deg=20))
        pct = f", {p.pct_of_roof:.0f}% of {p.bound} roof" if p.pct_of_roof is not None else ""
        label = f"{_plain(p.variant)}{run} ({p.flop_basis} FLOPs{pct})"
        handles.append(Line2D([], [], marker="o", ls="", color=color, markeredgecolor="black", label=label))
    if hierarchical:
        handles += [Line2D([], [], marker=LEVEL_MARKERS[lv], ls="", color="white", markeredgecolor="black",
                           label=f"{LEVEL_NAMES[lv]} intensity") for lv in levels]
    if kernels and any(not p.is_aggregate for p in points):
        handles.append(Line2D([], [], marker="o", ls="", color="#999999", alpha=0.4, label="single kernels (counted FLOPs)"))
    return handles, names


def _draw_arrows(ax: Any, result: RooflineResult, points: Sequence[Point], level: str) -> list[Label]:
    """An arrow from the baseline to each optimized variant, in the variant's color; returns the
    speedup labels, anchored at the middle of their arrows (placed later)."""
    ids = {id(p) for p in points}
    colors = variant_colors(list(dict.fromkeys(p.variant for p in points)))
    runs = chart_run_names(result, points)
    labels = []
    for c in result.comparisons:
        b, o = c.baseline, c.optimized
        if id(b) not in ids or id(o) not in ids or not (_plottable(b, level) and _plottable(o, level)):
            continue
        color = colors.get(o.variant, "black")
        ax.annotate("", xy=(o.ai(level), o.flops_per_s), xytext=(b.ai(level), b.flops_per_s),
                    arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.4, "shrinkA": 6, "shrinkB": 6},
                    zorder=6)
        mid = (math.sqrt(b.ai(level) * o.ai(level)), math.sqrt(b.flops_per_s * o.flops_per_s))   # log-log middle
        text = f"{_plain(o.variant)} {c.speedup:.2f}x" if c.speedup else f"{_plain(o.variant)} ?"
        if runs:
            text += f" ({_plain(runs[b.run_id] if b.run_id == o.run_id else f'{runs[b.run_id]} -> {runs[o.run_id]}')})"
        labels.append(Label(text, mid, color=color, gid=SPEEDUP_GID, angle_deg=-45, bold=True, boxed=True))
    return labels


def _panels(fig: Figure, count: int) -> list[Any]:
    """`count` charts stacked top down, each in a PANEL_IN slot with MARGINS_IN around its axes:
    a fixed layout, so the chart is drawn once (a constrained layout measures every text first)."""
    width, height = fig.get_size_inches()
    left, bottom, right, top = MARGINS_IN
    return [fig.add_axes(((left / width), (height - (i + 1) * PANEL_IN[1] + bottom) / height,
                          (width - left - right) / width, (PANEL_IN[1] - bottom - top) / height))
            for i in range(count)]


def draw(result: RooflineResult, path: str | Path, level: str = "dram", compare: bool = True,
         precisions: Sequence[str] | None = None, kernels: bool = True, limits: Limits | None = None) -> Path:
    """Write the roofline chart(s) of `result` to `path` (.png or .svg); return the path."""
    path = arg_path(path, "path")
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise OutputError(f"{path}: the chart is written as .png or .svg")      # as `roofline --out` says
    fig = figure(result, level, compare, precisions, kernels, limits)
    if fmt == "png":
        return draw_png(fig, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=fmt, dpi=DPI, facecolor="white", metadata={"Creator": None, "Date": None})
    return path


def _levels(level: str) -> tuple[str, ...]:
    if level not in ("dram", "l2", "l1", "all"):
        raise ArgumentError(f"level must be dram, l2, l1 or all, not {level!r}")
    return ("l1", "l2", "dram") if level == "all" else (level,)


def axes_limits(results: Sequence[RooflineResult], level: str = "dram",
                precisions: Sequence[str] | None = None) -> Limits:
    """One set of axes that holds every chart of `results` (each chart's points, roofs and ridge
    points): the same pair drawn on several cards with these limits compares by eye."""
    levels, found = _levels(level), []
    for result in results:
        for _title, points in _groups(result):
            found.append(_limits(result, points, levels, _precisions(result, points, precisions)))
    if not found:
        raise ValueError("no roofline to take axes from")
    return ((min(f[0][0] for f in found), max(f[0][1] for f in found)),
            (min(f[1][0] for f in found), max(f[1][1] for f in found)))


def figure(result: RooflineResult, level: str = "dram", compare: bool = True,
           precisions: Sequence[str] | None = None, kernels: bool = True, limits: Limits | None = None) -> Figure:
    """The chart(s) of `result` as a Figure (what `draw` saves). Point names and speedups are
    placed last, on the final layout, where they overlap no other label, marker or legend.
    `limits` (from `axes_limits`) fixes every chart's axes; by default each fits its own points."""
    levels = _levels(level)
    groups = _groups(result)
    fig = Figure(figsize=(PANEL_IN[0], PANEL_IN[1] * len(groups)), dpi=DPI)
    FigureCanvasAgg(fig)
    axes = _panels(fig, len(groups))
    to_place = []
    for ax, (title, points) in zip(axes, groups):
        precs = _precisions(result, points, precisions)
        xlim, ylim = limits or _limits(result, points, levels, precs)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        minor_ticks_as_markers(ax)
        decades(ax)
        cards = chart_cards(result, points)
        roofs = _draw_ceilings(ax, cards, levels, precs, xlim)
        handles, names = _draw_points(ax, result, points, levels, kernels)
        speedups = _draw_arrows(ax, result, points, "dram" if level == "all" else level) if compare else []
        to_place.append((ax, names + speedups))
        xlabel = "arithmetic intensity [FLOP/byte]" + ("" if level == "all" else f" at {LEVEL_NAMES[level]}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("performance [FLOP/s]")
        gpu = " / ".join(c.gpu_name or c.hardware_key for c in cards)
        view = "hierarchical (L1, L2, DRAM)" if level == "all" else f"{LEVEL_NAMES[level]} roofline"
        # y given: the title sits where matplotlib would put it (nothing is above the axes), and the
        # draw skips measuring every y tick label to find out (a fifth of the chart's cost)
        ax.set_title(_plain(f"{title} - {gpu} - {view}"), fontsize=11, y=1.0)
        ax.grid(True, which="major", alpha=0.3)
        styles = [Line2D([], [], ls="--", color="black", label="theoretical ceiling (ncu peak x clock)"),
                  Line2D([], [], ls="-", color="black", label="measured ceiling (aisp-prof calibrate)")]
        first = ax.legend(handles=roofs + styles, loc="upper left", fontsize=7.5, framealpha=0.9,
                          title="ceilings", title_fontsize=8, bbox_to_anchor=(0.0, 0.96))
        ax.add_artist(first)
        ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)
        codes = sorted({w.code for w in result.warnings if w.severity == "warning"
                        and (w.run_id is None or w.run_id in {p.run_id for p in points})})
        if codes:
            ax.text(0.01, 0.99, "warnings: " + ", ".join(codes) + " (aisp-prof roofline --json)",
                    transform=ax.transAxes, va="top", fontsize=8, color="#b00000")
    renderer = share_mathtext(fig.canvas.get_renderer())   # the layout is fixed: labels are placed before the draw
    for ax, labels in to_place:
        place_labels(ax, renderer, labels)
    return fig


# ----------------------------------------------------------------------------------- terminal

def calibration_table(calibrations: Sequence[dict[str, Any]], width: int | None = None) -> str:
    """Measured ceilings per hardware key, each probe with its median time and spread."""
    from ..units import duration
    from .table import render, wrap_lines

    out = []
    for cal in calibrations:
        src = cal.get("_source", "")
        out += wrap_lines([f"{cal.get('hardware_key')}: {cal.get('gpu_name')}, driver {cal.get('driver_version')}, "
                           f"torch {cal.get('torch_version')}, {cal.get('created_at')}" + (f" [{src}]" if src else "")],
                          width)
        rows = []
        for name, p in (cal.get("probes") or {}).items():
            if not p.get("ok", True) or "rate" not in p:
                rows.append([name, "-", "-", "-", p.get("error", "failed")])
                continue
            rows.append([name, si(p["rate"], p.get("unit", "").replace("byte", "B").replace("flop", "FLOP")),
                         duration(p.get("median_ns")), f"{p.get('spread_pct', 0):.1f}%", p.get("what", "")])
        out.append(render(["probe", "rate (median)", "median time", "p10-p90 spread", "what"], rows, width,
                          wrap=("what",)))
        out.append("")
    return "\n".join(out).rstrip() or "no calibrations stored (run `aisp-prof calibrate` on a GPU)"
