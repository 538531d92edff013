"""Issue 16, "one speedup per comparison": the summary, the roofline's arrow, `history` and the
report page say the same primary speedup for the same run, on every shipped sample (real GPU
captures), and the figures by the other timers are present under their timer's name.

Before: the fused_l2norm sample 90df said 3.13x in the summary (nsys GPU time), 3.16x on the
roofline arrow (ncu summed duration) and 3.03x in `history` (CUDA events)."""
from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from repo_paths import every_sample_run

from aisp_prof.analyze.timing.speedup import TIMER_LABELS, TIMERS, speedup
from aisp_prof.api import open_db
from aisp_prof.cli import cli

L2NORM = "20261126T011557Z-ch09.fused_l2norm-90df"


@pytest.fixture(scope="module")
def db(tmp_path_factory, sample_dbs):
    """Every shipped sample run (profiles/samples*), imported once per session (tests/conftest.py)."""
    return open_db(sample_dbs.copy(tmp_path_factory.mktemp("one_speedup") / "a.db", *every_sample_run()))


def _summary(db, rid, result=None):
    """{variant: summary row} of the variants with a speedup; from `result` if given (summary_result's)."""
    result = result or db.summary_result(rid)
    return {r["variant"]: r for r in result["summary"] if r.get("speedup_vs_baseline")}


# ---------------------------------------------------------------------- the definition, alone

def test_the_primary_timer_is_the_first_both_variants_have():
    base = {"nsys_gpu_time": 300.0, "cuda_events": 330.0, "ncu_duration": 270.0}
    s = speedup(base, {"nsys_gpu_time": 100.0, "cuda_events": 100.0, "ncu_duration": 90.0})
    assert (s.value, s.timer) == (3.0, "nsys_gpu_time")
    assert s.by_timer == {"nsys_gpu_time": 3.0, "cuda_events": 3.3, "ncu_duration": 3.0, "gpu_events": None,
                          "latency": None, "steady": None}
    # a variant without nsys: both sides by CUDA events, never nsys over events
    s = speedup(base, {"nsys_gpu_time": None, "cuda_events": 110.0, "ncu_duration": 90.0})
    assert (s.value, s.timer) == (3.0, "cuda_events")
    s = speedup({"ncu_duration": 50.0}, {"ncu_duration": 25.0})
    assert (s.value, s.timer, s.label) == (2.0, "ncu_duration", "ncu duration")
    s = speedup({}, {"cuda_events": 1.0})
    assert (s.value, s.timer) == (None, None)


def test_the_timer_kinds_come_first_in_the_order_a_pair_declares():
    """Issue 28: GPU time by CUDA events (calls queued ahead) leads by default, so `run` and the
    gate use the same quantity; a pair about the host's cost declares latency or steady, and a run
    that lacks its timer falls back on the other host timer, then the legacy events."""
    from aisp_prof.analyze.timing.speedup import timer_order

    assert timer_order({})[:3] == ("gpu_events", "nsys_gpu_time", "cuda_events")
    assert timer_order({"timer": "latency"})[:3] == ("latency", "steady", "cuda_events")
    assert timer_order({"timer": "steady", "world_size": 2})[:3] == ("steady", "latency", "cuda_events")
    assert timer_order({"world_size": 2})[0] == "steady"
    base = {"gpu_events": 100.0, "latency": 900.0, "steady": 800.0, "nsys_gpu_time": 99.0}
    var = {"gpu_events": 50.0, "latency": 300.0, "steady": 400.0, "nsys_gpu_time": 51.0}
    assert speedup(base, var, timer_order({})).timer == "gpu_events"
    s = speedup(base, var, timer_order({"timer": "latency"}))
    assert (s.value, s.timer, s.label) == (3.0, "latency", "latency per call")


# ---------------------------------------------------------------------- every shipped sample

@pytest.mark.slow
def test_every_sample_says_one_speedup_everywhere(db, every_sample_results):
    runs = db.runs()
    assert len(runs) >= 40                               # samples, samples_h100, _ch10, _ch14
    checked = 0
    histories = {}                                       # a pair's history holds every run of it: read once
    for rid, pair in zip(runs["run_id"], runs["pair"]):
        result = every_sample_results[rid]               # db.summary_result(rid), computed once per session
        summary = _summary(db, rid, result)
        if not summary:
            continue
        primary = {v: (r["speedup_vs_baseline"], r["speedup_timer"]) for v, r in summary.items()}
        # roofline (--json): every within-run arrow from the baseline
        try:
            roof = db.roofline(rid).to_dict()
        except Exception:                                # noqa: BLE001 (a run without ncu counters)
            roof = {"comparisons": []}
        for c in roof["comparisons"]:
            if c["baseline"]["variant"] == "baseline" and c["speedup"] is not None:
                v = c["optimized"]["variant"]
                assert (c["speedup"], c["speedup_timer"]) == primary[v], (rid, v)
                assert c["time_source"] == TIMER_LABELS[c["speedup_timer"]]
                checked += 1
        # history (--json rows)
        hist = histories[pair] if pair in histories else histories.setdefault(pair, db.history(pair))
        for h in hist[hist["run_id"] == rid].to_dict("records"):
            if h["variant"] in primary:
                assert (h["speedup_vs_baseline"], h["speedup_timer"]) == primary[h["variant"]], (rid, h["variant"])
                checked += 1
        # summary's headline: the best optimization's number and timer
        head = result["headline"]
        if head["best"]:
            assert (head["speedup"], head["speedup_timer"]) == primary[head["best"]]
            assert f"{head['speedup']:.2f}x over baseline ({TIMER_LABELS[head['speedup_timer']]})" in head["text"]
        # labelled secondary figures: every timer named, the primary one among them
        for v, r in summary.items():
            assert set(r["speedup_by_timer"]) == set(TIMERS)
            assert r["speedup_by_timer"][r["speedup_timer"]] == r["speedup_vs_baseline"]
    assert checked > 100


