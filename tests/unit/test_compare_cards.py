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
    assert "the book's B200 ratio 2.44x" in res.stdout and "H200 vs H100 by nsys GPU time: speedup" in res.stdout
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


QA_H100 = PROFILES / "samples_h100x2_ch14" / "20261126T174545Z-ch14.quantized_allreduce-cbe0"
QA_H200 = PROFILES / "samples_h200x2_ch14" / "20261129T180029Z-ch14.quantized_allreduce-7cd8"


@pytest.mark.slow
def test_cards_compare_speedups_by_a_timer_both_runs_have(sample_dbs):
    """ch14.quantized_allreduce's H100 run (recorded before the timer's three kinds) has its headline
    by CUDA events, the H200 run by steady time: 1.85x against 2.00x is a ratio of two quantities.
    The cards compare by nsys GPU time, the first of the pair's timers both have: 1.92x vs 1.94x."""
    db = sample_dbs.original(QA_H100, QA_H200)
    out = open_db(db).compare_cards("ch14.quantized_allreduce")
    h100, h200 = out["cards"]
    assert (h100["speedup_timer"], h200["speedup_timer"]) == ("cuda_events", "steady")   # the mix, as keys
    assert (h100["speedup_label"], h200["speedup_label"]) == ("CUDA events", "steady time per call")
    for card in (h100, h200):         # a key as summary/history/roofline give it: it indexes speedup_by_timer
        assert card["speedup_by_timer"][card["speedup_timer"]] == pytest.approx(card["speedup"])
    assert out["common_timer"] == "nsys_gpu_time"
    assert h100["common_timer_speedup"] == pytest.approx(1.917, abs=1e-3)
    assert h200["common_timer_speedup"] == pytest.approx(1.939, abs=1e-3)
    assert out["explanations"][0] == "H200 vs H100 by nsys GPU time: speedup 1.94x vs 1.92x (the same within the noise)"
    res = CliRunner().invoke(cli, ["compare", "ch14.quantized_allreduce", "--cards", "--db", str(db)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert lines[1] == ("speedups by nsys GPU time: the first of the pair's timers (steady time per call first) "
                        "that every card's run has")
    assert lines[3].startswith("H100        1.92x int8") and lines[4].startswith("H200        1.94x int8")
    assert lines[5].endswith("(NVIDIA H100 80GB HBM3; its headline 1.85x by CUDA events)")
    assert "2.00x vs 1.85x" not in res.stdout


@pytest.mark.slow
def test_cards_without_a_common_timer_say_so_instead_of_a_ratio(sample_dbs):
    """The two real pages of ch14.quantized_allreduce, edited: the H200 run's nsys figure taken away,
    so no timer is in both runs (the H100's CUDA events and nsys, the H200's steady, latency, GPU time)."""
    from aisp_prof.analyze.page.cards import compare_cards

    store = open_db(sample_dbs.original(QA_H100, QA_H200))
    pages = {"H100": store._page(QA_H100.name, []).data, "H200": store._page(QA_H200.name, []).data}
    pages["H200"]["best"]["speedup_by_timer"]["nsys_gpu_time"] = None
    out = compare_cards(pages)
    assert out["common_timer"] is None and [r["common_timer_speedup"] for r in out["cards"]] == [None, None]
    assert out["explanations"][0] == ("H200 vs H100: no timer both runs have (H100 by CUDA events, H200 by "
                                      "steady time per call): their speedups do not compare")
    assert out["timer_note"].startswith("no timer every card's run has")
    assert not any("no machine difference" in e for e in out["explanations"])     # DRAM bandwidth moved


def test_no_common_timer_never_says_a_ratio_moved(sample_dbs):
    """Two cards alike (the real H200 page of ch14.quantized_allreduce beside a copy of itself) whose
    speedups share no timer (edited: steady only on one, nsys only on the other): after "their speedups do
    not compare" nothing may say "a ratio that moved is the code's or the run's" (a review found both)."""
    import copy

    from aisp_prof.analyze.page.cards import compare_cards

    page = open_db(sample_dbs.original(QA_H200))._page(QA_H200.name, []).data
    other = copy.deepcopy(page)
    timers = page["best"]["speedup_by_timer"]
    page["best"]["speedup_by_timer"] = {t: (s if t == "steady" else None) for t, s in timers.items()}
    other["best"]["speedup_by_timer"] = {t: (s if t == "nsys_gpu_time" else None) for t, s in timers.items()}
    out = compare_cards({"H200": page, "H200 again": other})
    assert out["common_timer"] is None and "do not compare" in out["explanations"][0]
    assert not any("no machine difference" in e for e in out["explanations"]), out["explanations"]
