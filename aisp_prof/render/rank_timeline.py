"""The rank timeline of a multi-rank run: one representative iteration of each variant, one lane
per rank, split into one row per CUDA stream, every box on the job's shared clock.

What it must make visible (issue 15): which rank started late and who waited for it (a
collective's kernel starts when its rank arrives; the part before the last rank arrived is drawn
pale), and whether communication ran beside compute (an overlapping variant's NCCL kernels on
their own stream's row, stacked in time over the compute kernels of the other row). Collectives
are dark and cross-hatched, one color per operation, so they never read as compute kernels,
which keep the strip's palette (`timeline.KERNEL_COLORS`); memory ops keep the strip's grey
hatching, idle time its red.

`analyze.ranks.lanes` picks the iteration and lays out the boxes (the page's `ranks.lanes`);
this module only draws them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .charts import save_figure, plain
from .timeline import GAP_COLOR, KERNEL_COLORS, MEMORY_STYLE, box_label

# dark, one per operation: white cross-hatching on them marks "collective" in any color
COLLECTIVE_COLORS = {"AllReduce": "#08306b", "ReduceScatter": "#54278f", "AllGather": "#00441b",
                     "AlltoAll": "#7f2704", "SendRecv": "#3f007d", "Broadcast": "#4d004b", "Reduce": "#002a3a"}
OTHER_COLLECTIVE = "#252525"
COLLECTIVE_HATCH = "xx"
WAIT_ALPHA = 0.3               # the waiting part of a collective: its color, pale
LANE_H, BOX_H = 1.0, 0.7       # one stream's row, and its boxes
RANK_GAP, VARIANT_GAP = 0.35, 1.1
RANK_BANDS = ("#f2f2f2", "#ffffff")


def rank_timeline_chart(lanes: dict[str, dict[str, Any]], path: Path) -> Path:
    """Write `rank_timeline_figure(lanes)` to `path` (PNG)."""
    return save_figure(rank_timeline_figure(lanes), path)


Bands = dict[str, dict[int, tuple[float, float]]]       # variant -> rank -> (top, bottom) of its lane


def _layout(lanes: dict[str, dict[str, Any]]) -> tuple[list[tuple[float, str, dict[str, Any]]],
                                                         list[tuple[float, str]], Bands, float]:
    """Rows top to bottom: (y, label, lane) per stream row, (y, text) per variant title, each
    rank's lane per variant, and the bottom of the last row."""
    rows: list[tuple[float, str, dict[str, Any]]] = []
    titles: list[tuple[float, str]] = []
    bands: Bands = {}
    y = 0.0
    for v, it in lanes.items():
        titles.append((y, f"{v}: iteration {it['iteration'] + 1} of {it['iterations']}, "
                          f"last rank done {it['finish_spread_ns'] / 1e3:.1f} µs after the first"))
        y += 0.5
        for rank in [r["rank"] for r in it["ranks"]]:
            top = y
            for lane in (ln for ln in it["lanes"] if ln["rank"] == rank):
                stream = "" if lane["stream_id"] is None else f" · stream {lane['stream_id']}"
                rows.append((y + LANE_H / 2, f"rank {rank}{stream}", lane))
                y += LANE_H
            bands.setdefault(v, {})[rank] = (top, y)
            y += RANK_GAP
        y += VARIANT_GAP - RANK_GAP
    return rows, titles, bands, y


def rank_timeline_figure(lanes: dict[str, dict[str, Any]]) -> Figure:
    """One block per variant, a lane per rank (a row per stream), all on one microsecond axis."""
    rows, titles, bands, bottom = _layout(lanes)
    names: list[str] = []
    for _, _, lane in rows:
        for box in lane["ops"]:
            if box["kind"] == "compute" and box["name"] not in names:
                names.append(box["name"])
    colors = {n: KERNEL_COLORS[i % len(KERNEL_COLORS)] for i, n in enumerate(names)}
    span_us = max((it["span_ns"] for it in lanes.values()), default=1) / 1e3 or 1.0
    fig = Figure(figsize=(9, 0.34 * bottom + 1.2))
    ax = fig.add_subplot()
    for per_rank in bands.values():
        for rank, (top, low) in per_rank.items():
            ax.axhspan(top, low, color=RANK_BANDS[rank % 2], zorder=0, linewidth=0)
    for y, _, lane in rows:
        for box in lane["ops"]:
            _draw_box(ax, box, y, colors, span_us)
    for v, it in lanes.items():
        _draw_gaps(ax, it, bands[v], span_us)
    for y, text in titles:
        ax.text(0, y + 0.25, plain(text), fontsize=8.5, fontweight="bold", va="center", ha="left")
    ax.set_yticks([y for y, _, _ in rows], [plain(label) for _, label, _ in rows], fontsize=8)
    ax.set_ylim(bottom - VARIANT_GAP + RANK_GAP + 0.1, -0.1)
    ax.set_xlim(0, span_us * 1.02)
    ax.set_xlabel("µs from the iteration's first GPU operation on any rank (nsys, one clock for all ranks)")
    ax.spines[["top", "right", "left"]].set_visible(False)
    ax.tick_params(axis="y", length=0)
    _legend(ax, names, colors, rows)
    return fig


