"""The parallel prebuild: every pending CUDA library of the selected pairs built at once, on a pool
of nvcc threads, before the first check (`collect.code.prebuild`); a failed build is said, not raised."""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from aisp_kernels import build, compiles
from aisp_kernels.binding import CudaLibrary
from aisp_prof.collect.code.builds import pair_libraries, pending_line
from aisp_prof.collect.code import prebuild as prebuild_module
from aisp_prof.collect.code.prebuild import (CICC_PEAK_BYTES, GB, build_all, build_workers, longest_first,
                                             pending_libraries, prebuild)
from aisp_prof.errors import BuildError
from aisp_prof.pairs import KernelPair


class FakeLibrary:
    """A CudaLibrary stand-in: its build() waits at `barrier` (so builds that are not concurrent
    break it), counts how many run at once, and fails when told to."""

    def __init__(self, name: str, log: dict, barrier: threading.Barrier | None = None, fail: bool = False,
                 pending: bool = True):
        self.source, self.arch, self.extra_flags = Path(f"/fake/{name}"), "sm_90a", ()
        self.log, self.barrier, self.fail, self.pending = log, barrier, fail, pending

    def needs_build(self) -> bool:
        return self.pending

    def build(self) -> Path:
        with self.log["lock"]:
            self.log["now"] += 1
            self.log["most"] = max(self.log["most"], self.log["now"])
            self.log["started"].append(self.source.name)
        try:
            if self.barrier is not None:
                self.barrier.wait(timeout=10)
            time.sleep(0.05)
            if self.fail:
                raise BuildError(f"nvcc could not build {self.source.name}: error: no such thing "
                                 "(command: nvcc -O3 -o x.so bad.cu)")
            self.pending = False
            return self.source.with_suffix(".so")
        finally:
            with self.log["lock"]:
                self.log["now"] -= 1


@pytest.fixture
def log():
    return {"lock": threading.Lock(), "now": 0, "most": 0, "started": []}


def _pair(name: str, *libraries) -> KernelPair:
    """A pair whose module globals hold `libraries`, as a pair module holds its CudaLibrary values."""
    variant = eval("lambda inputs: None", {f"LIB{i}": lib for i, lib in enumerate(libraries)})
    return KernelPair(name=name, chapter=0, lesson="", make_inputs=lambda s, d, seed: {},
                      variants={"baseline": variant}, reference=lambda i: None, flops=lambda s: 0,
                      bytes=lambda s: 0)


def test_workers_follow_the_cpus_and_the_memory_a_cicc_needs(monkeypatch):
    assert build_workers(16, 128 * GB) == 8               # the machine of the gate: 8 at most
    assert build_workers(16, 20 * GB) == 20 * GB // CICC_PEAK_BYTES == 3
    assert build_workers(6, 128 * GB) == 3                 # half the CPUs
    assert build_workers(2, 128 * GB) == build_workers(1, GB) == build_workers(16, 0) == 1   # at least one
    assert build_workers() >= 1
    monkeypatch.setattr(prebuild_module, "available_memory", lambda: None)
    assert build_workers(12) == 6                          # memory unknown: the CPUs decide


def test_the_pool_runs_its_builds_at_once_up_to_its_workers(log):
    barrier = threading.Barrier(3)                         # breaks (timeout) unless 3 build at once
    libraries = [FakeLibrary(f"k{i}.cu", log, barrier) for i in range(6)]
    lines: list[str] = []
    done = build_all(libraries, 3, lines.append)
    assert log["most"] == 3 and sorted(log["started"]) == sorted(f"k{i}.cu" for i in range(6))
    assert [b.error for b in done] == [None] * 6 and not barrier.broken
    assert lines == [f"   built {b.source} for sm_90a in {b.seconds} s" for b in done]   # as each finished


def test_a_failed_build_is_said_and_not_raised(log):
    good, bad = FakeLibrary("good.cu", log), FakeLibrary("bad.cu", log, fail=True)
    lines: list[str] = []
    done = {b.source: b for b in build_all([bad, good], 2, lines.append)}
    assert done["good.cu"].error is None and not good.pending
    assert done["bad.cu"].error == "nvcc could not build bad.cu: error: no such thing" and bad.pending
    assert any(line.startswith("   could not build bad.cu for sm_90a (") and "its pair's check builds it again" in line
               for line in lines)


