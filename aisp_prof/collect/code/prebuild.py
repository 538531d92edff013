"""Every pending CUDA library of the selected pairs built at once, before the first check.

Without this, each CUDA pair's library is built by nvcc on its first call, inside that pair's
check child, one pair after another: on a fresh machine `bench run --targets ch09 --targets ch10
--targets ch14` spends minutes in serial nvcc (a CUTLASS build alone takes 40-70 s) while the
other cores idle. `prebuild` asks each selected pair's CudaLibrary values whether they are in the
build cache (`builds.pair_libraries`, `needs_build()`: nothing is built or loaded to ask) and builds
those that are not on a pool of threads, each running its own nvcc through the library's own
`build()` (aisp_kernels.build.build_shared_library: the flags, the arch, arch None resolved as
the pair's first call would, the parts, and so the cache key, are exactly those of that call). It
builds, it never loads: no library is opened in this process. A CUTLASS library builds in parts
(kernels/common/build_parts.h), each its own nvcc; every nvcc of the process, a library's or a
part's, waits for one of aisp_kernels.compiles' slots (CPUs and memory), so the threads here
bound the libraries in flight and the slots the compiles.

Nothing is timed until the prebuild has finished, so it cannot perturb a measurement. A build
that fails is said in one line and is not fatal here: the pair's own check builds it again and
reports the error as it always has. Where nothing is pending (everything cached, no nvcc, no
CUTLASS headers: `needs_build()` is False where it cannot be told) it says nothing and does
nothing. Like `builds`, this module does not import aisp_kernels: the pair modules already did.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...pairs import KernelPair
from ...tools import available_memory
from .builds import pair_libraries

GB = 1 << 30
CICC_PEAK_BYTES = 6 * GB        # a CUTLASS build's cicc at its peak (measured: ~5.9 GB)
MAX_WORKERS = 8


@dataclass(frozen=True)
class Prebuilt:
    """One library the prebuild ran nvcc for: its source file's name, arch, seconds, and the
    first line of what went wrong (None: built)."""

    source: str
    arch: str
    seconds: float
    error: str | None = None
    parts: int = 1

    def line(self) -> str:
        if self.error is None:
            at_once = f" ({self.parts} parts at once)" if self.parts > 1 else ""
            return f"   built {self.source} for {self.arch} in {self.seconds} s{at_once}"
        return (f"   could not build {self.source} for {self.arch} ({self.seconds} s): {self.error}; "
                "its pair's check builds it again and reports the error")


def build_workers(cpus: int | None = None, available: int | None = None) -> int:
    """How many nvcc builds to run at once: min(cpus // 2, available memory // 6 GB, 8), at least 1.

    Half the CPUs, because the CPU count counts SMT siblings and each build is one process chain
    (cicc, then ptxas, then the host compiler) that keeps one core busy: one build per physical
    core is what pays; the rest would only slow every build down. No more than the available
    memory holds at a CUTLASS build's peak (cicc ~6 GB each), because more would swap or wake the
    OOM killer, which costs more than building fewer at once. At most 8: the book's gate has about
    ten libraries to build, and the longest (CUTLASS) build bounds the wall time anyway (its parts
    run beside these, each in one of aisp_kernels.compiles' nvcc slots). Memory unknown: the CPUs decide."""
    cpus = cpus if cpus is not None else _cpu_count()
    available = available if available is not None else available_memory()
    by_memory = available // CICC_PEAK_BYTES if available is not None else MAX_WORKERS
    return max(1, min(cpus // 2, by_memory, MAX_WORKERS))


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1



def pending_libraries(pairs: Sequence[KernelPair], variants: Mapping[str, Sequence[str]] | None = None) -> list[Any]:
    """Every CudaLibrary of `pairs` not in the build cache, once per build (the same source, arch
    and flags described twice is one build; should two differ only in their include folders, the
    second pair's check builds its own, as it would without the prebuild). `variants`: the
    variants each pair will run, by pair name (a pair not named: all), so that `--variants
    baseline` over a chapter builds the baselines' libraries only."""
    found: dict[tuple[Any, ...], Any] = {}
    for pair in pairs:
        for lib in pair_libraries(pair, (variants or {}).get(pair.name)):
            key = (str(Path(lib.source).resolve()), lib.arch, tuple(str(f) for f in getattr(lib, "extra_flags", ())))
            if key not in found and lib.needs_build():
                found[key] = lib
    return list(found.values())


def prebuild(pairs: Sequence[KernelPair], progress: Callable[[str], None] = lambda m: None,
             workers: int | None = None, variants: Mapping[str, Sequence[str]] | None = None) -> list[Prebuilt]:
    """Build every pending library of `pairs` (those this machine will run) concurrently, before
    the first check: when there are several pairs, or one pair with several pending libraries
    (alone, a single library is built by its check as before). [] where nothing is pending."""
    libraries = pending_libraries(pairs, variants)
    if not libraries or (len(pairs) < 2 and len(libraries) < 2):
        return []
    libraries = longest_first(libraries)
    count = min(workers or build_workers(), len(libraries))
    names = ", ".join(Path(lib.source).name for lib in libraries)
    plural = "library" if len(libraries) == 1 else "libraries"
    progress(f"building {len(libraries)} CUDA {plural}, {count} at a time, before the first check: {names}")
    began = time.monotonic()
    done = build_all(libraries, count, progress)
    built = sum(b.error is None for b in done)
    progress(f"   {built} of {len(done)} built in {time.monotonic() - began:.1f} s (cached for every check)")
    return done


def longest_first(libraries: Sequence[Any]) -> list[Any]:
    """The CUTLASS builds first (a library with include folders: CUTLASS's headers), the rest in their
    order: on a fresh H200 machine (2026-11-29) cutlass_gemm.cu took 119 s and warp_specialization_cutlass.cu
    81 s of the gate's 126-s prebuild, every other library 1-18 s; started 20th in line, cutlass_gemm.cu
    ended the prebuild 12 s after it could have."""
    return sorted(libraries, key=lambda lib: not getattr(lib, "include_dirs", ()))


def build_all(libraries: Sequence[Any], workers: int,
              progress: Callable[[str], None] = lambda m: None) -> list[Prebuilt]:
    """Each library's `build()` on a pool of `workers` threads (each waits on its own nvcc), a line
    as each finishes; in the order they finished. A failure is kept in its Prebuilt, never raised.
    Interrupted (Ctrl-C, or a SIGTERM the command turns into one), it starts no further build and
    kills the compiles running (aisp_kernels.compiles.halt_compiles): its threads would wait them out."""
    out: list[Prebuilt] = []
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="aisp-nvcc")
    halted = False
    try:
        pending = {pool.submit(_build_one, lib) for lib in libraries}
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)   # a timeout: Ctrl-C is seen
            for future in done:
                out.append(future.result())
                progress(out[-1].line())
    except BaseException:
        halted = True                    # before the halt: a second interrupt inside it still resumes
        pool.shutdown(wait=False, cancel_futures=True)
        _compiles("halt_compiles")
        raise
    finally:
        pool.shutdown(wait=True)
        if halted:
            _compiles("resume_compiles")
    return out


def _compiles(what: str) -> bool:
    """aisp_kernels.compiles' halt_compiles or resume_compiles, where the pairs loaded it (a pair
    module imports it; this module does not); whether it was there."""
    running = sys.modules.get("aisp_kernels.compiles")
    if running is None or not hasattr(running, what):
        return False
    getattr(running, what)()
    return True


def _build_one(lib: Any) -> Prebuilt:
    name, arch = Path(lib.source).name, _arch(lib)
    parts = lib.parts_here() if hasattr(lib, "parts_here") else 1
    began = time.monotonic()
    try:
        lib.build()
    except Exception as exc:            # noqa: BLE001 - the pair's check builds again and reports it
        return Prebuilt(name, arch, round(time.monotonic() - began, 1), _first_line(exc), parts)
    return Prebuilt(name, arch, round(time.monotonic() - began, 1), parts=parts)


def _arch(lib: Any) -> str:
    """The library's arch; None: the current GPU's, as aisp_kernels.build resolves it for the build."""
    if lib.arch:
        return str(lib.arch)
    build = sys.modules.get("aisp_kernels.build")
    return str(build.default_arch()) if build is not None else "the current GPU"


def _first_line(exc: BaseException) -> str:
    text = str(exc).split(" (command: ", 1)[0].strip()
    return (text.splitlines() or [type(exc).__name__])[0]
