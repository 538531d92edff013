"""Roofline ceilings, points, the two FLOP counts and the validity warnings, on real captures.

Fixtures (tests/fixtures/README.md says how each was made):
- profiles/samples/20261126T011557Z-ch09.fused_l2norm-90df: ch09.fused_l2norm on an H200;
- tests/fixtures/h200/calibrate_probe_run/: the calibration probes (known FLOPs and bytes) profiled
  by `aisp-prof calibrate --profile` with the project's metric list, H200;
- tests/fixtures/h200/roofline_sections_raw_base.csv: six probes profiled in ONE ncu run with ncu's
  own roofline sections, the project's metrics and the dense/sparse tensor peaks;
- profiles/samples/...-ch09.structured_sparsity{,_ffn}-*: dense cuBLAS GEMMs against cuSPARSELt
  2:4-sparse GEMMs, with its default (sparse24) and a searched (sparse24_tuned) algorithm, on an H200.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from repo_paths import FIXTURES

from aisp_prof.analyze.roofline.ceilings import SPARSE_REPORTED, theoretical_ceilings, weighted_clocks, with_measured
from aisp_prof.analyze.roofline.build import RunInput, build_roofline
from aisp_prof.api import open_db
from aisp_prof.analyze.roofline.points import is_sparse_kernel
from aisp_prof.store.ingest import load_export, load_run_dir, sample_run_dirs, store_path
from sample_files import shipped_bytes

H200 = FIXTURES / "h200"
SAMPLE_ID = "20261126T011557Z-ch09.fused_l2norm-90df"
PROBE_RUN = H200 / "calibrate_probe_run"
SECTIONS_CSV = H200 / "roofline_sections_raw_base.csv"


def _sample_dir() -> Path:
    return {d.name: d for d in sample_run_dirs()}[SAMPLE_ID]


def _run_input(run_dir: Path) -> RunInput:
    data = load_run_dir(run_dir)
    info = json.loads(data.run["info_json"])
    return RunInput(data.run_id, info, data.kernels, {}, data.run["gpu_name"])


@pytest.fixture(scope="module")
def sample() -> RunInput:
    return _run_input(_sample_dir())


@pytest.fixture(scope="module")
def probes() -> RunInput:
    return _run_input(PROBE_RUN)


def _agg(result, variant):
    return next(p for p in result.points if p.is_aggregate and p.variant == variant)


def _kernel(result, variant):
    return next(p for p in result.points if not p.is_aggregate and p.variant == variant)


# ----------------------------------------------------------------------------------- ceilings

def test_golden_theoretical_ceilings_from_the_sample_peaks(sample):
    c = theoretical_ceilings(sample.kernels, "NVIDIA H200")
    assert c.hardware_key == "h200"
    # per cycle, as ncu reports them for this H200 (132 SMs)
    assert c.bandwidth["dram"].per_cycle == 1504
    assert c.bandwidth["l2"].per_cycle == 9024
    assert c.bandwidth["l1"].per_cycle == 67584
    assert c.compute["fp32"].per_cycle == 16896 * 2          # FFMA x 2
    assert c.compute["fp64"].per_cycle == 8448 * 2           # DFMA x 2
    assert c.compute["fp16"].per_cycle == 16896 * 4          # HFMA2 x 4
    assert c.compute["tensor_bf16"].per_cycle == 1081344 / 2  # sparse rate halved
    assert c.compute["tensor_fp16"].per_cycle == 1081344 / 2
    assert c.compute["tensor_tf32"].per_cycle == 540672 / 2
    assert c.compute["tensor_fp8"].per_cycle == 2162688 / 2
    assert c.compute["tensor_int8"].per_cycle == 2162688 / 2
    assert c.compute["tensor_fp64"].per_cycle == 33792       # DMMA: no sparse mode, as reported
    # the 2:4-sparse roofs: the reported peaks as they are
    assert c.compute["tensor_bf16_sparse"].per_cycle == 1081344
    assert c.compute["tensor_fp8_sparse"].per_cycle == 2162688
    assert "tensor_fp64_sparse" not in c.compute
    # clocks: total cycles over total time of the profiled kernels
    k = sample.kernels
    sm = float((k["sm_clock_hz"] * k["duration_ns"]).sum() / k["duration_ns"].sum())
    assert weighted_clocks(k)["sm"] == pytest.approx(sm)
    assert c.value("fp32") == pytest.approx(33792 * sm)
    assert c.value("dram") == pytest.approx(4.81e12, rel=2e-3)       # 1504 B x 3.198 GHz
    assert c.value("l2") == pytest.approx(9024 * weighted_clocks(k)["l2"])
    assert c.ridge("fp32", "dram") == pytest.approx(c.value("fp32") / c.value("dram"))
    assert any("2:4-sparse" in n for n in c.notes)


def test_dense_tensor_peaks_match_ncus_sparsity_off_peaks():
    """The rule 'dense = reported / 2' checked against ncu's own _sparsity_off peaks (H200 capture)."""
    parsed = load_export(SECTIONS_CSV)
    m = parsed.metrics.drop_duplicates("metric").set_index("metric")["value"]
    c = theoretical_ceilings(parsed.kernels, "NVIDIA H200")
    dense = {
        "tensor_bf16": "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained",
        "tensor_fp16": "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained",
        "tensor_tf32": "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum.peak_sustained",
        "tensor_fp8": "sm__ops_path_tensor_src_fp8_sparsity_off.sum.peak_sustained",
        "tensor_int8": "sm__ops_path_tensor_op_igmma_src_int8_sparsity_off.sum.peak_sustained",
    }
    assert set(dense) == set(SPARSE_REPORTED)
    for prec, metric in dense.items():
        assert c.compute[prec].per_cycle == m[metric], prec
        assert m[metric.replace("sparsity_off", "sparsity_on")] == 2 * m[metric], prec
        # ... and the 2:4-sparse roof is ncu's _sparsity_on peak
        assert c.compute[f"{prec}_sparse"].per_cycle == m[metric.replace("sparsity_off", "sparsity_on")], prec
    # and the bf16 GEMM's FLOPs all ran on the dense (sparsity_off) wgmma path
    bf16 = parsed.metrics[parsed.metrics["metric"] == "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum"]
    assert bf16["value"].max() == pytest.approx(2 * 8320 * 8192 * 8192)


