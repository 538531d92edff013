"""Rows of a table to store whose bulkiest columns stay in the SQLite export they come from.

A million kernels of an nsys export are a million copies of a few names, launch configurations
and integers that are already in the export: reading them into Python, building a frame and
binding every cell back into SQLite cost most of a 1M-kernel import. An `ExportRows` holds what
Python had to work out per row (each row's rowid in the export, its NVTX range, ...) as a frame;
the store attaches the export and copies the rest of each row with one `INSERT ... SELECT`
joined on that rowid (`store.bulk.insert_frame`). The parser that makes it owns the SQL (schema
facts stay in the parser); the store only attaches files and runs it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

SCHEMA = "{schema}"       # stands for the attached export's schema name in ExportColumns' SQL


@dataclass(frozen=True)
class ExportColumns:
    """Columns that SQLite takes from one table of an export, row by row.

    `columns` maps a stored column to its SQL over the table's row, aliased `k` (and over the
    tables `joins` adds); `types` gives each one's stored SQL type; `order` is the stored
    column order, the frame's columns and these together."""

    path: Path
    table: str
    key: str                              # the frame's column holding each row's rowid in `table`
    columns: dict[str, str]
    types: dict[str, str]
    order: tuple[str, ...]
    joins: str = ""                       # e.g. LEFT JOINs, with SCHEMA where the export's name goes

    def from_clause(self, schema: str, key_sql: str) -> str:
        """The SQL that joins the row `k` (and `joins`) to a row whose rowid is `key_sql`."""
        return (f"CROSS JOIN {schema}.[{self.table}] AS k ON k.rowid = {key_sql} "
                + self.joins.replace(SCHEMA, schema))

    def expressions(self, schema: str) -> dict[str, str]:
        return {c: sql.replace(SCHEMA, schema) for c, sql in self.columns.items()}


@dataclass(frozen=True, eq=False)
class ExportRows:
    """Rows to store: `frame` in row order (the key column and what Python worked out), the
    other columns in the export (`source`). eq=False: a frame has no single truth value."""

    frame: pd.DataFrame
    source: ExportColumns
    extra: dict[str, str] = field(default_factory=dict)     # column added to the frame -> the column it follows

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def empty(self) -> bool:
        return self.frame.empty

    @property
    def columns(self) -> list[str]:
        """Every stored column, in stored order (the key is not stored)."""
        out = list(self.source.order)
        for column, after in self.extra.items():
            out.insert(out.index(after) + 1, column)
        return out

    def with_frame(self, change: Callable[[pd.DataFrame], pd.DataFrame]) -> ExportRows:
        """The same rows with `change` applied to the frame; a column it adds is stored right
        after the frame column before it (as `pd.DataFrame.insert` placed it)."""
        frame = change(self.frame)
        extra = dict(self.extra)
        names = list(frame.columns)
        for i, column in enumerate(names):
            if column not in self.frame.columns and column not in extra:
                extra[column] = names[i - 1]
        return replace(self, frame=frame, extra=extra)

    def stored_frame_columns(self) -> list[str]:
        """The frame's columns that are stored (all but the key)."""
        return [c for c in self.frame.columns if c != self.source.key]


@dataclass(frozen=True, eq=False)
class StreamedRows:
    """`ExportRows` that come a window at a time (`parse.nsys.stream`: a long trace's timeline,
    never whole in memory): `windows()` yields each window's frame, `count` rows in all."""

    source: ExportColumns
    windows: Callable[[], Iterator[pd.DataFrame]]
    count: int
    changes: tuple[Callable[[pd.DataFrame], pd.DataFrame], ...] = ()

    def __len__(self) -> int:
        return self.count

    @property
    def empty(self) -> bool:
        return self.count == 0

    def with_frame(self, change: Callable[[pd.DataFrame], pd.DataFrame]) -> StreamedRows:
        """`ExportRows.with_frame`, done to each window's rows."""
        return replace(self, changes=(*self.changes, change))

    def parts(self) -> Iterator[ExportRows]:
        """Each window's rows, changed as asked (one read of the export: call once). Closing it
        closes the windows' reader at once (its threads, connections and scratch files)."""
        windows = self.windows()
        try:
            for frame in windows:
                rows = ExportRows(frame, self.source)
                for change in self.changes:
                    rows = rows.with_frame(change)
                yield rows
        finally:
            close = getattr(windows, "close", None)
            if close is not None:
                close()
