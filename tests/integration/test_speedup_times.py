"""Issue 31, item 7, on the real samples: a headline must not contradict its own numbers.

ch14.gpu_quantization's speedup is by CUDA events (447.79x) while the times shown beside it were
nsys GPU times (139.4 us -> 22.3 us, 6.25x): now every place that shows the speedup shows the two
times it is the ratio of. cuBLASLt fp8 plots at 103% of its theoretical roof: the summary stated
that as its bound and "Headroom: none" while `roofline` warned; now it is a warning everywhere,
`summary --json` included."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES

from aisp_prof.cli import cli

pytestmark = pytest.mark.slow
QUANT = PROFILES / "samples_h100_ch14" / "20261126T151027Z-ch14.gpu_quantization-fdf0"
FP8 = [PROFILES / "samples" / "20261126T024238Z-ch09.cublaslt_gemm-a129",
       PROFILES / "samples_h100" / "20261126T045452Z-ch09.cublaslt_gemm-c9a0"]


def _run(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args), env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    return res.stdout


def test_the_speedup_shows_the_times_it_is_the_ratio_of(tmp_path, sample_dbs):
    db = str(sample_dbs.copy(tmp_path / "a.db", QUANT))
    doc = json.loads(_run("summary", QUANT.name, "--db", db, "--json"))
    gpu = next(r for r in doc["summary"] if r["variant"] == "gpu")
    assert gpu["speedup_timer"] == "cuda_events" and gpu["speedup_vs_baseline"] == pytest.approx(447.79, abs=0.01)
    assert gpu["speedup_baseline_time_ns"] / gpu["speedup_time_ns"] == pytest.approx(gpu["speedup_vs_baseline"])
    assert gpu["gpu_time_ns"] != pytest.approx(gpu["speedup_time_ns"], rel=0.5)      # the nsys time is another
    text = _run("summary", QUANT.name, "--db", db)
    assert "447.79x over baseline (CUDA events), 127.895 ms -> 285.6 us per call" in " ".join(text.split())
    row = next(line for line in text.splitlines() if line.startswith("gpu  "))
    assert "447.79x" in row and "285.6 us" in row
    _run("report", QUANT.name, "--db", db, "--out", str(tmp_path / "rep"))
    index = (tmp_path / "rep" / "index.html").read_text()
    assert "285.6 us" in index and "127.895 ms" in index and "139.4 us" not in index
    page = next(p for p in (tmp_path / "rep").glob("*.html") if p.name != "index.html").read_text()
    assert "127.895 ms → 285.6 us" in page


@pytest.mark.parametrize("run", FP8, ids=lambda p: p.parent.name)
def test_a_point_above_its_roof_is_a_warning_not_a_finding(tmp_path, sample_dbs, run):
    db = str(sample_dbs.copy(tmp_path / "a.db", run))
    doc = json.loads(_run("summary", run.name, "--db", db, "--json"))
    above = [w for w in doc["warnings"] if w["code"] == "above_roof"]
    assert above and "cublaslt_fp8" in above[0]["message"] and "% of its theoretical" in above[0]["message"]
    said = " ".join(doc["verdict"])
    assert "Headroom of cublaslt_fp8: none" not in said and "-bound at 10" not in said
    assert "above its theoretical" in said
    text = " ".join(_run("summary", run.name, "--db", db).split())
    assert "warning: aisp/ch09.cublaslt_gemm/cublaslt_fp8 (all kernels) runs at" in text
    roof = _run("roofline", run.name, "--db", db)                 # the arrow's speedup and its two times
    fp8_row = next(line for line in roof.splitlines() if line.split()[:2] == ["baseline", "cublaslt_fp8"])
    assert " -> " in fp8_row and fp8_row.split()[2].endswith("x")
