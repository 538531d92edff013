"""The run database (`RunDatabase`): each read opens it once and closes it; `open(run)` returns a
`Run` whose analyses are computed from that one read. Here: finding and reading runs, their summary,
roofline and calibrations; the other questions a RunDatabase answers live in a module each, mixed in."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .. import arguments as arg
from ..pairs.declared import declared
from ..store import db as store_db
from ..store.calibrations import db_calibrations, file_calibrations, merge_calibrations
from ..store.ingest import sample_run_dirs
from ..model.run_data import RunData
from .comparing import Comparing
from .measuring import Measuring
from .queries import Queries
from .reads import read_to_open
from .reporting import Reporting
from .run import SUMMARY_TABLES, Run, roofline_of
from .storing import Storing
from ..store.select import resolve_run, select_runs

if TYPE_CHECKING:      # imported where used: `aisp-prof runs` should not pay for analysis and charts
    from ..analyze.roofline.build import RooflineResult


def open_db(path: str | Path | None = None) -> RunDatabase:
    """The run database at `path` (default: $AISP_PROF_DB, else profiles/aisp.db)."""
    return RunDatabase(store_db.db_path(None if path is None else arg.path(path, "the database path")))


def sample_runs() -> list[Path]:
    """The real run folders shipped with aisp-prof (chapter 9 on an H200), one per pair."""
    return sample_run_dirs()


@dataclass
class RunDatabase(Queries, Comparing, Reporting, Storing, Measuring):
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

    # ------------------------------------------------------------------ one run judged: summary, roofline, roofs
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

    def calibrations(self, database_required: bool = False) -> list[dict[str, Any]]:
        """Every measured calibration: the database's (none where there is no database yet),
        then shipped files for other GPUs. `database_required` (a database named on purpose, the
        CLI's --db): none there is MissingDatabaseError, as for every read, not the files alone."""
        in_db: list[dict[str, Any]] = []
        if database_required or self.path.exists():
            with store_db.Reader(self.path) as conn:
                in_db = db_calibrations(conn)
        return merge_calibrations(in_db, file_calibrations(self.calibration_dirs))

    def _runs_with_calibrations(self, targets: Sequence[str]) -> tuple[list[RunData], list[dict[str, Any]]]:
        with store_db.Reader(self.path) as conn:
            listing = conn.list_runs()
            ids = list(dict.fromkeys(resolve_run(listing, t, str(self.path)) for t in targets))
            runs, in_db = [declared(conn.read_run(r)) for r in ids], db_calibrations(conn)
        return runs, merge_calibrations(in_db, file_calibrations(self.calibration_dirs))
