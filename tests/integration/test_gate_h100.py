"""The regression gate on the H100's real samples, no GPU (tests/fixtures/gate/README.md).

Chapter 9 was recorded on one H100 lease, then gated on two more fresh leases with no code
change: every variant of every pair must be SAME (or AMBIGUOUS, which asks for more samples and
fails only under --strict). The spin fixture (tests/fixtures/gate_kernels) slowed the fused
kernel by 3% and 10%: only that variant is SLOWER, by about what was asked.
"""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from repo_paths import FIXTURES
from click.testing import CliRunner

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.bench.runner import PairOutcome
from aisp_prof.analyze.gate.verdict import AMBIGUOUS, SAME, SLOWER, judge
from aisp_prof.cli import cli
from aisp_prof.pairs.source import source_digest, source_mismatch
from aisp_prof.paths import data_root
from aisp_prof.store.db import write_run
from aisp_prof.store.ingest import load_run_dir
from legacy_evidence import current_format_copy

GATE = FIXTURES / "gate"
SLOW = {"lease2": {"20261126T102530Z-ch09.fused_l2norm-557f": 1.03, "20261126T102549Z-ch09.fused_l2norm-0139": 1.10},
        "lease3": {"20261126T103353Z-ch09.fused_l2norm-6284": 1.03, "20261126T103406Z-ch09.fused_l2norm-397d": 1.10}}
AMBIGUOUS_RUN = "20261126T103028Z-ch09.structured_sparsity_ffn-1ef4"


@pytest.fixture(scope="module")
def leases(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for lease in ("lease2", "lease3"):
        root = tmp_path_factory.mktemp(lease)
        with tarfile.open(GATE / f"h100_{lease}_runs.tgz") as tar:
            tar.extractall(root, filter="data")
        out[lease] = root
    return out


@pytest.fixture(scope="module")
def recorded() -> dict:
    return exp.read_any(GATE / "expectations_h100_session1.json")["pairs"]


def _judged(run_dir: Path, recorded: dict) -> dict:
    data = load_run_dir(run_dir)
    found = judge(data.run["pair"], data.samples, recorded[data.run["pair"]], data.info["sensor"]["sm_clock_max_mhz"])
    return {v.variant: v for v in found}


@pytest.mark.slow
@pytest.mark.parametrize("lease", ["lease2", "lease3"])
def test_no_code_change_on_a_fresh_h100_fails_nothing(leases, recorded, lease):
    unchanged = [d for d in sorted(leases[lease].iterdir()) if d.name not in SLOW[lease]]
    assert len(unchanged) == 12                         # every runnable ch09 pair (nvfp4 needs sm_100)
    verdicts = {(d.name, k): v for d in unchanged for k, v in _judged(d, recorded).items()}
    assert not [key for key, v in verdicts.items() if v.fails]
    assert {v.verdict for v in verdicts.values()} <= {SAME, AMBIGUOUS}
    assert sum(v.verdict == SAME for v in verdicts.values()) >= len(verdicts) - 1


@pytest.mark.slow
@pytest.mark.parametrize("lease", ["lease2", "lease3"])
def test_a_3_and_a_10_percent_slowdown_are_slower_and_nothing_else_is(leases, recorded, lease):
    for run, factor in SLOW[lease].items():
        v = _judged(leases[lease] / run, recorded)
        assert [k for k, x in v.items() if x.verdict != SAME] == ["cuda"], run
        assert v["cuda"].verdict == SLOWER and v["cuda"].fails
        time, cycles = v["cuda"].metric("time"), v["cuda"].metric("cycles")
        assert time.change.low > 1 + time.margin and cycles.change.low > 1 + cycles.margin
        assert abs(time.change.value - factor) < 0.012, (run, time.change.value)   # +3.4/+4.0%, +10.2/+10.9%


@pytest.mark.slow
def test_ambiguous_passes_unless_strict(leases, recorded):
    v = _judged(leases["lease3"] / AMBIGUOUS_RUN, recorded)
    assert v["sparse24"].verdict == AMBIGUOUS and not v["sparse24"].fails
    verdicts = list(v.values())
    assert not PairOutcome("ch09.structured_sparsity_ffn", AMBIGUOUS_RUN, "ok", verdicts=verdicts).fails
    strict = PairOutcome("ch09.structured_sparsity_ffn", AMBIGUOUS_RUN, "ok", verdicts=verdicts, strict=True)
    assert strict.fails and [x.variant for x in strict.failing] == ["sparse24"]


def _stored_with_source(leases: dict, run: str, source: dict, db: Path) -> None:
    data = load_run_dir(leases["lease2"] / run)
    data.run["info_json"] = json.dumps({**data.info, "source": source})
    write_run(db, data)


@pytest.mark.slow
def test_bench_record_refuses_a_run_of_other_code(leases, tmp_path):
    """The slowdown fixture carries the real pair's name: its runs must never become the real
    pair's evidence. Nor may a run of an older version of the pair."""
    real = source_digest(data_root() / "kernels" / "ch09" / "fused_l2norm.py")
    fixture = source_digest(FIXTURES / "gate_kernels" / "ch09" / "fused_l2norm.py")
    assert real["files"] == ["fused_l2norm.cu", "fused_l2norm.py"] and real["path"] == "kernels/ch09/fused_l2norm.py"
    assert "not the pair's module kernels/ch09/fused_l2norm.py" in source_mismatch(fixture, "ch09.fused_l2norm")
    older = {**real, "sha256": "0" * 64, "code_sha256": "1" * 64}
    assert "changed since the run (source digest 000000000000" in source_mismatch(older, "ch09.fused_l2norm")
    assert "changed since the run" in source_mismatch({**older, "code_sha256": None}, "ch09.fused_l2norm")
    assert source_mismatch({**real, "sha256": "0" * 64}, "ch09.fused_l2norm") == ""   # a docstring edit since
    assert source_mismatch(real, "ch09.fused_l2norm") == "" and source_mismatch({}, "ch09.fused_l2norm") == ""

    db, file = tmp_path / "a.db", tmp_path / "expectations.json"
    current_format_copy(GATE / "expectations_h100_session1.json", file)
    slowed, unchanged = list(SLOW["lease2"])[0], "20261126T102002Z-ch09.fused_l2norm-5698"
    _stored_with_source(leases, slowed, fixture, db)
    _stored_with_source(leases, unchanged, real, db)
    runner = CliRunner()
    res = runner.invoke(cli, ["bench", "record", slowed, "--db", str(db), "--expectations", str(file)])
    assert res.exit_code == 1 and "tests/fixtures/gate_kernels/ch09/fused_l2norm.py" in res.output
    assert len(exp.load(file)["pairs"]["ch09.fused_l2norm"]["sessions"]) == 1
    res = runner.invoke(cli, ["bench", "record", unchanged, "--db", str(db), "--expectations", str(file)])
    assert res.exit_code == 0, res.output
    session = exp.load(file)["pairs"]["ch09.fused_l2norm"]["sessions"][-1]
    assert session["code_sha256"] == real["code_sha256"]                 # both digests in the provenance
    assert session["source_sha256"] == real["sha256"] and len(exp.load(file)["pairs"]["ch09.fused_l2norm"]["sessions"]) == 2