# ----------------------------------------------------------------------------------- points

def test_sample_points_fused_variants_are_dram_bound_near_the_roof(sample):
    r = build_roofline([sample])
    for v in ("cuda", "triton"):
        p = _agg(r, v)
        assert p.bound == "dram" and p.pct_of_roof > 75
        assert p.flop_basis == "analytic" and p.flops == 3 * 8192 * 8192 + 2 * 8192
        assert p.kernel_count == 1
    base, cuda = _agg(r, "baseline"), _agg(r, "cuda")
    assert base.kernel_count == 5
    assert base.ai_dram_flop_per_byte < cuda.ai_dram_flop_per_byte     # fusion: same work, fewer bytes
    assert cuda.ai_dram_flop_per_byte == pytest.approx(cuda.flops / (cuda.dram_bytes), rel=1e-12)
    assert base.flops_per_s == pytest.approx(base.flops / (base.duration_ns * 1e-9))
    # the aggregate sums its kernels
    kernels = r.kernels_of(sample.run_id, "baseline")
    assert base.duration_ns == pytest.approx(sum(k.duration_ns for k in kernels))
    assert base.dram_bytes == pytest.approx(sum(k.dram_bytes for k in kernels))
    # ... and the arrow rises by exactly the speedup (same analytic FLOPs on both ends)
    cmp = next(c for c in r.comparisons if c.optimized.variant == "cuda")
    assert cmp.speedup == pytest.approx(base.duration_ns / cuda.duration_ns)
    assert cuda.flops_per_s / base.flops_per_s == pytest.approx(cmp.speedup)


