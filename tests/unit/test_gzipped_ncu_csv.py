"""A run folder's ncu export may be shipped gzipped (`ncu_raw.csv.gz`: the big sample CSVs are
~15x smaller so, and the device carries 64 MiB): the folder, and the file imported by itself, read
exactly as the plain CSV; a cut or corrupt gzip is a one-line error and stores nothing.
Data: a real run folder (profiles/samples/...ch09.fused_l2norm, an H200 run of aisp-prof run), shipped
gzipped; the plain form is a gunzipped copy."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from repo_paths import ROOT
from click.testing import CliRunner

from aisp_prof.cli import cli
from aisp_prof.errors import ExportParseError
from aisp_prof.parse.ncu.export import parse_ncu_export
from aisp_prof.store.ingest import load_run_dir
from sample_files import plain_copy

SAMPLE = ROOT / "profiles" / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"


def _plain(tmp_path: Path) -> Path:
    return plain_copy(SAMPLE, tmp_path / "plain" / SAMPLE.name)


def _gzipped_copy(tmp_path: Path) -> Path:
    folder = plain_copy(SAMPLE, tmp_path / "gz" / SAMPLE.name)
    csv = folder / "ncu_raw.csv"
    (folder / "ncu_raw.csv.gz").write_bytes(gzip.compress(csv.read_bytes()))
    csv.unlink()
    return folder


def test_a_gzipped_run_folder_reads_as_the_plain_one(tmp_path):
    plain, gz = load_run_dir(_plain(tmp_path)), load_run_dir(_gzipped_copy(tmp_path))
    assert len(plain.kernels) > 0
    assert plain.kernels.equals(gz.kernels)
    a, b = plain.launch_metrics, gz.launch_metrics
    assert a.metrics == b.metrics and a.units == b.units and (a.launch_ids == b.launch_ids).all()
    assert np.array_equal(a.values, b.values, equal_nan=True)


def test_the_gzipped_file_imports_by_itself(tmp_path):
    gz = _gzipped_copy(tmp_path) / "ncu_raw.csv.gz"
    assert parse_ncu_export(gz).launches.equals(parse_ncu_export(_plain(tmp_path) / "ncu_raw.csv").launches)
    res = CliRunner().invoke(cli, ["import", str(gz), "--db", str(tmp_path / "a.db")])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("damage", ["cut", "not_gzip"])
def test_a_damaged_gzip_is_one_line_and_stores_nothing(tmp_path, damage):
    gz = _gzipped_copy(tmp_path) / "ncu_raw.csv.gz"
    data = gz.read_bytes()
    gz.write_bytes(data[: len(data) // 2] if damage == "cut" else b"plain text, not gzip")
    with pytest.raises(ExportParseError, match="not a whole gzip file"):
        parse_ncu_export(gz)
    db = tmp_path / "a.db"
    res = CliRunner().invoke(cli, ["import", str(gz.parent), "--db", str(db)])
    assert res.exit_code == 6 and "Traceback" not in res.output        # ExportParseError's documented exit
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "not a whole gzip file" in lines[0], res.output
    assert not db.exists()                                              # nothing stored, no database made