def test_prebuild_runs_for_several_pairs_or_several_libraries_and_is_silent_otherwise(log):
    lines: list[str] = []
    a, b, cached = FakeLibrary("a.cu", log), FakeLibrary("b.cu", log), FakeLibrary("c.cu", log, pending=False)
    assert prebuild([_pair("t.one", a, cached)], lines.append) == [] and lines == []   # one pair, one build: its check's
    assert prebuild([_pair("t.none", cached), _pair("t.none2", cached)], lines.append) == [] and lines == []
    done = prebuild([_pair("t.a", a, cached), _pair("t.b", b, a)], lines.append, workers=4)   # a: one build
    assert sorted(d.source for d in done) == ["a.cu", "b.cu"] and all(d.error is None for d in done)
    assert lines[0] == "building 2 CUDA libraries, 2 at a time, before the first check: a.cu, b.cu"
    assert lines[-1].startswith("   2 of 2 built in ") and len(lines) == 4
    assert pending_libraries([_pair("t.a", a), _pair("t.b", b)]) == []                  # built: nothing pending
    c, d = FakeLibrary("c2.cu", log), FakeLibrary("d.cu", log)
    assert len(prebuild([_pair("t.cd", c, d)], lines.append)) == 2                         # one pair, two builds


def test_only_the_variants_asked_for_are_built(log):
    """`run ch10 --variants baseline` builds the baselines' libraries, not every variant's."""
    base, fast = FakeLibrary("base.cu", log), FakeLibrary("fast.cu", log)
    pair = KernelPair(name="t.v", chapter=0, lesson="", make_inputs=lambda s, d, seed: {},
                      variants={"baseline": eval("lambda inputs: None", {"LIB": base}),
                                "fast": eval("lambda inputs: None", {"LIB": fast})},
                      reference=lambda i: None, flops=lambda s: 0, bytes=lambda s: 0)
    assert {lib.source.name for lib in pair_libraries(pair)} == {"base.cu", "fast.cu"}
    assert [lib.source.name for lib in pair_libraries(pair, ["baseline"])] == ["base.cu"]
    assert [lib.source.name for lib in pair_libraries(pair, [])] == ["base.cu"]          # the baseline always runs
    assert [lib.source.name for lib in pending_libraries([pair], {"t.v": ["baseline"]})] == ["base.cu"]
    assert len(pending_libraries([pair], {"other.pair": ["baseline"]})) == 2           # not named: all
    lines: list[str] = []
    done = prebuild([pair, _pair("t.w", FakeLibrary("w.cu", log))], lines.append, variants={"t.v": ["baseline"]})
    assert sorted(d.source for d in done) == ["base.cu", "w.cu"] and fast.pending


def test_a_prebuilt_library_is_the_one_its_first_call_would_build(fake_nvcc):
    """CudaLibrary.build(): the build load() runs first, so the cache key is the same; nothing is loaded."""
    sources = []
    for name in ("k1.cu", "k2.cu", "broken.cu"):
        (fake_nvcc / name).write_text('extern "C" int aisp_k() { return 1; }\n')
        sources.append(fake_nvcc / name)
    libs = [CudaLibrary(src, {}, arch="sm_90a", extra_flags=("--expt-relaxed-constexpr",)) for src in sources]
    pairs = [_pair("t.k1", libs[0]), _pair("t.k2", libs[1], libs[2])]
    lines: list[str] = []
    done = {d.source: d for d in prebuild(pairs, lines.append, workers=2)}
    assert done["k1.cu"].error is None and done["k2.cu"].error is None
    assert done["broken.cu"].error.startswith("nvcc could not build broken.cu: broken.cu(1): error")
    assert not libs[0].needs_build() and not libs[1].needs_build() and libs[2].needs_build()
    assert all(lib._lib is None for lib in libs)                           # built, never loaded
    assert build.cached_target(sources[0], "sm_90a", [], ["--expt-relaxed-constexpr"]).is_file()
    assert pending_line(pairs[0]) is None and "building broken.cu first" in pending_line(pairs[1])
    assert lines[0].startswith("building 3 CUDA libraries, 2 at a time, before the first check: ")


class SleepingLibrary:
    """A library whose build is a 30 s compile run by aisp_kernels.build (a process and its child)."""

    def __init__(self, name: str, pids: Path):
        self.source, self.arch, self.pids = Path(f"/fake/{name}"), "sm_90a", pids

    def build(self) -> Path:
        child = f"import os,time; open({str(self.pids)!r}, 'a').write(f'{{os.getpid()}}\\n'); time.sleep(30)"
        compiles.run_all([[sys.executable, "-c", f"import subprocess,sys,time; subprocess.Popen([sys.executable,'-c',"
                                               f"{child!r}]); time.sleep(30)"]], self.source)
        return self.source


