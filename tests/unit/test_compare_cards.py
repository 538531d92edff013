"""`aisp-prof compare PAIR --cards` on the shipped H100 and H200 runs of ch09.fused_l2norm: the
numbers come from each run's own report page (speedup, ceilings, SM count and clock), the book's
B200 ratio from the pair, and each machine difference beyond the noise is explained."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES

from aisp_prof.api import open_db
from aisp_prof.cli import cli

H200 = PROFILES / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"
H100 = PROFILES / "samples_h100" / "20261126T045251Z-ch09.fused_l2norm-ba93"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("cards") / "a.db"
    for run in (H200, H100):
        open_db(path).import_path(run)
    return path


@pytest.mark.slow
def test_compare_cards_json_matches_each_runs_page(db):
    res = CliRunner().invoke(cli, ["compare", "ch09.fused_l2norm", "--cards", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [r["card"] for r in out["cards"]] == ["H100", "H200"] and out["book_ratio_b200"] == 2.44
    pages = {r.name: open_db(db)._page(r.name, []).data for r in (H200, H100)}
    for row in out["cards"]:
        page = pages[row["run_id"]]
        assert row["speedup"] == page["best"]["speedup"] and row["variant"] == page["best"]["variant"]
        assert row["ridge_flop_per_byte"] == pytest.approx(row["peak_flops_per_s"] / row["dram_bytes_per_s"])
        assert row["sm_count"] == 132
    h100, h200 = out["cards"]
    assert h200["dram_bytes_per_s"] / h100["dram_bytes_per_s"] == pytest.approx(1.44, abs=0.01)   # HBM3e vs HBM3
    assert any(e.startswith("  DRAM bandwidth: 3.35 -> 4.81 TB/s (1.44x)") for e in out["explanations"])
    assert any(e.startswith("  ridge point:") for e in out["explanations"])
    assert not any("SM count" in e for e in out["explanations"])           # both have 132 SMs


@pytest.mark.slow
def test_compare_cards_table_fits_and_a_one_card_pair_is_one_line(db, tmp_path):
    res = CliRunner().invoke(cli, ["compare", "ch09.fused_l2norm", "--cards", "--db", str(db)])
    assert res.exit_code == 0 and max(len(line) for line in res.stdout.splitlines()) <= 120
    assert "the book's B200 ratio 2.44x" in res.stdout and "H200 vs H100: speedup" in res.stdout
    one = tmp_path / "one.db"
    open_db(one).import_path(H200)
    res = CliRunner().invoke(cli, ["compare", "ch09.fused_l2norm", "--cards", "--db", str(one)])
    assert res.exit_code == 2 and "stored on 1 card(s) (H200)" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_compare_help_has_an_example():
    res = CliRunner().invoke(cli, ["compare", "--help"])
    assert res.exit_code == 0 and "Example" in res.output and "--cards" in res.output
