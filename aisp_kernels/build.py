"""Build a pair's CUDA C++ source into a shared library, once, and load it with ctypes.

This is the one place that calls nvcc (found by aisp_prof.tools.find_nvcc), so every
pair is built with the same flags (`-O3`, `-lineinfo` so Nsight Compute can map stalls to source
lines) and lands in the same cache.
The cache key hashes the source bytes, the flags and `nvcc --version`, and then every local
header the source includes (a quoted `#include` found beside the including file, recursively:
aisp_prof.pairs.source.local_includes, the same walk that digests a pair's code), so editing a
`.cu` file or a shared header such as kernels/common/wgmma_tma.cuh, or changing toolkits,
rebuilds, and anything else reuses the library. A source with no local header keeps the key it
had before headers were followed. A pair that needs a header library (CUTLASS) passes
`include_dirs` (and any `extra_flags`); both go into the command line and so into the key, but
the library's headers' contents do not.

A source of several CUTLASS kernels spends most of a minute in cicc instantiating templates, one
kernel after another, on one core. Built in `parts` (kernels/common/build_parts.h), nvcc compiles
the file once per part with `-DAISP_PARTS=N -DAISP_PART=i`, each part instantiating its share of
the kernels, at once, and links the objects into the one library: the same kernels from the same
flags (their SASS differs only in offsets into the module's constant bank). Each part parses the
headers again: on two cores ch09's and ch10's CUTLASS libraries took 112.3 s in parts against
59.7 s whole, on a 16-core H200 machine 79 s against 97-103 s (benchmarks/build_parts.py and
its results), so parts are used only where PARTS_MIN_CPUS cores can
run them at once (`parts_here`; the cache key names the parts used). The compiles themselves run
through aisp_kernels.compiles (how many at once, and stopping them).
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from aisp_prof import tools
from aisp_prof.errors import BuildError, ToolNotFoundError
from aisp_prof.pairs.source import local_includes

from . import compiles
from .compiles import first_error_line

log = logging.getLogger(__name__)

DEFAULT_ARCH = "sm_90"                          # the project targets Hopper
PARTS_MIN_CPUS = 8                              # fewer: a library's parts are built as one compile
_ARCH_RE = re.compile(r"^sm_(\d+)([a-z]?)$")


def nvcc_command(source: str | Path, output: str | Path, arch: str,
                 nvcc: str | Path = "nvcc", include_dirs: Sequence[str | Path] = (),
                 extra_flags: Sequence[str] = (), compile_only: bool = False) -> list[str]:
    """The nvcc command line that builds `source` into the shared library `output` for `arch`.

    `arch` is "sm_90" or an arch-specific target such as "sm_90a" (needed for wgmma/setmaxnreg);
    SASS only, no PTX, so the library runs exactly the code that was profiled. `include_dirs`
    become `-I` flags and `extra_flags` (e.g. "--expt-relaxed-constexpr") follow them, both
    before `-o`; with neither the command is the same as before they existed. `compile_only`:
    an object (`-c`) for one part of a library built in parts, not the library.
    """
    match = _ARCH_RE.match(arch)
    if not match:
        raise ValueError(f"arch must look like 'sm_90' or 'sm_90a', got {arch!r}")
    if isinstance(extra_flags, str) or isinstance(include_dirs, (str, Path)):
        raise TypeError("include_dirs and extra_flags are sequences of strings, not one string")
    target = f"{match.group(1)}{match.group(2)}"
    return [
        str(nvcc), "-O3", "-std=c++17", "-c" if compile_only else "-shared", "-Xcompiler", "-fPIC", "-lineinfo",
        f"-gencode=arch=compute_{target},code=sm_{target}",
        *(f"-I{d}" for d in include_dirs), *(str(f) for f in extra_flags),
        "-o", str(output), str(source),
    ]


def default_arch() -> str:
    """The current CUDA device's `sm_XY` if torch sees one, else sm_90 (building on a CPU box)."""
    try:
        import torch
    except ImportError:
        return DEFAULT_ARCH
    if not torch.cuda.is_available():
        return DEFAULT_ARCH
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def build_dir() -> Path:
    """`$AISP_BUILD_DIR`, else ~/.cache/aisp-prof/build/."""
    env = os.environ.get("AISP_BUILD_DIR")
    return Path(env) if env else Path.home() / ".cache" / "aisp-prof" / "build"