def test_an_interrupted_prebuild_kills_the_compiles_its_threads_wait_on(tmp_path, monkeypatch):
    """A signal to the Python process alone (`kill PID`, turned into an interrupt) reaches no nvcc: the
    prebuild kills the running compiles (their children too) instead of waiting out their minute."""
    import _thread

    monkeypatch.setattr(compiles, "_SLOTS", [threading.Semaphore(4)])
    pids = tmp_path / "pids"
    libraries = [SleepingLibrary(f"k{i}.cu", pids) for i in range(3)]
    threading.Timer(1.5, _thread.interrupt_main).start()
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        build_all(libraries, 2, lambda m: None)
    assert time.monotonic() - began < 10                            # not the 30 s the compiles would take
    children = [int(x) for x in pids.read_text().split()]
    assert len(children) == 2                                        # two workers: the third never started
    deadline = time.monotonic() + 5
    while any(map(_alive, children)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_alive, children)) and not compiles._HALTED.is_set() and not compiles._RUNNING


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_library_in_parts_is_prebuilt_in_its_parts_and_says_so(fake_nvcc, nvcc_log, monkeypatch):
    """A CUTLASS library declares parts: the prebuild builds it as its first call would (each part's
    compile, then the link; the same cache key) and its line says how many parts ran at once."""
    monkeypatch.setattr(build, "PARTS_MIN_CPUS", 1)            # parts, on however few cores this has
    sources = []
    for name in ("split.cu", "plain.cu"):
        (fake_nvcc / name).write_text('extern "C" int aisp_k() { return 1; }\n')
        sources.append(fake_nvcc / name)
    split, plain = CudaLibrary(sources[0], {}, arch="sm_90a", parts=3), CudaLibrary(sources[1], {}, arch="sm_90a")
    lines: list[str] = []
    done = {d.source: d for d in prebuild([_pair("t.s", split), _pair("t.p", plain)], lines.append, workers=2)}
    assert done["split.cu"].parts == 3 and done["plain.cu"].parts == 1
    assert f"   built split.cu for sm_90a in {done['split.cu'].seconds} s (3 parts at once)" in lines
    assert f"   built plain.cu for sm_90a in {done['plain.cu'].seconds} s" in lines
    assert not split.needs_build() and build.cached_target(sources[0], "sm_90a", parts=3).is_file()
    compiles = nvcc_log.read_text().splitlines()
    assert sorted(c.split("-DAISP_PART=")[1].split()[0] for c in compiles if "-DAISP_PART=" in c) == ["0", "1", "2"]
    assert sum(" -c " in f" {c} " and "split.cu" in c for c in compiles) == 3
    # the link: three objects (counted by their names' ends: the build's work folder, a mkdtemp name, may hold ".o")
    assert sum(c.startswith("-shared -o ") and sum(a.endswith(".o") for a in c.split()) == 3 for c in compiles) == 1


@pytest.mark.slow
def test_two_ch10_pairs_are_prebuilt_with_real_nvcc(monkeypatch, tmp_path):
    """Two cheap ch10 pairs (their libraries declare sm_90a, which nvcc builds without a GPU) into a
    fresh build cache: afterwards neither pair's check has anything to build."""
    from pair_testing import have_nvcc

    if not have_nvcc():
        pytest.skip("needs nvcc")
    from aisp_prof.pairs import select

    monkeypatch.setenv("AISP_BUILD_DIR", str(tmp_path / "build"))
    pairs = select(["ch10.stream_concurrency", "ch10.warp_specialized_elementwise"])
    libraries = [lib for pair in pairs for lib in pair_libraries(pair)]
    assert len(libraries) == 2 and all(lib.arch == "sm_90a" and lib.needs_build() for lib in libraries)
    lines: list[str] = []
    done = prebuild(pairs, lines.append, workers=2)
    assert sorted(d.source for d in done) == ["stream_concurrency.cu", "warp_specialized_elementwise.cu"]
    assert all(d.error is None for d in done), lines
    assert not any(lib.needs_build() for lib in libraries) and all(pending_line(p) is None for p in pairs)
    assert sorted(p.name for p in tmp_path.joinpath("build").glob("*.so")) == sorted(
        build.cached_target(lib.source, "sm_90a").name for lib in libraries)


def test_the_cutlass_builds_start_first():
    """The CUTLASS libraries of the book (119 s and 81 s on a fresh H200, every other one 1-18 s) are
    handed to the pool before the rest, which keep their order."""
    from aisp_prof.pairs import select

    cutlass = {"cutlass_gemm.cu", "warp_specialization_cutlass.cu", "cublas_vs_cutlass.cu"}
    libraries = [lib for pair in select(["ch09", "ch10", "ch14"]) for lib in pair_libraries(pair)]
    names = [Path(lib.source).name for lib in longest_first(libraries)]
    first = sum(n in cutlass for n in names)
    assert first >= 3 and set(names[:first]) == cutlass
    assert names[first:] == [Path(lib.source).name for lib in libraries if Path(lib.source).name not in cutlass]
