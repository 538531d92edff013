"""Import -> store -> query round trips and the CLI's error paths, on real exports, no GPU."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from repo_paths import FIXTURES, ROOT
from click.testing import CliRunner

from aisp_prof.store import db as store
from aisp_prof.cli import cli

H200 = FIXTURES / "h200"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_import_ncu_csv_then_kernels_json(tmp_path):
    db = str(tmp_path / "a.db")
    res = invoke("import", str(H200 / "probe_curated_raw_base.csv"), "--db", db, "--label", "probe")
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip()
    res = invoke("kernels", run_id, "--db", db, "--json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["nvtx_range"] for r in rows] == ["aisp/pairA/baseline", "aisp/pairA/baseline",
                                               "aisp/pairA/optimized", "aisp/pairG/graph", "aisp/pairG/graph"]
    for r in rows:
        assert set(r["flops"]) == {"fp64", "fp32", "fp16", "tensor"}
        assert r["duration_ns"] > 0 and r["dram_bytes"] >= 0 and r["l2_bytes"] > 0 and r["l1_bytes"] > 0
        parts = [v or 0 for v in r["flops"].values()]
        assert r["flops_total"] == pytest.approx(sum(parts))


@pytest.mark.slow
def test_import_nsys_sqlite_then_ranges_json(tmp_path):
    db = str(tmp_path / "a.db")
    res = invoke("import", str(H200 / "probe_nested_graph_nsys.sqlite.gz"), "--db", db)
    assert res.exit_code == 0, res.output
    res = invoke("ranges", "latest", "--db", db, "--json")
    ranges = {r["nvtx_range"]: r for r in json.loads(res.stdout)}
    assert ranges["aisp/pairG/graph"]["kernel_count"] == 2
    assert ranges["aisp/pairA/optimized"]["kernel_count"] == 1
    for r in ranges.values():
        assert r["gpu_time_ns"] > 0
    # nsys-only run: kernels come from the timeline, with nothing invented for bytes
    kernels = json.loads(invoke("kernels", "latest", "--db", db, "--json").stdout)
    assert kernels and all(k["dram_bytes"] is None for k in kernels)


@pytest.mark.slow
def test_runs_lists_both_and_prefix_resolves(tmp_path):
    db = str(tmp_path / "a.db")
    invoke("import", str(H200 / "l2norm_pair_full_raw.csv"), "--db", db)
    invoke("import", str(H200 / "l2norm_pair_nsys.sqlite.gz"), "--db", db)
    runs = json.loads(invoke("runs", "--db", db, "--json").stdout)
    assert len(runs) == 2 and {r["source"] for r in runs} == {"import"}
    res = invoke("kernels", "no-such-run", "--db", db)
    assert res.exit_code == 2 and "unknown run" in res.stderr


def test_corrupt_export_is_one_line_error_and_no_rows(tmp_path):
    db = tmp_path / "a.db"
    bad = tmp_path / "cut.csv"
    text = (H200 / "probe_curated_raw_base.csv").read_text()
    bad.write_text(text[: len(text) // 2])
    res = invoke("import", str(bad), "--db", str(db))
    assert res.exit_code == 6
    assert len(res.stderr.strip().splitlines()) == 1
    assert not db.exists()                       # nothing was written, not even an empty database


def test_failed_write_leaves_no_partial_rows(tmp_path, monkeypatch):
    """Kill the transaction after the runs row and some kernels rows are in: nothing remains."""
    from aisp_prof.store.ingest import load_export

    db = tmp_path / "a.db"
    data = load_export(H200 / "probe_curated_raw_base.csv")
    real = store._insert
    calls = []

    def failing(db_, name, df, run_id):
        calls.append(name)
        if len(calls) == 3:          # after the runs row, kernels and metrics are inserted
            raise RuntimeError("simulated crash mid-write")
        return real(db_, name, df, run_id)

    monkeypatch.setattr(store, "_insert", failing)
    with pytest.raises(RuntimeError, match="simulated"):
        store.write_run(db, data)
    assert len(calls) == 3
    con = sqlite3.connect(db)
    tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
    for t in tables:
        assert con.execute(f"select count(*) from [{t}]").fetchone()[0] == 0, t


def test_unknown_target_suggests_close_names():
    res = invoke("run", "ch09.fused_l2nrm")
    assert res.exit_code == 2
    assert "ch09.fused_l2norm" in res.stderr


def test_run_without_gpu_is_exit_3_and_writes_nothing(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    res = invoke("run", "ch09.fused_l2norm", "--profiles-dir", str(tmp_path / "p"), "--db", str(tmp_path / "a.db"))
    assert res.exit_code == 3, res.output
    assert "no CUDA GPU" in res.stderr
    assert not (tmp_path / "p").exists() or not any((tmp_path / "p").iterdir())
    assert not (tmp_path / "a.db").exists()


def test_list_json_describes_pairs():
    res = invoke("list", "--json")
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.stdout)}
    l2 = rows["ch09.fused_l2norm"]
    assert l2["chapter"] == 9 and l2["variants"] == ["baseline", "cuda", "triton"]
    assert l2["requires"]["min_cc"] == "9.0" and isinstance(l2["can_run"], bool)
    assert l2["lesson"]


def test_help_has_examples():
    for cmd in ("run", "import", "runs", "kernels", "ranges", "summary", "list", "quickstart"):
        res = invoke(cmd, "--help")
        assert res.exit_code == 0 and "Example" in res.output, cmd


@pytest.mark.slow
def test_import_ncu_rep_gz_through_ncu_report(tmp_path):
    pytest.importorskip("ncu_report")
    db = str(tmp_path / "a.db")
    res = invoke("import", str(H200 / "cluster_group.ncu-rep.gz"), "--db", db)
    assert res.exit_code == 0, res.output
    rows = json.loads(invoke("kernels", "latest", "--db", db, "--json").stdout)
    assert len(rows) == 4
    assert {"aisp/ch10.cluster_group/baseline", "aisp/ch10.cluster_group/single_cta_float4"} <= {
        r["nvtx_range"] for r in rows}


# ------------------------------------------------ memcpy/memset through store, summary and CLI

SPARSITY_RUN = ROOT / "profiles" / "samples" / "20261126T034324Z-ch09.structured_sparsity-c433"
COPY_BYTES = 16384 * 16384 * 2      # C = m x n bf16 (run.json sizes), copied once per call by c.copy_


@pytest.mark.slow
def test_sample_memory_ops_are_stored_and_summarized(tmp_path):
    db = str(tmp_path / "a.db")
    res = invoke("import", str(SPARSITY_RUN), "--db", db)
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip()
    ops = store.read_table(Path(db), "memory_ops", run_id)
    copies = ops.loc[(ops["operation"] == "memcpy") & (ops["variant"] != "")]
    assert copies.groupby("variant")["size_bytes"].agg(["size", "sum"]).to_dict("index") == {
        "sparse24": {"size": 5, "sum": 5 * COPY_BYTES}, "sparse24_tuned": {"size": 5, "sum": 5 * COPY_BYTES}}
    assert set(copies["copy_kind"]) == {"DtoD"}

    ranges = {r["variant"]: r for r in json.loads(invoke("ranges", run_id, "--db", db, "--json").stdout)}
    assert ranges["baseline"]["memcpy_count"] == 0
    for v in ("sparse24", "sparse24_tuned"):
        assert ranges[v]["memcpy_count"] == 5 and ranges[v]["memcpy_bytes"] == 5 * COPY_BYTES
        assert ranges[v]["memcpy_time_ns"] == copies.loc[copies["variant"] == v, "duration_ns"].sum()

    summary = {r["variant"]: r for r in json.loads(invoke("summary", run_id, "--db", db, "--json").stdout)["summary"]}
    for v in ("sparse24", "sparse24_tuned"):
        s, r = summary[v], ranges[v]
        assert s["memcpy_per_call"] == 1 and s["memcpy_bytes_per_call"] == COPY_BYTES
        assert s["memcpy_time_ns"] == pytest.approx(r["memcpy_time_ns"] / 5)
        assert s["kernel_time_ns"] == pytest.approx(r["kernel_time_ns"] / 5)
        # one stream: per-call GPU time is kernels + the copy + the memsets
        assert s["gpu_time_ns"] == pytest.approx(s["kernel_time_ns"] + s["memcpy_time_ns"] + s["memset_time_ns"])
        assert s["gpu_time_ns"] - s["kernel_time_ns"] > 0.24e6          # the ~0.25 ms copy is in
    assert summary["baseline"]["memcpy_per_call"] == 0
    text = invoke("summary", run_id, "--db", db).stdout
    assert "memcpy" in text and "1 x 537 MB" in text
    assert "5 x 2.68 GB" in invoke("ranges", run_id, "--db", db).stdout


@pytest.mark.slow
def test_database_from_before_memory_ops_still_reads_and_takes_new_runs(tmp_path):
    """A run stored by the kernel-only parser: ranges without the memory columns, no memory_ops table."""
    from aisp_prof.store.ingest import load_run_dir

    db = tmp_path / "old.db"
    old = load_run_dir(SPARSITY_RUN)
    old_columns = ["nvtx_range", "variant", "nvtx_domain", "kernel_count", "gpu_time_ns", "first_start_ns",
                   "last_end_ns", "span_ns", "gap_total_ns", "gap_max_ns", "range_wall_ns", "occurrences"]
    old.ranges = old.ranges.assign(gpu_time_ns=old.ranges["kernel_time_ns"]).loc[:, old_columns]
    old.memory_ops = old.memory_ops.iloc[0:0]
    store.write_run(db, old)
    con = sqlite3.connect(db)
    assert "memory_ops" not in {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    assert "memcpy_count" not in {r[1] for r in con.execute("pragma table_info(ranges)")}
    con.close()

    def old_summary():
        res = invoke("summary", old.run_id, "--db", str(db), "--json")
        assert res.exit_code == 0, res.output
        return {r["variant"]: r for r in json.loads(res.stdout)["summary"]}

    before = old_summary()
    assert "memcpy_per_call" not in before["sparse24"]          # nothing made up for what was not parsed
    assert invoke("summary", old.run_id, "--db", str(db)).exit_code == 0
    assert invoke("ranges", old.run_id, "--db", str(db)).exit_code == 0
    # a new run adds the table and columns; the old run's rows read back with them NULL
    res = invoke("import", str(H200 / "l2norm_pair_nsys.sqlite.gz"), "--db", str(db))
    assert res.exit_code == 0, res.output
    after = old_summary()
    assert after["sparse24"]["gpu_time_ns"] == before["sparse24"]["gpu_time_ns"]
    assert after["sparse24"].get("memcpy_per_call") is None
    new_ranges = json.loads(invoke("ranges", "latest", "--db", str(db), "--json").stdout)
    assert {r["nvtx_range"]: r["memcpy_count"] for r in new_ranges} == {"baseline": 0, "optimized": 0}


@pytest.mark.slow
def test_a_pair_name_means_its_latest_run(tmp_path):
    """`aisp-prof summary ch09.tma_wgmma_pipeline` after a run of that pair: the pair's newest
    run, not an unknown-run error; a pair with no run is still a one-line exit-2 error."""
    from aisp_prof.store.ingest import sample_run_dirs, store_path

    db = tmp_path / "a.db"
    dirs = {d.name: d for d in sample_run_dirs()}
    tma = "20261126T033929Z-ch09.tma_wgmma_pipeline-ff3c"
    sdpa = "20261126T033949Z-ch09.sdpa_attention-d4ce"
    store_path(db, dirs[tma])
    store_path(db, dirs[sdpa])                       # stored later: `latest` is sdpa
    res = invoke("summary", "ch09.tma_wgmma_pipeline", "--db", str(db), "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["run"]["run_id"] == tma
    assert json.loads(invoke("summary", "latest", "--db", str(db), "--json").stdout)["run"]["run_id"] == sdpa
    res = invoke("summary", "ch09.fused_l2norm", "--db", str(db))
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1
