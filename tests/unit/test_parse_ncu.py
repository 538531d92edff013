"""Golden tests of the ncu export parsers against real H200 exports (tests/fixtures/h200).

Every expected number below was read from the fixture files themselves; the comments say which
cell and unit it comes from.
"""
from __future__ import annotations

import csv
import gzip
import random
import sys
from pathlib import Path

import pytest
from repo_paths import FIXTURES

from aisp_prof.errors import CounterPermissionError, ExportParseError
from aisp_prof.parse.metrics.table import STALL_REASONS, TENSOR_PATHS
from aisp_prof.parse.ncu.csv_page import IDENTITY_COLUMNS, parse_ncu_csv, parse_nvtx_stack
from aisp_prof.parse.ncu.export import parse_ncu_export
from aisp_prof.parse.ncu.rep import parse_ncu_rep
from aisp_prof.parse.metrics.units import base_unit

FULL_RAW = FIXTURES / "h200" / "l2norm_pair_full_raw.csv"         # --set full, default units
CURATED = FIXTURES / "h200" / "probe_curated_raw_base.csv"        # curated list, base units
DETAILS = FIXTURES / "h200" / "l2norm_pair_full_details.csv"


def _csv_rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        return list(csv.reader(f))


def _unit_of(path: Path, metric: str) -> str:
    header, units = _csv_rows(path)[:2]
    return units[header.index(metric)]


@pytest.fixture(scope="module")
def full():
    return parse_ncu_csv(FULL_RAW)


@pytest.fixture(scope="module")
def curated():
    return parse_ncu_csv(CURATED)


def _metric(parse, launch_id: int, name: str):
    m = parse.metrics
    row = m[(m["launch_id"] == launch_id) & (m["metric"] == name)]
    assert len(row) == 1, name
    return row["unit"].iloc[0], row["value"].iloc[0]


# ------------------------------------------------------------------ default units, --set full

def test_full_launches_and_identity(full):
    assert len(_csv_rows(FULL_RAW)) == 8  # header, units row, 6 launches
    launches = full.launches
    assert list(launches.columns[: len(IDENTITY_COLUMNS)]) == list(IDENTITY_COLUMNS)
    assert launches["launch_id"].tolist() == [0, 1, 2, 3, 4, 5]
    assert launches["kernel"][0] == (
        "void at::vectorized_elementwise_kernel<4, at::BinaryFunctor<float, float, float, "
        "binary_internal::MulFunctor<float>>, std::array<char *, 3>>(int, T2, T3)"
    )
    assert launches["kernel"][5] == "triton_red_fused_add_div_mul_sqrt_sum_0"
    assert launches["nvtx_range"].tolist() == ["baseline"] * 5 + ["optimized"]
    assert set(launches["nvtx_domain"]) == {"<default domain>"}
    assert launches["process_id"].tolist() == [543] * 6
    assert launches["block_dim"][1] == "(32, 16, 1)"
    assert launches["grid_dim"][4] == "(131072, 1, 1)"
    assert set(launches["cc"]) == {"9.0"}
    assert launches["stream"].tolist() == [7] * 6


def test_full_time_bytes_clock_converted_to_base_units(full):
    launches = full.launches
    assert _unit_of(FULL_RAW, "gpu__time_duration.sum") == "us"  # "63.424000" us
    assert launches["duration_ns"][0] == 63424.0
    assert launches["duration_ns"][5] == 61600.0
    assert _unit_of(FULL_RAW, "dram__bytes_read.sum") == "Mbyte"  # "134.229248" Mbyte
    assert launches["dram_read_bytes"][0] == 134_229_248.0
    # ncu's Mbyte is 10**6 byte: the same launch read 4,194,664 sectors of 32 bytes
    assert _metric(full, 0, "dram__sectors_read.sum") == ("sector", 4_194_664.0)
    assert launches["dram_read_bytes"][0] == 4_194_664 * 32
    assert _unit_of(FULL_RAW, "sm__cycles_elapsed.avg.per_second") == "Ghz"  # "1.917473"
    assert launches["sm_clock_hz"][0] == 1_917_473_000.0
    assert _unit_of(FULL_RAW, "dram__bytes.sum.peak_sustained") == "Kbyte/cycle"  # "1.504000"
    assert set(launches["peak_dram_bytes_per_cycle"]) == {1504.0}


