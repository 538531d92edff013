"""`aisp-prof report`: stored runs -> a folder of static HTML pages that open from file://.

For each pair the page answers: did it get faster, is it still correct, what bound it before
and after, and why (stalls, speed of light, bytes per level, kernels, the nsys timeline), with
the provenance needed to trust the numbers. The numbers come computed (`analyze.page.contents`,
one `Page` per run, chained by `aisp_prof.api`); this module only draws the charts beside the
pages and renders jinja2 templates with autoescaping, so kernel names such as
`void f<float, 4>(...)` print exactly and inertly. It never opens the database.

The folder is self-contained: CSS and the small sorting/filter script are inline, images sit in
`img/` and are referenced relatively, nothing is fetched from the network.
"""
from __future__ import annotations

import base64
import concurrent.futures as cf
import hashlib
import json
import logging
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from markupsafe import Markup

from ..errors import AispError, ChartError, OutputError, UnknownTargetError, os_error_message, shorten
from ..naming import card_name, file_slug as _slug
from ..units import duration, si
from . import drawing
from .output.folder import MARKER, move_into_place, prepare_out, unlock

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "templates"
DEFAULT_REPORTS_DIR = Path("reports")


@dataclass(frozen=True)
class PageRef:
    """What names a page before its data is computed."""

    run_id: str
    pair: str | None = None
    label: str | None = None
    gpu_name: str | None = None
    gpu_count: int = 1            # a multi-rank run's ranks: its card is '2x H200', as the index says

    @property
    def card(self) -> str:
        return card_name(self.gpu_name, self.gpu_count)


@dataclass
class Page:
    """One page's numbers (`analyze.page.contents.page_data`), the roofline to draw (or None) and the
    samples by round to draw (`analyze.timing.rounds.round_panels`; the page's JSON keeps their summary)."""

    data: dict[str, Any]
    roofline: Any = None
    rounds: dict[str, Any] | None = None


@dataclass
class Report:
    """What `write_report` wrote."""

    out_dir: Path
    index: Path
    pages: list[Path] = field(default_factory=list)


# ------------------------------------------------------------------------------ rendering


def template_env():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(si=_f_si, duration=duration, times=_f_times, num=_f_num, sortkey=_f_sortkey, wbr=_f_wbr,
                       pct=lambda v: f"{v:.1f}%" if isinstance(v, (int, float)) else "-",
                       sci=lambda v: f"{v:.2e}" if isinstance(v, (int, float)) else "-")
    return env


def _f_wbr(v: Any) -> Markup:
    """An identifier that may break only after _ . / - (warp_<wbr>specialized_<wbr>tma), never
    inside a word: cells and headers wrap at spaces and these points, not mid-word (issue 31.8)."""
    return Markup(re.sub(r"([_./-])", r"\1<wbr>", str(Markup.escape(v))))


def _f_si(v: Any, unit: str = "", digits: int = 3) -> str:
    return si(float(v), unit, digits) if isinstance(v, (int, float)) else "-"


def _f_times(v: Any) -> str:
    return f"{v:.2f}×" if isinstance(v, (int, float)) else "-"


def _f_num(v: Any, digits: int = 3) -> str:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.{digits}g}" if isinstance(v, float) else ("-" if v is None else str(v))


