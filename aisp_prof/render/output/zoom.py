"""The report's timelines as SVG that zooms on the time axis, offline (issue 32 item 2).

The nsys timeline strip (one call per variant) and the rank timeline (one iteration per variant,
a lane per rank, a row per stream) are written here as plain SVG markup, not through matplotlib:
every box is a <rect> that carries its times (data-t0/data-t1, µs) and a <title> (name, start,
duration), so the page's script (`templates/report.js`, `tl-zoom`) can show any time window by
moving the boxes, the labels that fit inside them and the ticks, with the mouse wheel, a drag or
the buttons beside the chart; no network, no server. The markup is laid out for the whole span
first, so the file is a complete chart in any viewer and without script. Building it costs about
a millisecond, against ~100 ms for the matplotlib PNG (`timeline.timeline_chart` and
`rank_timeline.rank_timeline_chart` keep the PNG for the terminal and notebooks).
"""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

from ...units import duration, si
from ..rank_timeline import COLLECTIVE_COLORS, OTHER_COLLECTIVE, RANK_BANDS, WAIT_ALPHA
from ..timeline import GAP_COLOR, KERNEL_COLORS, MEMORY_STYLE, row_label

WIDTH, LABEL_W, RIGHT = 990, 215, 12          # viewBox units (about px at a 990 px figure)
X0, X1 = LABEL_W, WIDTH - RIGHT               # the plot's left and right edge
AXIS_H, CHAR_W = 34, 6.1                      # the tick band under the rows; a 10 px character's width
PATTERNS = ('<pattern id="tl-hatch" patternUnits="userSpaceOnUse" width="6" height="6">'
            '<path d="M0,6L6,0" stroke="#404040" stroke-width="0.8"/></pattern>'
            '<pattern id="tl-dots" patternUnits="userSpaceOnUse" width="4" height="4">'
            '<circle cx="2" cy="2" r="0.7" fill="#606060"/></pattern>'
            '<pattern id="tl-cross" patternUnits="userSpaceOnUse" width="6" height="6">'
            '<path d="M0,6L6,0M0,0L6,6" stroke="#ffffff" stroke-width="0.8"/></pattern>')
HALO = ' stroke="#ffffff" stroke-width="2.5" paint-order="stroke"'     # a label readable on hatching
OVERLAY = {"memcpy": "tl-hatch", "memset": "tl-dots", "collective": "tl-cross"}


def _x(t_us: float, view: tuple[float, float]) -> float:
    return X0 + (t_us - view[0]) / (view[1] - view[0]) * (X1 - X0)


def ticks(lo: float, hi: float, count: int = 7) -> list[float]:
    """Round tick values (1, 2, 5 x 10^k apart) between lo and hi; the script's `ticks` is this."""
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 9) for i in range(int((hi - first) / step) + 1)]


def _fit(text: str, width: float) -> str:
    """The part of `text` that fits a box `width` wide ('' when fewer than 8 characters fit)."""
    fits = int((width - 4) / CHAR_W)
    return "" if fits < 8 else text if len(text) <= fits else text[: fits - 1] + "…"


