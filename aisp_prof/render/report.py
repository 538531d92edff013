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
import contextlib
import errno
import glob
import concurrent.futures as cf
import hashlib
import json
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from markupsafe import Markup

try:
    import fcntl
except ImportError:                  # Windows: no flock; stale folders are then found by age alone
    fcntl = None

from ..errors import AispError, ChartError, OutputError, UnknownTargetError, os_error_message, shorten
from ..naming import card_name, file_slug as _slug
from ..units import duration, si
from . import drawing

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "templates"
DEFAULT_REPORTS_DIR = Path("reports")
MARKER = ".aisp-report"            # marks a folder this module wrote (safe to replace)
STALE_REPORT_S = 600               # a killed report's partial folder without a lock is removed once this old
WRITER_LOCK = ".writer.lock"       # in a partial folder: flock-ed by the report writing it, freed when it dies


@dataclass(frozen=True)
class PageRef:
    """What names a page before its data is computed."""

    run_id: str
    pair: str | None = None
    label: str | None = None
    gpu_name: str | None = None


@dataclass
class Page:
    """One page's numbers (`analyze.page.contents.page_data`) and the roofline to draw (or None)."""

    data: dict[str, Any]
    roofline: Any = None


@dataclass
class Report:
    """What `write_report` wrote."""

    out_dir: Path
    index: Path
    pages: list[Path] = field(default_factory=list)


# ------------------------------------------------------------------------------ rendering


def _env():
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


def _assets() -> dict[str, Any]:
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
    carded = [_slug(f"{b}.{card_name(r.gpu_name)}") if r.gpu_name else None for b, r in zip(base, refs)]
    return [f"{b}.html" if base.count(b) == 1 and b != "index"
            else f"{c}.html" if c and carded.count(c) == 1 else f"{_slug(r.run_id)}.html"
            for b, c, r in zip(base, carded, refs)]


def default_name(refs: Sequence[PageRef]) -> str:
    """`<pair>-<run-id timestamp>` for one run, `report-<UTC timestamp>` for several."""
    if len(refs) == 1:
        ref = refs[0]
        return _slug(f"{ref.pair or ref.label or 'run'}-{ref.run_id.split('-', 1)[0]}")
    return "report-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _draw(data: dict[str, Any], roof: Any, img: Path, stem: str) -> dict[str, str]:
    """The page's charts as files under img/; returns {chart: path relative to the page}. Runs in
    a drawing process: a chart that fails becomes a ChartError naming it (one line in the CLI)."""
    from . import charts

    out: dict[str, str] = {}
    if roof is not None:
        try:
            from .roofline_plot import figure
        except ImportError as exc:
            log.warning("no roofline plot: %s", exc)
        else:        # an SVG that answers on hover (`drawing.hover_svg`); `aisp-prof roofline` keeps the PNG
            out["roofline"] = _chart("roofline", stem, img, lambda: drawing.hover_svg(figure(roof), roof,
                                                                                      img / f"{stem}-roofline.svg"))
    if data["roofline"]:
        thumb = _chart("roofline thumbnail", stem, img, charts.roofline_thumbnail, data["roofline"],
                       img / f"{stem}-roofline-thumb.png")
        if thumb is not None:
            out["roofline_thumb"] = thumb
    if data["stalls"]:
        out["stalls"] = _chart("stall", stem, img, charts.stall_chart, data["stalls"], img / f"{stem}-stalls.png")
    if data["memory"]:
        out["memory"] = _chart("memory", stem, img, charts.memory_chart, data["memory"], img / f"{stem}-memory.png")
    if data["timeline"]:
        from .timeline import timeline_chart

        out["timeline"] = _chart("timeline", stem, img, timeline_chart, data["timeline"], img / f"{stem}-timeline.png")
    if (data.get("ranks") or {}).get("lanes"):
        from .rank_timeline import rank_timeline_chart

        out["rank_timeline"] = _chart("rank timeline", stem, img, rank_timeline_chart, data["ranks"]["lanes"],
                                      img / f"{stem}-rank-timeline.png")
    return out


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


