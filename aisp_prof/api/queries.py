"""Questions about one stored run's rows, answered as frames: its kernels (all at once or streamed),
timed samples, NVTX ranges and levels, rank report, and the code its compilers generated. Each is one
read of the database for just the tables it needs."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..analyze.kernels.table import kernel_columns, kernel_sources
from .. import arguments as arg
from ..errors import ArgumentError
from ..pairs.declared import declared
from ..store import db as store_db
from ..store.select import resolve_run
from ..store.variants import check_variant
from .reads import no_generated_code, read_generated


class Queries:
    """`RunDatabase`'s per-run row queries; they read `self.path` and call its `run` and `open`."""

    path: Path

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
