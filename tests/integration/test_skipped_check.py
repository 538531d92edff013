"""A variant whose check was skipped (its backend has no kernel at the run's sizes: not run, so
neither right nor wrong; collect.correctness.check) is reported as skipped, never as failing, and
its speedup is still no claim: a headline needs a passing check (or none stored).

The run is the shipped H200 ch14.sliding_window sample (009d: flex 27.4x, sdpa_band_mask 3.1x, no
book) with check rows edited as the check writes a skipped variant (passed 0, skipped 1, the
no-kernel message); no shipped run has one. Before: `correct` was all(passed), False, the summary
table said "NO" and the headline said the output FAILED."""
from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES

from aisp_prof.api import open_db
from aisp_prof.cli import cli

RUN = "20261129T055740Z-ch14.sliding_window-009d"
RUN_DIR = PROFILES / "samples_h200_ch14" / RUN
NO_KERNEL = "skipped: the backend has no kernel for these sizes (RuntimeError: No available kernel. Aborting execution.)"


def _skip(db, *variants: str):
    with closing(sqlite3.connect(db)) as conn, conn:
        for v in variants:
            conn.execute("UPDATE checks SET passed = 0, skipped = 1, message = ?, rel_err_vs_reference = NULL, "
                         "rel_err_vs_baseline = NULL WHERE run_id = ? AND variant = ?", [NO_KERNEL, RUN, v])
    return db


@pytest.mark.slow
def test_a_skipped_check_is_neither_pass_nor_fail(sample_dbs, tmp_path):
    db = _skip(sample_dbs.copy(tmp_path / "a.db", RUN_DIR), "sdpa_band_mask")
    result = open_db(db).summary_result(RUN)
    rows = {r["variant"]: r for r in result["summary"]}
    assert (rows["sdpa_band_mask"]["correct"], rows["sdpa_band_mask"]["check_result"]) == (None, "skipped")
    assert (rows["flex"]["correct"], rows["flex"]["check_result"]) == (True, "passed")
    text = CliRunner().invoke(cli, ["summary", RUN, "--db", str(db), "--wide"]).stdout
    line = next(ln for ln in text.splitlines() if ln.startswith("sdpa_band_mask "))
    assert " skipped " in line and " NO " not in line
    page = open_db(db).page(RUN)
    check = next(c for c in page["correctness"] if c["variant"] == "sdpa_band_mask")
    assert (check["passed"], check["skipped"]) == (None, True)
    assert "sdpa_band_mask: its correctness check was skipped (not run at these sizes); its speedup claims nothing" \
        in str(page["warnings"])


@pytest.mark.slow
def test_a_skipped_variant_s_speedup_claims_nothing(sample_dbs, tmp_path):
    db = _skip(sample_dbs.copy(tmp_path / "a.db", RUN_DIR), "flex")
    head = open_db(db).summary_result(RUN)["headline"]                # the slower variant that passed leads
    assert head["best"] == "sdpa_band_mask" and head["correct"] is True and "FAILED" not in head["text"]
    db = _skip(db, "sdpa_band_mask")                                  # none passed: the fastest, said so
    head = open_db(db).summary_result(RUN)["headline"]
    assert (head["best"], head["correct"], head["check_result"]) == ("flex", None, "skipped")
    assert head["text"].endswith("(its correctness check was skipped at these sizes: no speed claim)")
    html = open_db(db).report([RUN], out=tmp_path / "report").pages[0].read_text()
    assert "check skipped" in html and "the correctness check was skipped at these sizes" in html


@pytest.mark.slow
def test_the_report_index_never_calls_a_skipped_check_correct(sample_dbs, tmp_path):
    """The index's correctness cell: "N skipped", not a green "yes" that the baseline's pass alone earned
    (a review found it after `correct` became None for a skipped check), and "NO" only for a failure."""
    import re

    db = _skip(sample_dbs.copy(tmp_path / "a.db", RUN_DIR), "flex", "sdpa_band_mask")
    index = open_db(db).report([RUN], out=tmp_path / "report").index.read_text()
    row = re.search(r'<tr data-chapter="ch14".*?</tr>', index, re.S).group(0)
    assert "2 skipped" in row and ">yes<" not in row and ">NO<" not in row
