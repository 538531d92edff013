"""How charts become files: each figure drawn once, and pages drawn in parallel.

One draw per chart. `savefig(bbox_inches="tight")` draws a figure twice (once to measure what
sticks out of the axes, once for real) and a constrained layout adds a third pass; drawing,
mostly text, is ~0.8 of a report page's cost. `save_png` instead lays the figure out in fixed
inches with room to spare around its axes, draws it once and crops the canvas to what was drawn
plus `PAD_IN` of white: the picture the tight bounding box gave, at half the cost. The PNG
carries no date or software version, so the same chart gives the same bytes anywhere. Two more
savings change no pixel: `share_mathtext` (log tick labels parsed once per process, not per
figure) and `minor_ticks_as_markers` (a log axis's minor ticks as one marker line, not ~60 Ticks).

In parallel: a report's pages are independent and matplotlib is single-threaded, so each page is
computed and drawn by one of a pool of processes (fork: the drawing code is already loaded) while
the parent writes the finished pages' HTML. `AISP_REPORT_WORKERS` sets the pool's size (default: the CPU count, at most 8);
1 draws in the calling process.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import ChartError

MAX_WORKERS = 8
PAD_IN = 0.1                 # white kept around the drawing (savefig's pad_inches)
# canvas added around the axes before the draw (left, bottom, right, top): labels and legends
# stick out sideways; below and above there are only tick labels and an axis label
ROOM_IN = (3.0, 1.0, 3.0, 1.0)
_WHITE = 0xFFFFFFFF          # an opaque white RGBA pixel, read as one uint32
# zlib level of the PNGs: 3 encodes a report's charts in ~7.6 ms each, 6 (PIL's default) in ~11 ms,
# for files 4% smaller (42.9 vs 41.1 kB on average); the pixels are the same
PNG_COMPRESS_LEVEL = 3
_MAX_DRAWS = 3               # a too-small canvas grows by what sticks out: one more draw


# one mathtext parser per renderer class and thread. A parse holds FreeType fonts, which, like
# matplotlib's own font cache, must not cross threads or fork(): a forked child starts afresh
_PARSERS: dict[tuple[type, int], Any] = {}
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_PARSERS.clear)


def share_mathtext(renderer: Any) -> Any:
    """Give `renderer` the mathtext parser of the first renderer of its kind in this thread.

    Log-axis tick labels (10^12) are mathtext; matplotlib caches parses per parser, and each
    renderer (so each figure) has its own, so every chart parsed its tick labels again (~13 ms
    each, a third of a roofline thumbnail). A parse depends only on the text, dpi, font and
    hinting, all in the cache's key, so sharing the parser shares the cache and changes no pixel.
    """
    parser = getattr(renderer, "mathtext_parser", None)
    if parser is not None:
        renderer.mathtext_parser = _PARSERS.setdefault((type(renderer), threading.get_ident()), parser)
    return renderer


def minor_ticks_as_markers(ax: Any) -> None:
    """Draw `ax`'s unlabelled minor ticks (a log axis's 2..9 x 10^k) as one line of tick markers
    per axis instead of one Tick each: the same marker at the same place, so the same pixels.

    matplotlib makes every tick an object of two lines and two texts, updated on each draw; the
    ~120 minor ticks of a roofline were a quarter of its cost. Call once the limits are final.
    An axis whose minor ticks carry labels, or point in or both ways, keeps matplotlib's ticks.
    """
    import matplotlib as mpl
    from matplotlib.lines import TICKDOWN, TICKLEFT, Line2D
    from matplotlib.ticker import NullLocator

    for axis, name, marker, transform in ((ax.xaxis, "xtick", TICKDOWN, ax.get_xaxis_transform("tick1")),
                                          (ax.yaxis, "ytick", TICKLEFT, ax.get_yaxis_transform("tick1"))):
        rc = mpl.rcParams
        side = "bottom" if name == "xtick" else "left"
        if rc[f"{name}.direction"] != "out" or not (rc[f"{name}.{side}"] and rc[f"{name}.minor.{side}"]):
            continue
        lo, hi = sorted(axis.get_view_interval())
        locs = [v for v in axis.get_minorticklocs() if lo <= v <= hi]
        if any(axis.get_minor_formatter().format_ticks(locs)):
            continue
        axis.set_minor_locator(NullLocator())
        if not locs:
            continue
        at = [0.0] * len(locs)
        ticks = Line2D(*((locs, at) if name == "xtick" else (at, locs)), transform=transform, linestyle="none",
                       marker=marker, markersize=rc[f"{name}.minor.size"], markeredgewidth=rc[f"{name}.minor.width"],
                       color=rc[f"{name}.color"], markeredgecolor=rc[f"{name}.color"], clip_on=False,
                       zorder=axis.get_zorder())
        ax.add_artist(ticks)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _decade(value: float, _pos: Any = None) -> str:
    import math

    exp = round(math.log10(value)) if value > 0 else 0
    return f"10{str(exp).translate(_SUPERSCRIPT)}" if value > 0 and abs(math.log10(value) - exp) < 1e-9 else ""


def decades(ax: Any) -> None:
    """Label a log-log axes' decades as plain text, 10⁻¹, not mathtext's 10^{-1}: the same
    numbers, and no mathtext parse (a third of the roofline SVG's cost: an SVG renderer has a
    parser of its own per chart, which `share_mathtext` cannot reach before savefig)."""
    from matplotlib.ticker import FuncFormatter

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(_decade))


def _add_room(fig: Any, left: float, bottom: float, right: float, top: float) -> None:
    """Grow the canvas by these inches on each side; every axes keeps its size in inches and
    moves with its content (legends and labels are placed relative to their axes)."""
    w, h = fig.get_size_inches()
    boxes = [(ax, ax.get_position()) for ax in fig.axes]
    width, height = w + left + right, h + bottom + top
    fig.set_size_inches(width, height)
    for ax, b in boxes:
        ax.set_position([(b.x0 * w + left) / width, (b.y0 * h + bottom) / height,
                         b.width * w / width, b.height * h / height])


def save_png(fig: Any, path: Path, dpi: float, room_in: tuple[float, float, float, float] = ROOM_IN) -> Path:
    """Draw `fig` once at `dpi` and write it to `path` cropped to what was drawn (and the axes
    frames, drawn or not, as a tight bounding box counts them), plus PAD_IN of white.

    The canvas first gets `room_in` inches around the axes. Where the drawing still
    reaches an edge (a label longer than the room), that side grows by what the figure's tight
    bounding box says sticks out, and the figure is drawn again: a long label is never cut.
    """
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig.set_dpi(dpi)
    fig.patch.set_facecolor("white")
    canvas = FigureCanvasAgg(fig)
    pad = round(PAD_IN * dpi)
    grow = list(room_in)                                  # inches: left, bottom, right, top
    for _attempt in range(_MAX_DRAWS):
        _add_room(fig, *grow)
        renderer = share_mathtext(canvas.get_renderer())
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba())
        height, width = rgba.shape[:2]
        ink = rgba.view(np.uint32)[..., 0] != _WHITE
        rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        frames = [ax.get_window_extent() for ax in fig.axes]       # display pixels, y up
        x0 = min([*cols[:1], *(int(b.x0) for b in frames)], default=0)
        x1 = max([*cols[-1:], *(int(b.x1) - 1 for b in frames)], default=width - 1)
        y0 = min([*rows[:1], *(height - int(np.ceil(b.y1)) for b in frames)], default=0)    # rows run top down
        y1 = max([*rows[-1:], *(height - 1 - int(b.y0) for b in frames)], default=height - 1)
        short = (x0 < pad, y1 >= height - pad, x1 >= width - pad, y0 < pad)
        if not any(short) or _attempt == _MAX_DRAWS - 1:
            break
        box = fig.get_tightbbox(renderer)                           # inches, y up, may reach past the canvas
        w_in, h_in = fig.get_size_inches()
        over = (-box.x0, -box.y0, box.x1 - w_in, box.y1 - h_in)
        grow = [max(o, 0.0) + 2 * PAD_IN if s else 0.0 for s, o in zip(short, over)]
    box = (max(x0 - pad, 0), max(y0 - pad, 0), min(x1 + 1 + pad, width), min(y1 + 1 + pad, height))
    return _write(rgba, path, dpi, box)


def draw_png(fig: Any, path: Path) -> Path:
    """Draw `fig` once, as laid out, and write it to `path` (what savefig does, less the alpha
    channel and the software text)."""
    import numpy as np

    fig.patch.set_facecolor("white")
    share_mathtext(fig.canvas.get_renderer())
    fig.canvas.draw()
    return _write(np.asarray(fig.canvas.buffer_rgba()), path, fig.dpi)


def _write(rgba: Any, path: Path, dpi: float, box: tuple[int, int, int, int] | None = None) -> Path:
    """The `box` (x0, y0, x1, y1; default all) of an opaque RGBA canvas as an RGB PNG: no alpha
    to encode, no date or version in the file. PIL reads the box straight from the canvas's
    memory (one pass, dropping alpha) instead of a strided numpy copy."""
    from PIL import Image

    height, width = rgba.shape[:2]
    x0, y0, x1, y1 = box or (0, 0, width, height)
    memory = memoryview(rgba).cast("B")[(y0 * width + x0) * 4:]
    image = Image.frombuffer("RGBX", (x1 - x0, y1 - y0), memory, "raw", "RGBX", width * 4, 1).convert("RGB")
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="png", dpi=(dpi, dpi), compress_level=PNG_COMPRESS_LEVEL)
    return path


def workers() -> int:
    """How many processes draw: $AISP_REPORT_WORKERS, else the CPUs this process may use (at most
    MAX_WORKERS)."""
    env = os.environ.get("AISP_REPORT_WORKERS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_WORKERS, cpus or 1))


class _Inline(cf.Executor):
    """An executor that runs each call at once, in this process (one worker, or no fork). An
    error is kept for `result()`, like a pool's; Ctrl-C (not an Exception) stops at once."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - handed to whoever asks for the result
            future.set_exception(exc)
        return future