def _prepare_out(out_dir: Path) -> Path:
    """A fresh partial folder beside `out_dir`; refuses to replace a folder we did not write."""
    partial = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    try:
        _remove_stale(out_dir)
        if out_dir.exists() and (not out_dir.is_dir() or
                                 (any(out_dir.iterdir()) and not (out_dir / MARKER).exists())):
            raise OutputError(f"{shorten(out_dir)} exists and is not an aisp-prof report folder; choose another --out")
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        if partial.exists():
            shutil.rmtree(partial)
        (partial / "img").mkdir(parents=True)
        (partial / "data").mkdir()
        _lock(partial)
    except OSError as exc:
        _unlock(partial)
        shutil.rmtree(partial, ignore_errors=True)
        raise OutputError(os_error_message(exc, f"creating the report folder {shorten(out_dir)}", name_file=False)) from exc
    return partial


_held: dict[Path, Any] = {}        # partial folder -> the open lock file this process holds


def _lock(partial: Path) -> None:
    """Hold an flock on partial/WRITER_LOCK while the report is written: the kernel frees it when
    the process dies however it dies (SIGKILL), so the next report knows at once that the folder
    is nobody's (issue 31), on any host sharing the folder."""
    f = open(partial / WRITER_LOCK, "w")
    if fcntl is not None:
        fcntl.flock(f, fcntl.LOCK_EX)
    f.write(f"{os.getpid()} on {os.uname().nodename}\n")
    f.flush()
    _held[partial] = f


def _unlock(partial: Path) -> None:
    """Remove the lock file (it is not part of the report) and let the lock go."""
    f = _held.pop(partial, None)
    if f is not None:
        with contextlib.suppress(OSError):
            (partial / WRITER_LOCK).unlink()
        f.close()


def _writer_gone(path: Path) -> bool | None:
    """True when `path`'s lock file is there and free (its report died), False when a live report
    holds it, None when there is no lock to ask (an older aisp-prof, or a set-aside folder)."""
    try:
        with open(path / WRITER_LOCK, "r+") as f:
            if fcntl is None:
                return None
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return bool(f.read().strip()) or None        # empty: its writer is about to lock it
    except OSError:
        return None


def _remove_stale(out_dir: Path) -> None:
    """Remove partial and set-aside folders of `out_dir` whose writing process is gone (killed
    outright, so it could not clean up): at once when its lock is free, else once untouched for
    STALE_REPORT_S and its process id names no live process (an id means nothing on another host
    sharing the folder); a concurrent report's stay."""
    if not out_dir.parent.is_dir():
        return
    for path in out_dir.parent.glob(f".{glob.escape(out_dir.name)}.*-*"):
        match = re.fullmatch(rf"\.{re.escape(out_dir.name)}\.(?:partial-(\d+)|old-(\d+)-\d+)", path.name)
        if not match:
            continue
        gone = _writer_gone(path)
        if gone is None:
            old = False
            with contextlib.suppress(OSError):
                old = time.time() - path.stat().st_mtime > STALE_REPORT_S
            gone = old and not _alive(int(match.group(1) or match.group(2)))
        if gone:
            shutil.rmtree(path, ignore_errors=True)
            log.warning("removed %s: left half-written by a report that was killed", path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # another user's live process
        return True
    return True


def _move_into_place(partial: Path, out_dir: Path) -> None:
    """Rename the finished partial folder to `out_dir`, replacing a previous report there. A
    report written into the same folder at the same moment (two quickstarts) may move in between
    our steps: then the old one is moved aside again, a few times; the last to finish stays."""
    for attempt in range(10):
        if out_dir.exists():
            aside = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}-{attempt}"
            try:
                out_dir.rename(aside)
            except FileNotFoundError:        # another report moved it first
                pass
            else:
                shutil.rmtree(aside, ignore_errors=True)
        try:
            partial.rename(out_dir)
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or attempt == 9:
                shutil.rmtree(partial, ignore_errors=True)
                raise OutputError(os_error_message(exc, f"moving the report into {shorten(out_dir)}", name_file=False)) from exc


