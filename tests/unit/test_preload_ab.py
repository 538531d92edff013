"""benchmarks/preload_ab.py, the table of the forked-against-fresh A/B, on a real H200 gate database
(tests/fixtures/gate/h200_fresh_lease_ch14_gate.db.gz): the same database on both sides is 1.000 for every
variant; the second arm's samples of one variant scaled by 1.2 show as forked/fresh 1/1.2 there only."""
from __future__ import annotations

import importlib.util
import shutil
import sqlite3
from contextlib import closing

import pytest
from repo_paths import FIXTURES, ROOT
from sample_files import plain_file

spec = importlib.util.spec_from_file_location("preload_ab", ROOT / "benchmarks" / "preload_ab.py")
preload_ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(preload_ab)


@pytest.fixture
def gate_db(tmp_path):
    return plain_file(FIXTURES / "gate" / "h200_fresh_lease_ch14_gate.db", tmp_path / "gate.db")


def test_one_database_on_both_sides_is_one_everywhere(gate_db):
    table = preload_ab.compare(gate_db, gate_db)
    assert len(table) >= 25 and (table["forked_over_fresh"] == 1.0).all()
    assert not table["variant"].str.startswith("ref:").any()
    two = table[table["pair"] == "ch14.regional_triton"]
    assert (two["forked_processes"] == 2).all() and (two["forked_spread_pct"] > 0).all()


def test_a_moved_variant_shows_there_only(gate_db, tmp_path, capsys):
    fresh = tmp_path / "fresh.db"
    shutil.copy(gate_db, fresh)
    with closing(sqlite3.connect(fresh)) as con, con:
        con.execute("UPDATE samples SET time_ns = time_ns * 1.2 WHERE variant = 'sdpa_flash'")
    table = preload_ab.compare(gate_db, fresh).set_index(["pair", "variant"])
    assert table.loc[("ch14.attention_eager_sdpa", "sdpa_flash"), "forked_over_fresh"] == pytest.approx(1 / 1.2)
    assert (table.drop(("ch14.attention_eager_sdpa", "sdpa_flash"))["forked_over_fresh"] == 1.0).all()
    assert preload_ab.main([str(gate_db), str(fresh)]) == 0
    out = capsys.readouterr().out
    assert "0.833" in out and max(len(line) for line in out.splitlines()) <= 120 and "forked verdicts: " in out
    steady = [line for line in out.splitlines() if " steady " in line]
    assert steady and all(line.endswith(" *") for line in steady)        # never forked: no evidence of the fork
    assert preload_ab.main([str(gate_db), str(tmp_path / "none.db")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