@functools.cache
def _nvcc_version(nvcc: Path) -> str:
    proc = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ToolNotFoundError(f"{nvcc} --version failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


# Every build this process ran (not the cache hits): source, arch, seconds, library. The profiled
# child reports them (check.json's `builds`), so `run` and `check` can say what a long wait was.
BUILT: list[dict[str, object]] = []


def cached_target(source: str | Path, arch: str | None = None, include_dirs: Sequence[str | Path] = (),
                  extra_flags: Sequence[str] = (), parts: int = 1) -> Path:
    """Where `build_shared_library` puts (or finds) this build: the cache key hashes the source,
    its local headers, the flags (arch included, and the parts where more than one) and `nvcc --version`
    (the CUDA release). Builds nothing."""
    source = Path(source).resolve()
    nvcc = tools.find_nvcc()
    flags = nvcc_command("SOURCE", "OUTPUT", arch or default_arch(), include_dirs=[str(d) for d in include_dirs],
                         extra_flags=[str(f) for f in extra_flags])[1:]
    flags += [f"parts={parts_here(parts)}"] if parts_here(parts) > 1 else []   # one part: the key it always had
    key = hashlib.sha256()
    for part in (source.read_bytes(), "\0".join(flags).encode(), _nvcc_version(nvcc).encode()):
        key.update(part)
        key.update(b"\0\0")
    for name, data in local_includes(source):        # none: the key is what it always was
        key.update(b"include\0" + name.encode() + b"\0" + data + b"\0\0")
    return build_dir() / f"{source.stem}-{key.hexdigest()[:16]}.so"


def build_shared_library(source: str | Path, arch: str | None = None,
                         include_dirs: Sequence[str | Path] = (),
                         extra_flags: Sequence[str] = (), parts: int = 1) -> Path:
    """Compile `source` (a .cu file) to a cached .so and return its path; BuildError on failure.

    `include_dirs` and `extra_flags` go to nvcc_command (and so into the cache key, `cached_target`).
    `parts` > 1: on a machine of PARTS_MIN_CPUS cores or more (`parts_here`), the source is compiled
    once per part, at once, and the objects linked (see the module docstring).

    The library is written under a temporary name and renamed into place, so a concurrent or
    interrupted build never leaves a half-written library behind under the cached name.
    """
    source = Path(source).resolve()
    arch = arch or default_arch()
    nvcc = tools.find_nvcc()
    include_dirs = [str(d) for d in include_dirs]
    extra_flags = [str(f) for f in extra_flags]
    target = cached_target(source, arch, include_dirs, extra_flags, parts)
    out_dir = target.parent
    if target.is_file():
        log.debug("build cache hit: %s", target)
        return target

    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    log.info("building %s for %s", source.name, arch)
    began = time.monotonic()
    used = parts_here(parts)
    # nvcc's own temporary files (tmpxft_*, tens of MB for CUTLASS) in a folder of this build's, removed
    # with it: a compile killed by a failed part or an interrupt cannot clean up after itself
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".work", dir=out_dir))
    env = {**os.environ, "TMPDIR": str(work)}
    objects = [work / f"part{i}.o" for i in range(used)] if used > 1 else []
    try:
        if objects:
            compiles.run_all([nvcc_command(source, obj, arch, nvcc=nvcc, include_dirs=include_dirs, compile_only=True,
                                   extra_flags=[*extra_flags, f"-DAISP_PARTS={len(objects)}", f"-DAISP_PART={i}"])
                      for i, obj in enumerate(objects)], source, env)
            compiles.run_all([[str(nvcc), "-shared", "-o", str(tmp), *map(str, objects)]], source, env)
        else:
            compiles.run_all([nvcc_command(source, tmp, arch, nvcc=nvcc, include_dirs=include_dirs,
                                   extra_flags=extra_flags)], source, env)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    seconds = round(time.monotonic() - began, 1)
    BUILT.append({"source": source.name, "arch": arch, "seconds": seconds, "library": str(target),
                  **({"parts": len(objects)} if objects else {})})
    log.info("built %s for %s in %.1f s: %s", source.name, arch, seconds, target)
    return target


def parts_here(parts: int) -> int:
    """The parts a library declared for `parts` is built in on this machine: all of them where
    PARTS_MIN_CPUS cores can compile them at once, else one (a split costs each part the headers'
    parse again, which only pays on cores that would otherwise idle). ValueError for a bad count."""
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise ValueError(f"parts must be a whole number of at least 1, got {parts!r}")
    return parts if _machine_cpus() >= PARTS_MIN_CPUS else 1


def _machine_cpus() -> int:
    """The machine's CPUs, not this process's affinity: a cache key must not change with a taskset."""
    return os.cpu_count() or 1


@functools.cache
def _open(path: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(path))


def load_library(source: str | Path, arch: str | None = None,
                 include_dirs: Sequence[str | Path] = (), extra_flags: Sequence[str] = (),
                 parts: int = 1) -> ctypes.CDLL:
    """Build (or reuse) `source` and load it; one handle per library per process."""
    if parts != 1:
        return _open(build_shared_library(source, arch, include_dirs=include_dirs, extra_flags=extra_flags,
                                          parts=parts))
    if include_dirs or extra_flags:
        return _open(build_shared_library(source, arch, include_dirs=include_dirs, extra_flags=extra_flags))
    return _open(build_shared_library(source, arch))
