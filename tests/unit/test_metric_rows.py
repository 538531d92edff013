"""Raw ncu metrics stored as metric_columns/metric_rows (issue 17) hold exactly what the long
`metrics` table held: the parser's matrix gives the long form the per-cell parser gave, the
tables give the matrix back, and databases written with the long table still read the same."""
from __future__ import annotations

import csv
import random
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from repo_paths import FIXTURES
from click.testing import CliRunner

from aisp_prof.cli import cli
from aisp_prof.errors import AispError
from aisp_prof.model.launch_metrics import LaunchMetrics
from aisp_prof.parse.ncu.columns import cell_values, fast_values
from aisp_prof.parse.ncu.csv_page import _IDENTITY_HEADERS, _is_metric_header, parse_ncu_csv
from aisp_prof.parse.metrics.units import base_unit, number_text, scale_value
from aisp_prof.paths import data_root
from aisp_prof.store import db as store
from aisp_prof.store.ingest import load_run_dir
from aisp_prof.store.metric_rows import read_metrics, write_metrics
from sample_files import plain_path

H200 = FIXTURES / "h200"
SAMPLE = data_root() / "profiles" / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"
CSVS = [H200 / "probe_curated_raw_base.csv", H200 / "l2norm_pair_full_raw.csv",
        plain_path(SAMPLE / "ncu_raw.csv")]                 # the sample is shipped gzipped: a plain copy


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.int64)


def long_per_cell(path: Path) -> pd.DataFrame:
    """The long form as the parser made it before issue 17: cell by cell, row by row."""
    rows = [r for r in csv.reader(path.open(newline="")) if r]
    header, units, data = rows[0], rows[1], rows[2:]
    records = []
    for row in data:
        launch = int(number_text(row[header.index("ID")]))
        for i, name in enumerate(header):
            if name in _IDENTITY_HEADERS or not _is_metric_header(name):
                continue
            text = number_text(row[i])
            if text is not None:
                unit, exp = base_unit(units[i])
                records.append((launch, name, unit, scale_value(text, exp)))
    frame = pd.DataFrame(records, columns=["launch_id", "metric", "unit", "value"])
    return frame.astype({"launch_id": "int64", "value": "float64"})


@pytest.mark.parametrize("path", CSVS, ids=lambda p: p.name)
def test_long_form_is_the_per_cell_parse(path):
    got = parse_ncu_csv(path).metrics
    want = long_per_cell(path)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert (_bits(got["value"]) == _bits(want["value"])).all()


def test_column_conversion_matches_the_cell_rule():
    """Whole-column conversion gives each cell's `scale_value(number_text(cell), exp)` bit for bit."""
    rng = random.Random(17)

    def number() -> str:
        digits = str(rng.randrange(10 ** rng.randint(1, 22)))
        if rng.random() < 0.3 and len(digits) > 3:
            digits = f"{int(digits):,}"
        if rng.random() < 0.6:
            digits += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 9)))
        if rng.random() < 0.15:
            digits += rng.choice("eE") + str(rng.randint(-20, 20))
        return rng.choice(["", "", "-", "+"]) + digits

    odd = ["", "n/a", " 12 ", ".5", "1,23", "nan", "1" * 30, "١٢", "1\n2", "abc"]
    for trial in range(300):
        cells = [number() for _ in range(rng.randint(1, 40))]
        if trial % 3 == 0:
            cells[rng.randrange(len(cells))] = rng.choice(odd)
        if trial % 7 == 0:
            cells = [cells[0]] * len(cells)
        for exp in (0, 3, -3, 9):
            want, missing = cell_values(cells, exp)
            got = fast_values(tuple(cells), exp)
            if got is not None:
                assert not missing and (_bits(got) == _bits(want)).all(), (cells, exp)
            expected = [scale_value(t, exp) if (t := number_text(c)) is not None else None for c in cells]
            assert [None if v != v else v for v in want.tolist()] == expected


def _odd_metrics() -> LaunchMetrics:
    """NaN present in some launches, -0.0, inf, a column nobody has, one the same everywhere."""
    values = np.array([[1.0, -0.0, np.nan, 5.0, np.inf, np.nan],
                       [2.0, 0.0, np.nan, 5.0, 1.5, np.nan],
                       [np.nan, 3.0, np.nan, 5.0, -np.inf, 7.0]])
    present = ~np.isnan(values)
    present[0, 5] = True                        # a value that is NaN itself
    names = ("a", "b", "never", "same", "inf", "a")
    return LaunchMetrics(np.array([4, 9, 11]), names, ("byte", "", "ns", "hz", "x", "byte"), values, present)


