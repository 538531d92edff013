"""`aisp-prof code` on the shipped samples (issue 31, item 5): `--show ptx|sass|ttgir|source`
exited 14 ("no such file or folder") on every sample, because the samples' generated/ keeps the
index but not the listings (the whole cache would be ~20 MB). Now a run that kept no listing of
the kind asked says so in one line (exit 6), one that kept some prints them, the README's example
works, and reading writes nothing: not into the run folders, not into the database."""
from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_paths import ROOT, every_sample_run

from aisp_prof.cli import cli

pytestmark = pytest.mark.slow
GENERATED = [d for d in every_sample_run() if (d / "generated").is_dir()]
KEPT = next(d for d in GENERATED if d.name == "20261126T144407Z-ch14.graph_break_control_flow-65b4")
NO_CODE = next(d for d in every_sample_run() if "ch09.fused_l2norm" in d.name)


def _state(paths: list[Path]) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for d in paths for p in [d, *d.rglob("*")]}


def _digest(path: Path) -> str:
    return "".join(hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.parent.glob(path.name + "*")))


def _code(db: Path, *args: str):
    return CliRunner().invoke(cli, ["code", *args, "--db", str(db)], env={"COLUMNS": "120"})


def _one_line(res, code: int, needle: str) -> None:
    assert res.exit_code == code, (res.exit_code, res.output)
    assert res.stderr.strip().splitlines() == [res.stderr.strip()] and needle in res.stderr, res.stderr
    assert "Traceback" not in res.output


def test_every_sample_answers_each_show_and_nothing_is_written(tmp_path, sample_dbs):
    assert len(GENERATED) >= 8
    db = sample_dbs.copy(tmp_path / "a.db", *every_sample_run())      # the session's import of them all, not one more
    folders, stored = _state([*GENERATED, NO_CODE]), _digest(db)
    for run in GENERATED:
        assert _code(db, run.name).exit_code == 0
        for show in ("ptx", "sass", "ttgir", "source"):
            res = _code(db, run.name, "--show", show, "--all")
            if run == KEPT and show in ("ptx", "sass"):
                assert res.exit_code == 0 and f"(no {show} kept in this run's folder)" in res.stdout
            else:
                _one_line(res, 6, f"this run kept no generated code for --show {show}")
    _one_line(_code(db, NO_CODE.name, "--show", "ptx"), 6, "kept no generated code")
    ptx = _code(db, KEPT.name, "--kernel", "triton_red_fused_sum_3", "--show", "ptx")
    assert ptx.exit_code == 0 and ".entry triton_red_fused_sum_3" in ptx.stdout
    assert _state([*GENERATED, NO_CODE]) == folders and _digest(db) == stored


def test_the_readme_code_example_runs_on_the_samples(tmp_path, sample_dbs):
    line = next(l for l in (ROOT / "README.md").read_text().splitlines() if l.startswith("aisp-prof code "))
    args = shlex.split(re.sub(r"\s+#.*", "", line))[2:]
    db = sample_dbs.copy(tmp_path / "a.db", KEPT)
    res = _code(db, *args)
    assert res.exit_code == 0, res.output
    assert re.search(r"=== triton_red_fused_sum_3 \(d0af4d10\): sass ===\n", res.stdout)
    assert "Function : triton_red_fused_sum_3" in res.stdout
