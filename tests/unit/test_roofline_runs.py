"""The roofline of several runs: arrows across runs timed as the pair declares, each point judged
against its own card's ceilings, and every row saying which run it belongs to. Real samples:
ch09.fused_l2norm on an H200 (profiles/samples) and an H100 (profiles/samples_h100), and
ch14.triton_persistent on an H200 (profiles/samples_h200_ch14), a pair that declares the steady timer."""
from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES

from aisp_prof.analyze.roofline.build import build_roofline
from aisp_prof.api import open_db, roofline_input
from aisp_prof.cli import cli
from aisp_prof.units import si

PERSISTENT_H200 = "20261129T054952Z-ch14.triton_persistent-149c"
PERSISTENT_H200_DIR = PROFILES / "samples_h200_ch14" / PERSISTENT_H200


@pytest.fixture(scope="module")
def persistent(sample_dbs):
    """The H200 triton_persistent run as the roofline reads it (its pair's declarations included)."""
    return roofline_input(open_db(sample_dbs.original(PERSISTENT_H200_DIR)).run(PERSISTENT_H200))


def test_arrows_across_runs_use_the_declared_timer(persistent):
    """The run beside a copy of itself under another id (derived: the same data, run_id changed):
    the arrows between the two are timed by steady, the timer the pair declares and its own
    arrows use, not by the first GPU timer both runs have (gpu_events)."""
    assert persistent.info["timer"] == "steady"
    copy = replace(persistent, run_id=persistent.run_id + "-copy")
    result = build_roofline([persistent, copy])
    within = [c for c in result.comparisons if c.baseline.run_id == c.optimized.run_id]
    across = [c for c in result.comparisons if c.baseline.run_id != c.optimized.run_id]
    assert {c.timer for c in within} == {"steady"}
    assert [c.optimized.variant for c in across] == ["baseline", "persistent", "persistent_128"]
    for c in across:
        steady = persistent.times[c.baseline.variant]["steady"]
        assert c.timer == "steady" and c.time_ns == steady and c.baseline_time_ns == steady


L2NORM_H200 = "20261126T011557Z-ch09.fused_l2norm-90df"
L2NORM_H100 = "20261126T045251Z-ch09.fused_l2norm-ba93"
L2NORM_H100_DIR = PROFILES / "samples_h100" / L2NORM_H100


@pytest.fixture(scope="module")
def l2norm_db(sample_dbs):
    """ch09.fused_l2norm on an H200 and on an H100, with the shipped calibrations of both cards."""
    return open_db(sample_dbs.original(L2NORM_H200, L2NORM_H100_DIR))


def _without_card(point: dict) -> dict:
    return {k: v for k, v in point.items() if k != "hardware_key"}


@pytest.mark.parametrize("order", [(L2NORM_H200, L2NORM_H100), (L2NORM_H100, L2NORM_H200)])
def test_each_card_judged_against_its_own_ceilings(l2norm_db, order):
    """Together, in either order, every point is the point of its run's roofline alone (H200
    baseline 66.1% of its DRAM roof, H100 77.7%), not one against a median of both cards' peaks
    (4.0 TB/s: 71.5% and 71.4%, and the H200's points above the H100's measured roof)."""
    alone = {r: l2norm_db.roofline(r) for r in order}
    both = l2norm_db.roofline(*order)
    assert list(both.cards) == [alone[r].ceilings.hardware_key for r in order]
    assert set(both.cards) == {"h200", "h100_80gb_hbm3"}
    for run_id, single in alone.items():
        assert both.ceilings_of(run_id).to_dict() == single.ceilings.to_dict()
        mine = [p.to_dict() for p in both.points if p.run_id == run_id]
        assert [_without_card(p) for p in mine] == [p.to_dict() for p in single.points]
        assert {p["hardware_key"] for p in mine} == {single.ceilings.hardware_key}
    assert all(p.pct_of_measured_roof < 100 for p in both.aggregates())
    data = both.to_dict()
    assert data["ceilings"] == alone[order[0]].ceilings.to_dict()
    assert data["ceilings_by_hardware_key"] == {s.ceilings.hardware_key: s.ceilings.to_dict() for s in alone.values()}
    other = [w.message for w in both.warnings if w.code == "other_gpu"]
    assert len(other) == 1 and "judged against its own GPU's ceilings" in other[0]
    assert "3 arrow(s) join runs on different GPUs" in other[0]


def test_one_card_has_no_card_column(l2norm_db):
    """A roofline of one card keeps its JSON as it was: no per-card ceilings, no card per point."""
    data = l2norm_db.roofline(L2NORM_H200).to_dict()
    assert "ceilings_by_hardware_key" not in data
    assert not any("hardware_key" in p for p in data["points"])
    assert not any(w["code"] == "other_gpu" for w in data["warnings"])


@pytest.fixture
def l2norm_copy(sample_dbs, tmp_path):
    """A private copy of the H200 + H100 ch09.fused_l2norm database, for the CLI."""
    return sample_dbs.copy(tmp_path / "a.db", L2NORM_H200, L2NORM_H100_DIR)


def _row(*cells: str) -> re.Pattern:
    return re.compile("^" + " +".join(re.escape(c) for c in cells) + r"(?: |$)", re.M)


