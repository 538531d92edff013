"""Issue 16 (ncu side): exports made the way users make them, not by aisp-prof.

Real H100 exports (tests/fixtures/foreign_h100/, see the README there): `full_raw_base.csv` is
`ncu --set full` of four kernels (an FP32 SIMT GEMM, an FP64 and an FP16 addcmul, an FP32 add),
which holds the FP instruction counters only as `.sum.per_cycle_elapsed` rates; `sum_raw_base.csv`
is the same four kernels profiled with aisp-prof's own `.sum` list, the reference counts.
"""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from click.testing import CliRunner

import aisp_prof
from aisp_prof.analyze.kernels.flops import add_flops_and_bytes
from aisp_prof.cli import cli
from aisp_prof.parse.metrics.table import BY_COLUMN
from aisp_prof.parse.metrics.units import number_text
from aisp_prof.parse.metrics.rate_counts import DERIVED_COLUMN, rate_sources

from foreign_exports import FULL, SUM, by_range, full, summed  # noqa: F401 - full, summed: fixtures

INST = ("inst_dadd", "inst_dmul", "inst_dfma", "inst_fadd", "inst_fmul", "inst_ffma", "inst_hadd", "inst_hmul",
        "inst_hfma")
GEMM, FP64, FP16, ADD = "foreign/fp32_gemm", "foreign/fp64_fma", "foreign/fp16_fma", "foreign/fp32_add"
# The CSV prints base-unit values with two decimals: a rate r and the elapsed cycles c are each
# within 0.005 of the measured value, so r*c is within 0.005*c + 0.005*r (+ 0.005^2) of it.
HALF_ULP = 0.005


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_set_full_has_rates_only_and_sum_export_has_counts(full, summed):
    header = next(csv.reader(FULL.open()))
    assert "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum" not in header
    assert "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed" in header
    # counts the .sum export has are counted, not derived: no marker column at all
    assert DERIVED_COLUMN not in summed.launches
    # the FP counters from rates, the L2/L1 byte figures from sectors (tests/unit/test_sector_bytes.py)
    assert set(full.launches[DERIVED_COLUMN].str.split(",").explode()) == set(INST) | {
        "l2_bytes", "l1_bytes", "peak_l2_bytes_per_cycle", "sol_l2_pct"}


def test_derived_counts_agree_with_sum_capture_within_csv_rounding(full, summed):
    """Per kernel and FP op: |derived - .sum| <= 0.005 x smsp cycles + 0.005 x rate (CSV rounding).
    Instruction counts of these kernels are the same in every run, so the two captures compare."""
    cycles = full.launch_metrics.column_values("smsp__cycles_elapsed.avg")
    seen = {}
    for rng, i in by_range(full).items():
        j = by_range(summed)[rng]
        for col in INST:
            rate = full.launch_metrics.column_values(rate_sources(BY_COLUMN[col].raw)[0][0])[i]
            derived, counted = full.launches[col][i], summed.launches[col][j]
            bound = HALF_ULP * cycles[i] + HALF_ULP * rate + HALF_ULP ** 2
            assert abs(derived - counted) <= bound, (rng, col, derived, counted, bound)
            seen[(rng, col)] = (derived, counted)
    # the counts that matter, as the .sum capture has them
    assert seen[(GEMM, "inst_ffma")][1] == 1_074_790_400 and seen[(FP64, "inst_dfma")][1] == 1_048_576
    assert seen[(FP16, "inst_hadd")][1] == 12_582_912 and seen[(ADD, "inst_ffma")][1] == 1_048_576


def test_flops_of_gemm_and_fp64_kernel_are_not_zero(full, summed):
    f, s = add_flops_and_bytes(full.launches), add_flops_and_bytes(summed.launches)
    i, j = by_range(full), by_range(summed)
    assert f["flops_fp32"][i[GEMM]] == pytest.approx(s["flops_fp32"][j[GEMM]], rel=1e-6)   # 2.15 GFLOP
    assert f["flops_fp32"][i[GEMM]] > 2e9
    assert f["flops_fp64"][i[FP64]] == pytest.approx(2 * 1_048_576, rel=1e-4)
    assert f["flops_fp16"][i[FP16]] == pytest.approx(s["flops_fp16"][j[FP16]], rel=1e-5)


def _cell(text: str) -> float | None:
    num = number_text(text)
    return None if num is None else float(num)


