"""aisp_kernels.build in parts: one .cu compiled once per part, at once, and linked into one library.

ch09.cutlass_gemm and ch10.warp_specialization_cutlass are built this way on a machine of 8 cores or
more: cutlass_gemm.cu alone held a fresh H200 gate 80.6 s in one cicc (2026-11-30). These tests build
a small two-kernel source written to kernels/common/build_parts.h's convention with real nvcc (no GPU),
and check what a split build must keep: the same exported functions and kernels, a cache key of its
own, one error line for a broken part, nothing half-written left, no compile outliving a failure or an
interrupt, no more compiles at once than the process's slots, and no split on a machine too small to
gain from one.
"""
from __future__ import annotations

import ctypes
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from repo_paths import ROOT
from pair_testing import requires_nvcc

from aisp_kernels import build, compiles
from aisp_prof.errors import BuildError

PARTS_H = ROOT / "kernels" / "common" / "build_parts.h"

# Two kernels, each launched by an entry point defined in its own part; the C API in part 0.
SOURCE = r'''
#include <cuda_runtime.h>
#include "common/build_parts.h"

namespace split_parts __attribute__((visibility("hidden"))) {
int launch_add(float* y, int n);
int launch_scale(float* y, int n);
#if AISP_IN_PART(0)
__global__ void add_one(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] += 1.0f; }
int launch_add(float* y, int n) { add_one<<<1, 32>>>(y, n); return 0; }
#endif
#if AISP_IN_PART(1)
__global__ void scale_two(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] *= 2.0f; }
int launch_scale(float* y, int n) { scale_two<<<1, 32>>>(y, n); return 0; }
#endif
}  // namespace split_parts

#if AISP_IN_PART(0)
extern "C" int aisp_parts_seen() { return AISP_PARTS; }
extern "C" void* aisp_add() { return reinterpret_cast<void*>(&split_parts::launch_add); }
extern "C" void* aisp_scale() { return reinterpret_cast<void*>(&split_parts::launch_scale); }
#endif
'''


@pytest.fixture
def build_dir(monkeypatch, tmp_path):
    """An empty build cache, and parts built as parts on this machine, whatever its cores."""
    out = tmp_path / "build"
    monkeypatch.setenv("AISP_BUILD_DIR", str(out))
    monkeypatch.setattr(build, "PARTS_MIN_CPUS", 1)
    return out


@pytest.fixture
def split_source(tmp_path) -> Path:
    """The two-kernel source beside a copy of the shared header, as a chapter folder has it."""
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "build_parts.h").write_bytes(PARTS_H.read_bytes())
    src = tmp_path / "split.cu"
    src.write_text(SOURCE)
    return src


KERNELS = {b"_ZN11split_parts7add_oneEPfi", b"_ZN11split_parts9scale_twoEPfi"}     # their mangled names


def _kernels(library: Path) -> set[bytes]:
    """The two kernels' names found in the library's bytes (each cubin names its kernels)."""
    return {name for name in KERNELS if name + b"\0" in library.read_bytes()}


@pytest.mark.slow
@requires_nvcc
def test_parts_link_into_one_library_with_every_kernel(build_dir, split_source):
    whole = build.build_shared_library(split_source, arch="sm_90")
    split = build.build_shared_library(split_source, arch="sm_90", parts=2)
    assert split != whole and split.parent == whole.parent == build_dir                 # a key of its own
    assert split == build.cached_target(split_source, "sm_90", parts=2)
    assert build.cached_target(split_source, "sm_90", parts=1) == whole                  # one part: the old key
    assert _kernels(split) == _kernels(whole) == KERNELS
    for library, parts in ((whole, 1), (split, 2)):
        lib = ctypes.CDLL(str(library))        # cudart is linked statically: loads without a GPU
        assert lib.aisp_parts_seen() == parts
        lib.aisp_add.restype = lib.aisp_scale.restype = ctypes.c_void_p
        assert lib.aisp_add() and lib.aisp_scale()                 # part 1's function, linked into part 0's table
    (built,) = [b for b in build.BUILT if b["library"] == str(split)]
    assert built["parts"] == 2
    assert sorted(p.name for p in build_dir.iterdir()) == sorted([whole.name, split.name])   # no objects left
    assert build.build_shared_library(split_source, arch="sm_90", parts=2) == split           # a cache hit


