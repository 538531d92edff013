"""ch14.quantized_allreduce on the CPU: two ranks under a real torchrun, gloo instead of NCCL,
the Triton kernels under TRITON_INTERPRET=1. Every variant must give the float64 sum of both
ranks' inputs on both ranks (int8 within its error bound), and an all-reduce that never
exchanges must fail on both."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import TESTS

from aisp_prof import pairs
from aisp_prof.errors import RequirementError

pytest.importorskip("torch")
pytest.importorskip("triton")
HERE = TESTS
NAME = "ch14.quantized_allreduce"
SMALL = "numel=65536"


def _check_on_two_ranks(tmp_path: Path, extra: str | None = None) -> list[dict]:
    out = tmp_path / "check.json"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "--log-dir", str(tmp_path / "torchrun"), str(HERE / "multirank_check.py"), NAME, SMALL, str(out), *([extra] if extra else [])]
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(p.read_text()) for p in (out, tmp_path / "check.rank1.json")]


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    """One two-rank check of the pair's variants and a wrong one (tests/fixtures/wrong_allreduce.py,
    `local_only`) beside them: each variant is checked on its own, so one torchrun serves both tests."""
    return _check_on_two_ranks(tmp_path_factory.mktemp("qa"), str(HERE / "fixtures" / "wrong_allreduce.py"))


@pytest.mark.slow
def test_every_variant_sums_both_ranks_on_both_ranks(checks):
    for rank, check in enumerate(checks):
        assert check["failed_variants"] == ["local_only"], rank           # every variant of the pair passed
        by = {(c["variant"], c["trial"]): c for c in check["checks"]}
        assert set(v for v, _ in by) == {"baseline", "fp32_rs_ag", "int8", "int8_overlap", "local_only"}
        assert all(c["passed"] for c in check["checks"] if c["variant"] != "local_only"), rank
        for trial in (0, 1):
            assert by[("baseline", trial)]["rel_err_vs_reference"] < 1e-6
            assert by[("fp32_rs_ag", trial)]["rel_err_vs_reference"] < 1e-6
            # two int8 roundings of Gaussian blocks: ~1.1% (docstring), well inside the 3% bound
            for v in ("int8", "int8_overlap"):
                assert 0.005 < by[(v, trial)]["rel_err_vs_reference"] < 0.02
            # the pipelined pieces use the same blocks: the same numbers
            assert by[("int8", trial)]["rel_err_vs_reference"] == pytest.approx(
                by[("int8_overlap", trial)]["rel_err_vs_reference"], rel=1e-9)


@pytest.mark.slow
def test_an_allreduce_that_never_exchanges_fails_on_every_rank(checks):
    for check in checks:
        assert not check["passed"] and check["failed_variants"] == ["local_only"]
        assert not any(c["passed"] for c in check["checks"] if c["variant"] == "local_only")


@pytest.mark.slow
def test_inputs_need_a_torchrun_job():
    pair = pairs.find(NAME)
    with pytest.raises(RequirementError, match="through torchrun"):
        pair.make_inputs(pair.small_sizes, "cpu", 0)


def test_int8_moves_about_a_quarter_of_the_fp32_bytes():
    from kernels.ch14 import quantized_allreduce as qa

    n = 1 << 26
    assert qa.wire_bytes(n, 2, "fp32") == 4 * n              # 2 (W-1)/W x 4N at W = 2
    assert 3.9 < qa.wire_bytes(n, 2, "fp32") / qa.wire_bytes(n, 2, "int8") < 4.0
    assert qa.wire_bytes(n, 4, "fp32") == 6 * n
