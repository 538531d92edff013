"""A recording's processes compile anew each (collect.code.compile_cache): the gate's margin must hold
what a fresh machine's compiler chooses (ch14.regional_triton's max-autotune variants ran 8-10% apart
between H200 leases), while a gate run keeps the machine's caches (a warm CI machine compiles nothing)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aisp_prof.bench.runner import BenchOptions
from aisp_prof.collect.process.child_args import parser
from aisp_prof.collect.process.runner import TimingOptions, timing_args


def test_a_recording_asks_each_process_for_a_fresh_cache_and_a_gate_does_not():
    assert BenchOptions(update_expectations=True).timing(None).fresh_compile_cache is True
    assert BenchOptions().timing(None).fresh_compile_cache is False
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
