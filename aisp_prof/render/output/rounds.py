"""The page's "Samples by round" figure as SVG written directly (`analyze.timing.rounds` computes it).

One small panel per kind of time the run has (GPU, latency, steady; a legacy run's one timer): x the
round, y the time per call (a log axis where the panel's times span over 10x), a dot per sample, one
color per variant (`charts.variant_colors`: the baseline grey, the reference kernels a lighter grey),
each variant's median a thin line of its color, the processes' boundaries dashed where there are
several. Like the stall bars (`output.bars`) it is markup, not matplotlib: a few milliseconds for a
run's thousands of samples where matplotlib's SVG took a few hundred and wrote a <use> per dot, and
the same data gives the same bytes (no date, no ids, every order fixed by the data).
"""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any, Callable

from ...units import duration
from ..charts import variant_colors
from .zoom import ticks

WIDTH = 990                       # the page's figures' width (viewBox units, about px)
PANEL_MAX_W = 420                 # one panel (a legacy run's) is no wider than this
LEFT, RIGHT, TOP, PLOT_H, AXIS_H = 54, 12, 20, 120, 30
REFERENCE_COLOR = "#c7c7c7"


def _esc(text: Any) -> str:
    return html.escape(str(text))


def _log_ticks(lo: float, hi: float) -> list[float]:
    """1, 2, 5 x 10^k inside [lo, hi]; only the powers of ten when that gives more than 6."""
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    out = [m * 10.0 ** e for e in decades for m in (1, 2, 5) if lo <= m * 10.0 ** e <= hi]
    return out if len(out) <= 6 else [t for t in out if math.log10(t).is_integer()] or out[::3]


def _y_axis(panel: dict[str, Any]) -> tuple[Callable[[float], float], list[float]]:
    """The panel's y position of a time (ns) and its ticks: from 0 (linear: a flat series stays flat)
    or from a third below the fastest sample (log) to a little above the slowest."""
    series = panel["series"]
    high = max(s["max_ns"] for s in series) or 1.0
    if panel["log_scale"]:
        lo, hi = math.log10(min(s["min_ns"] for s in series if s["min_ns"] > 0) / 1.3), math.log10(high * 1.3)
        y = lambda t: TOP + PLOT_H - (math.log10(max(t, 1e-9)) - lo) / (hi - lo) * PLOT_H   # noqa: E731
        return y, _log_ticks(10 ** lo, 10 ** hi)
    top = high * 1.08
    return (lambda t: TOP + PLOT_H - t / top * PLOT_H), [t for t in ticks(0.0, top, 4) if t <= top]


def _dots(xs: list[float], ys: list[float]) -> str:
    """A path of zero-length strokes with round caps: a dot per sample at a dozen bytes each, a dot
    drawn once where two samples fall on the same tenth of a pixel."""
    seen: dict[str, None] = {}
    for x, y in zip(xs, ys):
        seen.setdefault(f"M{x:.1f} {y:.1f}h0", None)
    return "".join(seen)


def _panel(panel: dict[str, Any], left: float, width: float, rounds: int, starts: list[int],
           colors: dict[str, str]) -> str:
    """One panel's markup, its plot's left edge at `left`."""
    right = left + width
    px = lambda r: left + (r + 0.5) / max(rounds, 1) * width      # noqa: E731
    py, yticks = _y_axis(panel)
    scale = " (log)" if panel["log_scale"] else ""
    out = [f'<text x="{left}" y="{TOP - 6}" font-weight="bold">{_esc(panel["label"])}{scale}</text>',
           f'<rect x="{left}" y="{TOP}" width="{width:.1f}" height="{PLOT_H}" fill="none" stroke="#999" stroke-width="0.6"/>']
    for t in yticks:
        out.append(f'<line x1="{left - 3}" x2="{left}" y1="{py(t):.1f}" y2="{py(t):.1f}" stroke="#333"/>'
                   f'<text x="{left - 5}" y="{py(t) + 3.5:.1f}" text-anchor="end">{_esc(duration(t))}</text>')
    for r in ticks(0.0, float(rounds), 4):
        if r <= rounds:
            out.append(f'<line x1="{px(r):.1f}" x2="{px(r):.1f}" y1="{TOP + PLOT_H}" y2="{TOP + PLOT_H + 3}" stroke="#333"/>'
                       f'<text x="{px(r):.1f}" y="{TOP + PLOT_H + 14}" text-anchor="middle">{r:g}</text>')
    out.append(f'<text x="{(left + right) / 2:.1f}" y="{TOP + PLOT_H + 27}" text-anchor="middle">round</text>')
    for i, start in enumerate(starts):
        x = left + start / max(rounds, 1) * width
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + PLOT_H}" stroke="#444" '
                   f'stroke-dasharray="3 2"><title>process {i + 1} starts at round {start}</title></line>')
    for s in sorted(panel["series"], key=lambda s: not s["reference"]):       # references under the variants
        color = colors[s["variant"]]
        title = f'{s["variant"]}: {s["samples"]} samples, median {duration(s["median_ns"])}'
        out.append(f'<path d="{_dots([px(x) for x in s["x"]], [py(t) for t in s["time_ns"]])}" fill="none" '
                   f'stroke="{color}" stroke-width="{1.8 if s["reference"] else 2.4}" stroke-linecap="round" '
                   f'stroke-opacity="0.7"><title>{_esc(title)}</title></path>')
        out.append(f'<line x1="{left}" x2="{right:.1f}" y1="{py(s["median_ns"]):.1f}" y2="{py(s["median_ns"]):.1f}" '
                   f'stroke="{color}" stroke-width="1"><title>{_esc(title)}</title></line>')
    return "".join(out)


def rounds_svg(figure: dict[str, Any], path: Path) -> Path | None:
    """`figure` (`analyze.timing.rounds.round_panels`) as an SVG file; None when it has no panel."""
    panels = figure["panels"]
    if not panels:
        return None
    reference = {s["variant"] for p in panels for s in p["series"] if s["reference"]}
    names = [v for v in figure["variants"] if v not in reference]
    refs = [v for v in figure["variants"] if v in reference]
    colors = {**variant_colors(names), **dict.fromkeys(refs, REFERENCE_COLOR)}
    outer = min((WIDTH - 8) / len(panels), PANEL_MAX_W)
    body = [_panel(p, 8 + i * outer + LEFT, outer - LEFT - RIGHT, figure["rounds"], figure["process_starts"], colors)
            for i, p in enumerate(panels)]
    width, x, legend_y = 8 + outer * len(panels), 8 + LEFT, TOP + PLOT_H + AXIS_H + 12
    for name in names + refs:
        short = name if len(name) <= 40 else name[:39] + "…"
        if x + 16 + 6.1 * len(short) > width and x > 8 + LEFT:       # the next legend line
            x, legend_y = 8 + LEFT, legend_y + 14
        body.append(f'<rect x="{x:.0f}" y="{legend_y - 8}" width="12" height="8" fill="{colors[name]}"/>'
                    f'<text x="{x + 16:.0f}" y="{legend_y}">{_esc(short)}</text>')
        x += 16 + 6.1 * len(short) + 14
    height = legend_y + 8
    path.write_text(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
                    f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans, Arial, sans-serif" '
                    f'font-size="10"><rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>'
                    + "".join(body) + "</svg>", encoding="utf-8")
    return path
