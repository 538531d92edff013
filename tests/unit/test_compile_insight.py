"""Issue 14, analysis: the compile rows a run folder holds are stored, summarized (first call,
steady call, warm-cache first call, break-even calls, graphs, breaks, recompiles, compiles while
timed), printed by `summary` (and --json), drawn in the report, and a compile inside the timed
phase is a validity warning; launch churn (mean kernel duration, gaps per call) from nsys.

The check rows are real (test_dynamo_probe's CPU pair, compiled by Dynamo in this process); the
later timing process's rows are written here, to place a recompile inside the timed phase.
Launch churn is read from the shipped H200 sample of ch09.fused_l2norm.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from test_dynamo_probe import PAIR, checked_pair  # noqa: E402
from aisp_prof.analyze.code.compiled import break_even_calls, compile_warnings, variant_compiles  # noqa: E402
from aisp_prof.analyze.summary import summarize  # noqa: E402
from aisp_prof.cli import cli  # noqa: E402
from aisp_prof.collect.code.dynamo import CompileWatch, compile_row  # noqa: E402
from aisp_prof.store.db import read_run, write_run  # noqa: E402
from aisp_prof.store.ingest import load_run_dir, sample_run_dirs, store_path  # noqa: E402


@pytest.fixture(scope="module")
def checked():
    return checked_pair()


def _timing_rows(process, **counts):
    events = CompileWatch().take()
    for k, v in counts.items():
        setattr(events, k, v)
    return [compile_row(v, process, phase, events if (v == "compiled" and phase == "timed") else None)
            for v in ("baseline", "compiled") for phase in ("timing_warmup", "timed")]


def _write_run(folder: Path, checked, timed_compiles=0) -> Path:
    """A run folder as `aisp-prof run` writes it, with the check's real rows; a later timing
    process saw a recompile inside its timed phase when `timed_compiles`."""
    folder.mkdir()
    info = {"run_id": folder.name, "pair": PAIR.name, "variants": ["baseline", "compiled"], "status": "ok",
            "created_at": "2026-11-27T00:00:00+00:00", "gpu": {}}
    (folder / "run.json").write_text(json.dumps(info))
    samples = [{"process": p, "round": i, "slot": 0, "variant": v, "time_ns": t}
               for p in (0, 1) for i in range(5) for v, t in (("baseline", 2000.0), ("compiled", 1000.0))]
    report = {"check": checked.to_dict(), "samples": [s for s in samples if s["process"] == 0],
              "timing": {}, "compiles": _timing_rows(0)}
    (folder / "check.json").write_text(json.dumps(report))
    warm = [compile_row("compiled", 1, "warm_process", None, first_call_wall_ns=5e6),
            compile_row("baseline", 1, "warm_process", None, first_call_wall_ns=1e4)]
    reason = [{"frame": "_fused (x.py:1)", "compile_id": "0/1", "reason": "tensor 'x' size mismatch"}]
    timing = {"samples": [s for s in samples if s["process"] == 1],
              "compiles": warm + _timing_rows(1, frames_compiled=timed_compiles, recompiles=timed_compiles,
                                              recompile_reasons=reason if timed_compiles else [])}
    (folder / "timing_p1.json").write_text(json.dumps(timing))
    return folder


def test_compiles_are_stored_and_summarized(checked, tmp_path):
    run_dir = _write_run(tmp_path / "20261127T000000Z-test.compiled-0001", checked)
    data = load_run_dir(run_dir)
    assert len(data.compiles) == 4 + 4 + 2 + 4        # check trials, timing p0, warm process p1, timing p1
    db = tmp_path / "a.db"
    write_run(db, data)
    stored = read_run(db, data.run_id)
    rows = {r["variant"]: r for r in summarize(stored.info, stored.kernels, stored.ranges, stored.checks,
                                               stored.timings, stored.compiles)}
    c, b = rows["compiled"], rows["baseline"]
    first = next(r for r in checked.compiles if r["variant"] == "compiled" and r["trial"] == 0)
    assert c["first_call_ns"] == first["factory_wall_ns"] + first["first_call_wall_ns"]
    assert c["compile_overhead_ns"] == c["first_call_ns"] - c["steady_call_wall_ns"]
    assert c["warm_process_first_call_ns"] == 5e6
    assert (c["graphs"], c["graph_breaks"], c["recompiles"], c["timed_phase_compiles"]) == (1, 0, 0, 0)
    assert c["compiled"] and not b["compiled"] and b["graphs"] == 0
    # the compiled variant saves 1000 ns a call (CUDA events): its overhead is repaid in overhead / 1000 calls
    assert c["compile_break_even_calls"] == pytest.approx(c["compile_overhead_ns"] / 1000.0)
    assert compile_warnings(list(rows.values())) == []


def test_a_compile_inside_the_timed_phase_is_a_validity_warning(checked, tmp_path):
    run_dir = _write_run(tmp_path / "20261127T000000Z-test.compiled-0002", checked, timed_compiles=2)
    data = load_run_dir(run_dir)
    rows = summarize(data.info, data.kernels, data.ranges, data.checks, data.timings, data.compiles)
    c = next(r for r in rows if r["variant"] == "compiled")
    assert c["timed_phase_compiles"] == 2
    [w] = compile_warnings(rows)
    assert w["severity"] == "warning" and w["code"] == "recompile_timed"
    assert "compiled: torch.compile compiled 2 frame(s) during the timed phase" in w["message"]
    assert "size mismatch" in w["message"]


def test_summary_cli_shows_compile_cost_and_warnings(checked, tmp_path):
    run_dir = _write_run(tmp_path / "20261127T000000Z-test.compiled-0003", checked, timed_compiles=1)
    db = tmp_path / "a.db"
    run_id = store_path(db, run_dir)
    text = CliRunner().invoke(cli, ["summary", run_id, "--db", str(db)])
    assert text.exit_code == 0, text.output
    assert "first call" in text.output and "compiles while timed" in text.output
    assert "warning: compiled: torch.compile compiled 1 frame(s) during the timed phase" in text.output
    out = CliRunner().invoke(cli, ["summary", run_id, "--db", str(db), "--json"])
    doc = json.loads(out.output)
    c = next(r for r in doc["summary"] if r["variant"] == "compiled")
    for key in ("first_call_ns", "steady_call_wall_ns", "compile_overhead_ns", "warm_process_first_call_ns",
                "graphs", "graph_breaks", "graph_break_reasons", "recompiles", "recompile_reasons",
                "timed_phase_compiles", "compile_break_even_calls", "dynamo_compile_time_ns"):
        assert key in c
    assert doc["warnings"][0]["code"] == "recompile_timed"


def test_break_even_calls():
    assert break_even_calls(1e9, 2e6, 1e6) == 1000
    assert break_even_calls(1e9, 1e6, 2e6) is None           # slower: never repaid
    assert break_even_calls(None, 2e6, 1e6) is None
    assert variant_compiles(pd.DataFrame(), "x") == {}


# --- launch churn from the shipped H200 sample ----------------------------------------------

def test_launch_churn_from_the_fused_l2norm_sample(tmp_path):
    sample = {d.name: d for d in sample_run_dirs()}["20261126T011557Z-ch09.fused_l2norm-90df"]
    data = load_run_dir(sample)
    rows = {r["variant"]: r for r in summarize(data.info, data.kernels, data.ranges, data.checks, data.timings,
                                               data.compiles)}
    ranges = data.ranges.set_index("variant")
    base, cuda = rows["baseline"], rows["cuda"]
    assert base["kernels_per_call"] == 5 and cuda["kernels_per_call"] == 1
    assert base["mean_kernel_duration_ns"] == pytest.approx(ranges.loc["baseline", "kernel_time_ns"] / 25)
    assert cuda["mean_kernel_duration_ns"] == pytest.approx(ranges.loc["cuda", "kernel_time_ns"] / 5)
    # 4 gaps inside each of the 5 baseline calls (22944 ns in all), none in the fused kernel's
    assert base["gap_per_call_ns"] == pytest.approx(22944 / 5) and base["gap_max_ns"] == 1344
    assert cuda["gap_per_call_ns"] == 0
    # the fused kernel lives longer than the baseline's five, on average
    assert cuda["mean_kernel_duration_ns"] > base["mean_kernel_duration_ns"]
    # a run from before compiles were recorded: no compile fields, and no error
    assert "first_call_ns" not in base and data.compiles.empty


@pytest.mark.slow
def test_report_page_shows_launches_compile_cost_and_the_warning(checked, tmp_path):
    from aisp_prof.api import open_db

    run_dir = _write_run(tmp_path / "20261127T000000Z-test.compiled-0004", checked, timed_compiles=1)
    db = open_db(tmp_path / "a.db")
    run_id = db.import_path(run_dir)
    page = db.page(run_id)
    assert page["compiled_any"]
    c = next(s for s in page["summary"] if s["variant"] == "compiled")
    assert c["graphs"] == 1 and c["timed_phase_compiles"] == 1
    assert any(w["code"] == "recompile_timed" for w in page["warnings"])
    report = db.report(runs=[run_id], out=tmp_path / "report")
    html = next(p for p in report.pages if "test.compiled" in p.name).read_text()
    assert 'id="launches"' in html and "compiles while timed" in html and "recompile_timed" in html