def test_table_rows_say_which_run(l2norm_copy, monkeypatch):
    """`roofline H200 H100 --compare` at 120 columns: each card's ceilings under its name, and
    every point, arrow and FLOP-check row begins with its run (each run's card here), an arrow
    across runs with both; no line wider than 120. Expected cells come from the API's result."""
    monkeypatch.setenv("COLUMNS", "120")
    res = CliRunner().invoke(cli, ["roofline", L2NORM_H200, L2NORM_H100, "--db", str(l2norm_copy), "--compare"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert max(len(line) for line in out.splitlines()) <= 120
    result = open_db(l2norm_copy).roofline(L2NORM_H200, L2NORM_H100)
    names = result.run_names()
    assert names == {L2NORM_H200: "H200", L2NORM_H100: "H100"}
    for key, c in result.cards.items():
        assert f"ceilings: {c.gpu_name} (hardware key {key}; runs " in out
        assert _row("DRAM", "bandwidth", si(c.value("dram"), "B/s"), si(c.value("dram", "measured"), "B/s")).search(out)
    for p in result.aggregates():
        assert _row(names[p.run_id], p.variant, "(variant)").search(out)
        assert re.search(rf"^{names[p.run_id]} +{p.variant} +\(variant\).* {p.pct_of_roof:.3g}$", out, re.M)
    for c in result.comparisons:
        b, o = c.baseline.run_id, c.optimized.run_id
        runs = names[b] if b == o else f"{names[b]} -> {names[o]}"
        assert _row(*runs.split(), c.baseline.variant, c.optimized.variant, f"{c.speedup:.2f}x").search(out)
    for f in result.flop_check:
        assert _row(names[f.run_id], f.variant, si(f.counted_flops)).search(out)


def test_json_rows_carry_their_run(l2norm_copy):
    """--json: each arrow names the runs of both ends, each point and FLOP check its run."""
    res = CliRunner().invoke(cli, ["roofline", L2NORM_H200, L2NORM_H100, "--db", str(l2norm_copy), "--compare",
                                   "--json"])
    data = json.loads(res.stdout)
    ends = [(c["baseline"]["run_id"], c["optimized"]["run_id"]) for c in data["comparisons"]]
    assert ends == [(L2NORM_H200, L2NORM_H200)] * 2 + [(L2NORM_H100, L2NORM_H100)] * 2 + [(L2NORM_H200, L2NORM_H100)] * 3
    assert {f["run_id"] for f in data["flop_check"]} == {p["run_id"] for p in data["points"]} == {L2NORM_H200, L2NORM_H100}


def test_chart_draws_and_names_each_cards_roofs(l2norm_db):
    """One chart (the arrows cross runs) with both cards' DRAM and FP32 roofs, each named with its
    card and values in the legend, and every point and speedup label naming its run."""
    from aisp_prof.render.roofline_plot import NAME_GID, SPEEDUP_GID, figure

    result = l2norm_db.roofline(L2NORM_H200, L2NORM_H100)
    (ax,) = figure(result, compare=True).axes
    legend = [t.get_text() for leg in [ax.get_legend(), *ax.artists] for t in leg.get_texts()]
    for card, c in zip(("H200", "H100"), result.cards.values()):
        dram = f"DRAM ({card}): {si(c.value('dram'), 'B/s')} theo., {si(c.value('dram', 'measured'), 'B/s')} meas."
        assert dram in legend and any(t.startswith(f"FP32 ({card}): ") for t in legend)
    assert len([ln for ln in ax.lines if ln.get_gid() == "roof-dram"]) == 4      # theoretical, measured per card
    assert "NVIDIA H200 / NVIDIA H100 80GB HBM3" in ax.get_title()
    labels = {t.get_gid(): [] for t in ax.texts}
    for t in ax.texts:
        labels[t.get_gid()].append(t.get_text())
    assert sorted(labels[NAME_GID]) == sorted(f"{v} ({card})" for v in ("baseline", "cuda", "triton")
                                              for card in ("H200", "H100"))
    assert sorted(labels[SPEEDUP_GID]) == sorted(
        [f"{c.optimized.variant} {c.speedup:.2f}x (H200)" for c in result.comparisons[:2]]
        + [f"{c.optimized.variant} {c.speedup:.2f}x (H100)" for c in result.comparisons[2:4]]
        + [f"{c.optimized.variant} {c.speedup:.2f}x (H200 -> H100)" for c in result.comparisons[4:]])


def test_a_run_with_no_gpu_name_joins_the_one_card_of_the_others(l2norm_db):
    """A bare ncu export names no GPU; beside runs of one card (its own run folder) and with no calibration
    to place it, it is of that card, as before ceilings were per card: one card's roofs, no other_gpu warning
    on arrows of 1.00x (a review found 'h200, unknown'). The H200 run, and a copy of it without its GPU name."""
    named = roofline_input(l2norm_db.run(L2NORM_H200))
    bare = replace(named, run_id=named.run_id + "-bare", gpu_name=None)
    result = build_roofline([named, bare])
    assert list(result.cards) == ["h200"]
    assert not [w for w in result.warnings if w.code == "other_gpu"]