def _box(b: dict[str, Any], top: float, h: float, view: tuple[float, float]) -> str:
    """One operation: its rect(s) (a pattern over the color for memory ops and collectives), its
    hover title and the label that fits inside it."""
    x0, x1 = _x(b["t0"], view), _x(b["t1"], view)
    w = max(x1 - x0, 0.8)
    y, bh = top + b.get("y0", 0.15) * h, (b.get("y1", 0.85) - b.get("y0", 0.15)) * h
    times = f'data-t0="{b["t0"]:.6g}" data-t1="{b["t1"]:.6g}"'
    geo = f'x="{x0:.2f}" y="{y:.2f}" width="{w:.2f}" height="{bh:.2f}"'
    opacity = f' fill-opacity="{b["opacity"]}"' if b.get("opacity") is not None else ""
    stroke = ' stroke="#ffffff" stroke-width="0.6"' if b["kind"] in ("kernel", "compute") else ""
    out = [f'<g class="op"><title>{html.escape(b["title"])}</title>'
           f'<rect class="b" {times} {geo} fill="{b["fill"]}"{opacity}{stroke}/>']
    if b["kind"] in OVERLAY:
        out.append(f'<rect class="b" {times} {geo} fill="url(#{OVERLAY[b["kind"]]})"/>')
    if b.get("label"):
        text = _fit(b["label"], w)
        hidden = ("" if text else ' display="none"') + (HALO if b["kind"] in OVERLAY else "")
        out.append(f'<text class="bl" {times} data-label="{html.escape(b["label"])}" x="{(x0 + x1) / 2:.2f}" '
                   f'y="{y + bh / 2 + 3.5:.2f}" text-anchor="middle"{hidden}>{html.escape(text)}</text>')
    out.append("</g>")
    return "".join(out)


def _legend(entries: list[tuple[str, str, str | None]], top: float) -> tuple[str, float]:
    """Swatch + text in two columns under the axis; returns the markup and its height."""
    out, col_w = [], (WIDTH - 20) / 2
    for i, (text, fill, kind) in enumerate(entries):
        x, y = 10 + (i % 2) * col_w, top + (i // 2) * 16
        out.append(f'<rect x="{x}" y="{y}" width="14" height="10" fill="{fill}"/>')
        if kind in OVERLAY:
            out.append(f'<rect x="{x}" y="{y}" width="14" height="10" fill="url(#{OVERLAY[kind]})"/>')
        short = text if len(text) <= 70 else text[:69] + "…"
        out.append(f'<text x="{x + 19}" y="{y + 9}">{html.escape(short)}</text>')
    return "".join(out), math.ceil(len(entries) / 2) * 16


def zoom_svg(rows: list[dict[str, Any]], span_us: float, axis: str, legend: list[tuple[str, str, str | None]],
             kind: str) -> str:
    """Rows top down ({"lines", "h", "band", "bold", "boxes"}), one time axis 0..span_us*1.02."""
    view = (0.0, (span_us or 1.0) * 1.02)
    body, y = [], 6.0
    for row in rows:
        h = row["h"]
        if row.get("band"):
            body.append(f'<rect x="0" y="{y:.2f}" width="{WIDTH}" height="{h:.2f}" fill="{row["band"]}"/>')
        lines = row["lines"]
        for j, line in enumerate(lines):
            ly = y + h / 2 + (j - (len(lines) - 1) / 2) * 11 + 3.5
            weight = ' font-weight="bold"' if row.get("bold") else ""
            anchor = f'x="{X0}" text-anchor="start"' if row.get("bold") else f'x="{X0 - 6}" text-anchor="end"'
            body.append(f'<text {anchor} y="{ly:.2f}"{weight}>{html.escape(line)}</text>')
        body.append(f'<g clip-path="url(#tl-clip-{kind})">'
                    + "".join(_box(b, y, h, view) for b in row.get("boxes", [])) + "</g>")
        y += h + row.get("gap", 0)
    plot_h = y
    tick_marks = []
    for t in ticks(*view):
        x = _x(t, view)
        tick_marks.append(f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{plot_h}" y2="{plot_h + 4}" stroke="#333"/>'
                          f'<text x="{x:.2f}" y="{plot_h + 15}" text-anchor="middle">{t:g}</text>')
    legend_svg, legend_h = _legend(legend, plot_h + AXIS_H + 6)
    height = plot_h + AXIS_H + 6 + legend_h + 4
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="tl-svg" viewBox="0 0 {WIDTH} {height:.0f}" '
            f'data-x0="{X0}" data-x1="{X1}" data-span="{view[1]:.6g}" data-view="0 {view[1]:.6g}" '
            f'font-family="DejaVu Sans, Arial, sans-serif" font-size="10" role="img">'
            f'<defs>{PATTERNS}<clipPath id="tl-clip-{kind}"><rect x="{X0}" y="0" width="{X1 - X0}" '
            f'height="{plot_h}"/></clipPath></defs><rect width="{WIDTH}" height="{height:.0f}" fill="#ffffff"/>'
            + "".join(body)
            + f'<line x1="{X0}" x2="{X1}" y1="{plot_h}" y2="{plot_h}" stroke="#333"/>'
            f'<g class="ticks">{"".join(tick_marks)}</g>'
            f'<text x="{(X0 + X1) / 2}" y="{plot_h + 29}" text-anchor="middle">{html.escape(axis)}</text>'
            + legend_svg + "</svg>")


