"""Finding the tools on this machine and reading their versions: the profilers, nvcc, CUTLASS.

A real user has ncu on PATH and nsys on PATH or under /opt/nvidia/nsight-systems; the GPU
machine this project was built on has only the nsys bundled inside the ncu install. Search
all of those, after an explicit `--ncu/--nsys` option or `AISP_NCU/AISP_NSYS`.

nvcc and the CUTLASS headers are found here too, not beside the build helper in aisp_kernels:
`aisp-prof list` must say whether a pair's CUDA variants can run without importing torch.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from .errors import ToolNotFoundError
from .paths import checkout_root


def _first_executable(candidates: list[str]) -> Path | None:
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return Path(c)
    return None


def _sorted_glob(pattern: str) -> list[str]:
    # newest install first: version folders sort lexically well enough (2025.3.1 > 2025.2.0)
    return sorted(glob.glob(pattern), reverse=True)


def find_ncu(explicit: str | None = None) -> Path:
    """Nsight Compute's CLI: option, $AISP_NCU, PATH, CUDA and /opt/nvidia installs."""
    found = _first_executable([
        explicit or "", os.environ.get("AISP_NCU", ""), shutil.which("ncu") or "",
        "/usr/local/cuda/bin/ncu", *_sorted_glob("/opt/nvidia/nsight-compute/*/ncu"),
    ])
    if found is None:
        raise ToolNotFoundError(
            "ncu (Nsight Compute) not found; install it with the CUDA toolkit, put it on PATH, "
            "or pass --ncu PATH / set AISP_NCU")
    return found


def find_nsys(explicit: str | None = None, ncu: Path | None = None) -> Path:
    """Nsight Systems' CLI: option, $AISP_NSYS, PATH, /opt/nvidia/nsight-systems, beside ncu."""
    beside_ncu: list[str] = []
    if ncu is not None:
        root = Path(os.path.realpath(ncu)).parent
        beside_ncu = _sorted_glob(str(root / "host" / "target-linux-*" / "nsys"))
    found = _first_executable([
        explicit or "", os.environ.get("AISP_NSYS", ""), shutil.which("nsys") or "",
        *_sorted_glob("/opt/nvidia/nsight-systems/*/bin/nsys"), "/usr/local/cuda/bin/nsys",
        *beside_ncu, *_sorted_glob("/opt/nvidia/nsight-compute/*/host/target-linux-*/nsys"),
    ])
    if found is None:
        raise ToolNotFoundError(
            "nsys (Nsight Systems) not found; install Nsight Systems, put nsys on PATH, "
            "or pass --nsys PATH / set AISP_NSYS")
    return found


def find_sanitizer(explicit: str | None = None) -> Path:
    """compute-sanitizer: option, $AISP_SANITIZER, PATH, /usr/local/cuda/bin."""
    found = _first_executable([explicit or "", os.environ.get("AISP_SANITIZER", ""),
                               shutil.which("compute-sanitizer") or "", "/usr/local/cuda/bin/compute-sanitizer",
                               *_sorted_glob("/usr/local/cuda-*/bin/compute-sanitizer")])
    if found is None:
        raise ToolNotFoundError("compute-sanitizer not found; it ships with the CUDA toolkit: put it on PATH, "
                                "or pass --sanitizer PATH / set AISP_SANITIZER")
    return found


# Nsight tools print "Version 2025.3.1.0"; nvcc prints "release 13.0, V13.0.88"
_VERSIONS = (re.compile(r"(\d{4}\.\d+\.\d+(?:\.\d+)?)"), re.compile(r"\bV(\d+\.\d+\.\d+)"))


def tool_version(path: Path) -> str:
    """'2025.3.1.0' (Nsight) or '13.0.88' (nvcc) from `<tool> --version`; '' if unreadable."""
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = out.stdout + out.stderr
    for pattern in _VERSIONS:
        m = pattern.search(text)
        if m:
            return m.group(1)
    return ""


_FALLBACK_NVCC = Path("/usr/local/cuda/bin/nvcc")


