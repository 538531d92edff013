"""`aisp-prof roofline`: JSON keys, terminal table, charts, imported profiles, errors; no GPU."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from repo_paths import FIXTURES
from click.testing import CliRunner

from aisp_prof.api import open_db
from aisp_prof.cli import cli
from aisp_prof.store.ingest import sample_run_dirs, store_path
from aisp_prof.errors import OutputError
from aisp_prof.render.roofline_plot import draw

H200 = FIXTURES / "h200"
SAMPLE_ID = "20261126T011557Z-ch09.fused_l2norm-90df"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def sample_db(tmp_path, sample_dbs) -> Path:
    db = sample_dbs.copy(tmp_path / "a.db", SAMPLE_ID)
    return db


@pytest.mark.slow
def test_json_has_ceilings_and_points(sample_db):
    res = invoke("roofline", "latest", "--db", str(sample_db), "--json", "--compare")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    c = d["ceilings"]
    for key in ("dram_bytes_per_s", "l2_bytes_per_s", "l1_bytes_per_s"):
        assert set(c[key]) >= {"theoretical_per_s", "measured_per_s"} and c[key]["theoretical_per_s"] > 0
    assert set(c["flops_per_s"]) >= {"fp32", "fp64", "fp16", "tensor_bf16", "tensor_fp8", "tensor_fp64"}
    assert all(set(v) >= {"theoretical_per_s", "measured_per_s"} for v in c["flops_per_s"].values())
    # measured ceilings of this hardware key come from profiles/calibration/h200.json (empty DB)
    assert c["dram_bytes_per_s"]["measured_per_s"] == pytest.approx(4.262e12, rel=1e-3)
    assert c["measured_source"]["source"].startswith("file:")
    points = d["points"]
    need = {"nvtx_range", "kernel", "ai_dram_flop_per_byte", "ai_l2_flop_per_byte", "ai_l1_flop_per_byte",
            "flops_per_s", "bound", "pct_of_roof"}
    assert all(need <= set(p) for p in points)
    aggregates = [p for p in points if p["kernel"] is None]
    assert [p["variant"] for p in aggregates] == ["baseline", "cuda", "triton"]
    assert len(points) == 3 + 7
    # the arrow says the summary's primary speedup (nsys GPU time, issue 16); ncu's is secondary
    assert [round(x["speedup"], 2) for x in d["comparisons"]] == [3.13, 3.21]
    assert {x["time_source"] for x in d["comparisons"]} == {"nsys GPU time"}
    assert [round(x["speedup_by_timer"]["ncu_duration"], 2) for x in d["comparisons"]] == [3.16, 3.2]
    assert {f["variant"] for f in d["flop_check"]} == {"baseline", "cuda", "triton"}
    assert {w["code"] for w in d["warnings"]} >= {"flop_mismatch", "hfma_moves"}


@pytest.mark.slow
def test_table_prints_the_same_numbers(sample_db):
    res = invoke("roofline", "ch09.fused_l2norm", "--db", str(sample_db), "--compare")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "DRAM bandwidth  4.81 TB/s" in out and "4.26 TB/s" in out      # theoretical and measured
    assert "3.13x" in out and "3.21x" in out and "ncu duration 3.16x" in out and "ncu duration 3.20x" in out
    assert "DIFFERS >10%" in out and "[flop_mismatch]" in out
    r = open_db(sample_db).roofline("latest")
    cuda = next(p for p in r.points if p.is_aggregate and p.variant == "cuda")
    assert f"{cuda.pct_of_roof:.3g}" in out


@pytest.mark.slow
@pytest.mark.parametrize("level,suffix", [("dram", ".png"), ("all", ".svg"), ("l2", ".png"), ("l1", ".svg")])
def test_chart_is_written(sample_db, tmp_path, level, suffix):
    out = tmp_path / f"roof{suffix}"
    res = invoke("roofline", "latest", "--db", str(sample_db), "--compare", "--level", level, "--out", str(out))
    assert res.exit_code == 0, res.output
    assert out.stat().st_size > 10_000
    head = out.read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in out.read_bytes()[:2000] or b"<?xml" in head


@pytest.mark.slow
def test_draw_api_leaves_no_pyplot_state(sample_db, tmp_path):
    import matplotlib

    r = open_db(sample_db).roofline("latest")
    path = draw(r, tmp_path / "x.png", level="all", compare=True)
    assert path == tmp_path / "x.png" and path.stat().st_size > 10_000
    import sys

    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        assert plt.get_fignums() == []
    assert matplotlib.get_backend()  # untouched, whatever it was
    with pytest.raises(OutputError, match=r"\.png or \.svg"):      # an AispError, as `roofline --out x.pdf`'s
        draw(r, tmp_path / "x.pdf")


def test_bad_chart_suffix_and_unknown_run(sample_db, tmp_path):
    res = invoke("roofline", "latest", "--db", str(sample_db), "--out", str(tmp_path / "x.pdf"))
    assert res.exit_code == 14 and ".png or .svg" in res.output
    res = invoke("roofline", "no-such-run", "--db", str(sample_db))
    assert res.exit_code == 2


def test_nsys_only_run_has_no_roofline(tmp_path):
    db = str(tmp_path / "a.db")
    assert invoke("import", str(H200 / "probe_nested_graph_nsys.sqlite.gz"), "--db", db).exit_code == 0
    res = invoke("roofline", "latest", "--db", db)
    assert res.exit_code == 6 and "no Nsight Compute kernel rows" in res.output


def test_imported_ncu_csv_without_gpu(tmp_path):
    """An ncu CSV made by anyone: no run.json, no GPU name; measured ceilings found by SM count and memory."""
    db = str(tmp_path / "a.db")
    assert invoke("import", str(H200 / "probe_curated_raw_base.csv"), "--db", db).exit_code == 0
    res = invoke("roofline", "latest", "--db", db, "--json", "--compare")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["ceilings"]["hardware_key"] == "h200"
    assert d["ceilings"]["dram_bytes_per_s"]["measured_per_s"] > 4e12
    assert {p["variant"] for p in d["points"]} == {"baseline", "optimized", "graph"}
    assert [c["optimized"]["variant"] for c in d["comparisons"]] == ["optimized", "graph"]
    assert all(p["flop_basis"] == "counted" for p in d["points"])      # no formula for an import
    assert d["flop_check"] and all(f["analytic_flops"] is None for f in d["flop_check"])


@pytest.mark.slow
def test_imported_probe_capture_roofline(tmp_path):
    db = str(tmp_path / "a.db")
    assert invoke("import", str(H200 / "roofline_sections_raw_base.csv"), "--db", db).exit_code == 0
    res = invoke("roofline", "latest", "--db", db, "--json")
    d = json.loads(res.stdout)
    gemm = next(p for p in d["points"] if p["variant"] == "gemm_bf16" and p["kernel"] is None)
    assert gemm["bound"] == "compute" and gemm["flops_per_s"] > 7e14
    assert "tma_l1" in {w["code"] for w in d["warnings"]}
    res = invoke("roofline", "latest", "--db", db, "--level", "all", "--out", str(tmp_path / "p.png"))
    assert res.exit_code == 0 and (tmp_path / "p.png").stat().st_size > 10_000


@pytest.mark.slow
def test_two_runs_compared(sample_db, tmp_path):
    run2 = store_path(sample_db, H200 / "calibrate_probe_run")
    res = invoke("roofline", SAMPLE_ID, run2, "--db", str(sample_db), "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert [r["run_id"] for r in d["runs"]] == [SAMPLE_ID, run2]
    assert {p["run_id"] for p in d["points"]} == {SAMPLE_ID, run2}


@pytest.mark.slow
def test_table_and_chart_name_the_sparse_roof(tmp_path, sample_dbs):
    db = sample_dbs.copy(tmp_path / "a.db", "20261126T034324Z-ch09.structured_sparsity-c433")
    out = tmp_path / "sparse.png"
    res = invoke("roofline", "ch09.structured_sparsity", "--db", str(db), "--out", str(out))
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    sparse_roof = next(line for line in lines if line.startswith("tensor BF16 2:4 sparse"))
    assert "(2x dense, derived)" in sparse_roof
    assert any(line.startswith("tensor BF16 ") and "2:4" not in line for line in lines)
    points = [line for line in lines if line.split(" ", 1)[0] in ("sparse24", "sparse24_tuned") and "FLOP/s" in line]
    assert [line.split(" ", 1)[0] for line in points] == ["sparse24"] * 2 + ["sparse24_tuned"] * 2   # variant, kernel
    assert all("tensor_bf16_sparse  compute" in line for line in points)
    baseline = [line for line in lines if line.startswith("baseline ") and "FLOP/s" in line]
    assert len(baseline) == 2 and all(re.search(r" tensor_bf16 +compute ", line) for line in baseline)
    assert out.stat().st_size > 10_000


# ------------------------------------------------------------------------------ label placement

TMA_RUN_ID = "20261126T033929Z-ch09.tma_wgmma_pipeline-ff3c"
MIN_GAP_PX = 2.0          # display pixels between any two labels (the chart is drawn at 120 dpi)


def _placed_labels(result, level="dram"):
    """The chart's point-name and speedup labels as (gid, text, display rectangle), after a draw."""
    from aisp_prof.render.labels import label_extent
    from aisp_prof.render.roofline_plot import NAME_GID, SPEEDUP_GID, figure

    fig = figure(result, level=level, compare=True)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        frame = ax.get_window_extent(renderer)
        legends = [ax.get_legend().get_window_extent(renderer)] + [
            a.get_window_extent(renderer) for a in ax.artists if a.__class__.__name__ == "Legend"]
        for t in ax.texts:
            if t.get_gid() in (NAME_GID, SPEEDUP_GID):
                out.append((t.get_gid(), t.get_text(), label_extent(t, renderer), frame, legends))
    return out


