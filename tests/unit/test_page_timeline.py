"""Issue 33 item 3: a report page of a 1M-kernel run reads its timeline grouped in SQL (the kernels
by launch shape, each variant's first call, the stored call spread: `store.aggregates.page_timeline`)
instead of every row. The page says exactly what reading the whole timeline said, on every
shipped sample run (one GPU and multi-rank, which still reads it whole)."""
from __future__ import annotations

import json

import pytest
from repo_paths import every_sample_run

from aisp_prof.api import open_db, reporting
from aisp_prof.pairs.declared import declared
from aisp_prof.store import db as store_db
from aisp_prof.store.calibrations import file_calibrations

FUSED_L2NORM = "20261126T011557Z-ch09.fused_l2norm-90df"      # 57 kernels, three variants, 5 calls each


def _pages(db, run_ids: list[str]) -> dict[str, str]:
    files = file_calibrations(db.calibration_dirs)
    return {r: json.dumps(db._page(r, files).data, sort_keys=True, default=str) for r in run_ids}


def _whole_timeline_pages(db, run_ids: list[str], monkeypatch) -> dict[str, str]:
    """The pages as written before: every run read whole, the page computed from its timeline."""
    with monkeypatch.context() as m:
        m.setattr(reporting, "read_for_page", lambda conn, rid: (declared(conn.read_run(rid)), None))
        return _pages(db, run_ids)


def test_a_page_reads_no_timeline_and_says_the_same(tmp_path, sample_dbs, monkeypatch):
    path = sample_dbs.copy(tmp_path / "a.db", FUSED_L2NORM)
    db = open_db(path)
    before = _whole_timeline_pages(db, [FUSED_L2NORM], monkeypatch)
    read = []
    real = store_db.Reader.table
    monkeypatch.setattr(store_db.Reader, "table", lambda self, t, *a, **k: read.append(t) or real(self, t, *a, **k))
    assert _pages(db, [FUSED_L2NORM]) == before
    assert "timeline" not in read
    page = json.loads(before[FUSED_L2NORM])
    assert {k["variant"] for k in page["kernels"]} == {"baseline", "cuda", "triton"}
    assert sum(k["launches"] for k in page["kernels"]) > 0 and set(page["timeline"]) == {"baseline", "cuda", "triton"}


@pytest.mark.slow
def test_every_sample_page_is_unchanged(tmp_path, sample_dbs, monkeypatch):
    """Every shipped sample run's page (kernels table, timeline strips, findings, warnings, the
    generated-code match): from the SQL groups exactly what it was from the whole timeline."""
    db = open_db(sample_dbs.copy(tmp_path / "a.db", *every_sample_run()))
    run_ids = [r["run_id"] for r in db.run_list()]
    assert len(run_ids) > 40
    before = _whole_timeline_pages(db, run_ids, monkeypatch)
    now = _pages(db, run_ids)
    assert {r for r in run_ids if now[r] != before[r]} == set()
