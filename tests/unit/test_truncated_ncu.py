"""Issue 16 item 4: an ncu export cut short (or partly unreadable) exits 6 with the reason and
stores nothing. Real report: tests/fixtures/h200/cluster_group.ncu-rep.gz (4 launches, 13 blocks),
cut inside the test; a real CSV cut mid-row the same way."""
from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest
from repo_paths import FIXTURES
from click.testing import CliRunner

import aisp_prof
from aisp_prof.cli import cli
from aisp_prof.errors import ExportParseError
from aisp_prof.parse.ncu import rep as ncu_rep
from aisp_prof.parse.ncu.csv_page import _is_metric_header
from aisp_prof.parse.ncu.rep import ncu_report_available, parse_ncu_rep
from aisp_prof.parse.ncu.rep_frame import report_blocks

H200 = FIXTURES / "h200"
REPORT_GZ = H200 / "cluster_group.ncu-rep.gz"
CSV = H200 / "probe_curated_raw_base.csv"
needs_ncu_report = pytest.mark.skipif(
    not ncu_report_available(),
    reason="the ncu_report module (pip install ncu-report) is not importable here; the CSV tests below "
           "cover the same rule for CSV exports")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def report_bytes() -> bytes:
    return gzip.decompress(REPORT_GZ.read_bytes())


def _inside_last_result(data: bytes, tmp_path: Path) -> int:
    """Halfway through the last kernel's result block (bytes 187,187-213,914 of 213,914): the cut
    that leaves ncu_report a nameless, metricless last kernel."""
    whole = tmp_path / "whole.ncu-rep"
    whole.write_bytes(data)
    last = report_blocks(whole, whole)[-1]
    assert last.results == 1
    return (last.offset + last.end) // 2


# offsets: inside the file header, inside the second block's header (the first is 10-145: the
# process), a tenth, half, inside the last result, and one byte short
def _offsets(data: bytes, tmp_path: Path) -> list[int]:
    size = len(data)
    return [12, 150, size // 10, size // 2, _inside_last_result(data, tmp_path), size - 1]


def _store_one(db: Path) -> str:
    res = invoke("import", str(CSV), "--db", str(db))
    assert res.exit_code == 0, res.output
    return res.stdout.strip()


@needs_ncu_report
def test_whole_report_still_imports(tmp_path, report_bytes):
    whole = tmp_path / "whole.ncu-rep"
    whole.write_bytes(report_bytes)
    parsed = parse_ncu_rep(whole)
    assert len(parsed.launches) == 4 and parsed.launches["kernel"].notna().all()


@pytest.mark.slow
@needs_ncu_report
@pytest.mark.parametrize("k", range(6))
def test_cut_report_exits_6_and_stores_nothing(tmp_path, report_bytes, k):
    cut_at = _offsets(report_bytes, tmp_path)[k]
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(report_bytes[:cut_at])
    db = tmp_path / "a.db"
    res = invoke("import", str(cut), "--db", str(db))
    assert res.exit_code == 6, res.output
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "truncated" in err, err
    assert not db.exists()                          # nothing written, not even an empty database
    # into a database that holds a run: still nothing of this file
    kept = _store_one(db)
    res = invoke("import", str(cut), "--db", str(db))
    assert res.exit_code == 6
    api = aisp_prof.open_db(db)
    with pytest.raises(ExportParseError, match="truncated"):
        api.import_path(cut)
    assert api.runs()["run_id"].tolist() == [kept]


@pytest.mark.slow
@needs_ncu_report
def test_nameless_last_kernel_is_an_error_even_past_the_framing_check(tmp_path, report_bytes, monkeypatch):
    """Without the framing check, ncu_report reads this cut as 4 launches, the last with no name
    and no metrics (what issue 16 saw stored): the per-launch check refuses it."""
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(report_bytes[:_inside_last_result(report_bytes, tmp_path)])
    monkeypatch.setattr(ncu_rep, "check_report_frame", lambda path, source: None)
    with pytest.raises(ExportParseError, match="launch 3 has no (kernel name|metric values).*truncated"):
        parse_ncu_rep(cut)


@needs_ncu_report
def test_cut_gzip_report_exits_6(tmp_path):
    data = REPORT_GZ.read_bytes()
    cut = tmp_path / "cut.ncu-rep.gz"
    cut.write_bytes(data[: len(data) // 2])
    res = invoke("import", str(cut), "--db", str(tmp_path / "a.db"))
    assert res.exit_code == 6 and "gzip" in res.stderr
    assert not (tmp_path / "a.db").exists()


@pytest.mark.slow
def test_csv_cut_mid_row_exits_6_and_stores_nothing(tmp_path):
    """The CSV equivalent: cut anywhere inside the last launch row (mid-cell or between cells)."""
    text = CSV.read_bytes()
    last = text.rstrip(b"\n").rfind(b"\n") + 1
    db = tmp_path / "a.db"
    kept = _store_one(db)
    for cut_at in (last + 5, last + 1000, (last + len(text)) // 2, len(text) - 5):
        cut = tmp_path / "cut.csv"
        cut.write_bytes(text[:cut_at])
        res = invoke("import", str(cut), "--db", str(db))
        assert res.exit_code == 6, (cut_at, res.output)
        assert "truncated" in res.stderr and len(res.stderr.strip().splitlines()) == 1
        with pytest.raises(ExportParseError, match="truncated"):
            aisp_prof.open_db(db).import_path(cut)
    assert aisp_prof.open_db(db).runs()["run_id"].tolist() == [kept]


def _rewrite_last_row(src: Path, dst: Path, change) -> None:
    rows = list(csv.reader(src.open(newline="")))
    rows[-1] = change(rows[0], rows[-1])
    with dst.open("w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)


@pytest.mark.slow
def test_csv_launch_without_name_or_metrics_is_an_error(tmp_path):
    """A launch row whose kernel name, or every metric cell, is blank (a partly unreadable export)
    is refused, not stored as a nameless or empty kernel."""
    same = tmp_path / "same.csv"
    _rewrite_last_row(CSV, same, lambda header, row: row)
    assert len(aisp_prof.open_db(tmp_path / "ok.db").kernels(aisp_prof.open_db(tmp_path / "ok.db").import_path(same))) == 5

    nameless = tmp_path / "nameless.csv"
    _rewrite_last_row(CSV, nameless, lambda header, row: ["" if h == "Kernel Name" else c for h, c in zip(header, row)])
    with pytest.raises(ExportParseError, match="launch 4 has no kernel name.*truncated"):
        aisp_prof.open_db(tmp_path / "a.db").import_path(nameless)

    bare = tmp_path / "bare.csv"
    _rewrite_last_row(CSV, bare, lambda header, row: ["" if _is_metric_header(h) else c for h, c in zip(header, row)])
    res = invoke("import", str(bare), "--db", str(tmp_path / "b.db"))
    assert res.exit_code == 6 and "launch 4 has no metric values" in res.stderr, res.stderr
    assert not (tmp_path / "b.db").exists()