def _separation(a, b) -> float:
    """Gap between two rectangles (x0, y0, x1, y1): 0 when they touch or overlap."""
    dx = max(b[0] - a[2], a[0] - b[2], 0.0)
    dy = max(b[1] - a[3], a[1] - b[3], 0.0)
    return max(dx, dy) if min(dx, dy) == 0 else (dx * dx + dy * dy) ** 0.5


def _assert_labels_apart(labels):
    for i, (_, text_a, a, frame, legends) in enumerate(labels):
        assert frame.x0 <= a[0] and a[2] <= frame.x1 and frame.y0 <= a[1] and a[3] <= frame.y1, text_a
        for leg in legends:
            assert _separation(a, (leg.x0, leg.y0, leg.x1, leg.y1)) > 0, (text_a, "legend")
        for _, text_b, b, _, _ in labels[i + 1:]:
            assert _separation(a, b) >= MIN_GAP_PX, (text_a, text_b, a, b)


@pytest.mark.slow
def test_roofline_labels_of_close_variants_do_not_collide(tmp_path, sample_dbs):
    """ch09.tma_wgmma_pipeline: pipelined, pipelined_cluster and cublas sit within a few pixels of
    each other; their names and the three speedups (once drawn on top of each other as
    'pip cublas 2.13x r 1.95x') are all at least MIN_GAP_PX apart and inside the axes."""
    db = sample_dbs.copy(tmp_path / "a.db", TMA_RUN_ID)
    labels = _placed_labels(open_db(db).roofline(TMA_RUN_ID))
    names = sorted(t for g, t, *_ in labels if g == "roofline-name")
    speedups = sorted(t.split()[0] for g, t, *_ in labels if g == "roofline-speedup")
    assert names == ["baseline", "cublas", "pipelined", "pipelined_cluster"]
    assert speedups == ["cublas", "pipelined", "pipelined_cluster"]
    assert all(re.fullmatch(r"\S+ \d+\.\d\dx", t) for g, t, *_ in labels if g == "roofline-speedup")
    _assert_labels_apart(labels)


@pytest.fixture(scope="module")
def all_samples_db(tmp_path_factory, sample_dbs) -> Path:
    return sample_dbs.copy(tmp_path_factory.mktemp("samples") / "a.db")


@pytest.mark.slow
@pytest.mark.parametrize("run_dir", [d.name for d in sample_run_dirs()])
def test_every_sample_chart_keeps_its_labels_apart(all_samples_db, run_dir):
    """Every shipped pair, 1 to 4 optimized variants (warp_specialization has 4 within a few
    pixels), at DRAM and in the hierarchical view."""
    result = open_db(all_samples_db).roofline(run_dir)
    optimized = {p.variant for p in result.points if p.is_aggregate} - {"baseline"}
    for level in ("dram", "all"):
        labels = _placed_labels(result, level)
        assert sum(g == "roofline-speedup" for g, *_ in labels) == len(optimized), (run_dir, level)
        _assert_labels_apart(labels)
