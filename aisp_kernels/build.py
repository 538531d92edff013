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
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import re
import shlex
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from aisp_prof import tools
from aisp_prof.errors import BuildError, ToolNotFoundError
from aisp_prof.pairs.source import local_includes

log = logging.getLogger(__name__)

DEFAULT_ARCH = "sm_90"                          # the project targets Hopper
_ARCH_RE = re.compile(r"^sm_(\d+)([a-z]?)$")


def nvcc_command(source: str | Path, output: str | Path, arch: str,
                 nvcc: str | Path = "nvcc", include_dirs: Sequence[str | Path] = (),
                 extra_flags: Sequence[str] = ()) -> list[str]:
    """The nvcc command line that builds `source` into the shared library `output` for `arch`.

    `arch` is "sm_90" or an arch-specific target such as "sm_90a" (needed for wgmma/setmaxnreg);
    SASS only, no PTX, so the library runs exactly the code that was profiled. `include_dirs`
    become `-I` flags and `extra_flags` (e.g. "--expt-relaxed-constexpr") follow them, both
    before `-o`; with neither the command is the same as before they existed.
    """
    match = _ARCH_RE.match(arch)
    if not match:
        raise ValueError(f"arch must look like 'sm_90' or 'sm_90a', got {arch!r}")
    if isinstance(extra_flags, str) or isinstance(include_dirs, (str, Path)):
        raise TypeError("include_dirs and extra_flags are sequences of strings, not one string")
    target = f"{match.group(1)}{match.group(2)}"
    return [
        str(nvcc), "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-lineinfo",
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


def _first_error_line(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for pattern in (r"\berror\b", r"\bfatal\b"):
        for ln in lines:
            if re.search(pattern, ln, re.IGNORECASE):
                return ln
    return lines[-1] if lines else "(nvcc printed nothing)"


# Every build this process ran (not the cache hits): source, arch, seconds, library. The profiled
# child reports them (check.json's `builds`), so `run` and `check` can say what a long wait was.
BUILT: list[dict[str, object]] = []


def cached_target(source: str | Path, arch: str | None = None, include_dirs: Sequence[str | Path] = (),
                  extra_flags: Sequence[str] = ()) -> Path:
    """Where `build_shared_library` puts (or finds) this build: the cache key hashes the source,
    its local headers, the flags (arch included) and `nvcc --version` (the CUDA release). Builds nothing."""
    source = Path(source).resolve()
    nvcc = tools.find_nvcc()
    flags = nvcc_command("SOURCE", "OUTPUT", arch or default_arch(), include_dirs=[str(d) for d in include_dirs],
                         extra_flags=[str(f) for f in extra_flags])[1:]
    key = hashlib.sha256()
    for part in (source.read_bytes(), "\0".join(flags).encode(), _nvcc_version(nvcc).encode()):
        key.update(part)
        key.update(b"\0\0")
    for name, data in local_includes(source):        # none: the key is what it always was
        key.update(b"include\0" + name.encode() + b"\0" + data + b"\0\0")
    return build_dir() / f"{source.stem}-{key.hexdigest()[:16]}.so"


def build_shared_library(source: str | Path, arch: str | None = None,
                         include_dirs: Sequence[str | Path] = (),
                         extra_flags: Sequence[str] = ()) -> Path:
    """Compile `source` (a .cu file) to a cached .so and return its path; BuildError on failure.

    `include_dirs` and `extra_flags` go to nvcc_command (and so into the cache key, `cached_target`).

    The library is written under a temporary name and renamed into place, so a concurrent or
    interrupted build never leaves a half-written library behind under the cached name.
    """
    source = Path(source).resolve()
    arch = arch or default_arch()
    nvcc = tools.find_nvcc()
    include_dirs = [str(d) for d in include_dirs]
    extra_flags = [str(f) for f in extra_flags]
    target = cached_target(source, arch, include_dirs, extra_flags)
    out_dir = target.parent
    if target.is_file():
        log.debug("build cache hit: %s", target)
        return target

    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    cmd = nvcc_command(source, tmp, arch, nvcc=nvcc, include_dirs=include_dirs, extra_flags=extra_flags)
    log.info("building %s for %s", source.name, arch)
    began = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            output = proc.stderr + proc.stdout
            log.error("nvcc output for %s:\n%s", source, output)
            err = BuildError(f"nvcc could not build {source.name}: {_first_error_line(output)} "
                             f"(command: {shlex.join(cmd)})")
            err.nvcc_output = output  # type: ignore[attr-defined]
            raise err
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    seconds = round(time.monotonic() - began, 1)
    BUILT.append({"source": source.name, "arch": arch, "seconds": seconds, "library": str(target)})
    log.info("built %s for %s in %.1f s: %s", source.name, arch, seconds, target)
    return target


@functools.cache
def _open(path: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(path))


def load_library(source: str | Path, arch: str | None = None,
                 include_dirs: Sequence[str | Path] = (), extra_flags: Sequence[str] = ()) -> ctypes.CDLL:
    """Build (or reuse) `source` and load it; one handle per library per process."""
    if include_dirs or extra_flags:
        return _open(build_shared_library(source, arch, include_dirs=include_dirs, extra_flags=extra_flags))
    return _open(build_shared_library(source, arch))