@pytest.mark.slow
@requires_nvcc
def test_a_part_that_fails_names_its_error(build_dir, split_source):
    refusal = 'static_assert(AISP_PARTS == 1, "part one");\n'        # compiles only where part 1 is not split off
    broken = SOURCE.replace("#if AISP_IN_PART(1)\n", "#if AISP_IN_PART(1)\n" + refusal)
    split_source.write_text(broken)
    assert build.build_shared_library(split_source, arch="sm_90").is_file()      # whole: part 1 is AISP_PARTS 1
    with pytest.raises(BuildError) as info:
        build.build_shared_library(split_source, arch="sm_90", parts=2)
    message = str(info.value)
    assert "part one" in message and "-DAISP_PART=1" in message and "\n" not in message
    assert [p.name for p in build_dir.iterdir()] == [build.cached_target(split_source, "sm_90").name]


@pytest.mark.slow
@requires_nvcc
def test_a_small_machine_builds_the_parts_as_one_compile(build_dir, split_source, monkeypatch, nvcc_calls):
    """Each part parses the headers again: on fewer than PARTS_MIN_CPUS cores the split costs more than
    it saves (ch09's and ch10's CUTLASS libraries: 112.3 s in parts on two cores, 59.7 s whole), so
    there a library of parts is built whole, under the key a whole build has."""
    monkeypatch.setattr(build, "PARTS_MIN_CPUS", 8)
    monkeypatch.setattr(build, "_machine_cpus", lambda: 4)
    assert build.parts_here(3) == 1
    library = build.build_shared_library(split_source, arch="sm_90", parts=2)
    assert library == build.cached_target(split_source, "sm_90") and _kernels(library) == KERNELS
    assert len(nvcc_calls) == 1 and "-DAISP_PART=0" not in nvcc_calls[0]
    monkeypatch.setattr(build, "_machine_cpus", lambda: 8)
    assert build.parts_here(3) == 3 and build.cached_target(split_source, "sm_90", parts=2) != library


@pytest.fixture
def nvcc_calls(monkeypatch) -> list[str]:
    """The command line of every nvcc the build runs, as one string each."""
    calls: list[str] = []
    real = compiles.run_all

    def recording(commands, source, env=None):
        calls.extend(" ".join(c) for c in commands)
        return real(commands, source, env)

    monkeypatch.setattr(compiles, "run_all", recording)
    return calls


@pytest.mark.parametrize("parts", [0, -1, 1.5, "2", True])
def test_parts_must_be_a_whole_number_of_at_least_one(build_dir, split_source, parts):
    with pytest.raises(ValueError, match="parts"):
        build.cached_target(split_source, "sm_90", parts=parts)


@pytest.mark.parametrize("cpus, available, slots", [
    (16, 128 << 30, 16), (16, 23 << 30, 5), (2, 23 << 30, 2), (1, 1 << 30, 1)])
def test_nvcc_slots_are_bounded_by_cpus_and_memory(cpus, available, slots):
    assert compiles.nvcc_slots(cpus, available) == slots


def test_nvcc_slots_without_known_memory_are_the_cpus(monkeypatch):
    monkeypatch.setattr(compiles, "_available_memory", lambda: None)
    assert compiles.nvcc_slots(8) == 8


def _sleeper(seconds: float, code: int = 0, mark: Path | None = None) -> list[str]:
    """A stand-in compile: a process that sleeps, then exits with `code`; with `mark`, it first
    starts a child (as nvcc starts cicc) that writes its pid there and sleeps as long."""
    child = f"import os,pathlib,time; pathlib.Path({str(mark)!r}).write_text(str(os.getpid())); time.sleep({seconds})"
    script = ("import subprocess,sys,time;" + (f"subprocess.Popen([sys.executable,'-c',{child!r}]);" if mark else "")
              + f"time.sleep({seconds}); print('error: stand-in failed'); sys.exit({code})")
    return [sys.executable, "-c", script]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")          # a zombie is dead, whoever has yet to reap it


