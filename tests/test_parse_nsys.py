"""Tests for aisp_prof.parse.nsys_sqlite against the real H200 nsys exports in tests/fixtures/h200.

Golden numbers were read from the fixtures with sqlite3 (see each test); where cheap, the test
also recomputes them from the file with plain SQL so a regenerated fixture fails loudly.
"""
from __future__ import annotations

import hashlib
import random
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from aisp_prof.errors import ExportParseError
from aisp_prof.parse.nsys_sqlite import (
    KERNEL_COLUMNS,
    RANGE_COLUMNS,
    NsysParse,
    _attribute,
    _launch_queries,
    _paths_at,
    parse_nsys_sqlite,
)

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
L2NORM = FIXTURES / "l2norm_pair_nsys.sqlite"
PROBE = FIXTURES / "probe_nested_graph_nsys.sqlite"


@pytest.fixture(scope="module")
def l2norm() -> NsysParse:
    return parse_nsys_sqlite(L2NORM)


@pytest.fixture(scope="module")
def probe() -> NsysParse:
    return parse_nsys_sqlite(PROBE)


def _sql(path: Path, sql: str) -> list[tuple]:
    """Independent look at the fixture, bypassing the parser."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchall()


def _in_range(parse: NsysParse, path: str) -> pd.DataFrame:
    return parse.kernels.loc[parse.kernels["nvtx_range"] == path]


def _range_row(parse: NsysParse, path: str) -> pd.Series:
    rows = parse.ranges.loc[parse.ranges["range"] == path]
    assert len(rows) == 1, parse.ranges
    return rows.iloc[0]


# ------------------------------------------------------------------------------------ l2norm pair


def test_columns(l2norm: NsysParse) -> None:
    assert tuple(l2norm.kernels.columns) == KERNEL_COLUMNS
    assert tuple(l2norm.ranges.columns) == RANGE_COLUMNS


def test_l2norm_kernel_counts_per_range(l2norm: NsysParse) -> None:
    # 28 kernels: 22 warm-up/setup kernels launched outside any range, 5 eager kernels in
    # "baseline" (mul, sum reduce, add, sqrt, div) and 1 fused triton kernel in "optimized".
    counts = l2norm.kernels["nvtx_range"].value_counts().to_dict()
    assert counts == {"": 22, "baseline": 5, "optimized": 1}
    optimized = _in_range(l2norm, "optimized")
    assert optimized["short_name"].tolist() == ["triton_red_fused_add_div_mul_sqrt_sum_0"]
    assert optimized["launch_api"].tolist() == ["cuLaunchKernel"]
    assert _in_range(l2norm, "baseline")["correlation_id"].tolist() == [441, 456, 467, 478, 489]
    assert set(_in_range(l2norm, "baseline")["launch_api"]) == {"cudaLaunchKernel"}   # _v7000 stripped


def test_l2norm_warmup_kernels_have_no_range(l2norm: NsysParse) -> None:
    outside = _in_range(l2norm, "")
    # the three torch.compile warm-up runs launched the same triton kernel outside any range
    assert (outside["short_name"] == "triton_red_fused_add_div_mul_sqrt_sum_0").sum() == 3
    assert (outside["nvtx_domain"] == "").all()


def test_l2norm_gpu_time_is_sum_of_kernel_durations(l2norm: NsysParse) -> None:
    assert _range_row(l2norm, "baseline")["gpu_time_ns"] == 207744
    assert _range_row(l2norm, "optimized")["gpu_time_ns"] == 62239
    by_sql = dict(_sql(L2NORM, """
        SELECT n.text, SUM(k."end" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
        JOIN NVTX_EVENTS n ON n.eventType = 59 AND n.globalTid = r.globalTid
             AND r.start BETWEEN n.start AND n."end"
        GROUP BY n.text"""))
    assert by_sql == {"baseline": 207744, "optimized": 62239}
    for row in l2norm.kernels.itertuples():
        assert row.duration_ns == row.end_ns - row.start_ns


def test_l2norm_range_stats(l2norm: NsysParse) -> None:
    base = _range_row(l2norm, "baseline")
    assert base["kernel_count"] == 5
    assert base["first_start_ns"] == 10634404121 and base["last_end_ns"] == 10634616729
    assert base["span_ns"] == 212608
    assert base["gap_total_ns"] == 4864 and base["gap_max_ns"] == 1312
    assert base["range_wall_ns"] == 10634483053 - 10634375885
    assert base["occurrences"] == 1
    opt = _range_row(l2norm, "optimized")
    assert (opt["kernel_count"], opt["gap_total_ns"], opt["span_ns"]) == (1, 0, 62239)


def test_attribution_is_by_launch_not_by_kernel_time(l2norm: NsysParse) -> None:
    """Three baseline kernels run after "baseline" was popped, while "optimized" is open."""
    ranges = dict(((name, (start, end)) for name, start, end in _sql(
        L2NORM, 'SELECT text, start, "end" FROM NVTX_EVENTS WHERE eventType = 59')))
    base_end = ranges["baseline"][1]
    opt_start, opt_end = ranges["optimized"]
    late = _in_range(l2norm, "baseline").query("start_ns > @base_end")
    assert late["correlation_id"].tolist() == [467, 478, 489]
    # naive overlap would have put them into "optimized"; their launches were inside "baseline"
    assert ((late["start_ns"] >= opt_start) & (late["start_ns"] <= opt_end)).all()
    assert (late["launch_start_ns"] <= base_end).all()
    # and the triton kernel runs entirely after "optimized" closed
    assert (_in_range(l2norm, "optimized")["start_ns"] > opt_end).all()


def test_gpu_info(l2norm: NsysParse) -> None:
    gpu = l2norm.gpu
    assert gpu["gpu_name"] == "NVIDIA H200"
    assert gpu["sm_count"] == 132
    assert gpu["compute_capability"] == "9.0"
    assert gpu["sm_clock_hz"] == 1980000000
    assert gpu["memory_total_bytes"] == 150109880320
    assert gpu["l2_cache_bytes"] == 62914560
    assert gpu["device_id"] == 0
    assert gpu["driver_version"] == "580.159.04"          # README: driver 580.159.04
    assert gpu["cuda_driver_version"] == "13.0"


# ------------------------------------------------------------------------------ probe: nesting


def test_probe_nested_ranges(probe: NsysParse) -> None:
    # torch.sqrt(x.abs()) launches two kernels: abs, then sqrt
    base = _in_range(probe, "aisp/pairA/baseline")["kernel"].tolist()
    assert len(base) == 2
    assert "AbsFunctor" in base[0] and "sqrt_kernel_cuda" in base[1]
    opt = _in_range(probe, "aisp/pairA/optimized")["kernel"].tolist()
    assert len(opt) == 1 and "exp_kernel_cuda" in opt[0]
    # intermediate levels hold no kernels of their own
    assert not {"aisp", "aisp/pairA", "aisp/pairG"} & set(probe.kernels["nvtx_range"])


def test_probe_flat_name_with_slashes(probe: NsysParse) -> None:
    flat = _in_range(probe, "aisp/pairB/baseline")
    assert len(flat) == 1 and "sin_kernel_cuda" in flat.iloc[0]["kernel"]
    assert flat.iloc[0]["nvtx_domain"] == ""


def test_probe_domain_range(probe: NsysParse) -> None:
    dom = _in_range(probe, "pairC/baseline")
    assert len(dom) == 1 and "cos_kernel_cuda" in dom.iloc[0]["kernel"]
    assert dom.iloc[0]["nvtx_domain"] == "aisp"
    assert _range_row(probe, "pairC/baseline")["nvtx_domain"] == "aisp"
    others = probe.kernels.loc[probe.kernels["nvtx_range"] != "pairC/baseline", "nvtx_domain"]
    assert (others == "").all()


def test_probe_graph_kernels(probe: NsysParse) -> None:
    graph = _in_range(probe, "aisp/pairG/graph")
    assert len(graph) == 2
    assert graph["graph_node_id"].notna().all()
    assert graph["graph_node_id"].tolist() == [8589934592, 8589934593]
    # per-node kernel records carry the correlationId of the one cudaGraphLaunch call
    assert graph["correlation_id"].tolist() == [871, 871]
    assert set(graph["launch_api"]) == {"cudaGraphLaunch"}
    assert "tanh_kernel_cuda" in graph.iloc[0]["kernel"] and "sigmoid_kernel_cuda" in graph.iloc[1]["kernel"]
    eager = probe.kernels.loc[probe.kernels["launch_api"] != "cudaGraphLaunch"]
    assert eager["graph_node_id"].isna().all()


def test_probe_graph_kernel_runs_after_all_its_ranges_closed(probe: NsysParse) -> None:
    (outer_end,) = _sql(PROBE, """
        SELECT MAX(n."end") FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId
        WHERE n.eventType = 59 AND s.value = 'aisp' AND n.start > 4040000000""")[0]
    graph = _in_range(probe, "aisp/pairG/graph")
    sigmoid = graph.loc[graph["kernel"].str.contains("sigmoid_kernel_cuda")].iloc[0]
    assert sigmoid["start_ns"] > outer_end          # no overlap at all with aisp > pairG > graph
    assert sigmoid["launch_start_ns"] < outer_end


def test_probe_range_table(probe: NsysParse) -> None:
    assert set(probe.ranges["range"]) == {
        "aisp/pairA/baseline", "aisp/pairA/optimized", "aisp/pairB/baseline", "pairC/baseline",
        "aisp/pairG/graph",
    }
    assert (probe.ranges["gap_total_ns"] >= 0).all() and (probe.ranges["gap_max_ns"] >= 0).all()
    assert (probe.ranges["gap_total_ns"] <= probe.ranges["span_ns"]).all()
    graph = _range_row(probe, "aisp/pairG/graph")
    assert (graph["kernel_count"], graph["gpu_time_ns"], graph["span_ns"]) == (2, 5728 + 6240, 12224)
    assert (graph["gap_total_ns"], graph["gap_max_ns"]) == (256, 256)
    assert graph["range_wall_ns"] == 4048240456 - 4048200056
    assert (probe.ranges["occurrences"] == 1).all()


def test_probe_process_and_thread_ids(probe: NsysParse) -> None:
    # PROCESSES says python3 is pid 1090 with globalPid 281493263876096 == 1090 << 24 | hw bits
    ((pid, global_pid),) = _sql(PROBE, "SELECT pid, globalPid FROM PROCESSES WHERE name = 'python3'")
    assert (global_pid >> 24) & 0xFFFFFF == pid == 1090
    assert set(probe.kernels["process_id"]) == {1090}
    assert set(probe.kernels["thread_id"]) == {1090}        # the main thread launched everything


# --------------------------------------------------------------------- the sweep vs brute force


def _random_stacks(seed: int, stacks: tuple[tuple[int, int], ...], zero_length: bool = True) -> pd.DataFrame:
    """Random push/pop sequences per (thread, domain) stack, with many same-ns ties.

    `own_path` is the stack as the generator saw it at each push: the oracle for range paths.
    Without `zero_length`, no range is pushed and popped in the same ns (timestamps alone cannot
    tell whether such a range was a child or a sibling of another range touching that ns).
    """
    rng = random.Random(seed)
    rows: list[dict] = []
    for tid, domain_id in stacks:
        t, stack = 0, []
        for _ in range(60):
            t += rng.randint(0, 2)
            if stack and rng.random() < 0.45:
                if not zero_length and rows[stack[-1]]["start"] == t:
                    t += 1
                rows[stack.pop()]["end"] = t
            else:
                stack.append(len(rows))
                rows.append({"global_tid": tid, "domain_id": domain_id, "start": t, "end": 10**9,
                             "name": f"r{len(rows)}", "domain": f"d{domain_id}",
                             "own_path": "/".join(f"r{i}" for i in stack)})
    df = pd.DataFrame(rows)
    df["range_id"] = range(len(df))
    return df


def _brute_force_path(ranges: list[dict], tid: int, t: int) -> tuple[str, str]:
    """The documented rule, one range at a time: start <= t < end, or a zero-length range at t."""
    inside = [
        r for r in ranges
        if r["global_tid"] == tid and r["start"] <= t and (t < r["end"] or r["start"] == r["end"] == t)
    ]
    inside.sort(key=lambda r: (r["start"], -r["end"], r["range_id"]))
    if not inside:
        return "", ""
    return "/".join(r["name"] for r in inside), inside[-1]["domain"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sweep_matches_brute_force(seed: int) -> None:
    """Two domains per thread: their stacks interleave in time but each nests on its own."""
    nvtx = _random_stacks(seed, ((11, 0), (11, 1), (12, 0), (12, 1)))
    tids, times = [11] * 100 + [12] * 100, list(range(100)) * 2
    got = _paths_at(nvtx, _launch_queries(pd.Series(tids), pd.Series(times))).set_index("query_id")
    records = nvtx.to_dict("records")
    for query_id, (tid, t) in enumerate(zip(tids, times)):
        actual = tuple(got.loc[query_id, ["nvtx_range", "nvtx_domain"]]) if query_id in got.index else ("", "")
        assert actual == _brute_force_path(records, tid, t), (tid, t)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_range_own_paths_match_the_pushing_stack(seed: int) -> None:
    """Even with a pop and a push, or nested pushes, in one ns a range's path is its push-time stack."""
    nvtx = _random_stacks(seed, ((11, 0), (12, 1)), zero_length=False)
    no_kernels = pd.DataFrame({"global_tid": pd.Series(dtype="Int64"), "launch_start_ns": pd.Series(dtype="Int64")})
    _, attributed = _attribute(no_kernels, nvtx.drop(columns="own_path"))
    assert attributed["nvtx_range"].tolist() == nvtx["own_path"].tolist()
    assert attributed["nvtx_domain"].tolist() == nvtx["domain"].tolist()


# ------------------------------------------------------------------------------------ bad input


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ExportParseError, match="no such nsys export"):
        parse_nsys_sqlite(tmp_path / "nope.sqlite")