def write_report(refs: Sequence[PageRef], pages: Iterable[Page], out: Path | None = None,
                 reports_dir: Path = DEFAULT_REPORTS_DIR, source: str = "",
                 progress: Callable[[str], None] | None = None) -> Report:
    """Write index.html and one page per run into `out` (default reports/<name>). `pages` yields
    the refs' pages in order (so they can be computed one at a time); `source` is what the index
    says the runs came from.

    The folder is built under a hidden partial name and renamed when complete; a previous
    report in the same place is replaced. `progress(title)` is called after each page.
    """
    if not refs:
        raise UnknownTargetError("no runs to report on")
    out_dir = Path(out) if out else Path(reports_dir) / default_name(refs)
    partial = _prepare_out(out_dir)
    try:
        env, assets, names = _env(), _assets(), _page_names(refs)
        assets["switch"] = {ref.pair: sorted((card_name(r.gpu_name), n) for r, n in zip(refs, names) if r.pair == ref.pair)
                            for ref in refs}        # pair -> [(card, page)]: the same pair on other cards
        generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
        done: dict[int, dict[str, Any]] = {}             # page number -> its row of the index
        count = min(drawing.workers(), len(refs))       # one page, or one CPU: drawn here
        if count > 1:     # load the drawing code (matplotlib, fonts) once, here: the forked workers share it
            from . import charts as _charts, roofline_plot, timeline  # noqa: F401
        with drawing.pool(count) as charts:
            # pages finish as their charts come back (a worker never waits on a slow page); a few queued each
            pending: dict[cf.Future, tuple[int, str, Page]] = {}
            queued = 3 * count if count > 1 else 1
            for i, (name, page) in enumerate(zip(names, pages)):
                stem = name[: -len(".html")]
                pending[charts.submit(_draw, page.data, page.roofline, partial / "img", stem)] = (i, name, page)
                while len(pending) >= queued:
                    _finish_drawn(pending, done, env, assets, partial, generated, progress)
            while pending:
                _finish_drawn(pending, done, env, assets, partial, generated, progress)
        written = [out_dir / done[i]["page"] for i in sorted(done)]
        rows = sorted(done.values(), key=lambda r: (r["chapter"], r["card"], r["title"], r["run_id"]))
        html = env.get_template("index.html.j2").render(rows=rows, groups=_groups(rows), generated=generated,
                                                        db=source, **assets)
        (partial / "index.html").write_text(html, encoding="utf-8")
        (partial / MARKER).write_text("written by aisp-prof report; replaced by the next report here\n")
    except BaseException as exc:             # Ctrl-C and a full disk included: no half report
        _unlock(partial)
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, OSError):
            raise OutputError(os_error_message(exc, f"writing the report to {shorten(out_dir)}", name_file=False)) from exc
        raise
    _unlock(partial)
    _move_into_place(partial, out_dir)
    return Report(out_dir=out_dir, index=out_dir / "index.html", pages=written)


def _finish_drawn(pending: dict[cf.Future, tuple[int, str, Page]], done: dict[int, dict[str, Any]],
                  env: Any, assets: dict[str, Any], partial: Path, generated: str,
                  progress: Callable[[str], None] | None) -> None:
    """Wait for a page's charts, then finish every page whose charts are drawn (in page order);
    a chart that failed raises here."""
    finished, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
    for future in sorted(finished, key=lambda f: pending[f][0]):
        i, name, page = pending.pop(future)
        done[i] = _finish_page(env, assets, partial, name, page, future.result(), generated, progress)


def _finish_page(env: Any, assets: dict[str, Any], partial: Path, name: str, page: Page, images: dict[str, str],
                 generated: str, progress: Callable[[str], None] | None) -> dict[str, Any]:
    """Once a page's charts are drawn: its HTML and data file; returns its row of the index."""
    data, stem = page.data, name[: -len(".html")]
    svg = re.sub(r'<metadata>.*?</metadata>\s*| xmlns(:\w+)?="[^"]*"', "", (partial / images["roofline"]).read_text(
        encoding="utf-8"), flags=re.S) if images.get("roofline") else ""       # inline: HTML knows svg's names
    html = env.get_template("pair.html.j2").render(d=data, images=images, page=name, generated=generated,
                                                   roofline_svg=Markup(svg), **assets)
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