def _draw_box(ax: Any, box: dict[str, Any], y: float, colors: dict[str, str], span_us: float) -> None:
    x0, w = box["start_ns"] / 1e3, max(box["duration_ns"] / 1e3, span_us * 0.001)
    y0 = y - BOX_H / 2
    if box["kind"] == "collective":
        color = COLLECTIVE_COLORS.get(box.get("op") or "", OTHER_COLLECTIVE)
        wait = min(box.get("wait_ns") or 0, box["duration_ns"]) / 1e3
        if wait > 0:
            ax.broken_barh([(x0, wait)], (y0, BOX_H), facecolors=color, alpha=WAIT_ALPHA, linewidth=0, zorder=2)
        ax.broken_barh([(x0 + wait, max(w - wait, span_us * 0.001))], (y0, BOX_H), facecolors=color,
                       edgecolor="white", hatch=COLLECTIVE_HATCH, linewidth=0.6, zorder=3)
        box_label(ax, span_us, x0 + wait, w - wait, y, box.get("op") or box["name"], on_hatch=True)
    elif box["kind"] == "compute":
        ax.broken_barh([(x0, w)], (y0, BOX_H), facecolors=colors[box["name"]], edgecolor="white",
                       linewidth=0.8, zorder=3)
        box_label(ax, span_us, x0, w, y, box["name"])
    else:
        ax.broken_barh([(x0, w)], (y0, BOX_H), linewidth=0.6, zorder=3,
                       **MEMORY_STYLE.get(box["kind"], MEMORY_STYLE["memcpy"]))
        box_label(ax, span_us, x0, w, y, box["name"], on_hatch=True)


def _draw_gaps(ax: Any, it: dict[str, Any], bands: dict[int, tuple[float, float]], span_us: float) -> None:
    """Each rank's idle stretches (no operation on any of its streams): red, along its lane's foot."""
    for r in it["ranks"]:
        _, low = bands[r["rank"]]
        for g in r["gaps"]:
            gx, gw = g["start_ns"] / 1e3, max((g["end_ns"] - g["start_ns"]) / 1e3, span_us * 0.002)
            ax.broken_barh([(gx, gw)], (low - 0.12, 0.12), facecolors=GAP_COLOR, zorder=4)


def _legend(ax: Any, names: list[str], colors: dict[str, str], rows: list[tuple[float, str, dict[str, Any]]]) -> None:
    """Compute kernels by color, then each collective operation, its waiting, memory ops, idle."""
    handles = [Patch(color=colors[n]) for n in names]
    labels = [plain(n if len(n) <= 48 else n[:47] + "…") for n in names]
    ops = list(dict.fromkeys(b.get("op") or "other" for _, _, ln in rows for b in ln["ops"] if b["kind"] == "collective"))
    for op in ops:
        handles.append(Patch(facecolor=COLLECTIVE_COLORS.get(op, OTHER_COLLECTIVE), edgecolor="white",
                             hatch=COLLECTIVE_HATCH, linewidth=0.6))
        labels.append(f"collective {op} (NCCL)")
    if ops:
        handles.append(Patch(facecolor=COLLECTIVE_COLORS.get(ops[0], OTHER_COLLECTIVE), alpha=WAIT_ALPHA))
        labels.append("collective, waiting for the last rank")
    kinds = list(dict.fromkeys(b["kind"] for _, _, ln in rows for b in ln["ops"] if b["kind"] in MEMORY_STYLE))
    for kind in kinds:
        handles.append(Patch(linewidth=0.6, **MEMORY_STYLE[kind]))
        labels.append(kind)
    handles.append(Patch(color=GAP_COLOR))
    labels.append("rank idle (no stream busy)")
    ax.legend(handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7, frameon=False,
              title="kernels, collectives", title_fontsize=8)
