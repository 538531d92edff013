"""The report page of a multi-rank run (issue 15), on the real 2-rank run of
ch14.quantized_allreduce on 2x H100 (profiles/samples_h100x2_ch14, README there: `aisp-prof run
ch14.quantized_allreduce` under torchrun, nsys on both ranks) and the link's measured bus
bandwidth (profiles/calibration/2x_h100_80gb_hbm3.json, `aisp-prof calibrate --link 2`).

What must hold: the page data carries the rank analysis (a row per variant and rank, the
collectives' bus bandwidth against the measured link), the page shows it in a Ranks section,
and its timeline is one lane per rank (a row per stream) of one iteration on the job's one
clock, where int8_overlap's NCCL kernels run beside its Triton kernels; a single-rank page is
as it was. No GPU.
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from repo_paths import ROOT

from aisp_prof.analyze.page.contents import page_data
from aisp_prof.api import RunDatabase
from aisp_prof.render.rank_timeline import rank_timeline_figure
from aisp_prof.store.calibrations import file_calibrations
from aisp_prof.store.ingest import load_run_dir, sample_run_dirs, store_path

SAMPLE = ROOT / "profiles" / "samples_h100x2_ch14" / "20261126T174545Z-ch14.quantized_allreduce-cbe0"
CALIBRATIONS = ROOT / "profiles" / "calibration"
SINGLE_RANK = "20261126T011557Z-ch09.fused_l2norm-90df"
VARIANTS = ("baseline", "fp32_rs_ag", "int8", "int8_overlap")


class Rows(HTMLParser):
    """The attributes of every <tr> per enclosing table id, and every id and <img src>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.table: str | None = None
        self.rows: dict[str, list[dict[str, str | None]]] = {}
        self.ids: set[str] = set()
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "table":
            self.table = a.get("id") or ""
        elif tag == "tr" and self.table is not None and "data-rank" in a or tag == "tr" and "data-op" in a:
            self.rows.setdefault(self.table or "", []).append(a)
        elif tag == "img":
            self.images.append(a.get("src") or "")

    def handle_endtag(self, tag):
        if tag == "table":
            self.table = None


def parsed(page: Path) -> Rows:
    rows = Rows()
    rows.feed(page.read_text())
    return rows


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranks")
    db = RunDatabase(tmp / "a.db", calibration_dirs=[CALIBRATIONS])
    multi = store_path(db.path, SAMPLE)
    single = store_path(db.path, {d.name: d for d in sample_run_dirs()}[SINGLE_RANK])
    report = db.report([multi, single], out=tmp / "out")
    pages = {p.name.split(".html")[0]: p for p in report.pages}
    return {"db": db, "multi": multi, "single": single, "page": db.page(multi),
            "multi_html": pages["ch14.quantized_allreduce"], "single_html": pages["ch09.fused_l2norm"]}


# ------------------------------------------------------------------------------------ page data


@pytest.mark.slow
def test_page_data_has_a_row_per_variant_and_rank(built):
    per_rank = built["page"]["ranks"]["per_rank"]
    assert len(per_rank) == 8
    assert [(r["variant"], r["rank"]) for r in per_rank] == [(v, r) for v in VARIANTS for r in (0, 1)]
    assert all(r["iterations"] == 5 for r in per_rank)


@pytest.mark.slow
def test_hidden_communication_only_where_nccl_has_its_own_stream(built):
    per_rank = built["page"]["ranks"]["per_rank"]
    hidden = {(r["variant"], r["rank"]): r["hidden_comm_pct"] for r in per_rank}
    for rank in (0, 1):
        assert hidden[("baseline", rank)] == 0        # one stream runs everything
        assert hidden[("int8", rank)] == 0            # Triton and NCCL in turn on one stream
        assert hidden[("int8_overlap", rank)] > 10    # NCCL on a second stream beside Triton