def test_full_thousands_separators(full):
    launches = full.launches
    assert launches["shared_wavefronts"][5] == 1_875_173.0       # "1,875,173"
    assert launches["grid_size"][4] == 131_072.0                 # launch__grid_size "131,072"
    assert set(launches["peak_tensor_fp16_flop_per_cycle"]) == {1_081_344.0}  # "1,081,344"


def test_full_stalls_present_and_absent_metrics_absent(full):
    columns = set(full.launches.columns)
    assert {f"stall_{r}" for r in STALL_REASONS} <= columns
    assert full.launches["stall_long_scoreboard"][0] == 154.903465
    # --set full does not collect these: absent columns, not NaN columns
    for missing in ("sol_dram_pct", "sol_l1_pct", "peak_l1_bytes_per_cycle", "flops_tensor_fp8"):
        assert missing not in columns
    # ...and has the FP instruction counters only as rates and the L2/L1 bytes only as sectors:
    # derived, and marked so (issue 16; tests/unit/test_sector_bytes.py)
    assert {"inst_ffma", "l2_bytes", "l1_bytes"} <= columns
    assert all({"inst_ffma", "l2_bytes", "l1_bytes"} <= set(labels.split(","))
               for labels in full.launches["derived_from_rates"])


def test_full_long_form_rates_and_compound_units(full):
    # "203.387235" sector/ns
    assert _metric(full, 0, "lts__t_sectors.sum.per_second") == ("sector/second", 203_387_235_000.0)
    # "3.849869" Tbyte/s
    assert _metric(full, 0, "dram__bytes.sum.per_second") == ("byte/second", 3_849_869_000_000.0)
    # "409.939455" sector/ms
    assert _metric(full, 0, "lts__t_sectors_data_ecc.sum.per_second") == (
        "sector/second", 409_939.455)
    # "1.591000" %/Kbyte
    assert _metric(full, 0, "derived__pct_occupancy_per_shared_mem_size") == ("%/byte", 0.001591)
    # "32.768000" Kbyte
    assert _metric(full, 0, "launch__shared_mem_config_size") == ("byte", 32_768.0)
    # strings ("NVIDIA H200", "No-CC") are not metrics values
    assert "device__attribute_display_name" not in set(full.metrics["metric"])


# ------------------------------------------------------------------ base units, curated list

def test_curated_launches(curated):
    launches = curated.launches
    assert launches["launch_id"].tolist() == [0, 1, 2, 3, 4]
    assert launches["nvtx_range"].tolist() == [
        "aisp/pairA/baseline", "aisp/pairA/baseline", "aisp/pairA/optimized",
        "aisp/pairG/graph", "aisp/pairG/graph",
    ]
    assert launches["duration_ns"].tolist() == [9312.0, 9536.0, 9696.0, 9856.0, 9472.0]
    assert launches["inst_ffma"].tolist() == [0.0, 8_388_608.0, 16_777_216.0, 22_864_461.0,
                                              29_360_128.0]
    assert set(launches["peak_ffma_per_cycle"]) == {16896.0}
    for precision in TENSOR_PATHS:
        assert set(launches[f"flops_tensor_{precision}"]) == {0.0}
    assert launches["sm_clock_hz"][0] == 2_033_641_830.68        # "2,033,641,830.68" hz
    assert launches["l2_bytes"][0] == 52_223_936.0               # "52,223,936" byte


def test_curated_long_form_has_every_numeric_cell(curated):
    rows = _csv_rows(CURATED)
    header, units, data = rows[0], rows[1], rows[2:]
    expected = set()
    for row in data:
        for name, cell in list(zip(header, row))[13:]:  # the 13 identity columns come first
            try:
                float(cell.replace(",", ""))
            except ValueError:
                continue
            expected.add((int(row[0]), name))
    got = set(zip(curated.metrics["launch_id"], curated.metrics["metric"]))
    assert got == expected
    assert len(curated.metrics) == len(expected)
    assert _metric(curated, 0, "gpu__time_duration.sum") == ("ns", 9312.0)
    assert _metric(curated, 0, "sm__cycles_elapsed.avg.per_second")[0] == "hz"
    assert units[header.index("gpu__time_duration.sum")] == "ns"