_PR_SET_PDEATHSIG = 1        # linux/prctl.h


def _die_with(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies, however it dies (SIGKILL
    included: issue 31 found 2 drawing workers alive 5 minutes after `report` was killed); if the
    parent died before the request took hold, exit now. Elsewhere (no prctl) nothing is asked."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


def _worker_start(parent: int) -> None:
    """In each drawing process: it dies with `parent` (the report), and Ctrl-C and SIGTERM are the
    parent's to handle (it cancels the queued pages and waits for the running ones), so a signal to
    the whole group (a terminal's SIGINT; `timeout`, which sends SIGTERM to its process group, or
    `kill -TERM -PGID`) breaks no worker. A worker that died of it had made the report fail with "a
    chart-drawing process died" instead of exit 130, and left the database's -wal and -shm files
    of the connection it held. Forked before this runs, a worker has the parent's SIGTERM handler,
    which only marks its own copy of the state: ignored too."""
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextmanager
def pool(count: int | None = None) -> Iterator[cf.Executor]:
    """`with pool() as ex:` a process pool of `count` (default `workers()`) drawing processes, or
    an inline executor for one (the caller imports the drawing code first, so the forked workers
    share matplotlib and its fonts). On leaving, the pool's processes have all exited and been
    reaped; when the block raised (an error, Ctrl-C), pages not yet started are cancelled first.
    """
    count = count or workers()
    if count <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield _Inline()
        return
    executor = cf.ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("fork"),
                                      initializer=_worker_start, initargs=(os.getpid(),))
    try:
        yield executor
    except BaseException as exc:
        executor.shutdown(wait=True, cancel_futures=True)
        if isinstance(exc, cf.BrokenExecutor):     # a worker killed (OOM killer, kill -9)
            raise ChartError("a chart-drawing process died (killed?); run the report again, or with "
                             "AISP_REPORT_WORKERS=1") from exc
        raise
    executor.shutdown(wait=True)