def _f_sortkey(v: Any) -> str:
    """A data-sort attribute: numbers as numbers, None sorts first."""
    return "" if v is None else repr(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def page_assets() -> dict[str, Any]:
    """Inline CSS and script, and a Content-Security-Policy that lets only that script run."""
    css = (TEMPLATES / "report.css").read_text()
    js = (TEMPLATES / "report.js").read_text()
    digest = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    csp = (f"default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; "
           f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")
    return {"css": Markup(css), "js": Markup(js), "csp": csp}


def _page_names(refs: Sequence[PageRef]) -> list[str]:
    """`<pair>.html`; where two selected runs share a pair, `<pair>.<card>.html` when that
    tells them apart (the same pair on an H100 and an H200), else `<run id>.html` (or 'index')."""
    base = [_slug(r.pair or r.label or r.run_id) for r in refs]
    carded = [_slug(f"{b}.{r.card}") if r.gpu_name else None for b, r in zip(base, refs)]
    return [f"{b}.html" if base.count(b) == 1 and b != "index"
            else f"{c}.html" if c and carded.count(c) == 1 else f"{_slug(r.run_id)}.html"
            for b, c, r in zip(base, carded, refs)]


def default_name(refs: Sequence[PageRef]) -> str:
    """`<pair>-<run-id timestamp>` for one run, `report-<UTC timestamp>` for several."""
    if len(refs) == 1:
        ref = refs[0]
        return _slug(f"{ref.pair or ref.label or 'run'}-{ref.run_id.split('-', 1)[0]}")
    return "report-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _draw(data: dict[str, Any], roof: Any, img: Path, stem: str, limits: Any = None,
          rounds: dict[str, Any] | None = None) -> dict[str, str]:
    """The page's charts as files under img/; returns {chart: path relative to the page}; `limits`:
    the roofline's axes, shared with the pair's other pages; `rounds`: the samples by round. Runs in a drawing process: a chart
    that fails becomes a ChartError naming it (one line in the CLI)."""
    out: dict[str, str] = {}
    if roof is not None:
        out.update(_roofline_chart(roof, img, stem, limits))
    # the small charts and the timelines as SVG written directly (`output.bars`, `output.zoom`: ~1 ms
    # each against 40-100 ms through matplotlib); the PNG functions in `charts` are the terminal's
    from .output.bars import memory_svg, stall_svg, thumbnail_svg
    from .output.rounds import rounds_svg
    from .output.zoom import rank_timeline_svg, timeline_svg

    if data["roofline"]:
        thumb = _chart("roofline thumbnail", stem, img, thumbnail_svg, data["roofline"], img / f"{stem}-roofline-thumb.svg")
        if thumb is not None:
            out["roofline_thumb"] = thumb
    if rounds and rounds["panels"]:
        out["rounds"] = _chart("samples by round", stem, img, rounds_svg, rounds, img / f"{stem}-rounds.svg")
    if data["stalls"]:
        out["stalls"] = _chart("stall", stem, img, stall_svg, data["stalls"], img / f"{stem}-stalls.svg")
    if data["memory"]:
        out["memory"] = _chart("memory", stem, img, memory_svg, data["memory"], img / f"{stem}-memory.svg")
    if (data.get("ranks") or {}).get("lanes"):
        out["rank_timeline"] = _chart("rank timeline", stem, img, rank_timeline_svg, data["ranks"]["lanes"],
                                      img / f"{stem}-rank-timeline.svg")
    elif data["timeline"]:
        out["timeline"] = _chart("timeline", stem, img, timeline_svg, data["timeline"], img / f"{stem}-timeline.svg")
    return out


def _roofline_chart(roof: Any, img: Path, stem: str, limits: Any = None) -> dict[str, str]:
    """{"roofline": the SVG that answers on hover (`drawing.hover_svg`)}; `aisp-prof roofline` keeps the PNG."""
    try:
        from .roofline_plot import figure
    except ImportError as exc:
        log.warning("no roofline plot: %s", exc)
        return {}
    return {"roofline": _chart("roofline", stem, img, lambda: drawing.hover_svg(
        figure(roof, limits=limits), roof, img / f"{stem}-roofline.svg"))}


def _computed_and_drawn(page_of: Callable[[str], Page], run_id: str, img: Path, stem: str,
                        roofline_here: bool) -> tuple[Page, dict[str, str]]:
    """In a drawing process: the page's numbers (`page_of`, the API's: it reads the database), then
    its charts, the roofline too unless it waits for the axes of the pair's other pages (then the
    roofline comes back with the page, else it is not sent back)."""
    page = page_of(run_id)
    images = _draw(page.data, page.roofline if roofline_here else None, img, stem, rounds=page.rounds)
    return Page(page.data, None if roofline_here else page.roofline), images


def _chart(what: str, stem: str, img: Path, draw: Callable[..., Path | None], *args: Any, **kwargs: Any) -> str | None:
    """`draw(*args, **kwargs)`'s file relative to the page (None if it drew nothing)."""
    try:
        path = draw(*args, **kwargs)
    except AispError:
        raise
    except OSError as exc:              # a full disk or an unwritable folder: the output's fault, exit 14
        raise OutputError(os_error_message(exc, f"writing the {what} chart of {stem}", name_file=False)) from exc
    except Exception as exc:
        raise ChartError(f"could not draw the {what} chart of {stem}: {type(exc).__name__}: {exc}") from exc
    return None if path is None else _rel(path, img)


def _rel(path: Path, img: Path) -> str:
    return f"{img.name}/{Path(path).relative_to(img).as_posix()}"


def write_report(refs: Sequence[PageRef], page_of: Callable[[str], Page], out: Path | None = None,
                 reports_dir: Path = DEFAULT_REPORTS_DIR, source: str = "",
                 progress: Callable[[str], None] | None = None, tick: Callable[[], None] | None = None) -> Report:
    """Write index.html and one page per run into `out` (default reports/<name>). `page_of(run_id)`
    computes a ref's page; it is called in the drawing processes (so pages are computed in parallel
    too) and must survive pickling (a module function or a method of a picklable object); `source`
    is what the index says the runs came from.

    The folder is built under a hidden partial name and renamed when complete; a previous
    report in the same place is replaced. `progress(title)` is called after each page; `tick()` after
    each page too and last just before the rename: what it raises (KeyboardInterrupt for a SIGTERM)
    stops the report with its partial folder removed and the previous report kept. Once renamed, the
    report is whole: there is no later point to stop at.
    """
    if not refs:
        raise UnknownTargetError("no runs to report on")
    out_dir = Path(out) if out else Path(reports_dir) / default_name(refs)
    partial = prepare_out(out_dir)
    try:
        env, assets, names = template_env(), page_assets(), _page_names(refs)
        assets["switch"] = {ref.pair: sorted((r.card, n) for r, n in zip(refs, names) if r.pair == ref.pair)
                            for ref in refs}        # pair -> [(card, page)]: the same pair on other cards
        generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
        count = min(drawing.workers(), len(refs))       # one page, or one CPU: drawn here
        if count > 1:     # load the drawing code (matplotlib, fonts) once, here: the forked workers share it
            from . import roofline_plot  # noqa: F401
            from .output import bars, rounds, zoom  # noqa: F401
        assets["cross"] = {}                            # page -> [(card, page, roofline SVG)]: same axes
        after = _after_page(progress, tick)
        finish = lambda name, page, images: _finish_page(env, assets, partial, name, page, images,  # noqa: E731
                                                         generated, after)
        with drawing.pool(count) as charts:
            # each page computed and drawn in a worker; pages finish as they come back, a few queued each
            flight = _InFlight(charts, refs, names, partial / "img", finish)
            queued = 3 * count if count > 1 else 1
            for i in range(len(refs)):
                flight.submit(i, page_of)
                while len(flight.pending) >= queued:
                    flight.step(assets["cross"])
            while flight.pending:
                flight.step(assets["cross"])
        done = flight.done
        written = [out_dir / done[i]["page"] for i in sorted(done)]
        rows = sorted(done.values(), key=lambda r: (r["chapter"], r["card"], r["title"], r["run_id"]))
        html = env.get_template("index.html.j2").render(rows=rows, groups=_groups(rows), generated=generated,
                                                        db=source, **assets)
        (partial / "index.html").write_text(html, encoding="utf-8")
        (partial / MARKER).write_text("written by aisp-prof report; replaced by the next report here\n")
        if tick:             # the last point to stop at: a SIGTERM while the pool shut down or the index was written
            tick()
    except BaseException as exc:             # Ctrl-C and a full disk included: no half report
        unlock(partial)
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, OSError):
            raise OutputError(os_error_message(exc, f"writing the report to {shorten(out_dir)}", name_file=False)) from exc
        raise
    unlock(partial)
    move_into_place(partial, out_dir)
    return Report(out_dir=out_dir, index=out_dir / "index.html", pages=written)


