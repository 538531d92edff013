"""The run database (`RunDatabase`): each read opens it once and closes it; `open(run)` returns a
`Run` whose analyses are computed from that one read."""
from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analyze.kernels.table import (KERNEL_FIELDS, KERNEL_FLOPS, KERNEL_RECORD_LAYOUT, kernel_columns, kernel_records,
                                     kernel_sources)
from .. import arguments as arg
from ..errors import AispError, ArgumentError, ExportParseError, UnknownTargetError
from ..pairs.declared import declared
from ..store import db as store_db
from ..store.calibrations import db_calibrations, file_calibrations, merge_calibrations
from ..store.history import pair_history
from ..store.ingest import load_run_dir, sample_run_dirs, store_job, store_path
from ..model.run_data import RunData
from .reads import no_generated_code, read_for_page, read_generated, read_to_open, world_sizes
from .run import NO_COUNTERS, SUMMARY_TABLES, Run, RunResult, roofline_of
from ..store.select import check_stored_pair, resolve_run, select_runs
from ..store.variants import check_variant

if TYPE_CHECKING:      # imported where used: `aisp-prof runs` should not pay for analysis and charts
    from ..bench.gate import Gate
    from ..bench.runner import PairOutcome
    from ..calibrate.run import CalibrateOutcome
    from ..analyze.roofline.build import RooflineResult
    from ..collect.process.runner import RunOptions
    from ..render.report import Page, Report

Progress = Callable[[str], None]
HISTORY_TABLES = ("kernels", "ranges", "range_levels", "timings")


def open_db(path: str | Path | None = None) -> RunDatabase:
    """The run database at `path` (default: $AISP_PROF_DB, else profiles/aisp.db)."""
    return RunDatabase(store_db.db_path(None if path is None else arg.path(path, "the database path")))


def sample_runs() -> list[Path]:
    """The real run folders shipped with aisp-prof (chapter 9 on an H200), one per pair."""
    return sample_run_dirs()