@pytest.mark.slow
@pytest.mark.parametrize("rid", [L2NORM, "20261126T045251Z-ch09.fused_l2norm-ba93",
                                 "20261126T123743Z-ch10.flash_attention-932c"])
def test_the_report_page_says_the_summary_s_speedup(db, rid):
    page = db.page(rid)
    summary = _summary(db, rid)
    assert page["headline"]
    for h in page["headline"]:
        s = summary[h["variant"]]
        assert (h["speedup"], h["speedup_timer"]) == (s["speedup_vs_baseline"], s["speedup_timer"])
        assert h["speedup_label"] == TIMER_LABELS[s["speedup_timer"]]
        assert h["speedup_cuda_events"] == s["speedup_by_timer"]["cuda_events"]
        assert h["speedup_ncu_duration"] == s["speedup_by_timer"]["ncu_duration"]
    # the lead card is the book's optimization where the pair names one (issue 28), else the fastest
    best, book = page["best"], (db.run(rid).info.get("book") or {}).get("variant")
    fastest = max((h for h in page["headline"] if h["role"] == "optimization" and h["correct"] is not False),
                  key=lambda h: summary[h["variant"]]["speedup_vs_baseline"])["variant"]
    assert best["variant"] == (book or fastest)
    assert best["speedup"] == summary[best["variant"]]["speedup_vs_baseline"]


# ---------------------------------------------------------------------- the example

@pytest.mark.slow
def test_fused_l2norm_says_3_13x_everywhere_with_the_others_labelled(db):
    """3.13x (nsys GPU time) in the summary, on the arrow, in history and on the page; 3.03x
    (CUDA events) and 3.16x (ncu duration) only as labelled secondary figures."""
    cuda = _summary(db, L2NORM)["cuda"]
    assert cuda["speedup_timer"] == "nsys_gpu_time"
    by = cuda["speedup_by_timer"]
    assert f"{cuda['speedup_vs_baseline']:.2f}" == "3.13"
    assert (f"{by['cuda_events']:.2f}", f"{by['ncu_duration']:.2f}") == ("3.03", "3.16")

    runner, path = CliRunner(), str(db.path)
    out = json.loads(runner.invoke(cli, ["summary", L2NORM, "--db", path, "--json"]).stdout)
    row = next(r for r in out["summary"] if r["variant"] == "cuda")
    assert row["speedup_vs_baseline"] == cuda["speedup_vs_baseline"] and row["speedup_timer"] == "nsys_gpu_time"
    assert set(row["speedup_by_timer"]) == set(TIMERS)

    text = runner.invoke(cli, ["summary", L2NORM, "--db", path, "--wide"]).stdout
    assert "3.13x" in text and "(nsys GPU time)" in text
    assert "speedup: by nsys GPU time" in text
    assert "cuda CUDA events 3.03x, ncu duration 3.16x" in text

    roof = runner.invoke(cli, ["roofline", L2NORM, "--db", path, "--json", "--compare"])
    assert roof.exit_code == 0, roof.output
    arrow = next(c for c in json.loads(roof.stdout)["comparisons"] if c["optimized"]["variant"] == "cuda")
    assert arrow["speedup"] == cuda["speedup_vs_baseline"] and arrow["time_source"] == "nsys GPU time"
    assert math.isclose(arrow["speedup_by_timer"]["ncu_duration"], by["ncu_duration"])
    table = runner.invoke(cli, ["roofline", L2NORM, "--db", path, "--wide"]).stdout
    assert "3.13x" in table and "CUDA events 3.03x, ncu duration 3.16x" in table

    hist = runner.invoke(cli, ["history", "ch09.fused_l2norm", "--db", path, "--json"])
    h = next(r for r in json.loads(hist.stdout) if r["run_id"] == L2NORM and r["variant"] == "cuda")
    assert h["speedup_vs_baseline"] == cuda["speedup_vs_baseline"] and h["speedup_timer"] == "nsys_gpu_time"
    assert f"{h['speedup_by_timer']['cuda_events']:.2f}" == "3.03"
    wide = runner.invoke(cli, ["history", "ch09.fused_l2norm", "--db", path, "--wide"]).stdout
    line = next(ln for ln in wide.splitlines() if L2NORM in ln and " cuda " in ln)
    assert "3.13x" in line and "nsys GPU" in line and "3.03x" not in line


@pytest.mark.slow
def test_the_arrow_label_is_the_summary_s_number(db):
    """The chart's speedup label (the drawn text, not only the JSON)."""
    from aisp_prof.render.roofline_plot import SPEEDUP_GID, figure

    fig = figure(db.roofline(L2NORM), level="dram", compare=True)
    labels = {t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == SPEEDUP_GID}
    cuda = _summary(db, L2NORM)["cuda"]["speedup_vs_baseline"]
    assert f"cuda {cuda:.2f}x" in labels and "cuda 3.13x" in labels, labels
