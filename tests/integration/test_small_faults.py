"""Issue 31, item 9, the small ones, on the shipped samples: a full disk leaves nothing (`diff
--html`'s 0-byte .tmp, `new`'s empty folder); the light install's message for a typo'd target or
a pair of one's own names neither kernels/ch09/compute_bound.py nor `pip install -e '.[kernels]'`
outside the checkout; the L1 ceiling note's ~87 has its unit; the samples' 40- and 7-character
SHAs are shown alike; the JSON streams raise no DeprecationWarning of the project's own."""
from __future__ import annotations

import errno
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES, ROOT

from aisp_prof.cli import cli

sys.path.insert(0, str(ROOT / "benchmarks"))
from fault_battery import NO_TORCH  # noqa: E402  (the CLI with torch and triton unimportable)

A = PROFILES / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"
B = PROFILES / "samples_h100" / "20261126T045251Z-ch09.fused_l2norm-ba93"


def _full_disk(monkeypatch, module) -> None:
    """Writes through `module` fail as a full disk does: the file is made, then ENOSPC."""
    real = Path.write_text

    def write_text(self, *args, **kwargs):
        real(self, "")
        raise OSError(errno.ENOSPC, "No space left on device", str(self))
    monkeypatch.setattr(Path, "write_text", write_text)
    real_open = open

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device", self.f.name)

    def full_open(path, mode="r", *args, **kwargs):
        f = real_open(path, mode, *args, **kwargs)
        return Full(f) if "x" in mode or "w" in mode else f
    monkeypatch.setattr(module, "open", full_open, raising=False)


def test_full_disk_leaves_no_diff_tmp_and_no_new_folder(tmp_path, sample_dbs, monkeypatch):
    from aisp_prof.pairs import new

    db = str(sample_dbs.copy(tmp_path / "a.db", A, B))
    _full_disk(monkeypatch, new)
    res = CliRunner().invoke(cli, ["diff", A.name, B.name, "--db", db, "--html", str(tmp_path / "out" / "d.html")])
    assert res.exit_code == 14 and "disk is full" in res.stderr, res.output
    res = CliRunner().invoke(cli, ["new", "mine.relu", "--dir", str(tmp_path / "pairs" / "deep")])
    assert res.exit_code == 14, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db"]


def _light(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", NO_TORCH, *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "120"})


@pytest.mark.slow
def test_light_install_messages_outside_the_checkout(tmp_path):
    typo = _light("run", "ch09.fused_l2nrom", cwd=tmp_path)
    assert typo.returncode == 2 and "did you mean ch09.fused_l2norm" in typo.stderr, typo.stderr
    assert CliRunner().invoke(cli, ["new", "mine.relu", "--dir", str(tmp_path / "mine")]).exit_code == 0
    for args in (["run", "mine/relu.py"], ["run", "ch09.fused_l2norm"]):
        res = _light(*args, cwd=tmp_path)
        assert res.returncode == 9 and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert "compute_bound.py" not in res.stderr and "-e '.[kernels]'" not in res.stderr, res.stderr
        assert f"pip install -e '{ROOT}[kernels]'" in res.stderr
    inside = _light("run", "ch09.fused_l2norm", cwd=ROOT)
    assert inside.returncode == 9 and "pip install -e '.[kernels]'" in inside.stderr


def test_the_l1_note_says_its_unit():
    from aisp_prof.analyze.roofline.ceilings import LEVEL_NOTES

    assert "~87 B/cycle/SM" in LEVEL_NOTES["l1"]


@pytest.mark.slow
def test_shas_are_shown_alike_and_json_streams_warn_nothing(tmp_path, sample_dbs):
    shas = {run: __import__("json").loads((run / "run.json").read_text())["git_sha"] for run in (A, B)}
    assert sorted(len(s) for s in shas.values()) == [7, 40]            # as the samples hold them
    db = str(sample_dbs.copy(tmp_path / "a.db", A, B))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for args in (["kernels", A.name, "--json"], ["kernels", A.name, "--ndjson"]):
            assert CliRunner().invoke(cli, [*args, "--db", db], catch_exceptions=False).exit_code == 0
    res = CliRunner().invoke(cli, ["diff", A.name, B.name, "--db", db, "--html", str(tmp_path / "d.html")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "d.html").read_text()
    for sha in shas.values():
        assert f'<code title="{sha}">{sha[:7]}</code>' in page
    CliRunner().invoke(cli, ["report", A.name, "--db", db, "--out", str(tmp_path / "rep")])
    pair_page = next(p for p in (tmp_path / "rep").glob("*.html") if p.name != "index.html").read_text()
    assert f'<code title="{shas[A]}">{shas[A][:7]}</code>' in pair_page


@pytest.mark.parametrize("raised", [ValueError("a text value in an integer column\nsecond line"),
                                    UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), MemoryError()])
def test_what_the_library_did_not_foresee_is_one_line_and_exit_1(tmp_path, sample_dbs, monkeypatch, raised):
    """A malformed export the parsers do not know, a bug, or running out of memory: one line naming
    the exception and exit 1 (README: any other error), never a traceback; -v lets the traceback
    through for a bug report."""
    from aisp_prof.api.database import RunDatabase

    def boom(self, *args, **kwargs):
        raise raised
    monkeypatch.setattr(RunDatabase, "run_list", boom)
    db = str(sample_dbs.original(A))
    res = CliRunner().invoke(cli, ["runs", "--db", db])
    assert res.exit_code == 1 and not isinstance(res.exception, type(raised)), res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aisp-prof: error: "), res.output
    assert (type(raised).__name__ in lines[0]) if not isinstance(raised, MemoryError) else "out of memory" in lines[0]
    loud = CliRunner().invoke(cli, ["-v", "runs", "--db", db])
    assert isinstance(loud.exception, type(raised))