@dataclass
class RunDatabase:
    """A run database. Every read opens it once and closes it; nothing is cached between calls."""

    path: Path
    calibration_dirs: list[Path] | None = field(default=None, repr=False)   # None: the shipped ones

    # ------------------------------------------------------------------ runs
    def runs(self) -> pd.DataFrame:
        """The stored runs, oldest first: run_id, pair, label, source, status, created_at, gpu_name."""
        return pd.DataFrame(self.run_list(), columns=list(store_db.RUN_COLUMNS))

    def run_list(self) -> list[dict[str, Any]]:
        """`runs()` as plain records (what `aisp-prof runs` prints)."""
        return store_db.list_runs(self.path)

    def resolve(self, run: str = "latest") -> str:
        """The run id `run` names."""
        with store_db.Reader(self.path) as conn:
            return resolve_run(conn.list_runs(), run, str(self.path))

    def select(self, runs: Sequence[str] = (), targets: Sequence[str] = ()) -> list[str]:
        """Run ids for ids/prefixes/'latest'/pairs (`runs`) and chapters or pairs (`targets`)."""
        with store_db.Reader(self.path) as conn:
            return select_runs(conn.list_runs(), runs, targets, str(self.path))

    def run(self, run: str = "latest", all_metrics: bool = False,
            tables: Sequence[str] = store_db.TABLES) -> RunData:
        """Everything one run stored (or the child `tables` asked for), read in one open."""
        with store_db.Reader(self.path) as conn:
            return declared(conn.read_run(resolve_run(conn.list_runs(), run, str(self.path)), all_metrics, tables))

    def open(self, run: str = "latest", tables: Sequence[str] = SUMMARY_TABLES) -> Run:
        """A stored run read once (what a summary, its roofline, verdict and ranks need, with the
        calibrations), its analyses computed on first use and kept (`api.run.Run`)."""
        return self.open_runs([arg.text(run, "run")], tables)[0]

    def open_runs(self, runs: Sequence[str], tables: Sequence[str] = SUMMARY_TABLES) -> list[Run]:
        """`open` of several runs in one open of the database."""
        with store_db.Reader(self.path) as conn:
            listing = conn.list_runs()
            data = [declared(read_to_open(conn, resolve_run(listing, r, str(self.path)), tables))
                    for r in arg.texts(runs, "runs")]
            in_db = db_calibrations(conn)
        calibrations = merge_calibrations(in_db, file_calibrations(self.calibration_dirs))
        return [Run(d, calibrations) for d in data]

    def summary_result(self, run: str = "latest") -> dict[str, Any]:
        """`run_summary` of a stored run, its verdict judged against the calibrated roofs (one open)."""
        return self.open(run).result()

    def diff(self, run_a: str, run_b: str) -> dict[str, Any]:
        """Two runs of one pair compared per variant, with the gate's verdict (analyze.run_diff):
        both read in one open, each one's roofline points computed once."""
        from ..analyze.run_diff import RunSide, compare

        sides = [RunSide(r.result(), r.points_frame(), r.data.samples) for r in self.open_runs([run_a, run_b])]
        return compare(*sides)

    def import_path(self, path: str | Path, label: str | None = None, skip_stored: bool = False,
                    replace: bool = False, replaced: list[str] | None = None) -> str:
        """Store a run folder, an ncu CSV (.csv[.gz])/.ncu-rep, an nsys SQLite export (.sqlite[.gz]) or
        a .nsys-rep (exported to SQLite on the fly by `collect.output.rep_export`); its id. Content
        already stored is a RunExistsError naming the stored run (with `skip_stored`: its id);
        `replace` replaces it (`store.identity`), the replaced ids appended to `replaced`."""
        from ..collect.output.rep_export import exported_sqlite, is_nsys_report

        path = arg.path(path, "path")
        via = exported_sqlite if is_nsys_report(path) and path.exists() else None
        if via is not None and not path.is_file():
            raise ExportParseError(f"{path}: not a file")
        return store_path(self.path, path, label, skip_stored, replace, via, replaced)

    def import_paths(self, paths: Sequence[str | Path], label: str | None = None,
                     replace: bool = False) -> list[dict[str, Any]]:
        """`import_path` of each path, every one tried: per path its run id and status (stored,
        already stored, failed with the one-line message and exit code; `api.imports`)."""
        from .imports import import_each

        return import_each(self, arg.paths(paths, "paths"), label, replace)       # one path is one item

    def import_job(self, paths: Sequence[str | Path], job: str, label: str | None = None, replace: bool = False) -> str:
        """One job's per-rank nsys SQLite exports (or folders) as one run (`store.ingest_job`); its id."""
        return store_job(self.path, arg.paths(paths, "paths"), arg.text(job, "job"), label, replace)

    def remove(self, runs: Sequence[str]) -> list[dict[str, Any]]:
        """Remove runs (ids, prefixes, 'latest', pair or job names) and every row of them, in one
        transaction; per run its id, pair, label and rows removed. An unknown name removes nothing."""
        return store_db.remove_runs(self.path, runs)

    def history(self, pair: str) -> pd.DataFrame:
        """One row per (run, variant) of `pair`, oldest first: the run's one primary speedup
        (`analyze.timing.speedup`, the summary's) with its timer, its own time (`speedup_time_ns`,
        `speedup_baseline_time_ns`) and spread (`speedup_rel_spread`), and the secondary figures by the
        other timers; the CUDA-event median apart (`cuda_event_median_ns`). A name with no stored run
        that is no pair here either is UnknownTargetError (exit 2) with close names."""
        from ..analyze.timing.speedup import add_history_speedups
        from ..pairs.discovery import check_name

        rows = pair_history(self.path, arg.text(pair, "pair", "a pair's name"))
        if not rows:
            check_name(pair)
        with store_db.Reader(self.path) as conn:
            add_history_speedups(rows, lambda rid: declared(conn.read_run(rid, False, HISTORY_TABLES)))
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ one run as frames
    def kernels(self, run: str = "latest", variant: str | None = None) -> pd.DataFrame:
        """Per kernel launch: range, variant, kernel, duration, bytes per level, FLOPs by precision.
        From ncu when the run has counters, else the nsys timeline (bytes and FLOPs then null)."""
        chunks = list(self.iter_kernels(run, variant))
        return pd.concat(chunks, ignore_index=True) if chunks else kernel_columns(pd.DataFrame())

    def iter_kernels(self, run: str = "latest", variant: str | None = None,
                     chunk_rows: int = 100_000, limit: int | None = None) -> Iterator[pd.DataFrame]:
        """`kernels()` in frames of at most `chunk_rows` launches, read as they are needed (a
        million-kernel timeline streams through `aisp-prof kernels --json`); `limit`: only the
        first launches, in stored order (SQL reads no more)."""
        limit, chunk_rows = arg.optional_whole(limit, "limit", 0), arg.whole(chunk_rows, "chunk_rows", 1)
        with store_db.Reader(self.path) as conn:
            run_id = resolve_run(conn.list_runs(), run, str(self.path))
            if variant is not None:          # '' too: a variant the run lacks, not every variant
                check_variant(conn, run_id, variant)
            table = "kernels" if conn.count("kernels", run_id) else "timeline"
            where, params = (" AND variant = ?", (variant,)) if variant is not None else ("", ())
            read = kernel_sources(conn.table_columns(table))
            for chunk in conn.iter_table(table, run_id, where, params, chunk_rows, columns=read, limit=limit):
                yield kernel_columns(chunk)

    def samples(self, run: str = "latest", variants: Sequence[str] = (), kind: str | None = None) -> pd.DataFrame:
        """Every timed call of the run's timing, in the order taken: round, process, variant, kind, time_ns; only
        `variants`' and `kind`'s where given (one the run lacks: UnknownTargetError naming what it has)."""
        from ..analyze.timing.rounds import sample_frame, select_samples
        variants, kind = arg.texts(variants, "variants"), arg.optional_text(kind, "kind")   # "baseline": one variant
        return select_samples(sample_frame((data := self.run(run, tables=("samples",))).samples), variants, kind, data.run_id)

    def ranges(self, run: str = "latest") -> pd.DataFrame:
        """Per innermost NVTX range (threads together): calls, kernels, memcpys/memsets, graph
        launches, GPU time and gaps (nsys). What the pair summary reads; `range_levels` has
        every level."""
        return self.run(run, tables=("ranges",)).ranges

    def range_levels(self, run: str = "latest", depth: int | None = None, max_depth: int | None = None,
                     name: str | None = None) -> pd.DataFrame:
        """Every NVTX level of every thread (a range's work includes its children's, as nsys's
        nvtx_kern_sum), chosen by depth (1: outermost), maximum depth and name (a substring of
        the path, or a glob of the path or the range's own name). Runs stored before levels
        were kept show their innermost ranges."""
        from ..analyze.timeline.range_levels import filter_levels, levels_of

        depth, max_depth = arg.optional_whole(depth, "depth", 1), arg.optional_whole(max_depth, "max_depth", 1)
        if depth is not None and max_depth is not None and depth > max_depth:
            raise ArgumentError(f"depth {depth} is deeper than max_depth {max_depth}: no range is both; give one of them")
        data = self.run(run, tables=("range_levels", "ranges"))
        levels = levels_of(data.range_levels, data.ranges)
        return filter_levels(levels, depth, max_depth, arg.optional_text(name, "name"))

    def ranks(self, run: str = "latest") -> dict[str, pd.DataFrame]:
        """A multi-rank run's frames (`analyze.ranks.report`): ranks, per_rank (busy, collective,
        compute, hidden comm %, idle, finish), bandwidth (per collective), stragglers, warnings."""
        opened = self.open(run, tables=("timeline", "ranks"))
        if opened.ranks is None:
            raise ArgumentError(f"run {opened.run_id} has one rank: `ranks` analyses runs of several "
                                "(aisp-prof run of a multi-GPU pair, or aisp-prof import --job)")
        return opened.ranks.frames()

    def summary(self, run: str = "latest") -> pd.DataFrame:
        """Per variant, baseline first: GPU time, speedup, correctness, DRAM bytes, FLOPs, stalls. Read as
        `aisp-prof summary` reads it (`open`): a one-rank run's timeline as the store keeps it summed."""
        return pd.DataFrame(self.open(run).summary)

    def roofline(self, *targets: str, flop_basis: str = "auto") -> RooflineResult:
        """The roofline of runs (default: the latest) with measured ceilings where calibrated."""
        runs, calibrations = self._runs_with_calibrations(targets or ("latest",))
        return roofline_of(runs, calibrations, flop_basis)

    def roofline_points(self, run: str = "latest", flop_basis: str = "auto") -> pd.DataFrame:
        """One row per roofline point: each variant's aggregate (kernel null), then its kernels."""
        return pd.DataFrame([p.to_dict() for p in self.roofline(run, flop_basis=flop_basis).points])

    def calibrations(self) -> list[dict[str, Any]]:
        """Every measured calibration: the database's (none where there is no database yet),
        then shipped files for other GPUs."""
        in_db: list[dict[str, Any]] = []
        if self.path.exists():
            with store_db.Reader(self.path) as conn:
                in_db = db_calibrations(conn)
        return merge_calibrations(in_db, file_calibrations(self.calibration_dirs))

    # ------------------------------------------------------------------ generated code
    def generated_code(self, run: str = "latest", variant: str | None = None,
                       kernel: str | None = None, all_kernels: bool = False) -> dict[str, Any]:
        """What the compilers generated for a run (its folder's generated/index.json): each ncu
        launch joined to the compiled kernel that ran (`launches`, see
        `analyze.code.generated_code.match_launches`), those kernels (launch configuration,
        registers, PTX/SASS summaries, files) and the Inductor output code that defines them.
        `all_kernels`: every kept kernel instead, ran or not. Narrowed to `variant`'s launches
        and kernel names containing `kernel`; a variant the run lacks is UnknownTargetError (as
        `kernels`'). ExportParseError when the run's folder has no generated code here."""
        from ..analyze.code.generated_code import generated_code_view

        with store_db.Reader(self.path) as conn:
            run_id = resolve_run(conn.list_runs(), run, str(self.path))
            if variant is not None:
                check_variant(conn, run_id, variant)
            data = declared(conn.read_run(run_id, False, ("kernels", "timeline")))
        folder, index = read_generated(data, self.path)
        if index is None or folder.path is None:
            raise no_generated_code(data, folder)
        return generated_code_view(data.run_id, folder.path, index, data.kernels, data.timeline,
                                   variant, arg.optional_text(kernel, "kernel"), all_kernels)

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

    def _runs_with_calibrations(self, targets: Sequence[str]) -> tuple[list[RunData], list[dict[str, Any]]]:
        with store_db.Reader(self.path) as conn:
            listing = conn.list_runs()
            ids = list(dict.fromkeys(resolve_run(listing, t, str(self.path)) for t in targets))
            runs, in_db = [declared(conn.read_run(r)) for r in ids], db_calibrations(conn)
        return runs, merge_calibrations(in_db, file_calibrations(self.calibration_dirs))

    # ------------------------------------------------------------------ calibrating and the gate (GPU)
    def calibrate(self, options: dict[str, Any], progress: Progress = lambda m: None) -> CalibrateOutcome:
        """Measure this GPU's ceilings and store them (`calibrate.run`; `options`: CalibrateOptions' fields)."""
        from ..calibrate.run import CalibrateOptions, calibrate

        return calibrate(CalibrateOptions(db=self.path, **arg.fields(options, CalibrateOptions, "options", ("db",))),
                         progress)

    def calibrate_link(self, gpus: int, write_json: Path | None = None) -> tuple[dict[str, Any], Path | None]:
        """Measure `gpus` GPUs' link per collective and store it; (record, JSON file written)."""
        from ..calibrate.run import calibrate_link

        return calibrate_link(self.path, gpus, write_json)

    def bench(self, targets: Sequence[str], options: dict[str, Any], progress: Progress = lambda m: None,
              tick: Callable[[], None] = lambda: None) -> Gate:
        """`bench run`: every pair of `targets` checked, timed and judged against its recorded
        evidence (`bench.gate.run_gate`; `options`: BenchOptions' fields). `progress` hears each pair's
        start, steps and outcome, so a log of a cut-off gate says how far it got; Ctrl-C (or `tick`
        raising KeyboardInterrupt) stops it with the finished pairs' outcomes and the rest "not run"."""
        from ..bench.gate import run_gate

        return run_gate(self, targets, options, progress, tick)

    def bench_record(self, runs: Sequence[str], expectations: Path | None = None,
                     force: bool = False) -> list[PairOutcome]:
        """Stored runs added as sessions of their pairs' recorded evidence (`bench.runner.record_runs`)."""
        from ..bench.runner import record_runs

        return record_runs([self.run(r) for r in arg.texts(runs, "runs")], expectations, force)   # one str: one run

    # ------------------------------------------------------------------ profiling (GPU)
    def profile(self, opts: RunOptions, progress: Progress = lambda m: None,
                annotate: Callable[[RunData], None] | None = None) -> RunResult:
        """Check and profile a pair (`aisp-prof run`), store the run in one transaction, summarize.

        `annotate(data)` may add to the run before it is stored (the bench's verdicts). A run
        whose check failed is still stored (status failed_check) so the failure is on record;
        `error` then carries the CorrectnessError. If storing fails, the run folder is removed
        too: profiles/ and the database stay in step.
        """
        from ..collect.process import runner

        outcome = runner.collect(opts, progress)
        try:
            progress("parsing exports and storing the run")
            data = load_run_dir(outcome.run_dir)
            if annotate is not None:
                annotate(data)
            store_db.write_run(self.path, data)
        except BaseException:
            shutil.rmtree(outcome.run_dir, ignore_errors=True)
            raise
        stored = Run(declared(data), self.calibrations())
        summary = stored.result()
        return RunResult(summary["run"], summary["summary"], data,
                         runner.failed_check_error(outcome.run_info, outcome.run_dir),
                         {k: summary[k] for k in ("headline", "findings", "verdict")}, stored.warnings)

