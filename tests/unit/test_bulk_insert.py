"""store.bulk: rows written with their repeated columns bound once are the rows binding every
cell writes (values, storage classes, order), and a failed run write leaves nothing behind."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from aisp_prof.errors import AispError
from aisp_prof.store import bulk
from aisp_prof.store.db import read_table, write_run
from aisp_prof.model.run_data import RunData


def _edge_frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    pick = rng.integers(0, 3, rows)
    return pd.DataFrame({
        "name": np.array(["a" * 300, "b", "c/d"], dtype=object)[pick],
        "text_na": pd.Series(np.array(["x", None, "y"], dtype=object)[pick]),
        "small_int": pick,
        "nullable": pd.array(np.where(pick == 0, None, pick), dtype="Int64"),
        "zero_float": np.where(pick == 0, -0.0, 0.0),            # equal, not the same value
        "mixed": pd.Series(np.array([1, 1.0, True], dtype=object)[pick]),    # equal, not the same
        "nan_float": np.where(pick == 1, np.nan, 2.5),
        "big": np.int64(2**62) + pick,
        "dense": np.arange(rows, dtype=np.int64),
        "flag": pick == 2,
    })


def _rows(conn: sqlite3.Connection, table: str) -> list[tuple]:
    return [tuple((type(v).__name__, repr(v)) for v in r)
            for r in conn.execute(f"SELECT * FROM [{table}] ORDER BY rowid")]


@pytest.mark.slow
@pytest.mark.parametrize("rows", [1, 7, 100, 5_000])
def test_grouped_rows_are_the_bound_rows(rows, monkeypatch):
    df = _edge_frame(rows)
    conn = sqlite3.connect(":memory:")
    types = ["TEXT", "TEXT", "INTEGER", "INTEGER", "FLOAT", "TEXT", "FLOAT", "INTEGER", "INTEGER", "INTEGER"]
    for table in ("grouped", "plain"):
        conn.execute(f"CREATE TABLE {table} (run_id TEXT, {', '.join(f'[{c}] {t}' for c, t in zip(df.columns, types))})")
    bulk.insert_frame(conn, "grouped", df, "r", chunk_rows=33)
    monkeypatch.setattr(bulk, "_repeated_columns", lambda frame: [])
    bulk.insert_frame(conn, "plain", df, "r", chunk_rows=33)
    assert _rows(conn, "grouped") == _rows(conn, "plain")
    assert not conn.execute("SELECT name FROM sqlite_temp_master").fetchall()


def test_repeated_columns_leave_floats_and_mixed_objects_per_row():
    chosen = bulk._repeated_columns(_edge_frame(5_000))
    assert {"name", "text_na", "small_int", "nullable", "flag"} <= set(chosen)
    assert not {"zero_float", "mixed", "nan_float", "dense"} & set(chosen)


def test_failed_write_leaves_no_row_of_the_run(tmp_path):
    db = tmp_path / "a.db"
    bad = RunData(run={"run_id": "r1"}, timeline=_edge_frame(300),
                  checks=pd.DataFrame({"variant": ["v"] * 20, "detail": [object()] * 20}))  # not bindable
    with pytest.raises(sqlite3.Error):
        write_run(db, bad)
    conn = sqlite3.connect(db)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert all(conn.execute(f"SELECT count(*) FROM [{t}]").fetchone()[0] == 0 for t in tables)
    conn.close()
    good = RunData(run={"run_id": "r1"}, timeline=_edge_frame(300))
    assert write_run(db, good) == "r1"
    assert len(read_table(db, "timeline", "r1")) == 300
    with pytest.raises(AispError):
        write_run(db, good)
