"""The library face: the README's notebook example runs as printed, and every read is a DataFrame."""
from __future__ import annotations

import re

import pandas as pd
import pytest
from repo_paths import ROOT

import aisp_prof

README = ROOT / "README.md"
L2NORM = "20261126T011557Z-ch09.fused_l2norm-90df"


def _notebook_example() -> list[str]:
    text = README.read_text()
    block = re.search(r"<!-- notebook-example[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert block, "README lost its notebook example"
    return [line for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.slow
def test_readme_notebook_example_runs(tmp_path, monkeypatch):
    """Each line runs as a notebook cell would; the last two are the tables a reader sees."""
    lines = _notebook_example()
    assert len(lines) == 5
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    for line in lines[:-2]:
        exec(line, scope)
    summary, points = (eval(line, scope) for line in lines[-2:])
    assert scope["run"] == L2NORM and (tmp_path / "notebook.db").exists()
    assert isinstance(summary, pd.DataFrame) and summary["variant"].tolist() == ["baseline", "cuda", "triton"]
    assert summary["correct"].all() and summary.loc[1, "speedup_vs_baseline"] == pytest.approx(2107347 / 674012)
    assert isinstance(points, pd.DataFrame) and points["variant"].tolist() == ["baseline", "cuda", "triton"]
    assert set(points["bound"]) == {"dram"} and points["ai_dram_flop_per_byte"].between(0.05, 0.5).all()


@pytest.mark.slow
def test_every_read_is_a_dataframe(tmp_path):
    from aisp_prof.errors import MissingDatabaseError

    db = aisp_prof.open_db(tmp_path / "a.db")
    with pytest.raises(MissingDatabaseError, match="no run database at"):     # said, and not created
        db.runs()
    assert not (tmp_path / "a.db").exists()
    run = db.import_path(aisp_prof.sample_runs()[0])
    assert db.runs()["run_id"].tolist() == [run] and list(db.runs().columns)[:2] == ["run_id", "pair"]
    kernels = db.kernels("ch09.fused_l2norm")
    assert len(kernels) == 7 and {"nvtx_range", "duration_ns", "dram_bytes", "flops_total"} <= set(kernels)
    assert len(db.kernels(run, variant="cuda")) == 1
    ranges = db.ranges("latest")
    assert "nvtx_range" in ranges and "range" not in ranges
    assert ranges.set_index("variant").loc["baseline", "kernel_count"] == 25
    history = db.history("ch09.fused_l2norm")
    assert history["variant"].tolist() == ["baseline", "cuda", "triton"]
    data = db.run(run)
    assert data.run_id == run and data.info["pair"] == "ch09.fused_l2norm" and not data.kernels.empty
    page = db.page(run)
    assert page["pair"] == "ch09.fused_l2norm" and page["headline"]


def test_unknown_run_is_one_error(tmp_path):
    from aisp_prof.errors import UnknownTargetError

    import sqlite3

    sqlite3.connect(tmp_path / "a.db").close()               # a database without runs
    db = aisp_prof.open_db(tmp_path / "a.db")
    assert db.runs().empty and list(db.runs().columns)[:2] == ["run_id", "pair"]
    with pytest.raises(UnknownTargetError, match="no runs in"):
        db.summary("latest")


def test_import_aisp_prof_is_light():
    """`import aisp_prof` loads neither pandas nor the API until a name is used."""
    import subprocess
    import sys

    code = "import sys, aisp_prof; print('pandas' in sys.modules, 'aisp_prof.api' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_a_notebook_summary_reads_as_the_cli_does_never_the_timeline(sample_dbs, monkeypatch):
    """`db.summary()` read every timeline row of a run (a 1M-kernel trace whole) while `aisp-prof summary` reads
    the per-variant sums the store keeps (README "Long traces"); now the same read and the same rows. The
    shipped H200 ch09.fused_l2norm run."""
    from aisp_prof.api import open_db
    from aisp_prof.store import db as store_db
    from repo_paths import SAMPLES

    run = "20261126T011557Z-ch09.fused_l2norm-90df"
    db = open_db(sample_dbs.original(SAMPLES / run))
    read = []
    table = store_db.Reader.table
    monkeypatch.setattr(store_db.Reader, "table",
                        lambda self, name, *a, **k: read.append(name) or table(self, name, *a, **k))
    frame = db.summary(run)
    assert "timeline" not in read and "timings" in read
    pd.testing.assert_frame_equal(frame, pd.DataFrame(db.summary_result(run)["summary"]))
