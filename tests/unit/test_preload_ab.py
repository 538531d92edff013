"""benchmarks/preload_ab.py, the table of the forked-against-fresh A/B, on a real H200 gate database
(tests/fixtures/gate/h200_fresh_lease_ch14_gate.db.gz): the same database on both sides is 1.000 for every
variant; the second arm's samples of one variant scaled by 1.2 show as forked/fresh 1/1.2 there only.
And benchmarks/results/preload_ab_h200.md against the committed output of that call and the shipped
fresh-arm runs of ch10.warp_specialization."""
from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from contextlib import closing

import pandas as pd
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


RESULTS = ROOT / "benchmarks" / "results"
WS = "ch10.warp_specialization"


def test_the_h200_ab_md_is_its_table():
    """benchmarks/results/preload_ab_h200.md (one H200 lease, 2026-11-29) against the committed output of
    this script for that call: the text table is the JSON rendered, and the md's ranges and counts are
    the JSON's."""
    committed = json.loads((RESULTS / "preload_ab_h200_table.json").read_text())
    table = pd.DataFrame(committed["rows"])
    text = (RESULTS / "preload_ab_h200_table.txt").read_text()
    assert preload_ab.render(table, committed["verdicts"]) == text.rstrip("\n")
    md = (RESULTS / "preload_ab_h200.md").read_text()
    assert text.rstrip("\n") in md and not table["both_fresh"].any()
    ws, rest = table[table["pair"] == WS], table[table["pair"] != WS]
    ratio = (f"{rest['forked_over_fresh'].min():.3f}-{rest['forked_over_fresh'].max():.3f}",
             f"{ws['forked_over_fresh'].min():.3f}-{ws['forked_over_fresh'].max():.3f}")
    assert ratio == ("0.991-1.000", "0.971-0.990") and all(r in md for r in ratio)
    lower = (1 - ws["forked_over_fresh"]) * 100
    assert f"{lower.min():.1f}-{lower.max():.1f}% faster forked" in md
    assert f"({ws['fresh_spread_pct'].min():.1f}-{ws['fresh_spread_pct'].max():.1f}%)" in md
    assert f"({ws['forked_spread_pct'].min():.1f}-{ws['forked_spread_pct'].max():.1f}%)" in md
    counts = {arm: " / ".join(f"{v} {n}" for v, n in sorted(c.items())) for arm, c in committed["verdicts"].items()}
    assert f"forked {counts['forked']}, fresh {counts['fresh']}" in md


def test_the_shipped_fresh_runs_are_the_tables_fresh_rows(tmp_path):
    """The fresh arm's three ch10.warp_specialization runs of that call are shipped
    (tests/fixtures/gate/h200_power_cap_warp_specialization.db.gz): they give the committed table's fresh
    column and spread for that pair, its 3 FASTER, and the mean SM clocks the md quotes."""
    db = plain_file(FIXTURES / "gate" / "h200_power_cap_warp_specialization.db", tmp_path / "ws.db")
    again = preload_ab.compare(db, db).set_index("variant")
    rows = [r for r in json.loads((RESULTS / "preload_ab_h200_table.json").read_text())["rows"] if r["pair"] == WS]
    assert len(rows) == len(again) == 5
    for r in rows:
        assert again.loc[r["variant"], "fresh_us"] == pytest.approx(r["fresh_us"], rel=1e-9)
        assert again.loc[r["variant"], "fresh_spread_pct"] == pytest.approx(r["fresh_spread_pct"], rel=1e-9)
    assert preload_ab.verdicts(db)["verdict"].value_counts().get("FASTER") == 3
    with closing(sqlite3.connect(db)) as con:
        by_run = con.execute("SELECT AVG(sm_clock_mhz) FROM samples GROUP BY run_id ORDER BY run_id")
        clocks = [round(c) for (c,) in by_run]
    assert clocks == [1698, 1717, 1874]
    assert "fresh 1698, 1717, 1874 MHz" in (RESULTS / "preload_ab_h200.md").read_text()
