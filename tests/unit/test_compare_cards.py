"""`aisp-prof compare PAIR --cards` on the shipped H100 and H200 runs of ch09.fused_l2norm: the
numbers come from each run's own report page (speedup, ceilings, SM count and clock), the book's
B200 ratio from the pair, and each machine difference beyond the noise is explained."""
from __future__ import annotations

import json
import re

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


def _limits(svg: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    m = re.search(r'<svg data-x-limits="([^"]+)" data-y-limits="([^"]+)"', svg)
    return tuple(map(float, m.group(1).split())), tuple(map(float, m.group(2).split()))


@pytest.mark.slow
def test_each_cards_roofline_has_the_same_axes(db, tmp_path):
    """Drawn alone, the H100's and H200's rooflines have different axes (their ridge points differ:
    19.7 vs 13.6 FLOP/B); `compare --cards --plot` and the report draw both on one set of axes."""
    from aisp_prof.render.roofline_plot import axes_limits, figure

    from aisp_prof.store.calibrations import file_calibrations

    store = open_db(db)
    files = file_calibrations(store.calibration_dirs)        # what the command reads: the shipped calibrations
    roofs = {r.name: store._page(r.name, files).roofline for r in (H200, H100)}
    alone = [figure(roof).axes[0] for roof in roofs.values()]
    assert alone[0].get_xlim() != alone[1].get_xlim()          # so the test below can fail
    shared = axes_limits(list(roofs.values()))
    for ax in alone:                                             # the shared axes hold each card's chart
        assert shared[0][0] <= ax.get_xlim()[0] and shared[0][1] >= ax.get_xlim()[1]
        assert shared[1][0] <= ax.get_ylim()[0] and shared[1][1] >= ax.get_ylim()[1]
    res = CliRunner().invoke(cli, ["compare", "ch09.fused_l2norm", "--cards", "--db", str(db), "--json",
                                   "--plot", str(tmp_path / "plots")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["roofline_axes"] == {"x_flop_per_byte": list(shared[0]), "y_flop_per_s": list(shared[1])}
    assert sorted(out["charts"]) == ["H100", "H200"]
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["ch09.fused_l2norm.H100.png",
                                                                      "ch09.fused_l2norm.H200.png"]
    # the report: each card's page draws its roofline on the shared axes and shows both cards' charts
    rep = store.report([H200.name, H100.name], out=tmp_path / "rep")
    svgs = {card: (rep.out_dir / "img" / f"ch09.fused_l2norm.{card}-roofline.svg").read_text() for card in ("H100", "H200")}
    assert _limits(svgs["H100"]) == _limits(svgs["H200"])
    assert _limits(svgs["H100"])[0] == pytest.approx(shared[0], rel=1e-5)
    assert _limits(svgs["H100"])[1] == pytest.approx(shared[1], rel=1e-5)
    page = (rep.out_dir / "ch09.fused_l2norm.H200.html").read_text()
    grid = re.search(r'<div class="cross-grid">(.*?)</div>', page, re.S).group(1)
    assert re.findall(r'<img src="([^"]+)"', grid) == ["img/ch09.fused_l2norm.H100-roofline.svg",
                                                       "img/ch09.fused_l2norm.H200-roofline.svg"]
    assert 'aria-current="page"><span>H200 (this page)</span>' in grid


@pytest.mark.slow
def test_an_unwritable_plot_folder_is_one_line_and_exit_14(db, tmp_path):
    res = CliRunner().invoke(cli, ["compare", "ch09.fused_l2norm", "--cards", "--db", str(db), "--plot", "/proc/aisp"])
    assert res.exit_code == 14 and "Traceback" not in res.output
    assert res.stderr.strip().startswith("aisp-prof: error: writing the charts to /proc/aisp failed")
    assert len(res.stderr.strip().splitlines()) == 1