def _op_title(name: str, start_ns: float, duration_ns: float, extra: str = "") -> str:
    return f"{name}\nstart {duration(start_ns)}, lasts {duration(duration_ns)}{extra}"


def strip_rows(strips: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], float, list[Any]]:
    """The timeline strip's rows (a variant each), its span in µs and its legend."""
    variants = [v for v in strips if strips[v]["kernels"] or strips[v].get("memory_ops")]
    names = list(dict.fromkeys(k["name"] for v in variants for k in strips[v]["kernels"]))
    colors = {n: KERNEL_COLORS[i % len(KERNEL_COLORS)] for i, n in enumerate(names)}
    rows, memory = [], {}
    for v in variants:
        boxes = []
        for k in strips[v]["kernels"]:
            boxes.append({"kind": "kernel", "t0": k["start_ns"] / 1e3, "t1": (k["start_ns"] + k["duration_ns"]) / 1e3,
                          "fill": colors[k["name"]], "label": k["name"], "title": _op_title(k["name"], k["start_ns"], k["duration_ns"])})
        for m in strips[v].get("memory_ops") or []:
            op = m["operation"] if m["operation"] in MEMORY_STYLE else "memcpy"
            size = f", {si(m.get('size_bytes') or 0, 'B')}"
            memory.setdefault(op, f"{op} (grey, {'hatched' if op == 'memcpy' else 'dotted'})")
            boxes.append({"kind": op, "t0": m["start_ns"] / 1e3, "t1": (m["start_ns"] + m["duration_ns"]) / 1e3,
                          "fill": MEMORY_STYLE[op]["facecolor"], "label": m["name"],
                          "title": _op_title(m["name"], m["start_ns"], m["duration_ns"], size)})
        for op in [*strips[v]["kernels"], *(strips[v].get("memory_ops") or [])]:
            if op["gap_before_ns"] > 0:
                t1 = op["start_ns"] / 1e3
                boxes.append({"kind": "gap", "t0": t1 - op["gap_before_ns"] / 1e3, "t1": t1, "fill": GAP_COLOR,
                              "y0": 0.05, "y1": 0.95, "title": f"GPU idle {duration(op['gap_before_ns'])}"})
        rows.append({"lines": row_label(v, strips[v]).split("\n"), "h": 40, "boxes": boxes})
    legend = [(n, colors[n], "kernel") for n in names] + [(t, MEMORY_STYLE[op]["facecolor"], op) for op, t in memory.items()]
    legend.append(("GPU idle between operations", GAP_COLOR, "gap"))
    span = max((strips[v]["span_ns"] for v in variants), default=1) / 1e3
    return rows, span, legend