def test_counted_flops_make_the_eager_baseline_look_more_intense(sample):
    """Why variants default to analytic FLOPs: the eager divide expands to ~5 FFMA + HFMA2.MMA moves per
    element, so by hardware counts the slow baseline has the HIGHER intensity."""
    r = build_roofline([sample], flop_basis="counted")
    assert _agg(r, "baseline").ai_dram_flop_per_byte > _agg(r, "cuda").ai_dram_flop_per_byte
    assert all(p.flop_basis == "counted" for p in r.points)


def test_kernel_points_use_counted_flops_and_their_own_clock(sample):
    r = build_roofline([sample])
    p = _kernel(r, "cuda")
    row = sample.kernels[sample.kernels["variant"] == "cuda"].iloc[0]
    counted = 2 * row["inst_ffma"] + row["inst_fmul"] + row["inst_fadd"] + 4 * row["inst_hfma"]
    assert p.flops == pytest.approx(counted) and p.flop_basis == "counted"
    dram = row["dram_read_bytes"] + row["dram_write_bytes"]
    assert p.bound == "dram"
    assert p.pct_of_roof == pytest.approx(100 * dram / (1504 * row["dram_clock_hz"]) / (row["duration_ns"] * 1e-9))
    # ncu's own speed-of-light percentage of the same counter agrees
    assert p.pct_of_roof == pytest.approx(row["sol_dram_pct"], abs=0.01)


def test_flop_check_counted_beside_analytic(sample):
    r = build_roofline([sample])
    checks = {f.variant: f for f in r.flop_check}
    assert checks["baseline"].flagged and checks["baseline"].ratio == pytest.approx(6.3527, rel=1e-4)
    assert checks["cuda"].flagged                           # 1.16: warp-reduction tree + HFMA2.MMA moves
    assert not checks["triton"].flagged and checks["triton"].ratio == pytest.approx(1.0832, rel=1e-3)
    assert checks["cuda"].analytic_flops == 3 * 8192 * 8192 + 2 * 8192


# ----------------------------------------------------------------------------------- known answers

GEMMS = {"gemm_bf16": "tensor_bf16", "gemm_fp16": "tensor_fp16", "gemm_tf32": "tensor_tf32",
         "gemm_fp8": "tensor_fp8", "gemm_int8": "tensor_int8", "gemm_fp64": "tensor_fp64"}


@pytest.mark.slow
@pytest.mark.parametrize("variant,precision", sorted(GEMMS.items()))
def test_counted_tensor_flops_match_2mnk(probes, variant, precision):
    r = build_roofline([probes], flop_basis="counted")
    p = _agg(r, variant)
    n = 4096 if variant == "gemm_fp64" else 8192
    assert p.precision == precision
    assert p.flops_by_precision[precision] / p.flops_counted > 0.999       # all on that tensor path
    ratio = p.flops_by_precision[precision] / (2 * n ** 3)
    assert ratio == pytest.approx(1.0, abs=0.02)
    if variant in ("gemm_bf16", "gemm_fp16", "gemm_fp8"):
        # cuBLAS' nvjet 320x128 tiles: M=8192 is computed as 26 x 320 = 8320 rows
        assert ratio == pytest.approx(8320 / 8192, rel=1e-6)
    else:
        assert ratio == pytest.approx(1.0, rel=1e-6)
    if variant == "gemm_int8":
        # torch._int_mm's CUTLASS sm80 WMMA kernel: 128 TFLOP/s, 7% of the int8 roof, re-reads through L2
        assert p.bound == "l2" and p.pct_of_roof < 10
    else:
        assert p.bound == "compute" and p.pct_of_roof > 85


