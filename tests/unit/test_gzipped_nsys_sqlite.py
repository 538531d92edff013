"""A run folder's nsys SQLite exports, check report and generated-code index may be kept gzipped
(`nsys.sqlite.gz`, `nsys.rank<r>.sqlite.gz`, `check.json.gz`, `generated/index.json.gz`: the shipped
samples are, dev/shrink_samples.py): the
folder, and the export imported by itself or as a job's rank, read exactly as the plain files. The
export is decompressed into a temporary folder that is always removed; a cut or corrupt gzip is one
line, exit 6, and stores nothing.
Data: real run folders (profiles/samples/...ch09.fused_l2norm, an H200 run; the 2-rank
ch14.quantized_allreduce on 2x H100) and tests/fixtures/multigpu_h100x2's rank exports."""
from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from repo_paths import ROOT
from click.testing import CliRunner

from aisp_prof.cli import cli
from aisp_prof.errors import ExportParseError
from aisp_prof.parse.code.generated_code import read_index
from aisp_prof.parse.nsys.sqlite_export import parse_nsys_sqlite
from aisp_prof.store.ingest import load_run_dir
from sample_files import plain_copy

SAMPLE = ROOT / "profiles" / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"
TWO_RANKS = next(p for p in sorted((ROOT / "profiles" / "samples_h100x2_ch14").glob("*")) if (p / "run.json").exists())
FIXTURE = ROOT / "tests" / "fixtures" / "multigpu_h100x2"
COMPILED = next((ROOT / "profiles" / "samples_h100_ch14").glob("*ch14.graph_break_control_flow*"))
FRAMES = ("kernels", "timeline", "memory_ops", "ranges", "range_levels", "graph_launches", "checks", "timings",
          "samples", "compiles")


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """The temporary folder decompression uses, to see that nothing is left in it."""
    where = tmp_path / "scratch"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def _gz(path: Path) -> Path:
    target = path.with_name(path.name + ".gz")
    target.write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    return target


def _same(a, b) -> None:
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), obj=name)


def test_the_shipped_samples_are_gzipped():
    assert (SAMPLE / "nsys.sqlite.gz").is_file() and not (SAMPLE / "nsys.sqlite").exists()
    assert (SAMPLE / "check.json.gz").is_file() and (TWO_RANKS / "nsys.rank1.sqlite.gz").is_file()


def test_a_gzipped_run_folder_reads_as_the_plain_one(tmp_path, scratch):
    plain = load_run_dir(plain_copy(SAMPLE, tmp_path / "plain" / SAMPLE.name))
    assert len(plain.timeline) > 0 and len(plain.checks) > 0 and len(plain.timings) > 0
    _same(plain, load_run_dir(SAMPLE))
    assert not list(scratch.iterdir())                                  # the plain copies are gone


def test_a_gzipped_generated_code_index_reads_as_the_plain_one(tmp_path):
    assert (COMPILED / "generated" / "index.json.gz").is_file()
    plain = tmp_path / "plain"
    (plain / "generated").mkdir(parents=True)
    shipped = (COMPILED / "generated" / "index.json.gz").read_bytes()
    (plain / "generated" / "index.json").write_bytes(gzip.decompress(shipped))
    index = read_index(COMPILED)
    assert index == read_index(plain) and len(index["kernels"]) > 0


@pytest.mark.slow
def test_a_gzipped_multi_rank_folder_reads_as_the_plain_one(tmp_path, scratch):
    plain = load_run_dir(plain_copy(TWO_RANKS, tmp_path / "plain" / TWO_RANKS.name))
    gz = load_run_dir(TWO_RANKS)
    _same(plain, gz)
    pd.testing.assert_frame_equal(plain.ranks.drop(columns="path"), gz.ranks.drop(columns="path"))
    assert [Path(p).name for p in gz.ranks["path"]] == ["nsys.sqlite.gz", "nsys.rank1.sqlite.gz"]
    assert not list(scratch.iterdir())


@pytest.mark.slow
def test_a_gzipped_export_parses_and_imports_by_itself(tmp_path, scratch):
    folder = plain_copy(SAMPLE, tmp_path / SAMPLE.name)
    plain = parse_nsys_sqlite(folder / "nsys.sqlite")
    parsed = parse_nsys_sqlite(_gz(folder / "nsys.sqlite"))
    assert parsed.source == folder / "nsys.sqlite.gz" and parsed.gpu == plain.gpu
    for name in ("kernels", "ranges", "range_levels", "memory_ops", "graph_launches"):
        pd.testing.assert_frame_equal(getattr(plain, name), getattr(parsed, name), obj=name)
    res = CliRunner().invoke(cli, ["import", str(folder / "nsys.sqlite.gz"), "--db", str(tmp_path / "a.db")])
    assert res.exit_code == 0, res.output
    assert not list(scratch.iterdir())


@pytest.mark.slow
def test_a_job_of_gzipped_rank_exports(tmp_path, scratch):
    for name in ("nsys.rank0.sqlite.gz", "nsys.rank1.sqlite.gz"):         # the fixture keeps them gzipped
        (tmp_path / name).write_bytes((FIXTURE / name).read_bytes())
    db = str(tmp_path / "a.db")
    res = CliRunner().invoke(cli, ["import", "--job", "j", str(tmp_path), "--db", db])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["--json", "ranks", "latest", "--db", db])
    assert res.exit_code == 0 and "nsys.rank1.sqlite.gz" in res.output, res.output
    assert not list(scratch.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["cut", "not_gzip", "not_sqlite"])
@pytest.mark.parametrize("name", ["nsys.sqlite", "check.json"])
def test_a_damaged_gzip_is_one_line_and_stores_nothing(tmp_path, scratch, damage, name):
    folder = plain_copy(SAMPLE, tmp_path / SAMPLE.name)
    gz = _gz(folder / name)
    data = gz.read_bytes()
    gz.write_bytes({"cut": data[: len(data) // 2], "not_gzip": b"plain text, not gzip",
                    "not_sqlite": gzip.compress(b"plain text, gzipped" * 10)}[damage])
    if name == "nsys.sqlite":
        with pytest.raises(ExportParseError, match="not a whole gzip file" if damage != "not_sqlite" else
                           "nsys.sqlite.gz: not an SQLite file") as err:
            parse_nsys_sqlite(gz)
        assert "aisp_gunzip" not in str(err.value)                        # names the .gz, not the copy
    db = tmp_path / "a.db"
    res = CliRunner().invoke(cli, ["import", str(folder), "--db", str(db)])
    assert res.exit_code == 6 and "Traceback" not in res.output, res.output   # ExportParseError's documented exit
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and gz.name in lines[0], res.output
    assert not db.exists()                                              # nothing stored, no database made
    assert not list(scratch.iterdir())
