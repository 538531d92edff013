"""bench run's progress says how long the rest should take, from the pairs' latest stored gate runs on
this kind of GPU (store.history.gate_seconds -> bench.gate.time_left). Read from the real database of
an H200 ch14 gate (tests/fixtures/gate/h200_fresh_lease_ch14_gate.db.gz: 11 runs of `bench run`)."""
from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from repo_paths import ROOT
from sample_files import plain_file

from aisp_prof.bench.gate import time_left
from aisp_prof.cli import cli
from aisp_prof.naming import FRESH_COMPILE_CACHE, KEPT_COMPILE_CACHE
from aisp_prof.pairs.capabilities import Machine
from aisp_prof.store.history import gate_seconds

FIXTURE = ROOT / "tests" / "fixtures" / "gate" / "h200_fresh_lease_ch14_gate.db"     # shipped gzipped


@pytest.fixture
def gate_db(tmp_path):
    return plain_file(FIXTURE, tmp_path / "gate.db")


def _walls(path):
    with sqlite3.connect(path) as conn:
        return {p: json.loads(i)["wall_s"]["total"] for p, i in conn.execute("SELECT pair, info_json FROM runs")}


def test_each_pair_at_its_stored_gate_seconds_on_its_card(gate_db):
    seconds = gate_seconds(gate_db, "h200")
    assert seconds == _walls(gate_db) and len(seconds) == 11
    assert seconds["ch14.regional_triton"] == max(seconds.values())     # two timing processes that day
    assert gate_seconds(gate_db, "h100_80gb_hbm3") == {}                 # another card's gate says nothing
    assert gate_seconds(gate_db.with_name("none.db"), "h200") == {}      # no database yet: a first gate


def test_a_recording_or_a_plain_run_is_no_gate(gate_db):
    """A recording (every process compiling afresh) takes several times a gate; `aisp-prof run` is no
    gate either: neither sets the estimate."""
    with sqlite3.connect(gate_db) as conn:
        (info,) = conn.execute("SELECT info_json FROM runs WHERE pair = 'ch14.regional_triton'").fetchone()
        conn.execute("UPDATE runs SET info_json = ? WHERE pair = 'ch14.regional_triton'",
                     [json.dumps({**json.loads(info), "compile_cache": FRESH_COMPILE_CACHE})])
        conn.execute("UPDATE runs SET label = 'visit' WHERE pair = 'ch14.cuda_python'")
    assert set(_walls(gate_db)) - set(gate_seconds(gate_db, "h200")) == {"ch14.regional_triton", "ch14.cuda_python"}


def test_a_gate_with_a_kept_cache_is_estimated_by_such_gates_only(gate_db):
    """A kept compile cache (bench run --compile-cache) takes ch14.regional_triton 51 s where a gate compiling
    afresh takes 97: each kind of gate is estimated by its own kind."""
    with sqlite3.connect(gate_db) as conn:
        (info,) = conn.execute("SELECT info_json FROM runs WHERE pair = 'ch14.regional_triton'").fetchone()
        conn.execute("UPDATE runs SET info_json = ? WHERE pair = 'ch14.regional_triton'",
                     [json.dumps({**json.loads(info), "compile_cache": KEPT_COMPILE_CACHE})])
    assert "ch14.regional_triton" not in gate_seconds(gate_db, "h200")
    assert set(gate_seconds(gate_db, "h200", KEPT_COMPILE_CACHE)) == {"ch14.regional_triton"}


def test_a_gate_is_estimated_by_gates_before_its_further_processes_compiled_anew(gate_db):
    """The fixture's gates shared one cache per run (before 6d84cc2); a gate now ("fresh after the first")
    is estimated by those and by its own kind, a kept-cache gate by kept-cache gates only."""
    from aisp_prof.bench.gate import estimated_by
    from aisp_prof.naming import FRESH_AFTER_FIRST

    with sqlite3.connect(gate_db) as conn:
        (info,) = conn.execute("SELECT info_json FROM runs WHERE pair = 'ch14.regional_triton'").fetchone()
        conn.execute("UPDATE runs SET info_json = ? WHERE pair = 'ch14.regional_triton'",
                     [json.dumps({**json.loads(info), "compile_cache": FRESH_AFTER_FIRST})])
    assert gate_seconds(gate_db, "h200", estimated_by(FRESH_AFTER_FIRST)) == _walls(gate_db)
    assert "ch14.regional_triton" not in gate_seconds(gate_db, "h200")
    assert gate_seconds(gate_db, "h200", estimated_by(KEPT_COMPILE_CACHE)) == {}


def test_time_left_names_the_pairs_it_cannot_estimate(gate_db):
    last = gate_seconds(gate_db, "h200")
    text = time_left(["ch14.regional_triton", "ch14.cuda_python", "ch09.fused_l2norm"], last)
    assert text == f", ~{last['ch14.regional_triton'] + last['ch14.cuda_python']:.0f} s left by the last gate here " \
                   "(+ 1 pair(s) never gated here)"
    assert time_left(["ch09.fused_l2norm"], last) == "" and time_left([], last) == ""


def test_the_gate_log_counts_down(monkeypatch, gate_db, tmp_path):
    """Each pair's line says what is left from it on; a pair that cannot run here (one GPU: the 2-rank
    quantized_allreduce) is no pair 'never gated here'."""
    from aisp_prof.bench import runner

    for var in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):      # set: a kept cache, estimated by its own gates
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("aisp_prof.pairs.capabilities.detect_machine",
                        lambda: Machine.of("gpu", "triton", gpu_name="NVIDIA H200"))
    monkeypatch.setattr(runner, "current_hardware_key", lambda *a: "h200")
    monkeypatch.setattr(runner, "bench_one", lambda pair, *a, **k: runner.PairOutcome(pair.name, None, "ok"))
    last = gate_seconds(gate_db, "h200")
    res = CliRunner().invoke(cli, ["bench", "run", "--targets", "ch14.cuda_python", "--targets", "ch14.regional_triton",
                                   "--targets", "ch14.quantized_allreduce", "--db", str(gate_db),
                                   "--profiles-dir", str(tmp_path / "p")])
    starts = [ln for ln in res.stderr.splitlines() if ln.startswith("== ")]
    both = last["ch14.cuda_python"] + last["ch14.regional_triton"]
    assert starts[0].endswith(f", ~{both:.0f} s left by the last gate here"), res.stderr
    assert starts[1].endswith(f", ~{last['ch14.regional_triton']:.0f} s left by the last gate here"), res.stderr
    assert starts[2].endswith("s into the bench"), res.stderr          # skipped here: nothing to estimate
