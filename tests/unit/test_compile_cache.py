"""A recording's processes compile anew each (collect.code.compile_cache): the gate's margin must hold
what a fresh machine's compiler chooses (ch14.regional_triton's max-autotune variants ran 8-10% apart
between H200 leases), while a gate run's first process keeps the run's cache (its profilers profile what it
timed) and its further processes, which confirm or chase a verdict, draw anew."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aisp_prof.bench.runner import BenchOptions
from aisp_prof.collect.process.child_args import parser
from aisp_prof.collect.process.runner import TimingOptions, timing_args


def test_a_recording_asks_each_process_for_a_fresh_cache_and_a_gate_its_further_processes_only():
    assert BenchOptions(update_expectations=True).timing(None).fresh_compile_cache is True
    assert BenchOptions().timing(None).fresh_compile_cache is False
    gate = BenchOptions().timing(None)
    assert ["--fresh-compile-cache" in timing_args(gate, p) for p in range(3)] == [False, True, True]
    recording = BenchOptions(update_expectations=True).timing(None)
    assert all("--fresh-compile-cache" in timing_args(recording, p) for p in range(3))
    assert not any("--fresh-compile-cache" in timing_args(TimingOptions(processes=3), p) for p in range(3))
    fresh = timing_args(TimingOptions(fresh_compile_cache=True))
    assert "--fresh-compile-cache" in fresh and "--fresh-compile-cache" not in timing_args(TimingOptions())
    base = ["--pair", "p", "--variants", "baseline", "--mode", "bench", "--out", "o.json"]
    assert parser().parse_args(base + fresh).fresh_compile_cache is True


def test_the_fresh_cache_is_empty_its_own_and_gone_when_the_process_ends(tmp_path):
    """In a real interpreter: the folder is set before torch is imported, Inductor reads it, and it is removed at exit."""
    code = ("import os, sys\n"
            "from aisp_prof.collect.code.compile_cache import fresh_compile_cache\n"
            "folder = fresh_compile_cache()\n"
            "assert 'torch' not in sys.modules\n"
            "from torch._inductor.runtime.cache_dir_utils import cache_dir\n"
            "assert cache_dir() == os.environ['TORCHINDUCTOR_CACHE_DIR'], cache_dir()\n"
            "assert all(not any(p.iterdir()) for p in folder.iterdir())   # nothing compiled in it yet\n"
            "print(folder, os.environ['TRITON_CACHE_DIR'])\n")
    env = {**os.environ, "TMPDIR": str(tmp_path), "TORCHINDUCTOR_CACHE_DIR": "/nonexistent/machine-cache"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    folder, triton = out.stdout.split()
    assert Path(folder).parent == tmp_path and triton.startswith(folder)
    assert not Path(folder).exists()


def test_the_child_makes_its_fresh_cache_in_the_run_folder(monkeypatch, tmp_path):
    """The child's --fresh-compile-cache folder goes in its run folder (beside --out), so a process
    killed outright (SIGKILL: a timeout, a stopped rank), whose exit handler never runs, leaves
    it where the failed run's folder is removed whole, not in /tmp."""
    from aisp_prof.collect.process import child

    made = []

    def fake(under=None):
        made.append(under)
        raise SystemExit(0)               # only where it is made: no pair loaded
    monkeypatch.setattr(child, "fresh_compile_cache", fake)
    run = tmp_path / ".partial-run"
    with pytest.raises(SystemExit):
        child.main(["--pair", "p", "--variants", "baseline", "--mode", "bench", "--out", str(run / "bench_0.json"),
                    "--fresh-compile-cache"])
    assert made == [run]


def test_a_process_killed_outright_leaves_its_fresh_cache_under_the_folder_given(tmp_path):
    code = ("import os, signal, sys\n"
            "from pathlib import Path\n"
            "from aisp_prof.collect.code.compile_cache import fresh_compile_cache\n"
            "print(fresh_compile_cache(Path(sys.argv[1])), flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    for sub in ("tmp", "run"):
        (tmp_path / sub).mkdir()
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], capture_output=True, text=True,
                         env={**os.environ, "TMPDIR": str(tmp_path / "tmp")}, timeout=120)
    assert out.returncode == -9
    assert Path(out.stdout.strip()).parent == tmp_path / "run" and not any((tmp_path / "tmp").iterdir())


def test_a_gate_run_says_its_further_processes_compiled_anew_unless_the_cache_was_kept():
    from aisp_prof.collect.code.compile_cache import compile_cache_kind
    from aisp_prof.naming import FRESH_AFTER_FIRST, KEPT_COMPILE_CACHE, SHARED_COMPILE_CACHE

    assert compile_cache_kind(False, {}, fresh_further=True) == FRESH_AFTER_FIRST
    assert compile_cache_kind(False, {"TRITON_CACHE_DIR": "/kept"}, fresh_further=True) == KEPT_COMPILE_CACHE
    assert compile_cache_kind(False, {}) == SHARED_COMPILE_CACHE


def test_a_killed_process_s_empty_cache_is_removed_before_the_run_folder_is_stored(tmp_path):
    """A timing process removes its own at exit; one SIGKILLed after writing its report cannot."""
    from aisp_prof.collect.code.compile_cache import (FRESH_MARK, FRESH_PREFIX, cache_dirs, in_fresh_cache,
                                                      remove_fresh_caches)

    left = tmp_path / "run" / f"{FRESH_PREFIX}x1" / "inductor"
    node = tmp_path / "run" / "node1" / f"{FRESH_PREFIX}x2" / "triton"
    kept = tmp_path / "run" / "generated" / "triton" / f"{FRESH_PREFIX}like" / "k.ptx"   # deeper: not a cache
    for folder in (left, node, kept.parent):
        folder.mkdir(parents=True)
        (folder / "k.py").write_text("#")
    (tmp_path / "run" / "check.json").write_text("{}")
    remove_fresh_caches(tmp_path / "run")
    assert sorted(str(p.relative_to(tmp_path / "run")) for p in (tmp_path / "run").rglob("*")) == [
        "check.json", "generated", "generated/triton", f"generated/triton/{FRESH_PREFIX}like",
        f"generated/triton/{FRESH_PREFIX}like/k.py", "node1"]
    remove_fresh_caches(tmp_path / "gone")                # no such folder: nothing to do, no error
    mine = tmp_path / f"{FRESH_PREFIX}abc"
    assert in_fresh_cache({**cache_dirs(mine), FRESH_MARK: str(mine)})
    assert not in_fresh_cache(cache_dirs(mine)) and not in_fresh_cache({})       # a like-named user cache: not ours