def find_nvcc() -> Path:
    """nvcc from `$AISP_NVCC`, else PATH, else /usr/local/cuda/bin; ToolNotFoundError if none."""
    env = os.environ.get("AISP_NVCC")
    if env:
        path = Path(env)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise ToolNotFoundError(f"AISP_NVCC={env} is not an executable nvcc; fix or unset it")
    on_path = shutil.which("nvcc")
    if on_path:
        return Path(on_path)
    if _FALLBACK_NVCC.is_file() and os.access(_FALLBACK_NVCC, os.X_OK):
        return _FALLBACK_NVCC
    raise ToolNotFoundError(
        f"nvcc not found on PATH or at {_FALLBACK_NVCC}; install the CUDA toolkit "
        "or set AISP_NVCC=/path/to/nvcc"
    )


_CUTLASS_HINT = ("pip install nvidia-cutlass (its cutlass_library package ships the headers) "
                 "or set AISP_CUTLASS_INCLUDE=/path/to/cutlass/include")

# <checkout>/.cutlass/include: a copy of CUTLASS's headers beside the project (an install: the current folder)
_CHECKOUT = checkout_root()
REPO_CUTLASS_INCLUDE = (_CHECKOUT or Path.cwd()) / ".cutlass" / "include"


def _package_cutlass_includes() -> list[Path]:
    """`<cutlass_library>/source/include` of an installed nvidia-cutlass, or []. Not imported."""
    try:
        spec = importlib.util.find_spec("cutlass_library")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) / "source" / "include" for p in spec.submodule_search_locations]


def _is_cutlass_include(path: Path) -> bool:
    return (path / "cutlass" / "cutlass.h").is_file() and (path / "cute" / "tensor.hpp").is_file()


def find_cutlass_include() -> Path:
    """The CUTLASS include directory (holding cutlass/ and cute/): `$AISP_CUTLASS_INCLUDE`, else
    the `nvidia-cutlass` package's `cutlass_library/source/include`, else `.cutlass/include`
    at the repository root; ToolNotFoundError saying how to get them if none has the headers."""
    env = os.environ.get("AISP_CUTLASS_INCLUDE")
    if env:
        path = Path(env)
        if _is_cutlass_include(path):
            return path
        raise ToolNotFoundError(f"AISP_CUTLASS_INCLUDE={env} has no cutlass/cutlass.h and "
                                f"cute/tensor.hpp; fix or unset it ({_CUTLASS_HINT})")
    candidates = [*_package_cutlass_includes(), REPO_CUTLASS_INCLUDE]
    for path in candidates:
        if _is_cutlass_include(path):
            return path
    raise ToolNotFoundError(f"CUTLASS headers not found (looked at $AISP_CUTLASS_INCLUDE, the "
                            f"nvidia-cutlass package, {candidates[-1]}); {_CUTLASS_HINT}")


def cutlass_include_dirs() -> list[Path]:
    """The -I folders a CUTLASS 3.x program needs: the headers (`find_cutlass_include`) and the
    utility headers (cutlass/util/packed_stride.hpp...), which a CUTLASS checkout and the
    nvidia-cutlass package keep in <root>/tools/util/include beside <root>/include; a merged
    copy holds both in one folder."""
    include = find_cutlass_include()
    util = include.parent / "tools" / "util" / "include"
    return [include, util] if (util / "cutlass" / "util").is_dir() else [include]


def have_cutlass() -> bool:
    """Whether find_cutlass_include() finds the headers (the "cutlass" capability)."""
    try:
        find_cutlass_include()
    except ToolNotFoundError:
        return False
    return True


def nvcc_if_found() -> Path | None:
    """nvcc's path for run.json's tool versions, or None where there is none."""
    try:
        return find_nvcc()
    except ToolNotFoundError:
        return None


def available_memory() -> int | None:
    """Bytes of memory available to new processes (/proc/meminfo's MemAvailable), None if unknown: how
    many nvcc compiles (a CUTLASS cicc takes 4-6 GB) a machine can run at once."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
