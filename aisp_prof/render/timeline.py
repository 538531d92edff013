"""The nsys timeline strip: one representative call of each variant, kernels as boxes on one
shared time axis, so a five-kernel eager baseline and a one-kernel fused variant compare by
length, and the idle gaps between kernels show.

`representative_call` picks the rows (pure pandas); `timeline_chart` draws them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .charts import _save, plain
from .table import duration


# kernel boxes: no reds, so the red gap marks stand out
KERNEL_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                 "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d")
GAP_COLOR = "#d62728"
_CHAR_SHARE = 0.0125        # share of the axis one 8 pt character takes on the 9 inch figure


def representative_call(timeline: pd.DataFrame, ranges: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The kernels of the first call of `variant`'s NVTX range, in start order.

    With a `range_instance` column (the push each kernel was launched under) that is the first
    instance; without one, the first kernels_per_call kernels of the variant (kernel_count /
    occurrences from the ranges table).
    """
    if timeline.empty or "variant" not in timeline:
        return timeline.iloc[0:0]
    t = timeline[timeline["variant"] == variant].sort_values(["start_ns", "end_ns"], kind="stable")
    if t.empty:
        return t
    if "range_instance" in t and t["range_instance"].notna().any():
        first = t["range_instance"].dropna().iloc[0]
        return t[t["range_instance"] == first]
    r = ranges[ranges["variant"] == variant] if "variant" in ranges else ranges.iloc[0:0]
    if not r.empty and float(r["occurrences"].sum()):
        n = max(1, round(float(r["kernel_count"].sum()) / float(r["occurrences"].sum())))
        return t.head(n)
    return t


def strip_rows(call: pd.DataFrame) -> dict[str, Any]:
    """Kernels of one call relative to its first start, with the gap before each kernel."""
    if call.empty:
        return {"kernels": [], "span_ns": 0, "busy_ns": 0, "gap_total_ns": 0, "gap_max_ns": 0}
    t0 = int(call["start_ns"].min())
    kernels, busy_until, gaps = [], None, []
    for _, k in call.iterrows():
        start, end = int(k["start_ns"]), int(k["end_ns"])
        gap = max(0, start - busy_until) if busy_until is not None else 0
        gaps.append(gap)
        busy_until = end if busy_until is None else max(busy_until, end)
        name = k.get("short_name") or k.get("kernel") or "?"
        kernels.append({"name": str(name), "kernel": str(k.get("kernel") or name), "start_ns": start - t0,
                        "end_ns": end - t0, "duration_ns": end - start, "gap_before_ns": gap})
    span = int(call["end_ns"].max()) - t0
    return {"kernels": kernels, "span_ns": span, "busy_ns": int(call["duration_ns"].sum()),
            "gap_total_ns": int(sum(gaps)), "gap_max_ns": int(max(gaps))}


def timeline_chart(strips: dict[str, dict[str, Any]], path: Path) -> Path:
    """One row per variant; every row on the same microsecond axis; gaps marked in red."""
    variants = [v for v in strips if strips[v]["kernels"]]
    names: list[str] = []
    for v in variants:
        for k in strips[v]["kernels"]:
            if k["name"] not in names:
                names.append(k["name"])
    colors = {n: KERNEL_COLORS[i % len(KERNEL_COLORS)] for i, n in enumerate(names)}
    span_us = max((strips[v]["span_ns"] for v in variants), default=1) / 1e3 or 1.0
    fig = Figure(figsize=(9, 0.75 * len(variants) + 1.5))
    ax = fig.add_subplot()
    for row, v in enumerate(variants):
        y = len(variants) - 1 - row
        for k in strips[v]["kernels"]:
            x0, w = k["start_ns"] / 1e3, k["duration_ns"] / 1e3
            ax.broken_barh([(x0, w)], (y - 0.3, 0.6), facecolors=colors[k["name"]], edgecolor="white",
                           linewidth=0.8)
            fits = int(w / span_us / _CHAR_SHARE)       # characters that fit inside the box
            if fits >= 8:
                label = k["name"] if len(k["name"]) <= fits else k["name"][: fits - 1] + "…"
                ax.text(x0 + w / 2, y, plain(label), ha="center", va="center", fontsize=8, clip_on=True)
            if k["gap_before_ns"] > 0:
                gx = (k["start_ns"] - k["gap_before_ns"]) / 1e3
                gw = max(k["gap_before_ns"] / 1e3, span_us * 0.002)   # at least ~2 px, so a 1 us gap shows
                ax.broken_barh([(gx, gw)], (y - 0.42, 0.84), facecolors=GAP_COLOR)
    labels = [f"{v}\n{len(strips[v]['kernels'])} kernel(s), gaps {duration(strips[v]['gap_total_ns'])}"
              for v in variants]
    ax.set_yticks(range(len(variants))[::-1], [plain(s) for s in labels], fontsize=9)
    ax.set_xlim(0, span_us * 1.02)
    ax.set_ylim(-0.6, len(variants) - 0.4)
    ax.set_xlabel("µs from the first kernel of the call (nsys, one call per variant; red: GPU idle between kernels)")
    ax.spines[["top", "right", "left"]].set_visible(False)
    labels = [plain(n if len(n) <= 48 else n[:47] + "…") for n in names]
    ax.legend([Patch(color=colors[n]) for n in names], labels, loc="center left", bbox_to_anchor=(1.01, 0.5),
              fontsize=7, frameon=False, title="kernels", title_fontsize=8)
    return _save(fig, path)
