"""A run folder that is either complete or absent, and the provenance every run records.

`aisp-prof run` and `aisp-prof calibrate --profile` both write profiles/<run-id>/ through
`atomic_folder`: everything goes to a hidden `.partial-<run-id>` folder that is renamed into
place only when the block finishes; any exception, Ctrl-C included, removes it, so profiles/
never holds half a run. `provenance()` is what makes a number traceable: when, where, on which
card, from which commit.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..naming import utc_now
from ..paths import checkout_root

_SMI_FIELDS = {"name": "gpu_name", "driver_version": "driver_version", "clocks.max.sm": "sm_clock_max_mhz",
               "clocks.max.mem": "mem_clock_max_mhz", "clocks.sm": "sm_clock_mhz_at_start",
               "clocks.mem": "mem_clock_mhz_at_start", "power.limit": "power_limit_w", "pci.bus_id": "pci_bus_id"}


@dataclass(frozen=True)
class RunFolder:
    """The partial folder being written (`path`) and where it lands when complete (`final`)."""

    run_id: str
    path: Path
    final: Path


@contextlib.contextmanager
def atomic_folder(profiles_dir: Path, run_id: str) -> Iterator[RunFolder]:
    """Yield a fresh partial folder; rename it to profiles_dir/run_id on success, remove it on
    any exception (KeyboardInterrupt included) and re-raise."""
    profiles_dir.mkdir(parents=True, exist_ok=True)
    folder = RunFolder(run_id, profiles_dir / f".partial-{run_id}", profiles_dir / run_id)
    folder.path.mkdir()
    try:
        yield folder
        os.replace(folder.path, folder.final)
    except BaseException:
        shutil.rmtree(folder.path, ignore_errors=True)
        raise


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Pretty JSON, written under a temporary name and renamed: never half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def gzip_file(path: Path) -> Path:
    """path -> path.gz (a .ncu-rep shrinks about 10x; the parsers read it back gzipped)."""
    target = Path(f"{path}.gz")
    with open(path, "rb") as src, gzip.open(target, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()
    return target


def nvidia_smi() -> dict[str, str]:
    """GPU 0's name, driver, max and current clocks, power limit and bus id ({} without nvidia-smi)."""
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits",
                              "-i", "0"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values = [v.strip() for v in out.split(",")]
    return dict(zip(_SMI_FIELDS.values(), values)) if len(values) == len(_SMI_FIELDS) else {}


def git_sha(root: Path | None = None) -> str:
    """The commit that was profiled: $AISP_GIT_SHA (for copies without history), else git's
    HEAD of the checkout (with -dirty when tracked files changed); '' when neither is known."""
    env = os.environ.get("AISP_GIT_SHA", "")
    if re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", env):
        return env
    root = root or checkout_root()
    if root is None:
        return ""
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "-q", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        return ""
    return sha + ("-dirty" if dirty else "")


def provenance() -> dict[str, Any]:
    """created_at, git_sha, host and the nvidia-smi view of the GPU: the start of a run.json."""
    return {"created_at": utc_now(), "git_sha": git_sha(), "host": os.uname().nodename, "gpu": nvidia_smi()}