def test_rate_formula_holds_for_every_counter_with_both_forms():
    """Every `.sum` in the --set full export that also has a `.sum.per_cycle_elapsed` or
    `.sum.per_second` rate (smsp, sm, l1tex, lts, dram, ... units): rate x the unit's elapsed
    cycles (or x gpu__time_duration) gives the count within the CSV's rounding. This is the
    formula `rate_counts` applies where only the rate is there."""
    rows = list(csv.reader(FULL.open()))
    header, launches = rows[0], rows[2:]
    col = {name: k for k, name in enumerate(header)}
    checked = 0
    for name in header:
        if not name.endswith(".sum") or name in ("gpu__time_duration.sum",):
            continue
        for rate_name, by_name, scale in rate_sources(name):
            if rate_name not in col or by_name not in col:
                continue
            for row in launches:
                count, rate, by = (_cell(row[col[n]]) for n in (name, rate_name, by_name))
                if None in (count, rate, by):
                    continue
                bound = (HALF_ULP * by + HALF_ULP * abs(rate)) * scale + 1e-6
                assert abs(rate * by * scale - count) <= bound, (name, rate_name, count, rate * by * scale)
                checked += 1
    assert checked >= 400          # 428 in this export


@pytest.mark.slow
def test_set_full_gemm_gets_a_roofline_point_marked_derived(tmp_path):
    db = aisp_prof.open_db(tmp_path / "a.db")
    run_id = db.import_path(FULL)
    points = db.roofline_points(run_id)
    gemm = points[(points["nvtx_range"] == GEMM) & points["kernel"].notna()]
    assert len(gemm) == 1
    assert gemm["precision"].iloc[0] == "fp32" and gemm["flops"].iloc[0] > 2e9
    assert gemm["ai_dram_flop_per_byte"].iloc[0] > 100            # 2.15 GFLOP over 8.5 MB
    fp64 = points[(points["nvtx_range"] == FP64) & points["kernel"].notna()]
    assert fp64["precision"].iloc[0] == "fp64" and fp64["flops"].iloc[0] > 0
    warnings = [w for w in db.roofline(run_id).warnings if w.code == "counts_from_rates"]
    assert len(warnings) == 1 and "inst_ffma" in warnings[0].message
    # the marker survives storage: kernels() and the summary say which counts are derived
    kernels = db.kernels(run_id)
    assert kernels[DERIVED_COLUMN].str.contains("inst_ffma").all()
    summary = db.summary(run_id)
    assert all("inst_ffma" in cols for cols in summary["derived_from_rates"])


@pytest.mark.slow
def test_cli_shows_derived_flops(tmp_path):
    db = str(tmp_path / "a.db")
    assert invoke("import", str(FULL), "--db", db).exit_code == 0
    rows = json.loads(invoke("kernels", "latest", "--db", db, "--json").stdout)
    gemm = next(r for r in rows if r["nvtx_range"] == GEMM)
    assert gemm["flops"]["fp32"] > 2e9 and "inst_ffma" in gemm["derived_from_rates"].split(",")
    text = invoke("summary", "latest", "--db", db).stdout
    assert "FLOPs (derived from rates)" in text and "2.15 G*" in text
    assert "FLOPs (derived from rates)" in invoke("kernels", "latest", "--db", db).stdout
    roofline = json.loads(invoke("roofline", "latest", "--db", db, "--json").stdout)
    assert any(p["nvtx_range"] == GEMM and p["flops"] > 2e9 for p in roofline["points"])
    assert any(w["code"] == "counts_from_rates" for w in roofline["warnings"])


@pytest.mark.slow
def test_sum_export_is_not_marked(tmp_path):
    db = str(tmp_path / "a.db")
    assert invoke("import", str(SUM), "--db", db).exit_code == 0
    rows = json.loads(invoke("kernels", "latest", "--db", db, "--json").stdout)
    assert all(r["derived_from_rates"] is None for r in rows)
    summary = json.loads(invoke("summary", "latest", "--db", db, "--json").stdout)["summary"]
    assert all("derived_from_rates" not in s for s in summary)
    assert "derived from rates" not in invoke("summary", "latest", "--db", db).stdout
    assert "derived from rates" not in invoke("kernels", "latest", "--db", db).stdout


def test_derived_values_are_finite_where_rates_are(full):
    for col in INST:
        assert np.isfinite(full.launches[col]).all()
