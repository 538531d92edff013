"""The report's small charts as SVG written directly: the stall bars, the memory bars and the
index's roofline thumbnail (issue 33 item 3: a report page's time).

Each drew through matplotlib at 40-80 ms (mostly text layout); these take about a millisecond,
show the same numbers with the same colors (`charts.STALL_COLORS`, `charts.variant_colors`), and
each bar answers on hover with a <title>. `charts.stall_chart`, `charts.memory_chart` and
`charts.roofline_thumbnail` keep drawing the PNGs for the terminal and notebooks.
"""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any, Callable, Sequence

from ...units import si
from ..charts import MEMORY_LEVELS, OTHER_COLOR, STALL_COLORS, thumbnail_frame, variant_colors
from .zoom import ticks

CHAR_W = 6.3                      # an 11 px character's width, about
PLOT_W, LEGEND_W = 560, 250


def _esc(text: Any) -> str:
    return html.escape(str(text))


def _svg(width: float, height: float, body: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans, Arial, sans-serif" font-size="11">'
            f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>{body}</svg>')


def hbars(rows: Sequence[str], bars: Sequence[list[tuple[str, str, float, float, str]]], top_x: float,
          xlabel: str, fmt: Callable[[float], str], legend: Sequence[tuple[str, str]], legend_title: str,
          notes: Sequence[str] = ()) -> str:
    """Horizontal bars: per row, boxes (title, color, start, width, band) where band is 'i/n' (the
    i-th of n thin bars in the row, grouped bars) or '' (the whole row, stacked); `notes` a text
    after each row's bar. Axis from 0 to top_x, the legend at the right."""
    left = min(max((len(r) for r in rows), default=4) * CHAR_W + 14, 260)
    row_h = max(28.0, 13.0 * max((int(b[4].split("/")[1]) for bs in bars for b in bs if b[4]), default=1) + 8)
    plot_h = row_h * len(rows)
    x = lambda v: left + v / (top_x or 1.0) * PLOT_W            # noqa: E731
    out = []
    for i, (row, boxes) in enumerate(zip(rows, bars)):
        y = 8 + i * row_h
        out.append(f'<text x="{left - 6:.1f}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end">{_esc(row)}</text>')
        for title, color, start, width, band in boxes:
            if band:
                k, n = map(int, band.split("/"))
                by, bh = y + 4 + k * (row_h - 8) / n, (row_h - 8) / n * 0.92
            else:
                by, bh = y + row_h * 0.2, row_h * 0.6
            out.append(f'<rect x="{x(start):.2f}" y="{by:.2f}" width="{max(x(start + width) - x(start), 0):.2f}" '
                       f'height="{bh:.2f}" fill="{color}" stroke="#ffffff" stroke-width="0.6">'
                       f'<title>{_esc(title)}</title></rect>')
        if i < len(notes) and notes[i]:
            end = x(sum(b[3] for b in boxes if not b[4]))
            out.append(f'<text x="{end + 4:.1f}" y="{y + row_h / 2 + 4:.1f}">{_esc(notes[i])}</text>')
    base = 8 + plot_h
    out.append(f'<line x1="{left}" x2="{left + PLOT_W}" y1="{base}" y2="{base}" stroke="#333"/>')
    for t in ticks(0.0, top_x, 6):
        out.append(f'<line x1="{x(t):.2f}" x2="{x(t):.2f}" y1="{base}" y2="{base + 4}" stroke="#333"/>'
                   f'<text x="{x(t):.2f}" y="{base + 16}" text-anchor="middle">{_esc(fmt(t))}</text>')
    out.append(f'<text x="{left + PLOT_W / 2}" y="{base + 32}" text-anchor="middle">{_esc(xlabel)}</text>')
    lx = left + PLOT_W + 24
    out.append(f'<text x="{lx}" y="14" font-weight="bold" font-size="10">{_esc(legend_title)}</text>')
    for j, (name, color) in enumerate(legend):
        short = name if len(name) <= 34 else name[:33] + "…"
        out.append(f'<rect x="{lx}" y="{20 + j * 15}" width="12" height="10" fill="{color}"/>'
                   f'<text x="{lx + 17}" y="{29 + j * 15}" font-size="10">{_esc(short)}</text>')
    height = max(base + 40, 30 + 15 * len(legend))
    return _svg(lx + LEGEND_W, height, "".join(out))


def stall_svg(stalls: dict[str, dict[str, float]], path: Path, min_share: float = 0.02) -> Path:
    """`charts.stall_chart`'s stacked bars (reasons under `min_share` of the largest bar merged
    into 'other', ties by name) as SVG."""
    variants = list(stalls)
    totals = {v: sum(stalls[v].values()) for v in variants}
    biggest = max(totals.values(), default=0.0) or 1.0
    reasons = sorted({r for v in variants for r in stalls[v]},
                     key=lambda r: (-sum(stalls[v].get(r, 0.0) for v in variants), r))
    shown = [r for r in reasons if max(stalls[v].get(r, 0.0) for v in variants) >= min_share * biggest]
    merged = [r for r in reasons if r not in shown]
    names = shown + (["other"] if merged else [])
    color = {r: OTHER_COLOR if r == "other" else STALL_COLORS.get(r, OTHER_COLOR) for r in names}
    bars = []
    for v in variants:
        left, boxes = 0.0, []
        for r in names:
            val = sum(stalls[v].get(m, 0.0) for m in merged) if r == "other" else stalls[v].get(r, 0.0)
            if val > 0:
                boxes.append((f"{v}: {r} {val:.2f}", color[r], left, val, ""))
            left += val
        bars.append(boxes)
    svg = hbars(variants, bars, biggest * 1.12, "warp cycles stalled per issued instruction", lambda t: f"{t:g}",
                [(r, color[r]) for r in names], "stall reason", [f"{totals[v]:.1f}" for v in variants])
    path.write_text(svg, encoding="utf-8")
    return path


def memory_svg(traffic: list[dict[str, Any]], path: Path) -> Path:
    """`charts.memory_chart`'s grouped bars (bytes per memory level, a bar per variant) as SVG."""
    levels = [(c, name) for c, name in MEMORY_LEVELS if any(r.get(c) for r in traffic)]
    colors = variant_colors([r["variant"] for r in traffic])
    n = max(len(traffic), 1)
    top = max((r.get(c) or 0 for r in traffic for c, _ in levels), default=0) * 1.05 or 1.0
    bars = [[(f"{r['variant']}: {name} {si(r.get(c) or 0, 'B')}", colors[r["variant"]], 0.0, r.get(c) or 0, f"{i}/{n}")
             for i, r in enumerate(traffic)] for c, name in levels]
    svg = hbars([name for _, name in levels], bars, top, "bytes moved per call (ncu, summed over the variant's kernels)",
                lambda t: si(t, "B"), [(r["variant"], colors[r["variant"]]) for r in traffic], "variant")
    path.write_text(svg, encoding="utf-8")
    return path


def _sup(n: int) -> str:
    return str(n).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def thumbnail_svg(roof: dict[str, Any], path: Path) -> Path | None:
    """`charts.roofline_thumbnail` (the DRAM slope, the most used precision's roof, a dot per
    variant, arrows from the baseline) as a 286 x 209 SVG; None when nothing is plottable."""
    frame = thumbnail_frame(roof)
    if frame is None:
        return None
    aggs, bw, peak, ridge, x0, x1 = frame
    y0, y1 = min(p["flops_per_s"] for p in aggs) / 10, (peak or bw * x1) * 3
    L, R, T, B, W, H = 50, 8, 8, 34, 286, 209
    px = lambda v: L + (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (W - L - R)  # noqa: E731
    py = lambda v: H - B - (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * (H - T - B)  # noqa: E731
    roof_pts = [(x0, bw * x0), (ridge, peak), (x1, peak)] if peak else [(x0, bw * x0), (x1, bw * x1)]
    out = [f'<defs><clipPath id="c"><rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}"/></clipPath>'
           '<marker id="a" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto">'
           '<path d="M0,0L10,5L0,10z" fill="#000"/></marker></defs>',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#333" stroke-width="0.8"/>',
           '<polyline clip-path="url(#c)" fill="none" stroke="#d62728" stroke-width="1.6" points="'
           + " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in roof_pts) + '"/>']
    for axis, lo, hi, pos in (("x", x0, x1, px), ("y", y0, y1, py)):
        step = max(1, math.ceil((math.log10(hi) - math.log10(lo)) / 3))
        for e in range(math.ceil(math.log10(lo)), math.floor(math.log10(hi)) + 1, step):
            at = pos(10.0 ** e)
            out.append(f'<text x="{at:.1f}" y="{H - B + 13}" text-anchor="middle" font-size="11">10{_sup(e)}</text>'
                       if axis == "x" else
                       f'<text x="{L - 3}" y="{at + 4:.1f}" text-anchor="end" font-size="11">10{_sup(e)}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 4}" text-anchor="middle" font-size="10">FLOP/byte (DRAM)</text>'
               f'<text transform="translate(11,{(T + H - B) / 2}) rotate(-90)" text-anchor="middle" font-size="10">FLOP/s</text>')
    colors = variant_colors([p["variant"] for p in aggs])
    base = next((p for p in aggs if p["variant"] == "baseline"), None)
    for p in aggs:
        if base is not None and p is not base:
            a, b = (px(base["ai_dram_flop_per_byte"]), py(base["flops_per_s"])), (px(p["ai_dram_flop_per_byte"]), py(p["flops_per_s"]))
            d = math.hypot(b[0] - a[0], b[1] - a[1]) or 1.0
            s = [(a[0] + (b[0] - a[0]) * 4 / d, a[1] + (b[1] - a[1]) * 4 / d), (b[0] - (b[0] - a[0]) * 4 / d, b[1] - (b[1] - a[1]) * 4 / d)]
            out.append(f'<line x1="{s[0][0]:.1f}" y1="{s[0][1]:.1f}" x2="{s[1][0]:.1f}" y2="{s[1][1]:.1f}" '
                       'stroke="#000" stroke-width="0.9" marker-end="url(#a)"/>')
    for p in aggs:
        out.append(f'<circle cx="{px(p["ai_dram_flop_per_byte"]):.1f}" cy="{py(p["flops_per_s"]):.1f}" r="3.6" '
                   f'fill="{colors[p["variant"]]}" stroke="#000" stroke-width="0.6"><title>{_esc(p["variant"])}</title></circle>')
    path.write_text(_svg(W, H, "".join(out)), encoding="utf-8")
    return path
