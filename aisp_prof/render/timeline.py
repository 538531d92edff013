"""The nsys timeline strip: one representative call of each variant, its GPU work as boxes on
one shared time axis, so a five-kernel eager baseline and a one-kernel fused variant compare by
length, and the idle gaps show.

GPU work is kernels and, where the run stored them (`memory_ops`), the memcpys and memsets the
call issued: a 537 MB device-to-device copy at the end of a call costs time like a kernel, and
the summary's GPU time counts it. Gaps follow the summary's definition (parse.nsys.ranges.range_table):
idle GPU time between any two operations of the call.

`analyze.timeline.call` picks the call and turns it into plain data (the page's `timeline`);
`timeline_figure` draws it (`timeline_chart` writes the PNG).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .charts import save_figure, plain
from ..units import duration, si


# kernel boxes: no reds or greys, so the red gap marks and the grey memory ops stand out
KERNEL_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                 "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d")
GAP_COLOR = "#d62728"
# memory operations: grey, hatched (memcpy) or dotted (memset), whatever their kind
MEMORY_STYLE = {"memcpy": {"facecolor": "#c7c7c7", "hatch": "////", "edgecolor": "#404040"},
                "memset": {"facecolor": "#e5e5e5", "hatch": "....", "edgecolor": "#606060"}}
_CHAR_SHARE = 0.0125        # share of the axis one 8 pt character takes on the 9 inch figure


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def row_label(variant: str, strip: dict[str, Any]) -> str:
    """'sparse24' / '1 kernel, 1 memcpy (537 MB)' / 'gaps 1.4 us': the y label of one strip."""
    parts = [_count(len(strip["kernels"]), "kernel")]
    for op in ("memcpy", "memset"):
        n = strip.get(f"{op}_count") or 0
        if n:
            parts.append(f"{_count(n, op)} ({si(strip.get(f'{op}_bytes') or 0, 'B')})")
    return f"{variant}\n{', '.join(parts)}\ngaps {duration(strip['gap_total_ns'])}"


def _memory_legend(strips: dict[str, dict[str, Any]], variants: list[str]) -> dict[tuple[str, str | None], str]:
    """(operation, copy kind) -> legend text: 'memcpy DtoD 537 MB' (or a size range when they differ)."""
    sizes: dict[tuple[str, str | None], list[int]] = {}
    for v in variants:
        for m in strips[v].get("memory_ops") or []:
            sizes.setdefault((m["operation"], m.get("copy_kind")), []).append(m.get("size_bytes") or 0)
    out = {}
    for (op, kind), ss in sizes.items():
        lo, hi = min(ss), max(ss)
        size = si(lo, "B") if lo == hi else f"{si(lo, 'B')} - {si(hi, 'B')}"
        out[(op, kind)] = f"{op}{' ' + kind if op == 'memcpy' and kind else ''} {size}"
    return out


def timeline_chart(strips: dict[str, dict[str, Any]], path: Path) -> Path:
    """Write `timeline_figure(strips)` to `path` (PNG)."""
    return save_figure(timeline_figure(strips), path)


def timeline_figure(strips: dict[str, dict[str, Any]]) -> Figure:
    """One row per variant; every row on the same microsecond axis; memory ops grey and hatched;
    gaps marked in red."""
    variants = [v for v in strips if strips[v]["kernels"] or strips[v].get("memory_ops")]
    names: list[str] = []
    for v in variants:
        for k in strips[v]["kernels"]:
            if k["name"] not in names:
                names.append(k["name"])
    colors = {n: KERNEL_COLORS[i % len(KERNEL_COLORS)] for i, n in enumerate(names)}
    span_us = max((strips[v]["span_ns"] for v in variants), default=1) / 1e3 or 1.0
    fig = Figure(figsize=(9, 0.85 * len(variants) + 1.5))
    ax = fig.add_subplot()
    for row, v in enumerate(variants):
        _draw_strip(ax, strips[v], len(variants) - 1 - row, colors, span_us)
    labels = [row_label(v, strips[v]) for v in variants]
    ax.set_yticks(range(len(variants))[::-1], [plain(s) for s in labels], fontsize=8.5)
    ax.set_xlim(0, span_us * 1.02)
    ax.set_ylim(-0.6, len(variants) - 0.4)
    ax.set_xlabel("µs from the call's first GPU operation (nsys, one call per variant; "
                  "red: GPU idle between operations)")
    ax.spines[["top", "right", "left"]].set_visible(False)
    _legend(ax, names, colors, _memory_legend(strips, variants))
    return fig


def box_label(ax: Any, span_us: float, x0_us: float, width_us: float, y: float, text: str,
               on_hatch: bool = False) -> None:
    """`text` inside its box, cut to the characters that fit; nothing when fewer than 8 fit."""
    fits = int(width_us / span_us / _CHAR_SHARE)       # characters that fit inside the box
    if fits >= 8:
        label = text if len(text) <= fits else text[: fits - 1] + "…"
        ax.text(x0_us + width_us / 2, y, plain(label), ha="center", va="center", fontsize=8, clip_on=True, zorder=5,
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85}
                if on_hatch else None)


def _draw_strip(ax: Any, strip: dict[str, Any], y: float, colors: dict[str, str], span_us: float) -> None:
    """One variant's row at height `y`: kernel boxes, memory-op boxes, then the gaps before each."""
    for k in strip["kernels"]:
        x0, w = k["start_ns"] / 1e3, k["duration_ns"] / 1e3
        ax.broken_barh([(x0, w)], (y - 0.3, 0.6), facecolors=colors[k["name"]], edgecolor="white",
                       linewidth=0.8)
        box_label(ax, span_us, x0, w, y, k["name"])
    for m in strip.get("memory_ops") or []:
        x0 = m["start_ns"] / 1e3
        w = max(m["duration_ns"] / 1e3, span_us * 0.001)          # at least ~1 px: a 1 us memset shows
        ax.broken_barh([(x0, w)], (y - 0.3, 0.6), linewidth=0.6, zorder=3,
                       **MEMORY_STYLE.get(m["operation"], MEMORY_STYLE["memcpy"]))
        if int(w / span_us / _CHAR_SHARE) >= min(len(m["name"]), 8):
            box_label(ax, span_us, x0, w, y, m["name"], on_hatch=True)
            continue
        # too narrow for its name: write it above the box, in the space between the rows
        if m["duration_ns"] >= span_us * 1e3 * 0.005:               # name only what can be seen
            right = x0 + w > span_us / 2
            ax.text(x0 + w if right else x0, y + 0.44, plain(m["name"]), ha="right" if right else "left",
                    va="bottom", fontsize=7.5, color="#404040", zorder=5)
    for op in [*strip["kernels"], *(strip.get("memory_ops") or [])]:
        if op["gap_before_ns"] > 0:
            gx = (op["start_ns"] - op["gap_before_ns"]) / 1e3
            gw = max(op["gap_before_ns"] / 1e3, span_us * 0.002)   # at least ~2 px, so a 1 us gap shows
            ax.broken_barh([(gx, gw)], (y - 0.42, 0.84), facecolors=GAP_COLOR, zorder=4)


def _legend(ax: Any, names: list[str], colors: dict[str, str], memory: dict[tuple[str, str | None], str]) -> None:
    """Kernel names by color, then one entry per kind of memory op, to the right of the axes."""
    handles = [Patch(color=colors[n]) for n in names]
    labels = [plain(n if len(n) <= 48 else n[:47] + "…") for n in names]
    for (op, _kind), text in memory.items():
        handles.append(Patch(linewidth=0.6, **MEMORY_STYLE.get(op, MEMORY_STYLE["memcpy"])))
        labels.append(plain(text))
    ax.legend(handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7, frameon=False,
              title="kernels, memory ops" if memory else "kernels", title_fontsize=8)
