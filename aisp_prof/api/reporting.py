"""Report pages: one run's page as data, an HTML report of many runs, and a pair's pages across
cards (`compare --cards`). Each page is one open of the database (the run with the calibrations)."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import arguments as arg
from ..errors import AispError, UnknownTargetError
from ..store import db as store_db
from ..store.calibrations import db_calibrations, file_calibrations, merge_calibrations
from ..store.select import check_stored_pair, select_runs
from .reads import read_for_page, read_generated, world_sizes
from .run import roofline_of

if TYPE_CHECKING:      # imported where used: `aisp-prof runs` should not pay for analysis and charts
    from ..render.report import Page, Report


class Reporting:
    """`RunDatabase`'s report pages; they read `self.path` and `self.calibration_dirs` and call its
    `resolve`."""

    path: Path
    calibration_dirs: list[Path] | None

    # ------------------------------------------------------------------ reports
    def page(self, run: str = "latest") -> dict[str, Any]:
        """Everything a report page shows for one run, as JSON-ready data."""
        return self._page(self.resolve(run), file_calibrations(self.calibration_dirs)).data

    def report(self, runs: Sequence[str] = (), targets: Sequence[str] = (), out: str | Path | None = None,
               progress: Callable[[str], None] | None = None, reports_dir: str | Path = "reports",
               tick: Callable[[], None] | None = None) -> Report:
        """Write an HTML report of the runs (default: the latest run of every stored pair) into
        `out` (default: reports_dir/<pair>-<time>); returns what was written. `tick()` is called where
        it may stop (`render.report.write_report`)."""
        from ..render.report import PageRef, write_report

        with store_db.Reader(self.path) as conn:
            listing, worlds = conn.list_runs(), world_sizes(conn)
        run_ids = select_runs(listing, runs, targets, str(self.path))
        rows = {r["run_id"]: r for r in listing}
        first = {key: i for i, key in reversed(list(enumerate(rows[r].get("pair") or r for r in run_ids)))}
        run_ids.sort(key=lambda r: first[rows[r].get("pair") or r])   # a pair's runs in a row: their rooflines share axes
        refs = [PageRef(rid, rows[rid].get("pair"), rows[rid].get("label"), rows[rid].get("gpu_name"), worlds.get(rid, 1))
                for rid in run_ids]
        page_of = functools.partial(self._page, files=file_calibrations(self.calibration_dirs))   # in the workers
        return write_report(refs, page_of, out=arg.path(out, "out") if out else None, source=str(self.path),
                            reports_dir=arg.path(reports_dir, "reports_dir"), progress=progress, tick=tick)

    def compare_cards(self, pair: str, plot_dir: str | Path | None = None) -> dict[str, Any]:
        """`compare PAIR --cards`: the pair's latest run on each card (`analyze.page.cards`), the axes
        its rooflines share, and with `plot_dir` one roofline PNG per card on those axes there; a pair
        stored on fewer than two cards is UnknownTargetError naming the cards it has."""
        from ..analyze.page.cards import compare_cards
        from ..naming import card_name
        from ..render.output.cards import axes_of, draw_cards

        with store_db.Reader(self.path) as conn:
            every = conn.list_runs()
        check_stored_pair(every, pair)             # a typo: close names, not "stored on 0 card(s)"
        listing = [r for r in every if r.get("pair") == pair]
        latest = {card_name(r.get("gpu_name")): r["run_id"] for r in sorted(listing, key=lambda r: r["created_at"] or "")}
        if len(latest) < 2:
            raise UnknownTargetError(f"{pair} is stored on {len(latest)} card(s) ({', '.join(latest) or 'none'}); "
                                     "compare --cards needs runs of it on two (import them: aisp-prof import ...)")
        files = file_calibrations(self.calibration_dirs)
        pages = {card: self._page(rid, files) for card, rid in sorted(latest.items())}
        out, roofs = compare_cards({card: p.data for card, p in pages.items()}), {c: p.roofline for c, p in pages.items()}
        roofs = {card: roof for card, roof in roofs.items() if roof is not None}
        out["roofline_axes"] = axes_of(roofs) if roofs else None
        charts = None if plot_dir is None else arg.path(plot_dir, "plot_dir")
        out["charts"] = draw_cards(pair, roofs, charts) if charts is not None and roofs else {}
        return out

    def _page(self, run_id: str, files: list[dict[str, Any]]) -> Page:
        """One report page: the run and the calibrations in one open, then pure analysis (the
        calibrations also judge a multi-rank run's link)."""
        from ..analyze.page.contents import page_data
        from ..analyze.timing.rounds import panel_summary, round_panels
        from ..render.report import Page

        with store_db.Reader(self.path) as conn:
            run, timeline = read_for_page(conn, run_id)
            calibrations = merge_calibrations(db_calibrations(conn), files)
        folder, index = read_generated(run, self.path)      # wherever its folder is now; a page notes one not here
        try:
            roof, error = roofline_of([run], calibrations), None
        except AispError as exc:
            roof, error = None, f"no roofline: {exc}"
        if roof is not None and not any(p.kernel is None for p in roof.points):
            roof, error = None, "no roofline: the run has no Nsight Compute counters (FLOPs and bytes)"
        data = page_data(run, roof, error, index, calibrations, timeline, folder.missing)
        rounds = round_panels(run.samples, data["variants"])        # drawn; the JSON keeps their summary
        return Page({**data, "rounds": panel_summary(rounds)}, roof, rounds)
