"""Issue 33: queries of a 1M-kernel run read what they need. A summary or diff reads the per-variant
call spread the store writes at import (`store.aggregates`) instead of the whole timeline; its
answers stay exactly what reading the timeline gave, on every shipped sample run, and a run stored
before the aggregate (no `timeline_calls` rows) still answers the same (computed on read)."""
from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest
from repo_paths import every_sample_run

from aisp_prof.analyze.rule_input import call_spread
from aisp_prof.api import open_db
from aisp_prof.api.run import SUMMARY_TABLES, Run
from aisp_prof.pairs.declared import declared
from aisp_prof.store import db as store_db
from aisp_prof.store.calibrations import db_calibrations, file_calibrations, merge_calibrations

FUSED_L2NORM = "20261126T011557Z-ch09.fused_l2norm-90df"      # 57 kernels, three variants, 5 calls each


def _as_ints(frame) -> list[tuple]:
    return [(v, int(c), int(lo), int(hi)) for v, c, lo, hi in
            frame[["variant", "calls", "call_kernel_min_ns", "call_kernel_max_ns"]].itertuples(index=False)]


def _timeline_results(path, run_ids: list[str]) -> dict[str, str]:
    """Each run's summary as computed before issue 33: from its whole timeline."""
    with store_db.Reader(path) as conn:
        data = [declared(conn.read_run(r, False, SUMMARY_TABLES)) for r in run_ids]
        calibrations = merge_calibrations(db_calibrations(conn), file_calibrations(None))
    return {d.run_id: json.dumps(Run(d, calibrations).result(), sort_keys=True, default=str) for d in data}


def test_the_stored_spread_is_the_timeline_s(tmp_path, sample_dbs):
    """SQL at import and pandas over the timeline agree, row for row, on a run with 5 calls per variant."""
    path = sample_dbs.copy(tmp_path / "a.db", FUSED_L2NORM)
    with store_db.Reader(path) as conn:
        stored = conn.call_spread(FUSED_L2NORM)
        timeline = conn.table("timeline", FUSED_L2NORM)
    assert _as_ints(stored) == _as_ints(call_spread(timeline))
    assert [r[:2] for r in _as_ints(stored)] == [("baseline", 5), ("cuda", 5), ("triton", 5)]
    with closing(sqlite3.connect(path)) as conn:         # and the whole run's row: every timeline kernel
        assert conn.execute("SELECT kernels FROM timeline_calls WHERE run_id = ? AND variant IS NULL",
                            [FUSED_L2NORM]).fetchone() == (57,)


def test_summary_and_diff_read_no_timeline_and_say_the_same(tmp_path, sample_dbs, monkeypatch):
    path = sample_dbs.copy(tmp_path / "a.db", FUSED_L2NORM)
    before = _timeline_results(path, [FUSED_L2NORM])[FUSED_L2NORM]
    read = []
    real = store_db.Reader.table
    monkeypatch.setattr(store_db.Reader, "table", lambda self, t, *a, **k: read.append(t) or real(self, t, *a, **k))
    db = open_db(path)
    assert json.dumps(db.summary_result(FUSED_L2NORM), sort_keys=True, default=str) == before
    assert "timeline" not in read
    diff = db.diff(FUSED_L2NORM, FUSED_L2NORM)
    assert diff["variants"] and "timeline" not in read
    with closing(sqlite3.connect(path)) as conn:          # as stored before issue 33: computed on read
        conn.execute("DROP TABLE timeline_calls")
        conn.commit()
    assert json.dumps(db.summary_result(FUSED_L2NORM), sort_keys=True, default=str) == before
    assert db.diff(FUSED_L2NORM, FUSED_L2NORM) == diff


@pytest.mark.slow
def test_every_sample_summary_is_unchanged(tmp_path, sample_dbs, every_sample_results):
    """Every shipped sample run (one GPU and multi-rank, ch09/10/14, H200 and H100): the summary
    from the stored spread (the session's, tests/conftest.py) is the summary from the timeline,
    character for character."""
    path = sample_dbs.copy(tmp_path / "a.db", *every_sample_run())
    run_ids = [r["run_id"] for r in open_db(path).run_list()]
    before = _timeline_results(path, run_ids)
    now = {rid: json.dumps(result, sort_keys=True, default=str) for rid, result in every_sample_results.items()}
    assert sorted(now) == sorted(run_ids)
    assert len(now) == len(run_ids) > 40
    assert {k for k in now if now[k] != before[k]} == set()


# ------------------------------------------------------------- kernels: --limit and --ndjson

def _kernels(db, *args: str):
    from click.testing import CliRunner

    from aisp_prof.cli import cli

    res = CliRunner().invoke(cli, ["kernels", *args, "--db", str(db)])
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.parametrize("source", ["ncu", "nsys"])
def test_kernels_ndjson_and_limit_are_the_json_records(tmp_path, sample_dbs, source):
    """The run folder's ncu launches, and its nsys export imported alone (kernels from the timeline)."""
    from aisp_prof.paths import samples_dir

    path = sample_dbs.copy(tmp_path / "a.db", FUSED_L2NORM)
    run = FUSED_L2NORM if source == "ncu" else open_db(path).import_path(samples_dir() / FUSED_L2NORM / "nsys.sqlite.gz")
    whole = json.loads(_kernels(path, run, "--json"))
    lines = _kernels(path, run, "--ndjson").splitlines()
    assert len(whole) == len(lines) > 5
    assert [json.loads(line) for line in lines] == whole
    assert lines[0] == json.dumps(whole[0])            # json.dumps' own one-line text
    assert json.loads(_kernels(path, run, "--json", "--limit", "5")) == whole[:5]
    assert _kernels(path, run, "--ndjson", "--limit", "2").splitlines() == lines[:2]
    assert json.loads(_kernels(path, run, "--json", "--limit", "0")) == []
    assert len(_kernels(path, run, "--limit", "3").splitlines()) < len(_kernels(path, run).splitlines())
