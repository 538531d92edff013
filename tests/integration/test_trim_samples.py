"""dev/trim_samples.py on a real shipped run (ch14.graph_break_control_flow on an H100, whose export held the
compile's kernels before its first NVTX range when it was captured): trimming keeps what aisp-prof shows, a
trim that would change it is refused with the exports put back, and a trimmed export trims to itself."""
from __future__ import annotations

import gzip
import shutil
import sqlite3

import pytest

from pair_testing import import_fresh
from repo_paths import ROOT

RUN = ROOT / "profiles" / "samples_h100_ch14" / "20261126T144407Z-ch14.graph_break_control_flow-65b4"


@pytest.fixture(scope="module")
def trim_mod():
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(ROOT / "dev"))         # as when run as a script: it imports shrink_samples
        return import_fresh(ROOT / "dev" / "trim_samples.py", "trim_samples_dev")


def _untrimmed(run, tmp_path):
    """A copy of the run whose export gets back rows before its first range (the shipped one is trimmed):
    the first range's kernels, copied to 1 s earlier, as launches of their own (no runtime call of the
    ranges correlates with them)."""
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    plain = tmp_path / "nsys.sqlite"
    plain.write_bytes(gzip.decompress((copy / "nsys.sqlite.gz").read_bytes()))
    with sqlite3.connect(plain) as c:
        first = c.execute("SELECT min(start) FROM NVTX_EVENTS").fetchone()[0]
        cols = [r[1] for r in c.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
        shift = {"start": "start - 1000000000", "end": "end - 1000000000", "correlationId": "correlationId + 1000000000"}
        moved = ", ".join(shift.get(col, col) for col in cols)
        c.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT {moved} FROM CUPTI_ACTIVITY_KIND_KERNEL "
                  "WHERE start >= ? AND start < ? + 5000000", (first, first))
    (copy / "nsys.sqlite.gz").write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    return copy


def test_trimming_keeps_what_is_shown(trim_mod, tmp_path):
    run = _untrimmed(RUN, tmp_path)
    before, after, rows = trim_mod.trim(run, tmp_path / "work")
    assert rows > 0 and after < before
    # the shipped export is the trimmed one: trimming again finds nothing before the first range
    assert trim_mod.trim(run, tmp_path / "again")[2] == 0


def test_a_trim_that_changes_the_summary_is_refused(trim_mod, tmp_path, monkeypatch):
    run = _untrimmed(RUN, tmp_path)
    original = (run / "nsys.sqlite.gz").read_bytes()

    def too_much(db):                      # drop every kernel: the summary loses its GPU times
        with sqlite3.connect(db) as c:
            return c.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL").rowcount

    monkeypatch.setattr(trim_mod, "trim_export", too_much)
    with pytest.raises(SystemExit, match="would change once trimmed; the exports are back"):
        trim_mod.trim(run, tmp_path / "work")
    assert (run / "nsys.sqlite.gz").read_bytes() == original
