"""Issue 16: an ncu export cut exactly between two blocks (a `.ncu-rep`) or two rows (a CSV).

A real report (tests/fixtures/h200/cluster_group.ncu-rep.gz: 13 blocks, 4 kernels) is cut at the end of
every block. Its layout (`parse.ncu.rep_frame`): 0 the process; 1 the module of all four kernels; 2
the first result; 3-9 the session (9: ncu's command line); then a result for each further kernel
(10, 11, 12: no module of their own, the first one holds them). Cuts after the module, or between the
first result and the command line, are refused; cuts after block 0 hold no kernel (refused by the
parser); cuts after the command line or after any result are byte for byte a whole report of fewer
kernels, which nothing in the format can tell (no count, no trailer). For aisp-prof's run folders run.json's `ncu_kernels_profiled` can:
a real run folder's CSV cut at each row boundary is refused.
"""
from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

import pytest
from repo_paths import FIXTURES
from click.testing import CliRunner

import aisp_prof
from aisp_prof.cli import cli
from aisp_prof.errors import ExportParseError
from aisp_prof.parse.ncu.rep import ncu_report_available, parse_ncu_rep
from aisp_prof.parse.ncu.rep_frame import check_report_frame, report_blocks

H200 = FIXTURES / "h200"
REPORT_GZ = H200 / "cluster_group.ncu-rep.gz"   # aisp-prof run ch10.cluster_group, H200 (README there)
RUN_DIR = H200 / "calibrate_probe_run"            # a real `aisp-prof calibrate --profile` run folder, 10 kernels
SEEN_AS_CUT = {1, 2, 3, 4, 5, 6, 7, 8}           # after the module, after result 1, inside the session
NO_KERNEL = {0}
LOOKS_WHOLE = {9, 10, 11}                         # after the command line, after results 2 and 3
needs_ncu_report = pytest.mark.skipif(not ncu_report_available(), reason="the ncu_report module is not importable here")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[bytes, list]:
    data = gzip.decompress(REPORT_GZ.read_bytes())
    whole = tmp_path_factory.mktemp("rep") / "whole.ncu-rep"
    whole.write_bytes(data)
    return data, report_blocks(whole, whole)


def test_layout_of_the_real_report(report):
    data, blocks = report
    assert len(blocks) == 13 and blocks[-1].end == len(data)
    assert [i for i, b in enumerate(blocks) if b.results] == [2, 10, 11, 12]
    assert [i for i, b in enumerate(blocks) if b.modules] == [1]
    assert [i for i, b in enumerate(blocks) if b.command_line] == [9]
    assert SEEN_AS_CUT | NO_KERNEL | LOOKS_WHOLE == set(range(12))


@pytest.mark.slow
def test_framing_at_every_block_boundary(tmp_path, report):
    data, blocks = report
    cut = tmp_path / "cut.ncu-rep"
    for k, block in enumerate(blocks):
        cut.write_bytes(data[:block.end])
        if k in SEEN_AS_CUT:
            with pytest.raises(ExportParseError, match="truncated"):
                check_report_frame(cut, cut)
        else:                                   # whole, or looks whole: nothing in the file says otherwise
            check_report_frame(cut, cut)


def _import_cut(tmp_path: Path, report, k: int):
    data, blocks = report
    cut = tmp_path / f"cut{k}.ncu-rep"
    cut.write_bytes(data[:blocks[k].end])
    db = tmp_path / f"{k}.db"
    res = invoke("import", str(cut), "--db", str(db))
    assert res.exit_code == 6, (k, res.output)
    assert len(res.stderr.strip().splitlines()) == 1, (k, res.stderr)
    assert not db.exists()
    return res.stderr


@pytest.mark.slow
def test_cuts_the_framing_shows_exit_6_and_store_nothing(tmp_path, report):
    """Refused before `ncu_report` is needed: the same answer where it is not installed."""
    for k in sorted(SEEN_AS_CUT):
        assert "truncated" in _import_cut(tmp_path, report, k), k


@needs_ncu_report
def test_a_cut_before_any_kernel_exits_6(tmp_path, report):
    assert "no kernels" in _import_cut(tmp_path, report, 0)


@needs_ncu_report
def test_a_cut_after_a_result_reads_as_a_shorter_report(tmp_path, report):
    """The limit, shown: cut after the 3rd result (block 11) the report is a 3-kernel report."""
    data, blocks = report
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[:blocks[11].end])
    assert len(parse_ncu_rep(cut).launches) == 3


def _cut_rows(src: Path, dst: Path, keep: int) -> None:
    """The CSV with its header, units row and first `keep` launch rows: cut at a line end."""
    lines = src.read_bytes().splitlines(keepends=True)
    dst.write_bytes(b"".join(lines[:2 + keep]))


@pytest.mark.slow
def test_run_folder_with_fewer_launches_than_ncu_profiled_exits_6(tmp_path):
    whole = aisp_prof.open_db(tmp_path / "ok.db")
    assert len(whole.kernels(whole.import_path(RUN_DIR))) == 10          # run.json: ncu_kernels_profiled 10
    for keep in range(1, 10):
        folder = tmp_path / f"run{keep}"
        shutil.copytree(RUN_DIR, folder)
        _cut_rows(RUN_DIR / "ncu_raw.csv", folder / "ncu_raw.csv", keep)
        db = tmp_path / f"{keep}.db"
        res = invoke("import", str(folder), "--db", str(db))
        assert res.exit_code == 6, (keep, res.output)
        err = res.stderr.strip()
        assert len(err.splitlines()) == 1 and f"holds {keep} kernel launch(es), but ncu profiled 10" in err, err
        assert "truncated" in err and not db.exists()
        # the same file imported on its own, from its run folder: the same refusal
        res = invoke("import", str(folder / "ncu_raw.csv"), "--db", str(db))
        assert res.exit_code == 6 and "ncu profiled 10" in res.stderr and not db.exists()


def test_the_cut_csv_elsewhere_is_a_shorter_export(tmp_path):
    """Away from its run folder nothing says how many launches there were: the limit, shown."""
    alone = tmp_path / "ncu_raw.csv"
    _cut_rows(RUN_DIR / "ncu_raw.csv", alone, 4)
    api = aisp_prof.open_db(tmp_path / "a.db")
    assert len(api.kernels(api.import_path(alone))) == 4


def test_the_framing_answers_where_ncu_report_is_missing(tmp_path, report, monkeypatch):
    data, blocks = report
    monkeypatch.setitem(sys.modules, "ncu_report", None)      # makes `import ncu_report` fail
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[:blocks[1].end])
    with pytest.raises(ExportParseError, match="after a kernel's module .*truncated"):
        parse_ncu_rep(cut)
    whole = tmp_path / "whole.ncu-rep"
    whole.write_bytes(data)
    with pytest.raises(ExportParseError, match="needs the `ncu_report` module"):
        parse_ncu_rep(whole)