@pytest.mark.slow
def test_bus_bandwidth_is_judged_against_the_measured_link(built):
    ranks = built["page"]["ranks"]
    assert ranks["link_calibrated"] and ranks["link_key"] == "2x_h100_80gb_hbm3"
    bandwidth = ranks["bandwidth"]
    assert {(b["variant"], b["op"]) for b in bandwidth} == {
        ("baseline", "AllReduce"), ("fp32_rs_ag", "ReduceScatter"), ("fp32_rs_ag", "AllGather"),
        ("int8", "AlltoAll"), ("int8", "AllGather"), ("int8_overlap", "AlltoAll"), ("int8_overlap", "AllGather")}
    for b in bandwidth:
        assert b["link_busbw_gb_per_s"] > 200, b       # NVLink, measured: not the theoretical 450 GB/s
        assert 40 < b["pct_of_link"] < 100, b
    calls = {(b["variant"], b["op"]): b["collectives"] for b in bandwidth}
    assert calls[("int8", "AlltoAll")] == 5 and calls[("int8_overlap", "AlltoAll")] == 20   # 4 pieces per call


@pytest.mark.slow
def test_without_a_link_calibration_the_share_of_the_link_is_left_empty(built, tmp_path):
    data = page_data(load_run_dir(SAMPLE), calibrations=file_calibrations([tmp_path]))
    ranks = data["ranks"]
    assert not ranks["link_calibrated"]
    assert all(b["pct_of_link"] is None and b["busbw_gb_per_s"] > 100 for b in ranks["bandwidth"])


@pytest.mark.slow
def test_one_straggler_finding_per_variant_and_the_rank_verdict(built):
    ranks = built["page"]["ranks"]
    assert [f["variant"] for f in ranks["findings"]] == list(VARIANTS)       # not the warm-up's
    assert all(f["finding"].startswith("rank ") and "arrived last" in f["finding"] for f in ranks["findings"])
    assert all(s in built["page"]["verdict"] for s in ranks["sentences"])
    assert any(s.startswith("int8_overlap: collective transfer") for s in ranks["sentences"])


@pytest.mark.slow
def test_the_lanes_are_one_iteration_of_every_rank_on_one_clock(built):
    lanes = built["page"]["ranks"]["lanes"]
    assert list(lanes) == list(VARIANTS)
    for v, it in lanes.items():
        assert [r["rank"] for r in it["ranks"]] == [0, 1], v
        assert min(r["start_ns"] for r in it["ranks"]) == 0, v        # relative to the first rank's start
        boxes = {rank: sorted((b for ln in it["lanes"] if ln["rank"] == rank for b in ln["ops"]
                               if b["kind"] == "collective"), key=lambda b: b["start_ns"]) for rank in (0, 1)}
        assert len(boxes[0]) == len(boxes[1]) > 0, v
        for a, b in zip(boxes[0], boxes[1]):
            # one clock: each rank's kernel starts, waits for the last arrival, which is the later start
            last = max(a["start_ns"], b["start_ns"])
            assert a["start_ns"] + a["wait_ns"] == last and b["start_ns"] + b["wait_ns"] == last, v
            assert abs(a["end_ns"] - b["end_ns"]) < 50_000, v          # and the two ranks end it together


@pytest.mark.slow
def test_overlapping_variant_runs_nccl_on_its_own_stream_beside_triton(built):
    lanes = built["page"]["ranks"]["lanes"]
    assert [(ln["rank"], ln["stream_id"]) for ln in lanes["baseline"]["lanes"]] == [(0, 7), (1, 7)]
    assert {b["kind"] for ln in lanes["baseline"]["lanes"] for b in ln["ops"]} == {"memcpy", "collective"}
    overlap = lanes["int8_overlap"]
    for rank in (0, 1):
        mine = [ln for ln in overlap["lanes"] if ln["rank"] == rank]
        assert len(mine) == 2
        kinds = [{b["kind"] for b in ln["ops"]} for ln in mine]
        assert {"compute"} in kinds and {"collective"} in kinds         # one stream each
        compute = next(ln for ln in mine if {b["kind"] for b in ln["ops"]} == {"compute"})["ops"]
        nccl = next(ln for ln in mine if {b["kind"] for b in ln["ops"]} == {"collective"})["ops"]
        assert [b["op"] for b in nccl] == ["AlltoAll"] * 4 + ["AllGather"] * 4
        beside = [(c, k) for c in nccl for k in compute
                  if min(c["end_ns"], k["end_ns"]) > max(c["start_ns"], k["start_ns"])]
        assert beside, rank
        row = next(r for r in overlap["ranks"] if r["rank"] == rank)
        assert row["streams"] == sorted(ln["stream_id"] for ln in mine) and row["hidden_ns"] > 0


