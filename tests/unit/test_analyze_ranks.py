"""Per-rank and per-collective analysis (analyze.ranks.figures, analyze.ranks.collectives) on the real 2x H100
exports of ch14.quantized_allreduce (tests/fixtures/multigpu_h100x2/README.md), and the interval
and naming rules on tiny literal inputs."""
from __future__ import annotations

import math
import sqlite3

import pandas as pd
import pytest
from repo_paths import FIXTURES

from aisp_prof.analyze.ranks import collectives as coll
from aisp_prof.analyze.ranks import figures as ranks
from aisp_prof.parse.nsys.sqlite_export import parse_nsys_sqlite
from sample_files import plain_path

JOB = "multigpu_h100x2"
VARIANTS = ("baseline", "fp32_rs_ag", "int8", "int8_overlap")
MIB = 1 << 20
NUMEL = 1 << 26                                   # nsys_child.json sizes: 256 MiB of fp32
INT8_PACKED = NUMEL + 4 * (NUMEL // 1024)         # int8 payload + one fp32 scale per 1024 (the pair)
MESSAGE_BYTES = {"AllReduce": 256 * MIB, "fp32_rs_ag/ReduceScatter": 256 * MIB, "fp32_rs_ag/AllGather": 256 * MIB,
                 "int8/AlltoAll": INT8_PACKED, "int8/AllGather": INT8_PACKED}


def load_job(folder) -> pd.DataFrame:
    """The ranks' kernels on one clock: each rank's own times plus its session start's distance
    from the earliest rank's (TARGET_INFO_SESSION_START_TIME.utcEpochNs)."""
    frames, utc = {}, {}
    for r in (0, 1):
        path = plain_path(folder / f"nsys.rank{r}.sqlite")         # kept gzipped: a plain copy
        with sqlite3.connect(path) as conn:
            utc[r] = conn.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()[0]
        frames[r] = parse_nsys_sqlite(path).kernels.assign(rank=r)
    for r, f in frames.items():
        for c in ("start_ns", "end_ns", "launch_start_ns"):
            f[c] = f[c] + (utc[r] - min(utc.values()))
    return pd.concat(frames.values(), ignore_index=True)


@pytest.fixture(scope="module")
def timeline() -> pd.DataFrame:
    return load_job(FIXTURES / JOB)


@pytest.fixture(scope="module")
def matched(timeline) -> pd.DataFrame:
    return coll.collectives(timeline)


# ---------------------------------------------------------------------- literal rules


def _iv(rows, keys=("k",)):
    return pd.DataFrame(rows, columns=[*keys, "start_ns", "end_ns"])


def test_merge_intervals_joins_overlapping_touching_and_nested_per_key():
    merged = ranks.merge_intervals(_iv([("a", 0, 10), ("a", 5, 15), ("a", 15, 18), ("a", 20, 30), ("a", 22, 25),
                                        ("b", 5, 6), ("b", 0, 3)]), ["k"])
    assert merged.values.tolist() == [["a", 0, 18], ["a", 20, 30], ["b", 0, 3], ["b", 5, 6]]
    assert ranks.covered_ns(_iv([("a", 0, 10), ("a", 2, 4), ("b", 7, 9)]), ["k"]).to_dict() == {"a": 10, "b": 2}


def test_overlap_is_the_intersection_of_the_two_unions():
    a = _iv([("x", 0, 10), ("x", 20, 30), ("y", 0, 5), ("z", 0, 4)])
    b = _iv([("x", 5, 25), ("x", 6, 8), ("y", 5, 9)])
    assert ranks.overlap_ns(a, b, ["k"]).to_dict() == {"x": 10, "y": 0, "z": 0}


def test_collective_names_and_operations():
    names = pd.Series(["ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclKernel_AllReduce_RING_LL_Sum_float",
                       "ncclDevKernel_Reduce_Sum_f32_RING_LL", "ncclDevKernel_SendRecv", "ncclDevKernel_SendRecv",
                       "ncclDevKernel_Frobnicate", "_quantize_kernel"])
    paths = pd.Series(["aisp/p/v/ncclAllReduce", "", "", "aisp/p/int8/ncclAlltoAll", "", "", "aisp/p/int8"])
    assert ranks.is_collective(names).tolist() == [True] * 6 + [False]
    assert ranks.collective_op(names, paths).tolist() == [
        "AllReduce", "AllReduce", "Reduce", "AlltoAll", "SendRecv", "other", None]


def test_variant_of_tool_foreign_and_library_ranges():
    paths = pd.Series(["aisp/ch14.x/int8/ncclAlltoAll", "aisp/ch14.x/int8", "ncclAllReduce", "",
                       "train_step/forward", "train_step/ncclAllReduce", "aisp/only_two"])
    domains = pd.Series(["NCCL", "", "NCCL", "", "", "NCCL", ""])
    assert ranks.variant_of(paths, domains).tolist() == ["int8", "int8", None, None, "train_step", "train_step", "aisp"]
    assert ranks.variant_of(pd.Series(["ncclAllReduce"])).tolist() == [None]     # no domain: NCCL's by name


def _kernel(rank, name, start, end, launch, path, stream=7):
    return {"rank": rank, "short_name": name, "start_ns": start, "end_ns": end, "launch_start_ns": launch,
            "nvtx_range": path, "nvtx_domain": "NCCL" if "nccl" in path else "", "stream_id": stream}


def test_iterations_are_runs_of_launches_and_overlap_needs_two_streams():
    a, b, k = "aisp/p/a", "aisp/p/b", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    rows = [_kernel(0, "warm", 0, 5, 0, ""),
            _kernel(0, "q", 10, 20, 10, a), _kernel(0, k, 12, 22, 11, a + "/ncclAllReduce", 17),   # 8 of 10 hidden
            _kernel(0, "q", 50, 60, 50, b),
            _kernel(0, "q", 70, 80, 70, a), _kernel(0, k, 80, 100, 71, a + "/ncclAllReduce"),      # serial
            _kernel(0, "q", 110, 120, 110, b)]
    t = pd.DataFrame(rows)
    assert ranks.iterations(t).fillna(-1).tolist() == [-1, 0, 0, 0, 1, 1, 1]
    s = ranks.rank_summary(t).set_index("variant")
    assert s.loc["a", "iterations"] == 2 and s.loc["b", "iterations"] == 2
    assert s.loc["a", "overlap_ns"] == 4 and s.loc["a", "hidden_comm_pct"] == 40      # medians of 8|0, 80%|0%
    assert math.isnan(s.loc["b", "hidden_comm_pct"]) and s.loc["b", "collective_ns"] == 0
    assert s.attrs["unranged_kernels"] == {0: 1}


def test_busbw_follows_nccl_tests_factors():
    per = pd.DataFrame({"variant": ["v", "v", "w"], "collective": [0, 1, 0], "iteration": [0, 0, 0],
                        "op": ["AllReduce", "AllGather", "AllGather"], "ranks": [4, 4, 4],
                        "collective_ns": [1_000_000, 1_000_000, 1_000_000]})
    bw = coll.bus_bandwidth(per, {"AllReduce": 10**9, "AllGather": 10**9, "w/AllGather": 5 * 10**8})
    assert bw["algbw_gb_per_s"].tolist() == [1000, 1000, 500]                      # S / t
    assert bw["busbw_gb_per_s"].tolist() == [1500, 750, 375]                       # 2(n-1)/n, (n-1)/n
    assert coll.bus_bandwidth(per, world_size=2)["busbw_gb_per_s"].isna().all()


# ---------------------------------------------------------------------- the real job


@pytest.mark.slow
def test_five_iterations_of_every_variant_on_every_rank(timeline):
    s = ranks.rank_summary(timeline)
    assert sorted(zip(s["variant"], s["rank"])) == [(v, r) for v in VARIANTS for r in (0, 1)]
    assert (s["iterations"] == 5).all()
    # kernels per call, from the pair's docstring: 1 all-reduce; RS + AG; 3 Triton + 2 NCCL; 4 pieces of that
    assert s.set_index("variant")["kernel_count"].groupby(level=0).max().to_dict() == {
        "baseline": 1, "fp32_rs_ag": 2, "int8": 5, "int8_overlap": 20}
    # outside the ranges: make_inputs' one random kernel and the 3 warm-up calls of each variant
    assert s.attrs["unranged_kernels"] == {0: 1 + 3 * (1 + 2 + 5 + 20), 1: 1 + 3 * (1 + 2 + 5 + 20)}


def test_each_variant_launches_five_nccl_kernels_per_collective_kind_per_rank(timeline):
    k = ranks.labelled(timeline)
    n = k[k["collective"] & k["variant"].notna()].groupby(["variant", "op", "rank"]).size().unstack()
    assert n.to_dict("index") == {
        ("baseline", "AllReduce"): {0: 5, 1: 5}, ("fp32_rs_ag", "AllGather"): {0: 5, 1: 5},
        ("fp32_rs_ag", "ReduceScatter"): {0: 5, 1: 5}, ("int8", "AllGather"): {0: 5, 1: 5},
        ("int8", "AlltoAll"): {0: 5, 1: 5}, ("int8_overlap", "AllGather"): {0: 20, 1: 20},
        ("int8_overlap", "AlltoAll"): {0: 20, 1: 20}}


def test_one_stream_hides_nothing_and_int8_overlap_runs_nccl_beside_triton(timeline):
    k = ranks.labelled(timeline)
    streams = k[k["variant"].notna()].groupby(["variant", "collective"])["stream_id"].agg(lambda s: sorted(set(s)))
    assert streams.to_dict() == {("baseline", True): [7], ("fp32_rs_ag", True): [7], ("int8", False): [7],
                                 ("int8", True): [7], ("int8_overlap", False): [7], ("int8_overlap", True): [17]}
    s = ranks.rank_summary(timeline).set_index(["variant", "rank"])
    assert (s.loc[["baseline", "fp32_rs_ag", "int8"], "overlap_ns"] == 0).all()
    assert s.loc[("int8_overlap", 0), "overlap_ns"] > 0
    assert 0 < s.loc[("int8_overlap", 0), "hidden_comm_pct"] < 100
    assert (s["gpu_busy_ns"] <= s["span_ns"]).all() and (s["idle_ns"] >= 0).all()


def test_int8_moves_its_sum_in_under_half_the_fp32_nccl_time(timeline, matched):
    s = ranks.rank_summary(timeline).set_index(["variant", "rank"])["collective_ns"]
    for r in (0, 1):
        assert s[("int8", r)] < 0.5 * s[("baseline", r)]
    # after the last rank arrived (no waiting), per iteration, int8_overlap too
    per = matched.drop_duplicates(["variant", "collective"]).groupby(["variant", "iteration"])["collective_ns"].sum()
    medians = per.groupby(level=0).median()
    assert medians["int8"] < 0.5 * medians["baseline"] and medians["int8_overlap"] < 0.5 * medians["baseline"]


def test_matched_collectives_end_together_on_both_ranks(matched):
    assert matched.attrs["warnings"] == []
    ends = matched.assign(variant=matched["variant"].fillna("-")).pivot(
        index=["variant", "collective"], columns="rank", values="end_ns")
    assert len(ends) == 5 * (1 + 2 + 2 + 8) + 3 * 13          # the ranged ones + the warm-up's
    assert ((ends[0] - ends[1]).abs() < 50_000).all()          # an off-by-one match would be ~ms apart
    assert (matched["collective_ns"] > 0).all() and (matched["collective_ns"] <= matched["duration_ns"]).all()


def test_the_first_collective_waited_for_rank_1(matched):
    first = matched[matched["variant"].isna() & (matched["collective"] == 0)].set_index("rank")
    assert (first["op"] == "AllReduce").all() and (first["last_rank"] == 1).all()
    assert 13.8e6 < first.loc[0, "wait_ns"] < 14.0e6 and first.loc[1, "wait_ns"] == 0
    assert first.loc[0, "collective_ns"] < 1e6                   # the transfer itself: under a millisecond


def test_stragglers_name_rank_1_and_its_late_start(matched):
    s = coll.stragglers(matched)
    warm = s[s["variant"].isna()].set_index("rank")
    assert warm.loc[1, "times_last"] > warm.loc[0, "times_last"]
    assert warm.loc[1, "wait_caused_ns"] > 13.8e6 and warm.loc[0, "waited_ns"] > 13.8e6
    assert warm.loc[1, "finding"].startswith("rank 1 arrived last") and "13.9 ms late at the first" in warm.loc[1, "finding"]
    counts = s.groupby("variant")["times_last"].sum()
    assert counts.to_dict() == {"baseline": 5, "fp32_rs_ag": 10, "int8": 10, "int8_overlap": 40}


def test_fp32_all_reduce_bus_bandwidth_is_an_nvlink_figure(matched):
    bw = coll.bus_bandwidth(matched, MESSAGE_BYTES)
    base = bw[bw["variant"] == "baseline"]
    assert len(base) == 5 and (base["busbw_factor"] == 1.0).all()           # 2(n-1)/n at n = 2
    assert 100 < base["busbw_gb_per_s"].median() < 400
    unknown = bw[bw["variant"] == "int8_overlap"]                           # no size given for it
    assert unknown["busbw_gb_per_s"].isna().all() and unknown["note"].str.contains("message size").all()


def test_ranks_with_different_counts_match_the_common_prefix(timeline):
    k = ranks.labelled(timeline)
    last = k[(k["rank"] == 1) & (k["variant"] == "baseline") & k["collective"]]["start_ns"].idxmax()
    m = coll.collectives(timeline.drop(index=last))
    assert len(m[m["variant"] == "baseline"]) == 2 * 4
    assert len(m.attrs["warnings"]) == 1 and "variant baseline" in m.attrs["warnings"][0]