def test_counted_bytes_match_the_streams(probes):
    r = build_roofline([probes], flop_basis="counted")
    an = probes.info["analytic"]["variants"]
    copy = _agg(r, "copy_dram")
    assert copy.dram_bytes == pytest.approx(an["copy_dram"]["bytes"], rel=0.02)  # writes ~2% low: dirty L2 lines
    assert copy.l1_bytes == an["copy_dram"]["bytes"]
    assert copy.bound == "dram" and copy.flops == 0
    l2 = _agg(r, "stream_l2")
    assert l2.l2_bytes == pytest.approx(an["stream_l2"]["bytes"], rel=0.005)
    assert l2.bound == "l2"
    l1 = _agg(r, "stream_l1")
    assert l1.l1_bytes == pytest.approx(an["stream_l1"]["bytes"], rel=1e-3)
    assert l1.bound == "l1"
    fma = _agg(r, "fma_fp32")
    row = probes.kernels[probes.kernels["variant"] == "fma_fp32"].iloc[0]
    assert 2 * row["inst_ffma"] == an["fma_fp32"]["flops"]              # exact: 2 x 8 chains x 8192 x threads
    # + 8 FMUL (initial values) and 7 FADD (the final sum) per thread
    assert fma.flops_by_precision["fp32"] == an["fma_fp32"]["flops"] + 15 * an["fma_fp32"]["shape"]["threads"]
    assert fma.bound == "compute" and fma.pct_of_roof > 85


def test_cublas_sm90_gemms_move_data_by_tma(probes):
    k = probes.kernels.set_index("variant")
    for v in ("gemm_bf16", "gemm_fp16", "gemm_tf32", "gemm_fp8"):
        assert k.loc[v, "tma_load_bytes"] > 1e9, v
    assert k.loc["gemm_fp64", "tma_load_bytes"] == 0 and k.loc["copy_dram", "tma_load_bytes"] == 0


def _ncu_value(metrics: pd.DataFrame, launch: int, name: str, default: float | None = None) -> float:
    s = metrics[(metrics["launch_id"] == launch) & (metrics["metric"] == name)]["value"]
    if s.empty:
        if default is None:
            raise KeyError(name)
        return default
    return float(s.iloc[0])


def test_achieved_flops_and_intensity_equal_ncus_own_roofline():
    """ncu's SpeedOfLight_RooflineChart (and the tensor chart) compute achieved work as
    sum(X.sum.per_cycle_elapsed) x cycles/second and traffic as dram__bytes.sum.per_second; the
    same capture's tidy columns must give the same numbers."""
    section = (H200 / "ncu_SpeedOfLight_RooflineChart.section").read_text()
    inst = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
    for name in (inst.format("fadd"), inst.format("fmul"), "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2",
                 "smsp__cycles_elapsed.avg.per_second", "dram__bytes.sum.per_second"):
        assert f'"{name}"' in section
    assert re.search(r'ffma_pred_on.sum.per_cycle_elapsed \* 2"', section)
    parsed = load_export(SECTIONS_CSV)
    run = RunInput("sections", {}, parsed.kernels, {}, "NVIDIA H200")
    result = build_roofline([run], flop_basis="counted")
    m = parsed.metrics
    tensor = {"bf16_dst_fp32": 0, "fp8_sparsity_off": 0, "fp64": 0}
    checked = set()
    for p in result.points:
        if p.is_aggregate or not p.flops:
            continue
        lid = p.launch_id
        smsp, sm = (_ncu_value(m, lid, "smsp__cycles_elapsed.avg.per_second"),
                    _ncu_value(m, lid, "sm__cycles_elapsed.avg.per_second"))
        fp32 = (_ncu_value(m, lid, inst.format("fadd")) + _ncu_value(m, lid, inst.format("fmul"))
                + 2 * _ncu_value(m, lid, inst.format("ffma"))) * smsp
        fp64 = (_ncu_value(m, lid, inst.format("dadd")) + _ncu_value(m, lid, inst.format("dmul"))
                + 2 * _ncu_value(m, lid, inst.format("dfma"))) * smsp
        tens = sum(_ncu_value(m, lid, f"sm__ops_path_tensor_src_{t}.sum.per_cycle_elapsed", 0.0) for t in tensor) * sm
        work = fp32 + fp64 + tens
        traffic = _ncu_value(m, lid, "dram__bytes.sum.per_second")
        # ncu's FP32 chart leaves out HFMA (the fma probe's one HFMA2.MMA move per thread: 3e-5)
        assert p.flops_per_s == pytest.approx(work, rel=1e-4), p.variant
        assert p.ai_dram_flop_per_byte == pytest.approx(work / traffic, rel=1e-4), p.variant
        assert p.dram_bytes / (p.duration_ns * 1e-9) == pytest.approx(traffic, rel=1e-5)
        checked.add(p.variant)
    assert checked == {"fma_fp32", "stream_l2", "gemm_bf16", "gemm_fp8", "gemm_fp64"}


