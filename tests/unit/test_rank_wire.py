"""Predicted wire bytes against the measured transfer (analyze.ranks.wire), on the real 2-rank runs of
ch14.quantized_allreduce (2x H100 and 2x H200, each host's link calibrated: profiles/calibration/2x_*.json): each rank's bytes
per call are 2(W-1)/W of the payload, int8's 0.251x fp32's at any W, and the 2-rank transfers,
read at 4 ranks, predict 1.5x the payload per rank."""
from __future__ import annotations

import pytest
from repo_paths import ROOT

from aisp_prof.analyze.ranks.report import rank_sentences, transfer_per_call_ns
from aisp_prof.analyze.ranks.wire import wire_table
from aisp_prof.api import open_db

RUNS = {card: next(p for p in sorted((ROOT / "profiles" / f"samples_{card}_ch14").glob("*")) if (p / "run.json").exists())
        for card in ("h100x2", "h200x2")}
N = 1 << 26
PACKED = N + 4 * (N // 1024)


@pytest.fixture(scope="module")
def opened(sample_dbs, tmp_path_factory):
    db = open_db(sample_dbs.copy(tmp_path_factory.mktemp("wire") / "a.db", *RUNS.values()))
    return {card: db.open(run.name) for card, run in RUNS.items()}


@pytest.mark.parametrize("card", ["h100x2", "h200x2"])
def test_two_ranks_move_the_payload_once_and_int8_a_quarter(opened, card):
    wire = opened[card].ranks.wire.set_index("variant")
    assert wire["world_size"].tolist() == [2] * 4
    assert wire.loc["baseline", "wire_bytes_per_call"] == 4 * N                    # 2 (W-1)/W x 4N at W = 2
    assert wire.loc["int8", "wire_bytes_per_call"] == wire.loc["int8_overlap", "wire_bytes_per_call"] == PACKED
    assert wire.loc["int8", "bytes_vs_baseline"] == pytest.approx(PACKED / (4 * N))
    assert 0.25 < wire.loc["int8", "time_vs_baseline"] < 0.4       # measured: int8's transfer 2.5-4x shorter


def test_the_link_turns_the_time_into_bytes_where_it_was_calibrated(opened):
    for card in ("h100x2", "h200x2"):
        wire = opened[card].ranks.wire.set_index("variant")
        assert 0.9 < wire.loc["baseline", "implied_vs_predicted"] < 1.3        # the all-reduce drives the link
    # 2x H200 (calibrated 2026-11-29, AllReduce 325 GB/s): the 2026-11-26 run's all-reduce moved 1.07x its bytes
    h200 = opened["h200x2"].ranks.wire.set_index("variant")
    assert h200.loc["baseline", "implied_vs_predicted"] == pytest.approx(287.3e6 / (4 * N), rel=0.01)
    sentences = [s for s in rank_sentences(opened["h100x2"].ranks) if s.startswith("int8:") and "wire" in s]
    assert sentences and "fewer bytes than baseline" in sentences[0] and "at the link's measured" in sentences[0]


def test_four_ranks_predict_one_and_a_half_payloads_per_rank(opened):
    report = opened["h200x2"].ranks
    iterations = report.per_rank[report.per_rank["rank"] == 0].set_index("variant")["iterations"].to_dict()
    wire = wire_table(report.bandwidth, iterations, transfer_per_call_ns(report), 4).set_index("variant")
    assert wire.loc["baseline", "wire_bytes_per_call"] == 1.5 * 4 * N                 # 2 (4-1)/4
    assert wire.loc["int8", "bytes_vs_baseline"] == pytest.approx(PACKED / (4 * N))  # the ratio keeps