def _after_page(progress: Callable[[str], None] | None, tick: Callable[[], None] | None) -> Callable[[str], None]:
    """What runs after each page is written: `progress(title)`, then `tick()` (which may raise to stop)."""
    def step(title: str) -> None:
        if progress:
            progress(title)
        if tick:
            tick()
    return step


def _cross_cards(batch: list[tuple[int, str, Page]], refs: Sequence[PageRef], cross: dict[str, Any]) -> Any:
    """One pair's pages: the roofline axes they share (None for one roofline), and in `cross`, for
    each page, the pair's roofline on each card (its own for its card, else the card's first)."""
    roofs = [p.roofline for _, _, p in batch if p.roofline is not None]
    if len(roofs) < 2:
        return None
    try:
        from .roofline_plot import axes_limits
    except ImportError:                 # no matplotlib: `_draw` says so
        return None
    cards: dict[str, str] = {}
    for i, name, page in batch:
        if page.roofline is not None:
            cards.setdefault(refs[i].card, name)
    if len(cards) > 1:
        for i, name, page in batch:
            own = refs[i].card
            shown = {**cards, own: name} if page.roofline is not None else cards
            cross[name] = [(card, other, f"img/{other[: -len('.html')]}-roofline.svg") for card, other in sorted(shown.items())]
    return axes_limits(roofs)