# ----------------------------------------------------------------------------------- 2:4 sparsity

SPARSITY_IDS = {"ch09.structured_sparsity": "20261126T034324Z-ch09.structured_sparsity-c433",
                "ch09.structured_sparsity_ffn": "20261126T034025Z-ch09.structured_sparsity_ffn-514d"}
SPARSE_VARIANTS = {"sparse24", "sparse24_tuned"}     # cuSPARSELt's default algorithm, and a searched one


@pytest.fixture(scope="module")
def sparsity() -> dict[str, RunInput]:
    dirs = {d.name: d for d in sample_run_dirs()}
    return {pair: _run_input(dirs[run_id]) for pair, run_id in SPARSITY_IDS.items()}


def _gemm_flops(pair: str, sizes: dict[str, int]) -> int:
    """2mnk of one GEMM of the pair (each of the FFN's three GEMMs is tokens x hidden x ffn)."""
    if pair == "ch09.structured_sparsity":
        return 2 * sizes["m"] * sizes["n"] * sizes["k"]
    return 2 * sizes["tokens"] * sizes["hidden"] * sizes["ffn"]


@pytest.mark.slow
def test_sparse_kernels_are_found_by_name_and_counted_dense_equivalent(sparsity):
    """The cuSPARSELt GEMMs of the sparse24 and sparse24_tuned variants, and only they, match the
    sparse pattern (not their copy, transpose, silu or mul kernels): one per variant for the GEMM,
    three for the FFN. ncu counts their work as the dense-equivalent 2mnk exactly (the dense
    cuBLAS GEMMs count a little more: 192x192 tiles over 16384 or 65536 rows)."""
    for pair, run in sparsity.items():
        k = run.kernels
        sparse = k["kernel"].map(is_sparse_kernel)
        per_variant = 1 if pair == "ch09.structured_sparsity" else 3
        assert k.loc[sparse, "variant"].value_counts().to_dict() == dict.fromkeys(SPARSE_VARIANTS, per_variant), pair
        assert k.loc[sparse, "kernel"].str.contains("cusparselt").all()
        assert k.loc[sparse, "kernel"].str.contains("xmma_sparse").all()
        gemm = _gemm_flops(pair, run.info["sizes"])
        assert (k.loc[sparse, "flops_tensor_bf16"] == gemm).all(), pair
        tensor = k["flops_tensor_bf16"] > 0
        assert (tensor == sparse).loc[k["variant"].isin(SPARSE_VARIANTS)].all(), pair   # every other kernel: no MMA
        dense_gemms = k[(k["variant"] == "baseline") & tensor]
        assert len(dense_gemms) == per_variant
        assert (dense_gemms["flops_tensor_bf16"] > gemm).all() and not dense_gemms["kernel"].map(is_sparse_kernel).any()


