"""The first 2x H200 run of ch14.quantized_allreduce timed in the three kinds (gpu, latency, steady; issues 28
and 34): profiles/samples_h200x2_ch14/20261129T180029Z-ch14.quantized_allreduce-7cd8 (README there: 2026-11-29,
git ff384df, boot 66a2991a). Read on the CPU with today's code and the host's NVLink calibration
(profiles/calibration/2x_h200.json). Every number here was read from that run: its `aisp-prof run --json` and
`aisp-prof ranks --json` on the GPU machine (the ranks numbers below are theirs, to the digit)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES

from aisp_prof.cli import cli

RUN_ID = "20261129T180029Z-ch14.quantized_allreduce-7cd8"
RUN_DIR = PROFILES / "samples_h200x2_ch14" / RUN_ID
OLD_RUN = PROFILES / "samples_h200x2_ch14" / "20261126T231409Z-ch14.quantized_allreduce-3c06"
VARIANTS = ["baseline", "fp32_rs_ag", "int8", "int8_overlap"]


@pytest.fixture(scope="module")
def db(sample_dbs):
    return str(sample_dbs.original(RUN_DIR))


@pytest.fixture(scope="module")
def summary(db) -> dict:
    r = CliRunner().invoke(cli, ["summary", RUN_ID, "--db", db, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _rows(summary: dict) -> dict[str, dict]:
    return {r["variant"]: r for r in summary["summary"]}


def test_int8_is_the_headline_by_steady_time_and_every_variant_is_correct(summary):
    """int8: 2.00x over baseline by steady time per call, 1.023 ms -> 511.8 us; both ranks passed the float64
    check for every variant; each row carries the host's time to issue one call (new in this run)."""
    h = summary["headline"]
    assert h["best"] == "int8" and h["speedup_timer"] == "steady" and h["correct"] and not h["withheld"]
    assert h["speedup"] == pytest.approx(2.00, abs=0.005)
    assert h["speedup_baseline_time_ns"] == pytest.approx(1023328, abs=1)
    assert h["speedup_time_ns"] == pytest.approx(511824, abs=1)
    assert h["text"] == "int8: 2.00x over baseline (steady time per call), 1.023 ms -> 511.8 us per call"
    rows = _rows(summary)
    assert list(rows) == VARIANTS
    assert all(r["correct"] is True for r in rows.values())
    assert all(r["speedup_timer"] == "steady" for r in rows.values())
    issue = {v: rows[v]["steady_issue_median_ns"] for v in VARIANTS}
    # each call's slowest host (the largest of its ranks' issue times): the host that paces the collective
    assert issue == {"baseline": 81605.0, "fp32_rs_ag": 87476.0, "int8": 228371.0, "int8_overlap": 882161.0}


def test_int8_overlap_is_host_bound_against_its_nsys_gpu_time(summary):
    """A 2-rank run's gpu samples are unheld (they carry the host's pace: int8_overlap 1.105 ms by them), so its
    time class is judged against nsys GPU time, 685.7 us (the sum of its kernels' times per call on rank 0),
    and the host_bound words quote that time, not the events' (fixed in 9c58036). int8 is GPU-bound."""
    rows = _rows(summary)
    ov, int8 = rows["int8_overlap"], rows["int8"]
    assert ov["time_class"] == "host_bound" and ov["gpu_time_source"] == "nsys"
    assert ov["gpu_time_ns"] == pytest.approx(685726.8) and ov["steady_median_ns"] == pytest.approx(907840, abs=1)
    assert ov["gpu_events_median_ns"] > 1.1e6            # the unheld events the words used to quote
    assert int8["time_class"] == "gpu_bound"
    assert {v: rows[v]["time_class"] for v in ("baseline", "fp32_rs_ag")} == {"baseline": "gpu_bound",
                                                                              "fp32_rs_ag": "gpu_bound"}
    [finding] = [f for f in summary["findings"] if f["rule"] == "host_bound"]
    assert finding["variant"] == "int8_overlap" and finding["severity"] == "warning"
    assert finding["message"].startswith("int8_overlap: back to back a call takes 907.8 us, the GPU works 685.7 us "
                                         "of it: the host's work per call (Python, launches) is longer than the GPU's")


