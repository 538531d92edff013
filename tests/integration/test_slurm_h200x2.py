"""`aisp-prof run --launcher slurm` on real GPUs (issue 34, item 3): tests/fixtures/slurm_h200x2 (README there),
2x H200 with srun's task start played by dev/srun_one_node.py. Its ranks are what the GPU machine's
`aisp-prof ranks --json` printed; each took its rank from SLURM_PROCID and its job from SLURM_JOB_ID; the run
folder records the srun line that started them. No GPU."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from repo_paths import FIXTURES, ROOT

from aisp_prof.api import open_db
from aisp_prof.cli import cli

FIXTURE = FIXTURES / "slurm_h200x2"
RUN = next(p for p in sorted(FIXTURE.glob("2026*")) if (p / "run.json").is_file())
VISIT = json.loads((FIXTURE / "visit_ranks.json").read_text())


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("slurm") / "a.db"
    assert CliRunner().invoke(cli, ["import", "--db", str(path), str(RUN)]).exit_code == 0
    return path


def _without_paths(ranks: dict) -> dict:
    return {**ranks, "ranks": [{k: v for k, v in r.items() if k != "path"} for r in ranks["ranks"]]}


def test_its_ranks_are_what_the_gpu_machine_said(db):
    out = CliRunner().invoke(cli, ["ranks", RUN.name, "--db", str(db), "--json"])
    assert out.exit_code == 0, out.output
    assert _without_paths(json.loads(out.output)) == _without_paths(VISIT)


def test_each_task_took_its_rank_and_job_from_srun(db):
    ranks = json.loads(CliRunner().invoke(cli, ["ranks", RUN.name, "--db", str(db), "--json"]).output)["ranks"]
    assert [(r["rank"], r["local_rank"], r["world_size"]) for r in ranks] == [(0, 0, 2), (1, 1, 2)]
    assert {r["rank_source"] for r in ranks} == {"environment: SLURM_PROCID"} and {r["job_id"] for r in ranks} == {"4242"}
    assert [r["matched_collectives"] for r in ranks] == [105, 105]
    assert max(abs(r["clock_residual_ns"]) for r in ranks) < 50_000       # one clock (test_multinode_h200x2's bound)


def test_the_run_records_the_srun_line_that_started_its_ranks():
    info = json.loads((RUN / "run.json").read_text())
    assert info["launch"]["launcher"] == "slurm" and info["world_size"] == 2
    check = info["commands"]["check"]
    assert check[:6] == ["srun", "--nodes=1", "--ntasks=2", "--ntasks-per-node=2", "--kill-on-bad-exit=1",
                         "--export=ALL"]
    assert check[-2] == "aisp_prof.collect.ranks.rank_exec" and check[-1].endswith("check.ranks.json")


def test_every_variant_passed_on_both_ranks_and_int8_halves_the_time(db):
    result = open_db(db).summary_result(RUN.name)
    assert result["run"]["status"] == "ok" and all(s["correct"] for s in result["summary"])
    head = result["headline"]
    assert head["best"] == "int8" and head["speedup_timer"] == "steady"
    assert head["speedup"] == pytest.approx(2.00, abs=0.01)


def test_the_srun_stand_in_gives_each_task_srun_s_variables_and_stops_on_a_failure(tmp_path):
    script = ROOT / "dev" / "srun_one_node.py"
    show = ("import os; e = os.environ; os.write(1, "                  # one write a task: lines never interleave
            "f\"{e['SLURM_PROCID']} {e['SLURM_LOCALID']} {e['SLURM_NTASKS']}\\n\".encode())")
    out = subprocess.run([sys.executable, str(script), "--nodes=1", "--ntasks=2", "--export=ALL", sys.executable,
                          "-c", show], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and sorted(out.stdout.splitlines()) == ["0 0 2", "1 1 2"], out.stdout
    fail = "import os, sys, time; sys.exit(3) if os.environ['SLURM_PROCID'] == '1' else time.sleep(30)"
    out = subprocess.run([sys.executable, str(script), "--nodes=1", "--ntasks=2", "--export=ALL", sys.executable,
                          "-c", fail], capture_output=True, text=True, timeout=20)
    assert out.returncode == 3                     # rank 0 killed at once (--kill-on-bad-exit), not after 30 s
    two = subprocess.run([sys.executable, str(script), "--nodes=2", "--ntasks=2", "--export=ALL", "true"],
                         capture_output=True, text=True, timeout=20)
    assert two.returncode != 0 and "one node only" in two.stderr
