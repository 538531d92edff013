"""The nsys timeline strip: one representative call of each variant, its GPU work as boxes on
one shared time axis, so a five-kernel eager baseline and a one-kernel fused variant compare by
length, and the idle gaps show.

GPU work is kernels and, where the run stored them (`memory_ops`), the memcpys and memsets the
call issued: a 537 MB device-to-device copy at the end of a call costs time like a kernel, and
the summary's GPU time counts it. Gaps follow the summary's definition (nsys_sqlite._range_table):
idle GPU time between any two operations of the call.

`representative_call` picks the rows (pure pandas); `strip_rows` turns them into plain data;
`timeline_figure` draws them (`timeline_chart` writes the PNG).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .charts import _save, plain
from .table import duration, si


# kernel boxes: no reds or greys, so the red gap marks and the grey memory ops stand out
KERNEL_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                 "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d")
GAP_COLOR = "#d62728"
# memory operations: grey, hatched (memcpy) or dotted (memset), whatever their kind
MEMORY_STYLE = {"memcpy": {"facecolor": "#c7c7c7", "hatch": "////", "edgecolor": "#404040"},
                "memset": {"facecolor": "#e5e5e5", "hatch": "....", "edgecolor": "#606060"}}
_CHAR_SHARE = 0.0125        # share of the axis one 8 pt character takes on the 9 inch figure


def _first_call(rows: pd.DataFrame, instance: Any) -> pd.DataFrame:
    return rows[rows["range_instance"] == instance] if "range_instance" in rows else rows.iloc[0:0]


def representative_call(timeline: pd.DataFrame, ranges: pd.DataFrame, variant: str,
                        memory_ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """The GPU work of the first call of `variant`'s NVTX range, in start order: kernels (the
    timeline's rows, `operation` "kernel") and the memcpys/memsets of the same call.

    With a `range_instance` column (the push each operation was issued under) that is the first
    instance with any work; without one, the first kernels_per_call kernels of the variant
    (kernel_count / occurrences from the ranges table) and no memory ops, which cannot then be
    assigned to a call. `memory_ops` None or empty (runs stored before they were kept): kernels only.
    """
    parts = []
    for frame, op in ((timeline, "kernel"), (memory_ops, None)):
        if frame is None or frame.empty or "variant" not in frame:
            continue
        rows = frame[frame["variant"] == variant]
        parts.append(rows.assign(operation=op) if op else rows)
    if not parts:
        return timeline.iloc[0:0]
    work = pd.concat(parts, ignore_index=True).sort_values(["start_ns", "end_ns"], kind="stable")
    if work.empty:
        return work
    if "range_instance" in work and work["range_instance"].notna().any():
        return _first_call(work, work["range_instance"].dropna().iloc[0]).reset_index(drop=True)
    kernels = work[work["operation"] == "kernel"]
    r = ranges[ranges["variant"] == variant] if "variant" in ranges else ranges.iloc[0:0]
    if not r.empty and float(r["occurrences"].sum()):
        n = max(1, round(float(r["kernel_count"].sum()) / float(r["occurrences"].sum())))
        return kernels.head(n).reset_index(drop=True)
    return kernels.reset_index(drop=True)


def memory_op_name(operation: str, copy_kind: Any, size_bytes: Any) -> str:
    """'memcpy DtoD 537 MB', 'memset 4 B': what the strip and its legend call one memory op."""
    kind = f" {copy_kind}" if operation == "memcpy" and isinstance(copy_kind, str) and copy_kind else ""
    size = f" {si(float(size_bytes), 'B')}" if pd.notna(size_bytes) else ""
    return f"{operation}{kind}{size}"


def strip_rows(call: pd.DataFrame) -> dict[str, Any]:
    """The operations of one call relative to its first start, each with the idle gap before it.

    `kernels` and `memory_ops` list them apart (every entry has `gap_before_ns`, the idle time
    since all earlier work of the call ended); `busy_ns` is the union of their intervals (the
    summary's GPU time of one call), `kernel_time_ns` the kernels' durations alone.
    """
    empty = {"kernels": [], "memory_ops": [], "span_ns": 0, "busy_ns": 0, "kernel_time_ns": 0,
             "gap_total_ns": 0, "gap_max_ns": 0, **{f"{op}_{what}": 0 for op in ("memcpy", "memset")
                                                    for what in ("count", "bytes", "time_ns")}}
    if call.empty:
        return empty
    if "operation" not in call:
        call = call.assign(operation="kernel")
    call = call.sort_values(["start_ns", "end_ns"], kind="stable")
    t0 = int(call["start_ns"].min())
    out = {**empty, "kernels": [], "memory_ops": []}
    busy_until, busy, gaps = None, 0, []
    for _, k in call.iterrows():
        start, end = int(k["start_ns"]), int(k["end_ns"])
        gap = max(0, start - busy_until) if busy_until is not None else 0
        busy += max(0, end - max(start, busy_until if busy_until is not None else start))
        gaps.append(gap)
        busy_until = end if busy_until is None else max(busy_until, end)
        entry = {"start_ns": start - t0, "end_ns": end - t0, "duration_ns": end - start, "gap_before_ns": gap}
        op = str(k.get("operation") or "kernel")
        if op == "kernel":
            name = k.get("short_name") or k.get("kernel") or "?"
            out["kernels"].append({"name": str(name), "kernel": str(k.get("kernel") or name), **entry})
            out["kernel_time_ns"] += end - start
        else:
            size = k.get("size_bytes")
            kind = k.get("copy_kind")
            out["memory_ops"].append({"name": memory_op_name(op, kind, size), "operation": op,
                                      "copy_kind": kind if isinstance(kind, str) else None,
                                      "size_bytes": int(size) if pd.notna(size) else None, **entry})
            if op in ("memcpy", "memset"):
                out[f"{op}_count"] += 1
                out[f"{op}_bytes"] += int(size) if pd.notna(size) else 0
                out[f"{op}_time_ns"] += end - start
    out.update(span_ns=int(call["end_ns"].max()) - t0, busy_ns=busy, gap_total_ns=int(sum(gaps)),
               gap_max_ns=int(max(gaps)))
    return out


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
    return _save(timeline_figure(strips), path)


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


def _box_label(ax: Any, span_us: float, x0_us: float, width_us: float, y: float, text: str,
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
        _box_label(ax, span_us, x0, w, y, k["name"])
    for m in strip.get("memory_ops") or []:
        x0 = m["start_ns"] / 1e3
        w = max(m["duration_ns"] / 1e3, span_us * 0.001)          # at least ~1 px: a 1 us memset shows
        ax.broken_barh([(x0, w)], (y - 0.3, 0.6), linewidth=0.6, zorder=3,
                       **MEMORY_STYLE.get(m["operation"], MEMORY_STYLE["memcpy"]))
        if int(w / span_us / _CHAR_SHARE) >= min(len(m["name"]), 8):
            _box_label(ax, span_us, x0, w, y, m["name"], on_hatch=True)
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