def test_bench_agree_reads_this_run_against_the_2x_h200_evidence(sample_dbs):
    """With both shipped 2x H200 runs stored, `bench agree --card 2x_h200` reads the newest (this one) against
    kernels/ch14/expectations_2x_h200.json: int8 2.00x (1.996-2.003) by steady time, the gate's 2.00x +-1% by
    steady time too: AGREE. int8_overlap, 1.13x (1.07-1.22), AGREEs only through the 81% margin its
    bimodal recording earned (0.956x); fp32_rs_ag 0.921x against 0.925x +-1%: AGREE. Exit 0."""
    path = str(sample_dbs.original(OLD_RUN, RUN_DIR))
    r = CliRunner().invoke(cli, ["bench", "agree", "--db", path, "--card", "2x_h200", "--json"])
    assert r.exit_code == 0, r.output
    found = {a["variant"]: a for a in json.loads(r.stdout)}
    assert set(found) == {"fp32_rs_ag", "int8", "int8_overlap"}
    assert {a["run_id"] for a in found.values()} == {RUN_ID}
    int8, ov = found["int8"], found["int8_overlap"]
    assert int8["verdict"] == "AGREE" and int8["run_timer"] == int8["gate_timer"] == "steady"
    assert int8["run_speedup"] == pytest.approx(2.00, abs=0.005) and int8["gate_margin"] == 0.01
    assert int8["gate_speedup_low"] < int8["run_speedup"] < int8["gate_speedup_high"]
    assert ov["verdict"] == "AGREE" and ov["run_timer"] == ov["gate_timer"] == "steady"
    assert ov["run_speedup"] == pytest.approx(1.127, abs=0.001)
    assert ov["gate_speedup"] == pytest.approx(0.956, abs=0.001)
    assert ov["gate_margin"] > 0.8 and ov["run_speedup_low"] < ov["gate_speedup_high"]
    assert ov["run_speedup_low"] > ov["gate_speedup"] * 1.05       # it agrees by the margin, not by the ratio
    assert found["fp32_rs_ag"]["verdict"] == "AGREE"
    assert not any(a["reasons"] or a["tags"] for a in found.values())


def test_ranks_read_as_on_the_gpu_machine(db):
    """`aisp-prof ranks --json` of it, as the GPU machine printed it (/tmp/x2/call5 of the visit): int8_overlap
    hides 16.7% / 19.7% of its communication behind compute on rank 0 / 1 (int8 none), the baseline's
    all-reduce moves at 94.2% of the calibrated link's bus bandwidth, int8 puts 0.25x the baseline's bytes
    on the wire in 0.30x its transfer time."""
    r = CliRunner().invoke(cli, ["ranks", RUN_ID, "--db", db, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [x["matched_collectives"] for x in out["ranks"]] == [105, 105]
    per = {(x["variant"], x["rank"]): x for x in out["per_rank"]}
    assert per[("int8_overlap", 0)]["hidden_comm_pct"] == pytest.approx(16.685050371350833)
    assert per[("int8_overlap", 1)]["hidden_comm_pct"] == pytest.approx(19.715002009020786)
    assert per[("int8_overlap", 0)]["gpu_busy_ns"] == 606878.0
    assert per[("int8", 0)]["hidden_comm_pct"] == per[("int8", 1)]["hidden_comm_pct"] == 0.0
    bw = {(x["variant"], x["op"]): x for x in out["bandwidth"]}
    allreduce = bw[("baseline", "AllReduce")]
    assert allreduce["busbw_gb_per_s"] == pytest.approx(306.6368934611808)
    assert allreduce["link_busbw_gb_per_s"] == pytest.approx(325.4339052160374)      # profiles/calibration/2x_h200.json
    assert allreduce["pct_of_link"] == pytest.approx(94.22401555167453)
    wire = {x["variant"]: x for x in out["wire"]}
    assert wire["int8"]["bytes_vs_baseline"] == 0.2509765625 and wire["int8"]["wire_bytes_per_call"] == 67371008.0
    assert wire["int8"]["time_vs_baseline"] == pytest.approx(0.30291472188143265)
    assert wire["baseline"]["transfer_ns_per_call"] == 875418.0
    assert out["warnings"] == []