class _InFlight:
    """A report's pages in the drawing pool: each computed and drawn by a worker; the pages of a pair
    on several cards are held until all are back, then their rooflines drawn on shared axes."""

    def __init__(self, charts: cf.Executor, refs: Sequence[PageRef], names: Sequence[str], img: Path,
                 finish: Callable[[str, Page, dict[str, str]], dict[str, Any]]) -> None:
        self.charts, self.refs, self.names, self.img, self.finish = charts, refs, names, img, finish
        self.wanted = Counter(r.pair for r in refs if r.pair)
        self.pending: dict[cf.Future, tuple[int, Any]] = {}       # future -> (page number, what waits on it)
        self.held: dict[str, list[tuple[int, Page, dict[str, str]]]] = {}
        self.done: dict[int, dict[str, Any]] = {}                  # page number -> its row of the index

    def submit(self, i: int, page_of: Callable[[str], Page]) -> None:
        pair = self.refs[i].pair
        alone = not pair or self.wanted[pair] == 1
        future = self.charts.submit(_computed_and_drawn, page_of, self.refs[i].run_id, self.img,
                                    self.names[i][: -len(".html")], alone)
        self.pending[future] = (i, None)

    def step(self, cross: dict[str, Any]) -> None:
        """Wait for a worker; finish what came back (in page order); a chart that failed raises here."""
        finished, _ = cf.wait(self.pending, return_when=cf.FIRST_COMPLETED)
        for future in sorted(finished, key=lambda f: self.pending[f][0]):
            i, waiting = self.pending.pop(future)
            if waiting is not None:                      # a held page's roofline, drawn on shared axes
                page, images = waiting
                self.done[i] = self.finish(self.names[i], page, {**images, **future.result()})
                continue
            page, images = future.result()
            pair = self.refs[i].pair
            if not pair or self.wanted[pair] == 1:
                self.done[i] = self.finish(self.names[i], page, images)
                continue
            self.held.setdefault(pair, []).append((i, page, images))
            if len(self.held[pair]) == self.wanted[pair]:
                self._draw_rooflines(sorted(self.held.pop(pair), key=lambda h: h[0]), cross)

    def _draw_rooflines(self, batch: list[tuple[int, Page, dict[str, str]]], cross: dict[str, Any]) -> None:
        limits = _cross_cards([(i, self.names[i], page) for i, page, _ in batch], self.refs, cross)
        for i, page, images in batch:
            if page.roofline is None:
                self.done[i] = self.finish(self.names[i], page, images)
                continue
            future = self.charts.submit(_roofline_chart, page.roofline, self.img, self.names[i][: -len(".html")], limits)
            self.pending[future] = (i, (Page(page.data, None), images))


def _finish_page(env: Any, assets: dict[str, Any], partial: Path, name: str, page: Page, images: dict[str, str],
                 generated: str, progress: Callable[[str], None] | None) -> dict[str, Any]:
    """Once a page's charts are drawn: its HTML and data file; returns its row of the index."""
    data, stem = page.data, name[: -len(".html")]
    svg = re.sub(r'<metadata>.*?</metadata>\s*| xmlns(:\w+)?="[^"]*"', "", (partial / images["roofline"]).read_text(
        encoding="utf-8"), flags=re.S) if images.get("roofline") else ""       # inline: HTML knows svg's names
    timeline = images.get("rank_timeline") or images.get("timeline")            # inline too: the zoom script moves it
    timeline_svg = (partial / timeline).read_text(encoding="utf-8").replace(' xmlns="http://www.w3.org/2000/svg"', "", 1) \
        if timeline else ""
    html = env.get_template("pair.html.j2").render(d=data, images=images, page=name, generated=generated,
                                                   roofline_svg=Markup(svg), timeline_svg=Markup(timeline_svg), **assets)
    (partial / name).write_text(html, encoding="utf-8")
    (partial / "data" / f"{stem}.json").write_text(json.dumps(data, indent=1, default=str))
    if progress:
        progress(data["title"])
    world = (data.get("ranks") or {}).get("world_size") or 1
    return {"page": name, "data": f"data/{stem}.json", "thumb": images.get("roofline_thumb"),
            "card": card_name(data["provenance"].get("gpu_name"), int(world)), **data}


def _groups(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The index's overview: its chapters, its cards and how many pages each (chapter, card) has."""
    chapters, cards = sorted({r["chapter"] for r in rows}), sorted({r["card"] for r in rows})
    count = {(c, k): sum(1 for r in rows if (r["chapter"], r["card"]) == (c, k)) for c in chapters for k in cards}
    return {"chapters": chapters, "cards": cards, "count": count}