def test_sparse_variants_are_bounded_by_the_sparse_roof_and_baseline_by_the_dense_one(sparsity):
    """Dense-equivalent FLOPs against the 2:4-sparse roof: a GEMM's compute % then equals ncu's
    tensor-pipe utilisation, for the sparse GEMMs (sparse24 49-58%, sparse24_tuned 74-78%) as for
    the dense ones (97-99%). Against the dense roof (half the sparse one) the sparse GEMMs would
    read twice that, 99-116% and 149-156%: at or above the roof."""
    expected = {"baseline": (97, 99), "sparse24": (49, 58.5), "sparse24_tuned": (74, 78.5)}
    seen = {v: [] for v in expected}
    for pair, run in sparsity.items():
        r = build_roofline([run])
        c = r.ceilings.compute
        peak = run.kernels["peak_tensor_bf16_flop_per_cycle"].iloc[0]        # 1,081,344 on this H200
        assert c["tensor_bf16_sparse"].per_cycle == peak == 2 * c["tensor_bf16"].per_cycle
        pipe = run.kernels.set_index("launch_id")["tensor_pipe_active_pct"]
        gemms = [p for p in r.points if not p.is_aggregate and p.flops_by_precision["tensor_bf16"]
                 + p.flops_by_precision["tensor_bf16_sparse"] > 0]
        assert {p.variant for p in gemms} == {"baseline"} | SPARSE_VARIANTS
        for p in gemms:
            sparse = p.variant in SPARSE_VARIANTS
            roof = "tensor_bf16_sparse" if sparse else "tensor_bf16"
            assert p.precision == roof, (pair, p.kernel)
            assert p.flops_by_precision["tensor_bf16" if sparse else "tensor_bf16_sparse"] == 0
            compute_pct = 100 * p.flops_by_precision[roof] / (c[roof].at_clocks(p.clocks_hz) * p.duration_ns * 1e-9)
            assert compute_pct == pytest.approx(pipe[p.launch_id], abs=0.3), (pair, p.kernel)
            assert p.pct_of_roof <= 100 and p.pct_of_roof >= compute_pct - 1e-9
            seen[p.variant].append(compute_pct)
        for v in SPARSE_VARIANTS:
            agg = _agg(r, v)
            assert agg.precision == "tensor_bf16_sparse" and agg.pct_of_roof < 80, (pair, v)
        assert _agg(r, "baseline").precision == "tensor_bf16" and _agg(r, "baseline").pct_of_roof > 90
        assert not _codes(r, "above_roof"), pair
    for v, (lo, hi) in expected.items():
        assert lo < min(seen[v]) and max(seen[v]) < hi, (v, seen[v])
    assert max(seen["sparse24"]) < min(seen["sparse24_tuned"])      # the searched algorithm keeps the pipe busier
    assert 2 * max(seen["sparse24"]) > 100 and 2 * min(seen["sparse24_tuned"]) > 100    # vs the dense roof


def test_measured_sparse_roof_is_twice_the_calibrated_dense_one_and_says_so(sparsity):
    cal = json.loads((H200 / "calibration_h200.json").read_text())
    c = with_measured(build_roofline([sparsity["ch09.structured_sparsity"]]).ceilings, cal, "test")
    dense, sparse = c.compute["tensor_bf16"], c.compute["tensor_bf16_sparse"]
    assert dense.measured_per_s == pytest.approx(cal["ceilings"]["flops_per_s"]["tensor_bf16"])
    assert sparse.measured_per_s == 2 * dense.measured_per_s and sparse.measured_derived and not dense.measured_derived
    assert "derived" in sparse.note and c.to_dict()["flops_per_s"]["tensor_bf16_sparse"]["measured_derived"]


# ----------------------------------------------------------------------------------- warnings

def _codes(result, code):
    return [w for w in result.warnings if w.code == code]


@pytest.mark.slow
def test_warning_point_above_its_roof(probes):
    k = probes.kernels.copy()
    k.loc[k["variant"] == "gemm_bf16", "duration_ns"] /= 2          # a wrong duration: 1.6 PFLOP/s in bf16
    edited = RunInput(probes.run_id, probes.info, k, {}, probes.gpu_name)
    found = _codes(build_roofline([edited]), "above_roof")
    assert {w.nvtx_range for w in found} == {"aisp/calibrate/gemm_bf16"}
    assert not _codes(build_roofline([probes]), "above_roof")


def test_warning_tma_kernels_l1_intensity(probes):
    r = build_roofline([probes])
    flagged = {w.nvtx_range for w in _codes(r, "tma_l1")}
    assert flagged == {f"aisp/calibrate/{v}" for v in ("gemm_bf16", "gemm_fp16", "gemm_tf32", "gemm_fp8")}
    assert not _kernel(r, "gemm_bf16").ai_l1_valid and _kernel(r, "gemm_fp64").ai_l1_valid


def test_warning_working_set_fits_in_l2(probes, sample):
    flagged = {w.nvtx_range for w in _codes(build_roofline([probes]), "fits_in_l2")}
    assert "aisp/calibrate/stream_l2" in flagged and "aisp/calibrate/copy_dram" not in flagged
    assert not _codes(build_roofline([sample]), "fits_in_l2")          # 512 MB working set