def test_prof_lines_around_csv_are_skipped(tmp_path):
    text = CURATED.read_text()
    noisy = tmp_path / "noisy.csv"
    noisy.write_text(
        "==PROF== Connected to process 905 (/usr/bin/python3.12)\n"
        "==WARNING== Note: Running with unmodified GPU clocks.\n"
        + text + "==PROF== Disconnected from process 905\n"
    )
    parsed = parse_ncu_csv(noisy)
    assert parsed.launches.equals(parse_ncu_csv(CURATED).launches)


def test_na_tidy_cell_is_nan(tmp_path):
    rows = _csv_rows(CURATED)
    rows[4][rows[0].index("gpu__time_duration.sum")] = "n/a"  # launch 2
    path = tmp_path / "na.csv"
    with path.open("w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    durations = parse_ncu_csv(path).launches["duration_ns"]
    assert durations.isna().tolist() == [False, False, True, False, False]


# ------------------------------------------------------------------ NVTX and units

def test_nvtx_stack_forms():
    # from probe_curated_raw_base.csv and l2norm_pair_full_raw.csv
    nested = ('905  "<default domain>:aisp:none:none:RGB:0xff:REGISTERED:aisp"  '
              '"<default domain>:pairA:none:none:RGB:0xff:REGISTERED:pairA"  '
              '"<default domain>:baseline:none:none:RGB:0xff:REGISTERED:baseline" ')
    assert parse_nvtx_stack(nested) == [
        ("<default domain>", "aisp"), ("<default domain>", "pairA"),
        ("<default domain>", "baseline")]
    old = '543  "<default domain>:baseline:none:none:none:none:none:none" '
    assert parse_nvtx_stack(old) == [("<default domain>", "baseline")]
    # as ncu 2025.3.1 writes a flat name with slashes and a range in the NVTX domain "aisp"
    flat = ('469  "<default domain>:aisp/pairB/baseline:none:none:RGB:0xff:REGISTERED:'
            'aisp/pairB/baseline" ')
    assert parse_nvtx_stack(flat) == [("<default domain>", "aisp/pairB/baseline")]
    named = '469  "aisp:pairC/baseline:none:none:RGB:0xff:REGISTERED:pairC/baseline" '
    assert parse_nvtx_stack(named) == [("aisp", "pairC/baseline")]
    assert parse_nvtx_stack("") == []
    # a name with ':' survives when Msg repeats it
    colon = '1  "<default domain>:a:b:none:none:RGB:0xff:REGISTERED:a:b" '
    assert parse_nvtx_stack(colon) == [("<default domain>", "a:b")]


@pytest.mark.parametrize("unit, expected", [
    ("us", ("ns", 3)), ("usecond", ("ns", 3)), ("ns", ("ns", 0)), ("ms", ("ns", 6)),
    ("Mbyte", ("byte", 6)), ("Gbyte/s", ("byte/second", 9)), ("byte/s", ("byte/second", 0)),
    ("Tbyte/second", ("byte/second", 12)), ("sector/ns", ("sector/second", 9)),
    ("Ghz", ("hz", 9)), ("cycle/usecond", ("hz", 6)), ("Kbyte/block", ("byte/block", 3)),
    ("%/Kbyte", ("%/byte", -3)), ("inst", ("inst", 0)), ("", ("", 0)),
])
def test_base_unit_table(unit, expected):
    assert base_unit(unit) == expected


# ------------------------------------------------------------------ bad input

def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


@pytest.mark.parametrize("content, message", [
    ("", "empty"),
    ("\n  \n", "empty"),
    ("a,b\n1,2\n", "no ncu CSV header"),
    (random.Random(0).randbytes(4096), "not"),
])
def test_bad_files(tmp_path, content, message):
    with pytest.raises(ExportParseError, match=message):
        parse_ncu_csv(_write(tmp_path, "bad.csv", content))


def test_header_only(tmp_path):
    lines = CURATED.read_text().splitlines(keepends=True)
    for kept in (lines[:1], lines[:2]):  # header; header and units row
        with pytest.raises(ExportParseError, match="no kernels"):
            parse_ncu_csv(_write(tmp_path, "header.csv", "".join(kept)))


def test_truncated_inside_a_quoted_cell(tmp_path):
    text = CURATED.read_text()
    cut = text[: text.rindex('"9.0"') + 2]  # ends inside the last row's CC cell
    with pytest.raises(ExportParseError, match="truncated"):
        parse_ncu_csv(_write(tmp_path, "cut.csv", cut))


def test_truncated_between_cells(tmp_path):
    text = CURATED.read_text()
    cut = text[: text.rindex('"9.0",') + len('"9.0",')]  # last row stops after its CC cell
    with pytest.raises(ExportParseError, match="truncated"):
        parse_ncu_csv(_write(tmp_path, "cut.csv", cut))


def test_counter_permission_error(tmp_path):
    text = ("==PROF== Connected to process 905 (/usr/bin/python3.12)\n"
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
            "Performance Counters on the target device 0.\n")
    with pytest.raises(CounterPermissionError):
        parse_ncu_csv(_write(tmp_path, "perm.csv", text))


def test_other_ncu_error(tmp_path):
    text = "==ERROR== The application returned an error code (1).\n"
    with pytest.raises(ExportParseError, match="error code"):
        parse_ncu_csv(_write(tmp_path, "err.csv", text))


def test_non_numeric_tidy_cell(tmp_path):
    rows = _csv_rows(CURATED)
    rows[4][rows[0].index("gpu__time_duration.sum")] = "fast"
    path = tmp_path / "word.csv"
    with path.open("w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    with pytest.raises(ExportParseError, match="gpu__time_duration.sum"):
        parse_ncu_csv(path)


def test_details_page_refused():
    with pytest.raises(ExportParseError, match="details"):
        parse_ncu_csv(DETAILS)


def test_missing_file(tmp_path):
    with pytest.raises(ExportParseError):
        parse_ncu_csv(tmp_path / "nope.csv")


# ------------------------------------------------------------------ dispatcher and .ncu-rep

def test_dispatch_by_suffix(tmp_path):
    assert parse_ncu_export(CURATED).launches.equals(parse_ncu_csv(CURATED).launches)
    with pytest.raises(ExportParseError, match="not an ncu export"):
        parse_ncu_export(_write(tmp_path, "x.txt", "hello"))


def test_rep_gz_not_gzip(tmp_path):
    with pytest.raises(ExportParseError, match="gzip"):
        parse_ncu_export(_write(tmp_path, "x.ncu-rep.gz", b"not gzip at all"))


def test_rep_garbage(tmp_path):
    junk = random.Random(1).randbytes(4096)
    with pytest.raises(ExportParseError):
        parse_ncu_rep(_write(tmp_path, "junk.ncu-rep", junk))
    with pytest.raises(ExportParseError):
        parse_ncu_rep(_write(tmp_path, "junk.ncu-rep.gz", gzip.compress(junk)))


def test_rep_without_ncu_report(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # makes `import ncu_report` fail
    with pytest.raises(ExportParseError, match="ncu-report"):
        parse_ncu_rep(_write(tmp_path, "x.ncu-rep", b"whatever"))


def _rep_pairs() -> list[tuple[Path, Path]]:
    """(X.ncu-rep[.gz], X_raw_base.csv[.gz]) fixture pairs made from the same report."""
    pairs = []
    for rep in sorted(FIXTURES.rglob("*.ncu-rep*")):
        stem = rep.name.split(".ncu-rep")[0]
        pairs += [(rep, c) for c in (rep.with_name(f"{stem}_raw_base.csv{gz}") for gz in ("", ".gz")) if c.exists()]
    return pairs


def assert_rep_matches_csv(rep_path: Path, csv_path: Path) -> None:
    """The report and its CSV export describe the same launches with the same durations."""
    rep, text = parse_ncu_rep(rep_path), parse_ncu_csv(csv_path)
    assert rep.launches["launch_id"].tolist() == text.launches["launch_id"].tolist()
    assert rep.launches["nvtx_range"].tolist() == text.launches["nvtx_range"].tolist()
    assert rep.launches["duration_ns"].tolist() == pytest.approx(
        text.launches["duration_ns"].tolist(), rel=0.01)


@pytest.mark.slow
def test_rep_matches_csv():
    pairs = _rep_pairs()
    if not pairs:
        pytest.skip("no tests/fixtures/**/X.ncu-rep[.gz] with a sibling X_raw_base.csv[.gz] yet")
    for rep_path, csv_path in pairs:
        assert_rep_matches_csv(rep_path, csv_path)