@pytest.mark.slow
def test_unmatched_collectives_are_a_page_warning(built):
    data = load_run_dir(SAMPLE)
    t = data.timeline
    last = t[(t["rank"] == 1) & t["nvtx_range"].str.endswith("int8/ncclAllGather")].index[-1]
    data.timeline = t.drop(index=last)
    page = page_data(data, calibrations=file_calibrations([CALIBRATIONS]))
    found = [w["message"] for w in page["warnings"] if w["code"] == "ranks"]
    assert len(found) == 1 and found[0].startswith("variant int8: the ranks launched"), found
    assert found == page["ranks"]["warnings"]


# ------------------------------------------------------------------------------------ the page


@pytest.mark.slow
def test_the_page_has_a_ranks_section_and_a_lane_per_rank(built):
    html = built["multi_html"]
    page = parsed(html)
    assert {"ranks", "rank-figures", "rank-collectives", "ranks-stragglers", "rank-lanes", "timeline"} <= page.ids
    figures = page.rows["rank-figures"]
    assert [(r["data-variant"], r["data-rank"]) for r in figures] == [(v, str(r)) for v in VARIANTS for r in (0, 1)]
    lanes = page.rows["rank-lanes"]
    for v in VARIANTS:
        assert sorted(r["data-rank"] for r in lanes if r["data-variant"] == v) == ["0", "1"]
    assert len(page.rows["rank-collectives"]) == 7
    text = html.read_text()
    assert 'href="#ranks"' in text and "one iteration per variant, a lane per rank" in text
    assert "one call per variant" not in text                 # the one-call strip cannot show ranks
    assert "measured on this link by" in text and "% of link" in text
    for f in built["page"]["ranks"]["findings"]:
        assert f["finding"] in text
    chart = re.findall(r'<a href="(img/[^"]+-rank-timeline\.svg)"', text)        # the zoomable SVG, inline too
    assert len(chart) == 1 and (html.parent / chart[0]).stat().st_size > 10_000
    assert text.count('<svg class="tl-svg"') == 1
    assert "-timeline.svg" not in text.replace("-rank-timeline.svg", "") and "-timeline.png" not in text


@pytest.mark.slow
def test_a_single_rank_page_has_no_ranks_section(built):
    assert "ranks" not in built["db"].page(built["single"])
    html = built["single_html"]
    page, text = parsed(html), built["single_html"].read_text()
    assert "ranks" not in page.ids and "rank-lanes" not in page.ids and "data-rank" not in text
    assert 'href="#ranks"' not in text and "Timeline (nsys), one call per variant" in text
    assert re.search(r'<a href="img/[^"]+-timeline\.svg">', text) and 'class="tl-svg"' in text


@pytest.mark.slow
def test_the_chart_marks_collectives_apart_and_has_a_row_per_rank_and_stream(built):
    fig = rank_timeline_figure(built["page"]["ranks"]["lanes"])
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows.count("rank 0 · stream 7") == 4 and rows.count("rank 1 · stream 17") == 1
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"collective AllReduce (NCCL)", "collective AlltoAll (NCCL)", "collective AllGather (NCCL)",
            "collective ReduceScatter (NCCL)"} <= set(legend)
    assert "_quantize_kernel" in legend and not any(n.startswith("ncclDevKernel") for n in legend)