def test_warning_sm_clock_differs(sample):
    assert not _codes(build_roofline([sample]), "clock_differs")
    k = sample.kernels.copy()
    k.loc[k["variant"] == "cuda", "sm_clock_hz"] *= 0.9
    edited = RunInput(sample.run_id, sample.info, k, {}, sample.gpu_name)
    found = _codes(build_roofline([edited]), "clock_differs")
    assert [w.nvtx_range for w in found] == ["aisp/ch09.fused_l2norm/cuda"]


@pytest.mark.slow
def test_warning_settings_differ_between_compared_runs(tmp_path, sample_dbs):
    db = sample_dbs.copy(tmp_path / "a.db", _sample_dir())
    a = _sample_dir().name
    other = tmp_path / "other"
    other.mkdir()
    info = json.loads((_sample_dir() / "run.json").read_text())
    cmd = info["commands"]["ncu"]
    cmd[cmd.index("--clock-control") + 1] = "base"                   # the minimal edit
    info["run_id"] = SAMPLE_ID.replace("90df", "base")
    (other / "run.json").write_text(json.dumps(info))
    (other / "ncu_raw.csv").write_bytes(shipped_bytes(_sample_dir() / "ncu_raw.csv"))      # shipped gzipped
    for name in ("check.json.gz", "nsys.sqlite.gz"):     # the other exports its run.json names: a whole folder
        (other / name).write_bytes((_sample_dir() / name).read_bytes())
    b = store_path(db, other)
    r = open_db(db).roofline(a, b)
    found = _codes(r, "settings_differ")
    assert found and all("clock_control none vs base" in w.message for w in found)
    assert {(c.baseline.run_id, c.optimized.run_id) for c in r.comparisons} >= {(a, b)}
    assert not _codes(open_db(db).roofline(a), "settings_differ")


def test_warning_flop_mismatch_no_flops_and_hfma_moves(sample, probes):
    r = build_roofline([sample])
    assert {w.nvtx_range for w in _codes(r, "flop_mismatch")} == {"aisp/ch09.fused_l2norm/baseline",
                                                                 "aisp/ch09.fused_l2norm/cuda"}
    moves = _codes(r, "hfma_moves")
    assert moves and all(w.severity == "info" for w in moves)
    assert "aisp/ch09.fused_l2norm/cuda" in {w.nvtx_range for w in moves}
    assert "aisp/calibrate/copy_dram" in {w.nvtx_range for w in _codes(build_roofline([probes]), "no_flops")}


# ----------------------------------------------------------------------------------- DB readers

@pytest.mark.slow
def test_roofline_for_run_reads_the_db_and_measured_ceilings(tmp_path, sample_dbs):
    from aisp_prof.store.calibrations import save_calibration

    db = sample_dbs.copy(tmp_path / "a.db", _sample_dir())
    run_id = _sample_dir().name
    r = open_db(db).roofline("ch09.fused_l2norm")                      # a pair name: its newest run
    assert r.runs[0]["run_id"] == run_id
    cal = json.loads((H200 / "calibration_h200.json").read_text())
    cal["ceilings"]["dram_bytes_per_s"] = 1.0e12                       # the DB wins over the file
    save_calibration(db, cal)
    r = open_db(db).roofline(run_id)
    assert r.ceilings.bandwidth["dram"].measured_per_s == 1.0e12
    assert r.ceilings.measured_source["source"] == "db"
    d = r.to_dict()
    assert d["ceilings"]["dram_bytes_per_s"]["measured_per_s"] == 1.0e12
    assert d["ceilings"]["flops_per_s"]["fp32"]["measured_per_s"] == pytest.approx(6.0104e13, rel=1e-3)
    cuda = next(p for p in d["points"] if p["variant"] == "cuda" and p["kernel"] is None)
    assert cuda["pct_of_measured_roof"] > 100          # 3.95 TB/s against a pretend 1 TB/s ceiling
