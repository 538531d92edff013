"""End-to-end on a real GPU (marked `gpu`: skipped without one, run on the GPU machine)."""
from __future__ import annotations

import json

import pytest
from repo_paths import FIXTURES
from click.testing import CliRunner

from aisp_prof.cli import cli

pytestmark = pytest.mark.gpu
BROKEN = FIXTURES / "broken_kernels"


def test_fused_l2norm_all_variants_pass_on_gpu():
    from aisp_prof import pairs
    from aisp_prof.collect.correctness.check import check_pair

    pair = pairs.find("ch09.fused_l2norm")
    result = check_pair(pair, {"rows": 1024, "cols": 8192}, device="cuda")
    assert result.passed, result.to_dict()
    assert {c.variant for c in result.checks} == {"baseline", "cuda", "triton"}


def test_run_rejects_wrong_kernel_and_stores_it_as_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("AISP_KERNELS", str(BROKEN))
    db = tmp_path / "aisp.db"
    res = CliRunner().invoke(cli, ["run", "ch99.wrong_norm", "--profiles-dir", str(tmp_path / "p"),
                                   "--db", str(db), "--no-ncu", "--no-nsys", "--json"])
    assert res.exit_code == 7, res.output
    out = json.loads(res.stdout)
    assert out["run"]["status"] == "failed_check"
    runs = CliRunner().invoke(cli, ["runs", "--db", str(db), "--json"])
    assert [r["status"] for r in json.loads(runs.stdout)] == ["failed_check"]
    assert not any(p.name.startswith(".partial") for p in (tmp_path / "p").iterdir())
