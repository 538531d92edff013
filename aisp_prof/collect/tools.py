"""Finding the profilers and reading their versions.

A real user has ncu on PATH and nsys on PATH or under /opt/nvidia/nsight-systems; the GPU
machine this project was built on has only the nsys bundled inside the ncu install. Search
all of those, after an explicit `--ncu/--nsys` option or `AISP_NCU/AISP_NSYS`.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from ..errors import ToolNotFoundError


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


def find_nvcc() -> Path:   # MERGE: take helper's version
    from ..cuda_build import find_nvcc as f

    return f()


def have_cutlass() -> bool:   # MERGE: take helper's version
    from ..cuda_build import have_cutlass as f

    return f()


def nvcc_if_found() -> Path | None:
    """nvcc's path for run.json's tool versions, or None where there is none."""
    try:
        return find_nvcc()
    except ToolNotFoundError:
        return None
