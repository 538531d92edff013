"""Place text labels on a drawn matplotlib axes so that they overlap neither each other nor the
markers, arrows, legends and texts already there.

Greedy, in display coordinates, on a layout that no longer moves (the caller's axes sit at fixed
positions, so no draw is needed first): each label in turn takes the nearest free position around its anchor, in
its preferred directions first; one placed far from its anchor gets a thin leader line back to
it. Used by the roofline chart, where several optimized variants often sit close together and
fixed offsets put their names and speedups on top of each other.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from matplotlib.collections import PathCollection
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.text import Annotation

Rect = tuple[float, float, float, float]            # x0, y0, x1, y1 in display pixels
Segment = tuple[float, float, float, float]

# points from the anchor to the label's nearest edge, tried in this order
_DISTANCES_PT = (3, 7, 12, 18, 26, 35, 46, 58, 72, 88, 106, 126, 150)
_DIRECTIONS = 16
GAP_PX = 3.0                  # the least space kept between two labels, and around obstacles
_LEADER_PX = 9.0              # labels whose edge is further from the anchor than this get a leader
# cost of one overlap, by what is overlapped; any cost > 0 sends a label further out if it can
_COST = {"label": 100.0, "legend": 100.0, "text": 100.0, "marker": 30.0, "arrow": 10.0, "leader": 10.0,
         "line": 1.0}
_LEADER_CROSSING = 20.0       # a leader line passing under a label (labels have a white ground)


@dataclass
class Label:
    """A label to place: `xy` is its anchor in data coordinates; `angle_deg` the preferred
    direction from it (0 = right, -90 = below)."""

    text: str
    xy: tuple[float, float]
    color: str = "black"
    gid: str = "label"
    angle_deg: float = 0.0
    fontsize_pt: float = 8.0
    bold: bool = False
    boxed: bool = False          # a box with an edge in `color` (the text is then black); else a faint white ground


def _inflate(r: Rect, by: float) -> Rect:
    return (r[0] - by, r[1] - by, r[2] + by, r[3] + by)


def _overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _crosses(r: Rect, s: Segment) -> bool:
    """Whether segment s meets rectangle r (Liang-Barsky clipping)."""
    x0, y0, x1, y1 = s
    dx, dy = x1 - x0, y1 - y0
    lo, hi = 0.0, 1.0
    for p, q in ((-dx, x0 - r[0]), (dx, r[2] - x0), (-dy, y0 - r[1]), (dy, r[3] - y0)):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
        if lo > hi:
            return False
    return True


def _rect(bbox: Any) -> Rect:
    return (bbox.x0, bbox.y0, bbox.x1, bbox.y1)


def _obstacles(ax: Any, renderer: Any) -> tuple[list[tuple[Rect, str]], list[tuple[Segment, str]]]:
    """What is already drawn on `ax`: rectangles (legends, texts, markers) and segments (arrows, lines)."""
    rects: list[tuple[Rect, str]] = []
    segments: list[tuple[Segment, str]] = []
    for child in ax.get_children():
        if isinstance(child, Legend):
            rects.append((_rect(child.get_window_extent(renderer)), "legend"))
    for t in ax.texts:
        if not t.get_visible():
            continue
        if isinstance(t, Annotation) and not t.get_text() and t.arrow_patch is not None:
            (x0, y0), (x1, y1) = ax.transData.transform([t.xyann, t.xy])
            segments.append(((x0, y0, x1, y1), "arrow"))
        elif t.get_text():
            rects.append((_rect(t.get_window_extent(renderer)), "text"))
    px_per_pt = ax.figure.dpi / 72
    for coll in ax.collections:
        if not isinstance(coll, PathCollection) or not len(coll.get_offsets()):
            continue
        sizes = coll.get_sizes()
        for i, (x, y) in enumerate(coll.get_offset_transform().transform(coll.get_offsets())):
            radius = math.sqrt(sizes[i % len(sizes)] if len(sizes) else 36) / 2 * px_per_pt
            rects.append(((x - radius, y - radius, x + radius, y + radius), "marker"))
    for line in ax.lines:
        if line.get_linestyle() == "None":            # markers only (tick marks): no segments
            continue
        pts = line.get_transform().transform(line.get_xydata())
        segments += [((a[0], a[1], b[0], b[1]), "line") for a, b in itertools.pairwise(pts)
                     if all(math.isfinite(v) for v in (*a, *b))]
    return rects, segments


_UNITS = [(math.cos(math.radians(i * 360 / _DIRECTIONS)), math.sin(math.radians(i * 360 / _DIRECTIONS)))
          for i in range(_DIRECTIONS)]           # direction i as a unit vector (0 = right, counter-clockwise)


def _candidates(anchor: tuple[float, float], size: tuple[float, float], angle_deg: float,
                px_per_pt: float) -> Iterator[Rect]:
    """Label rectangles around `anchor`, nearest first, the preferred direction first at each
    distance; made as they are asked for (the search stops at the first free one)."""
    w, h = size
    steps = sorted(range(_DIRECTIONS), key=lambda i: (abs(((i * 360 / _DIRECTIONS - angle_deg) + 180) % 360 - 180), i))
    # per direction: how far the centre sits beyond the near edge
    reach = {i: min(w / 2 / abs(ux) if abs(ux) > 1e-9 else math.inf, h / 2 / abs(uy) if abs(uy) > 1e-9 else math.inf)
             for i, (ux, uy) in enumerate(_UNITS)}
    for dist in _DISTANCES_PT:
        d = dist * px_per_pt
        for i in steps:
            ux, uy = _UNITS[i]
            # centre far enough along the direction that the near edge is `d` from the anchor
            cx, cy = anchor[0] + ux * (d + reach[i]), anchor[1] + uy * (d + reach[i])
            yield (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def _nearest_point(r: Rect, p: tuple[float, float]) -> tuple[float, float]:
    return min(max(p[0], r[0]), r[2]), min(max(p[1], r[1]), r[3])


def place_labels(ax: Any, renderer: Any, labels: Sequence[Label]) -> list[Annotation]:
    """Add `labels` to `ax`, each where it overlaps the least (nothing, if any such place is
    inside the axes); return their annotations (gid set) in the same order.

    The figure's layout must already be final: positions are measured in display pixels.
    """
    rects, segments = _obstacles(ax, renderer)
    frame = _rect(ax.get_window_extent(renderer))
    px_per_pt = ax.figure.dpi / 72
    placed: list[Rect] = []
    out = []
    for lab in labels:
        box = ({"boxstyle": "round,pad=0.25", "fc": "white", "ec": lab.color, "lw": 0.9} if lab.boxed else
               {"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
        ann = ax.annotate(lab.text, xy=lab.xy, xytext=(0, 0), textcoords="offset points", ha="center",
                          va="center", fontsize=lab.fontsize_pt, fontweight="bold" if lab.bold else "normal",
                          color="black" if lab.boxed else lab.color, bbox=box, zorder=7, annotation_clip=False)
        ann.set_gid(lab.gid)
        ext = ann.get_window_extent(renderer)
        pad = ((0.25 if lab.boxed else 0.1) * lab.fontsize_pt + 1) * px_per_pt
        size = (ext.width + 2 * pad, ext.height + 2 * pad)
        anchor = tuple(ax.transData.transform(lab.xy))
        best, best_cost = None, math.inf
        for cand in _candidates(anchor, size, lab.angle_deg, px_per_pt):
            if not (cand[0] >= frame[0] + 2 and cand[2] <= frame[2] - 2 and cand[1] >= frame[1] + 2
                    and cand[3] <= frame[3] - 2):
                continue
            roomy = _inflate(cand, GAP_PX)
            cost = sum(_COST["label"] for p in placed if _overlap(roomy, p))
            cost += sum(_COST[kind] for r, kind in rects if _overlap(roomy, r))
            cost += sum(_COST[kind] for s, kind in segments if _crosses(cand, s))
            near = _nearest_point(cand, anchor)
            if math.dist(near, anchor) > _LEADER_PX:       # its leader line must not cross a label either
                lead = (anchor[0], anchor[1], near[0], near[1])
                cost += sum(_LEADER_CROSSING for p in placed if _crosses(p, lead))
                cost += sum(_LEADER_CROSSING for r, kind in rects if kind != "marker" and _crosses(r, lead))
            if cost < best_cost:
                best, best_cost = cand, cost
                if cost == 0:
                    break
        if best is None:                                  # nowhere inside the axes: stay on the anchor
            best = (anchor[0] - size[0] / 2, anchor[1] - size[1] / 2, anchor[0] + size[0] / 2, anchor[1] + size[1] / 2)
        cx, cy = (best[0] + best[2]) / 2, (best[1] + best[3]) / 2
        ann.xyann = ((cx - anchor[0]) / px_per_pt, (cy - anchor[1]) / px_per_pt)
        placed.append(best)
        near = _nearest_point(best, anchor)
        if math.dist(near, anchor) > _LEADER_PX:
            (x0, y0), (x1, y1) = ax.transData.inverted().transform([anchor, near])
            leader = Line2D([x0, x1], [y0, y1], color=lab.color, lw=0.7, alpha=0.8, zorder=6)
            leader.set_gid(f"{lab.gid}-leader")
            ax.add_line(leader)
            segments.append(((anchor[0], anchor[1], near[0], near[1]), "leader"))
        out.append(ann)
    return out


def label_extent(ann: Annotation, renderer: Any) -> Rect:
    """Display rectangle a placed label covers: its text and, when boxed, the box (after a draw)."""
    r = _rect(ann.get_window_extent(renderer))
    patch = ann.get_bbox_patch()
    if patch is not None:
        p = _rect(patch.get_window_extent(renderer))
        r = (min(r[0], p[0]), min(r[1], p[1]), max(r[2], p[2]), max(r[3], p[3]))
    return r