def rank_rows(lanes: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], float, list[Any]]:
    """The rank timeline's rows: per variant a title row, then per rank a row per stream (rank
    bands shaded alternately, the rank's idle time red along its last row's foot)."""
    names = list(dict.fromkeys(b["name"] for it in lanes.values() for ln in it["lanes"] for b in ln["ops"]
                               if b["kind"] == "compute"))
    colors = {n: KERNEL_COLORS[i % len(KERNEL_COLORS)] for i, n in enumerate(names)}
    rows, ops, kinds = [], {}, {}
    for v, it in lanes.items():
        rows.append({"lines": [f"{v}: iteration {it['iteration'] + 1} of {it['iterations']}, last rank done "
                               f"{it['finish_spread_ns'] / 1e3:.1f} µs after the first"], "h": 18, "bold": True})
        for r in it["ranks"]:
            mine = [ln for ln in it["lanes"] if ln["rank"] == r["rank"]]
            for i, lane in enumerate(mine):
                stream = "" if lane["stream_id"] is None else f" · stream {lane['stream_id']}"
                boxes = [b for box in lane["ops"] for b in _rank_box(box, colors, ops, kinds)]
                if i == len(mine) - 1:
                    boxes += [{"kind": "gap", "t0": g["start_ns"] / 1e3, "t1": g["end_ns"] / 1e3, "fill": GAP_COLOR,
                               "y0": 0.86, "y1": 1.0, "title": f"rank {r['rank']} idle {duration(g['end_ns'] - g['start_ns'])}"}
                              for g in r["gaps"]]
                rows.append({"lines": [f"rank {r['rank']}{stream}"], "h": 22, "band": RANK_BANDS[r["rank"] % 2],
                             "boxes": boxes, "gap": 5 if i == len(mine) - 1 else 0})
        rows[-1]["gap"] = 12
    legend = [(n, colors[n], "kernel") for n in names]
    legend += [(f"collective {op} (NCCL)", color, "collective") for op, color in ops.items()]
    if ops:
        legend.append(("collective, waiting for the last rank (pale)", next(iter(ops.values())), "wait"))
    legend += [(kind, MEMORY_STYLE[kind]["facecolor"], kind) for kind in kinds]
    legend.append(("rank idle (no stream busy)", GAP_COLOR, "gap"))
    span = max((it["span_ns"] for it in lanes.values()), default=1) / 1e3
    return rows, span, legend


def _rank_box(box: dict[str, Any], colors: dict[str, str], ops: dict[str, str], kinds: dict[str, bool]) -> list[dict[str, Any]]:
    t0, t1 = box["start_ns"] / 1e3, (box["start_ns"] + box["duration_ns"]) / 1e3
    title = _op_title(box["name"], box["start_ns"], box["duration_ns"])
    if box["kind"] == "collective":
        op = box.get("op") or "other"
        color = ops.setdefault(op, COLLECTIVE_COLORS.get(op, OTHER_COLLECTIVE))
        wait = min(box.get("wait_ns") or 0, box["duration_ns"]) / 1e3
        out = [{"kind": "wait", "t0": t0, "t1": t0 + wait, "fill": color, "opacity": WAIT_ALPHA,
                "title": f"{title}\nwaiting for the last rank {duration(wait * 1e3)}"}] if wait > 0 else []
        return out + [{"kind": "collective", "t0": t0 + wait, "t1": t1, "fill": color, "label": op, "title": title}]
    if box["kind"] == "compute":
        return [{"kind": "compute", "t0": t0, "t1": t1, "fill": colors[box["name"]], "label": box["name"], "title": title}]
    kind = box["kind"] if box["kind"] in MEMORY_STYLE else "memcpy"
    kinds[kind] = True
    return [{"kind": kind, "t0": t0, "t1": t1, "fill": MEMORY_STYLE[kind]["facecolor"], "label": box["name"], "title": title}]


def timeline_svg(strips: dict[str, dict[str, Any]], path: Path) -> Path:
    """The timeline strip as a zoomable SVG file."""
    rows, span, legend = strip_rows(strips)
    axis = "µs from the call's first GPU operation (nsys, one call per variant; red: GPU idle between operations)"
    path.write_text(zoom_svg(rows, span, axis, legend, "strip"), encoding="utf-8")
    return path


def rank_timeline_svg(lanes: dict[str, dict[str, Any]], path: Path) -> Path:
    """The rank timeline as a zoomable SVG file."""
    rows, span, legend = rank_rows(lanes)
    axis = "µs from the iteration's first GPU operation on any rank (nsys, one clock for all ranks)"
    path.write_text(zoom_svg(rows, span, axis, legend, "ranks"), encoding="utf-8")
    return path
