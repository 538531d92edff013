"""The scaled exports of benchmarks/ (issue 17) are only worth timing if aisp-prof reads k copies
of a real export as exactly k times the original: checked here through the tool itself (import,
then `ranges --json` / `kernels --json`), on a shipped sample with kernels, memcpys and memsets."""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
from repo_paths import ROOT, every_sample_run
from click.testing import CliRunner

from aisp_prof.cli import cli

sys.path.insert(0, str(ROOT / "benchmarks"))

from scale_check import check_against_sql, check_launches, check_ranges, sql_range_totals  # noqa: E402
from scale_exports import check_nsys_rows, resolve_export, scale_ncu_csv, scale_nsys_export  # noqa: E402

SAMPLE = ROOT / "profiles" / "samples" / "20261126T033949Z-ch09.sdpa_attention-d4ce"   # kernels, memcpy, memset
NSYS, NCU = resolve_export(SAMPLE, "nsys.sqlite"), resolve_export(SAMPLE, "ncu_raw.csv")   # shipped gzipped: plain copies
COPIES = 3


def _tool(db: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--db", str(db)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _ranges(db: Path, export: Path) -> list[dict]:
    run = _tool(db, "import", str(export)).strip()
    return json.loads(_tool(db, "ranges", run, "--json"))


@pytest.mark.slow
def test_nsys_export_of_k_copies_reads_as_exactly_k_times(tmp_path):
    scaling = scale_nsys_export(SAMPLE, tmp_path / "k3.sqlite", COPIES)
    assert check_nsys_rows(scaling) == []
    original = _ranges(tmp_path / "t.db", NSYS)
    scaled = _ranges(tmp_path / "t.db", scaling.path)
    assert {r["memcpy_count"] > 0 for r in original} == {True, False}      # the sample exercises memory ops
    assert check_ranges(original, scaled, COPIES, scaling.shift_ns) == []
    assert [r["kernel_count"] for r in scaled] == [COPIES * r["kernel_count"] for r in original]


@pytest.mark.slow
def test_the_check_catches_an_export_whose_copies_overlap(tmp_path):
    """Copy 1's NVTX ranges moved back onto copy 0's: its kernels lose their ranges."""
    scaling = scale_nsys_export(SAMPLE, tmp_path / "k3.sqlite", COPIES)
    with sqlite3.connect(scaling.path) as conn:
        (first,) = conn.execute("SELECT MIN(start) FROM NVTX_EVENTS").fetchone()
        conn.execute('UPDATE NVTX_EVENTS SET start = start - ?1, "end" = "end" - ?1 WHERE start >= ?2 AND start < ?3',
                     (scaling.shift_ns, first + scaling.shift_ns, first + 2 * scaling.shift_ns))
    original = _ranges(tmp_path / "t.db", NSYS)
    assert check_ranges(original, _ranges(tmp_path / "t.db", scaling.path), COPIES, scaling.shift_ns)


@pytest.mark.slow
def test_ncu_csv_of_k_copies_reads_as_exactly_k_times(tmp_path):
    db = tmp_path / "t.db"
    scaling = scale_ncu_csv(SAMPLE, tmp_path / "k3.csv", COPIES)
    runs = [_tool(db, "import", str(p)).strip() for p in (NCU, scaling.path)]
    original, scaled = (json.loads(_tool(db, "kernels", r, "--json")) for r in runs)
    assert check_launches(original, scaled, COPIES) == []
    assert check_launches(original, scaled[:-1], COPIES)                   # one launch short: caught


def test_one_copy_of_an_ncu_csv_is_the_file_itself(tmp_path):
    """The CSV is re-written in ncu's own quoting, so only the IDs differ between copies."""
    scaling = scale_ncu_csv(SAMPLE, tmp_path / "k1.csv", 1)
    assert scaling.path.read_bytes() == NCU.read_bytes()


@pytest.mark.parametrize("copies", [1, 2])
def test_scaled_nsys_export_keeps_names_and_offsets_ids(tmp_path, copies):
    scaling = scale_nsys_export(SAMPLE, tmp_path / "k.sqlite", copies)
    with sqlite3.connect(scaling.path) as conn:
        names = conn.execute("SELECT COUNT(*), COUNT(DISTINCT demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        ids = conn.execute("SELECT MIN(correlationId), MAX(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
    with sqlite3.connect(NSYS) as conn:
        base = conn.execute("SELECT COUNT(*), COUNT(DISTINCT demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        (top,) = conn.execute("SELECT MAX(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
    assert names == (copies * base[0], base[1])          # same kernels by name, StringIds untouched
    assert ids[1] == top + (copies - 1) * scaling.id_strides["correlationId"]


def _one_rank_exports() -> list[Path]:
    return [d for d in every_sample_run() if json.loads((d / "run.json").read_text()).get("world_size", 1) in (1, None)
            and ((d / "nsys.sqlite").exists() or (d / "nsys.sqlite.gz").exists())]


@pytest.mark.slow
def test_every_shipped_export_s_range_totals_are_sqlite_s_own(tmp_path, sample_dbs):
    """The benchmark's independent check (issue 33): on every one-rank shipped run, each NVTX range's
    kernel count and kernel time as aisp-prof stores them equal SQLite's own attribution of the export."""
    from aisp_prof.analyze.records import frame_records
    from aisp_prof.api import open_db

    runs = _one_rank_exports()
    db = open_db(sample_dbs.original(*every_sample_run()))
    checked = 0
    for run_dir in runs:
        run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
        ranges = frame_records(db.range_levels(run_id))
        reference = sql_range_totals(resolve_export(run_dir, "nsys.sqlite"))
        assert check_against_sql(reference, ranges) == [], run_dir.name
        checked += bool(reference)
    assert checked > 30


def test_the_sql_check_catches_a_wrong_total(tmp_path):
    reference = sql_range_totals(NSYS)
    ranges = _ranges(tmp_path / "a.db", NSYS)
    assert check_against_sql(reference, ranges) == []
    wrong = [dict(r) for r in ranges]
    hit = next(r for r in wrong if r["kernel_count"])
    hit["kernel_time_ns"] += 1
    assert check_against_sql(reference, wrong) == [f"range {hit['nvtx_range']!r} (thread {hit['thread_id']}): the tool "
                                                   f"says {(hit['kernel_count'], hit['kernel_time_ns'])}, SQL "
                                                   f"{(hit['kernel_count'], hit['kernel_time_ns'] - 1)}"]
    assert check_against_sql({}, [])[-1].startswith("the SQL reference found no kernel")