def test_a_failed_compile_stops_the_others_and_their_children(tmp_path, monkeypatch):
    monkeypatch.setattr(compiles, "_SLOTS", [threading.Semaphore(4)])
    marks = [tmp_path / f"child{i}" for i in range(2)]
    began = time.monotonic()
    with pytest.raises(BuildError, match="stand-in failed"):
        compiles.run_all([_sleeper(30, mark=marks[0]), _sleeper(2.0, code=1), _sleeper(30, mark=marks[1])],
                       tmp_path / "x.cu")
    assert time.monotonic() - began < 10                     # the 30 s compiles were stopped, not waited for
    pids = [int(m.read_text()) for m in marks]               # each had started its child by then
    deadline = time.monotonic() + 5
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_alive, pids))                         # the children were stopped with them


def test_an_interrupt_stops_every_compile(tmp_path, monkeypatch):
    monkeypatch.setattr(compiles, "_SLOTS", [threading.Semaphore(1)])          # one at a time: two wait
    started: list = []
    real_popen = compiles.subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        if len(started) == 1:
            threading.Timer(0.3, _interrupt).start()
        return started[-1]

    monkeypatch.setattr(compiles.subprocess, "Popen", popen)
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        compiles.run_all([_sleeper(20), _sleeper(20), _sleeper(20)], tmp_path / "x.cu")
    assert time.monotonic() - began < 5                       # killed, not waited for
    assert len(started) == 1 and started[0].returncode == -signal.SIGKILL   # the waiting ones never started


def test_a_failed_compile_lets_no_waiting_one_start(tmp_path, monkeypatch):
    """The failing compile's slot is given back only once the others are told to stop."""
    monkeypatch.setattr(compiles, "_SLOTS", [threading.Semaphore(1)])
    started: list = []
    real_popen = compiles.subprocess.Popen
    monkeypatch.setattr(compiles.subprocess, "Popen", lambda *a, **k: started.append(a[0]) or real_popen(*a, **k))
    for _ in range(5):
        started.clear()
        with pytest.raises(BuildError, match="stand-in failed"):
            compiles.run_all([_sleeper(0.1, code=1), _sleeper(20), _sleeper(20)], tmp_path / "x.cu")
        assert len(started) == 1


@pytest.mark.slow
def test_nvcc_s_temporary_files_go_with_the_build(build_dir, split_source, tmp_path, monkeypatch):
    """nvcc writes its intermediate files (tmpxft_*) under $TMPDIR and cannot remove them when killed:
    each build gives its compiles a folder of its own in the build cache, removed with the build."""
    seen = tmp_path / "tmpdirs.log"
    fake = tmp_path / "fake-nvcc"
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "fake nvcc"; exit 0; fi\n'
                    f'echo "$TMPDIR" >> "{seen}"; echo left > "$TMPDIR/tmpxft_$$.ii"\n'
                    'while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; fi; shift; done\n'
                    'case "$out" in *part1*) echo "error: part one" >&2; exit 1;; esac\necho library > "$out"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("AISP_NVCC", str(fake))
    library = build.build_shared_library(split_source, arch="sm_90")
    with pytest.raises(BuildError, match="part one"):
        build.build_shared_library(split_source, arch="sm_90", parts=2)
    folders = set(seen.read_text().split())
    assert len(folders) == 2 and all(Path(f).parent == build_dir for f in folders)     # one per build
    assert [p.name for p in build_dir.iterdir()] == [library.name]                    # nothing else left


def _interrupt() -> None:
    import _thread
    _thread.interrupt_main()


def test_compiles_wait_for_a_slot(tmp_path, monkeypatch):
    monkeypatch.setattr(compiles, "_SLOTS", [threading.Semaphore(2)])
    running, peak = [0], [0]
    lock = threading.Lock()
    real_popen = compiles.subprocess.Popen

    class Counted(real_popen):                                 # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs):
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            super().__init__(*args, **kwargs)

        def communicate(self, *args, **kwargs):
            try:
                return super().communicate(*args, **kwargs)
            finally:
                with lock:
                    running[0] -= 1

    monkeypatch.setattr(compiles.subprocess, "Popen", Counted)
    compiles.run_all([_sleeper(0.3) for _ in range(5)], tmp_path / "x.cu")
    assert peak[0] == 2