def test_not_sqlite(tmp_path: Path) -> None:
    bad = tmp_path / "report.sqlite"
    bad.write_text("this is not a database\n" * 20)
    with pytest.raises(ExportParseError, match="not an SQLite file"):
        parse_nsys_sqlite(bad)


def test_nsys_rep_gets_export_hint(tmp_path: Path) -> None:
    rep = tmp_path / "report.nsys-rep"
    rep.write_bytes(b"\x00" * 200)
    with pytest.raises(ExportParseError, match="nsys export --type sqlite"):
        parse_nsys_sqlite(rep)


def test_truncated_at_half(tmp_path: Path) -> None:
    cut = tmp_path / "cut.sqlite"
    data = PROBE.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ExportParseError, match="truncated") as info:
        parse_nsys_sqlite(cut)
    assert str(cut) in str(info.value) and "\n" not in str(info.value)


def test_truncated_without_size_in_header(tmp_path: Path) -> None:
    """When the header's page count is stale, sqlite opens the file and fails on the query."""
    data = bytearray(PROBE.read_bytes()[: len(PROBE.read_bytes()) // 2])
    data[92:96] = (int.from_bytes(data[24:28], "big") + 1).to_bytes(4, "big")   # "count is stale"
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(bytes(data))
    with pytest.raises(ExportParseError, match="unreadable SQLite export"):
        parse_nsys_sqlite(cut)


def test_no_kernel_table(tmp_path: Path) -> None:
    copy = tmp_path / "nokernels.sqlite"
    shutil.copy(PROBE, copy)
    with sqlite3.connect(copy) as conn:
        conn.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    with pytest.raises(ExportParseError, match=r"no CUDA kernels recorded; was nsys run with --trace=cuda\?"):
        parse_nsys_sqlite(copy)


def test_sqlite_that_is_not_an_nsys_export(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(ExportParseError, match="not an Nsight Systems export"):
        parse_nsys_sqlite(other)


def test_no_nvtx_trace_gives_empty_ranges(tmp_path: Path) -> None:
    copy = tmp_path / "nonvtx.sqlite"
    shutil.copy(PROBE, copy)
    with sqlite3.connect(copy) as conn:
        conn.execute("DROP TABLE NVTX_EVENTS")
    parse = parse_nsys_sqlite(copy)
    assert len(parse.kernels) == 11
    assert (parse.kernels["nvtx_range"] == "").all()
    assert parse.ranges.empty and tuple(parse.ranges.columns) == RANGE_COLUMNS


def test_parsing_never_modifies_the_export(tmp_path: Path) -> None:
    copy = tmp_path / "ro.sqlite"
    shutil.copy(PROBE, copy)
    before = hashlib.sha256(copy.read_bytes()).hexdigest()
    copy.chmod(0o444)
    parse_nsys_sqlite(copy)
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ro.sqlite"]