def test_tables_give_the_matrix_back(tmp_path):
    conn = sqlite3.connect(tmp_path / "m.db")
    metrics = _odd_metrics()
    write_metrics(conn, metrics, "r1")
    back = read_metrics(conn, "r1")
    assert back.metrics == metrics.metrics and back.units == metrics.units
    assert back.launch_ids.tolist() == [4, 9, 11]
    assert (back.mask() == metrics.mask()).all()
    want = np.where(metrics.mask(), metrics.values, np.nan) + 0.0       # -0.0 stored as 0.0, as SQLite did
    assert (_bits(back.values) == _bits(want)).all()
    cols = conn.execute("SELECT metric, value, slot FROM metric_columns ORDER BY position").fetchall()
    assert cols[2] == ("never", None, None) and cols[3] == ("same", 5.0, None)
    assert read_metrics(conn, "other") is None


def test_long_form_order_and_first_values():
    m = _odd_metrics()
    long = m.long()
    assert list(zip(long["launch_id"], long["metric"])) == [
        (4, "a"), (4, "b"), (4, "same"), (4, "inf"), (4, "a"), (9, "a"), (9, "b"), (9, "same"), (9, "inf"),
        (11, "b"), (11, "same"), (11, "inf"), (11, "a")]
    assert m.first_value("same") == 5.0 and m.first_value("never") is None
    assert m.first_value("a") == 1.0                 # launch 4, its first "a" column
    # a launch with only the second "a" column: from a long frame alone it is read as the first
    assert LaunchMetrics.from_long(long).long()["metric"].tolist()[9:] == ["a", "b", "same", "inf"]


@pytest.mark.parametrize("path", CSVS, ids=lambda p: p.name)
def test_matrix_of_a_long_frame_gives_it_back(path):
    """A long frame whose launches list their metrics in one order (every ncu export) round-trips."""
    long = long_per_cell(path)
    pd.testing.assert_frame_equal(LaunchMetrics.from_long(long).long(), long, check_exact=True)


def _sample_db(tmp_path: Path, old_layout: bool) -> tuple[Path, str]:
    """The fused_l2norm sample stored as now, or as before issue 17 (the long `metrics` table,
    written the way `write_run` wrote it then, schema version 0)."""
    path = tmp_path / ("old.db" if old_layout else "new.db")
    data = load_run_dir(SAMPLE)
    long = data.metrics
    if old_layout:
        data.launch_metrics = LaunchMetrics.empty()
    store.write_run(path, data)
    if old_layout:
        with store.writing(path) as db:
            store._insert(db, "metrics", long, data.run_id)
            db.execute("PRAGMA user_version = 0")
            db["metrics"].create_index(["run_id"], if_not_exists=True)
    return path, data.run_id


@pytest.mark.slow
def test_database_with_the_long_table_reads_the_same(tmp_path):
    new_db, run_id = _sample_db(tmp_path, old_layout=False)
    old_db, _ = _sample_db(tmp_path, old_layout=True)
    assert sqlite3.connect(old_db).execute("PRAGMA user_version").fetchone()[0] == 0
    with store.Reader(new_db) as new, store.Reader(old_db) as old:
        for all_metrics in (False, True):
            a, b = new.read_run(run_id, all_metrics), old.read_run(run_id, all_metrics)
            pd.testing.assert_frame_equal(a.metrics, b.metrics, check_exact=True)
            assert a.device_attributes() == b.device_attributes()
        assert not new.has("metrics") and old.has("metrics")
        pd.testing.assert_frame_equal(new.long_metrics(run_id), old.long_metrics(run_id), check_exact=True)
    from aisp_prof.api import open_db

    assert open_db(new_db).roofline(run_id).to_dict() == open_db(old_db).roofline(run_id).to_dict()
    # the code of this schema can import into the older database: both kinds of run read
    store.write_run(old_db, load_run_dir(data_root() / "profiles" / "samples" /
                                         "20261126T015142Z-ch09.compute_bound-4289"))
    assert sqlite3.connect(old_db).execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    with store.Reader(old_db) as old:
        assert len(old.read_run(run_id, True).metrics) == 3185


@pytest.mark.slow
def test_newer_schema_is_a_one_line_error(tmp_path):
    path, _ = _sample_db(tmp_path, old_layout=False)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(AispError, match="newer aisp-prof"):
        store.list_runs(path)
    res = CliRunner().invoke(cli, ["runs", "--db", str(path)])
    assert res.exit_code == 13                              # StorageError: the run database
    assert len(res.stderr.strip().splitlines()) == 1 and "upgrade aisp-prof" in res.stderr


def test_not_a_database_is_a_one_line_error(tmp_path):
    path = tmp_path / "junk.db"
    path.write_text("this is not a database\n" * 200)
    res = CliRunner().invoke(cli, ["runs", "--db", str(path)])
    assert res.exit_code == 13                              # StorageError: the run database
    assert len(res.stderr.strip().splitlines()) == 1 and ("not an aisp-prof run database" in res.stderr
                                                          or "not a database" in res.stderr)