def hover_svg(fig: Any, result: Any, path: Path, level: str = "dram") -> Path:
    """A roofline Figure (`roofline_plot.figure`, whose points and roofs carry gids pt-<i> and
    roof-<name>) as an SVG that answers on hover: each point a <g class="pt"> with a
    <title> (kernel, variant, intensity, FLOP/s, % of roof, for any viewer) and data-* attributes
    (for the report's tooltip script); each roof a <g class="roof" data-roof="dram|l2|l1|bf16..."> a
    checkbox can hide. Text stays text (svg.fonttype none: smaller, and searchable), ids are fixed
    (svg.hashsalt), so the same chart gives the same bytes."""
    import html
    import io
    import re

    import matplotlib as mpl

    from ..units import si

    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "aisp-prof", "svg.id": None}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", dpi=fig.dpi, facecolor="white", metadata={"Creator": None, "Date": None})
    points = list(result.points)

    def point(m: re.Match) -> str:
        p = points[int(m.group(1))]
        ai, pct = p.ai(level), p.pct_of_roof
        data = {"kernel": p.kernel or "all kernels of the call", "variant": p.variant,
                "ai": f"{ai:.3g} FLOP/B" if ai else "-", "flops": si(p.flops_per_s, "FLOP/s") if p.flops_per_s else "-",
                "pct": f"{pct:.0f}% of the {p.bound} roof" if pct is not None else "-"}
        attrs = " ".join(f'data-{k}="{html.escape(str(v))}"' for k, v in data.items())
        title = html.escape(f"{data['variant']}: {data['kernel']}\n{data['ai']}, {data['flops']}, {data['pct']}")
        return f'<g class="pt" {attrs}><title>{title}</title>'

    svg = re.sub(r'<g id="pt-(\d+)">', point, buf.getvalue())
    svg = re.sub(r'<g id="roof-([A-Za-z0-9_]+)">', r'<g class="roof" data-roof="\1">', svg)
    svg = re.sub(r"<\?xml[^>]*>\s*(<!DOCTYPE[^>]*>\s*)?", "", svg)
    (x0, x1), (y0, y1) = fig.axes[0].get_xlim(), fig.axes[0].get_ylim()     # what a cross-card view compares
    svg = svg.replace("<svg ", f'<svg data-x-limits="{x0:.6g} {x1:.6g}" data-y-limits="{y0:.6g} {y1:.6g}" ', 1)
    path.write_text(svg, encoding="utf-8")
    return path
