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
import logging
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ...naming import utc_now
from ...paths import checkout_root

try:
    import fcntl
except ImportError:                  # Windows: no flock; stale folders are then found by age alone
    fcntl = None

log = logging.getLogger(__name__)

_SMI_FIELDS = {"name": "gpu_name", "driver_version": "driver_version", "clocks.max.sm": "sm_clock_max_mhz",
               "clocks.max.mem": "mem_clock_max_mhz", "clocks.sm": "sm_clock_mhz_at_start",
               "clocks.mem": "mem_clock_mhz_at_start", "power.limit": "power_limit_w", "pci.bus_id": "pci_bus_id"}


@dataclass(frozen=True)
class RunFolder:
    """The partial folder being written (`path`) and where it lands when complete (`final`)."""

    run_id: str
    path: Path
    final: Path


PARTIAL_PREFIX = ".partial-"
WRITER_LOCK = ".writer.lock"        # inside a partial folder: flock-ed by the process writing it
STALE_AFTER_S = 24 * 3600           # a partial folder without a lock file, untouched this long, is stale


@contextlib.contextmanager
def atomic_folder(profiles_dir: Path, run_id: str) -> Iterator[RunFolder]:
    """Yield a fresh partial folder; rename it to profiles_dir/run_id on success, remove it on
    any exception (KeyboardInterrupt included) and re-raise.

    A process killed outright (SIGKILL, power loss) cannot remove its folder, so each run first
    removes stale ones (`remove_stale_partials`). The writer holds an flock on a lock file inside
    its folder while it writes: the kernel drops it when the process dies, however it dies."""
    profiles_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(profiles_dir)
    folder = RunFolder(run_id, profiles_dir / f"{PARTIAL_PREFIX}{run_id}", profiles_dir / run_id)
    folder.path.mkdir()
    try:
        with _writer_lock(folder.path):
            yield folder
        os.replace(folder.path, folder.final)
    except BaseException:
        shutil.rmtree(folder.path, ignore_errors=True)
        raise


@contextlib.contextmanager
def _writer_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on path/WRITER_LOCK (which names this process) while the block
    runs; the file is removed before the folder is renamed into place."""
    lock = path / WRITER_LOCK
    with open(lock, "w") as f:
        if fcntl is not None:
            fcntl.flock(f, fcntl.LOCK_EX)     # a cleaner may hold it for a moment while it looks
        f.write(f"{os.getpid()} on {os.uname().nodename}\n")
        f.flush()
        yield
        lock.unlink()


def remove_stale_partials(profiles_dir: Path) -> list[Path]:
    """Remove the `.partial-*` folders no live process is writing (their lock is free), and
    those without a lock file untouched for STALE_AFTER_S; log each one. A concurrent run's
    folder holds its lock and is left alone. Returns what was removed."""
    removed = []
    for path in sorted(profiles_dir.glob(f"{PARTIAL_PREFIX}*")):
        reason = _stale_reason(path)
        if reason:
            shutil.rmtree(path, ignore_errors=True)
            log.warning("removed %s: a run folder left half-written (%s)", path, reason)
            removed.append(path)
    return removed


def _stale_reason(path: Path) -> str | None:
    """Why the partial folder `path` is stale, or None while a writer may still own it."""
    lock = path / WRITER_LOCK
    try:
        with open(lock, "r+") as f:
            if fcntl is not None:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return None                          # a live process holds it
                owner = f.read().strip()
                if owner:                                # (empty: its writer is about to lock it)
                    return f"its writer, process {owner}, is gone"
    except FileNotFoundError:
        pass                                             # made before the lock, or by an older aisp-prof
    except OSError:
        return None
    try:
        age = time.time() - max(p.stat().st_mtime for p in [path, *path.rglob("*")])
    except OSError:
        return None
    return f"no writer and untouched for {age / 3600:.0f} h" if age > STALE_AFTER_S else None


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


def boot_id() -> str | None:
    """This boot of this machine (Linux's random boot id): two leases of the same kind of machine,
    whose hostnames are all `vm`, tell apart by it; None where the kernel has none."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def provenance() -> dict[str, Any]:
    """created_at, git_sha, host (and its boot id) and the nvidia-smi view of the GPU: the start of
    a run.json."""
    return {"created_at": utc_now(), "git_sha": git_sha(), "host": os.uname().nodename, "boot_id": boot_id(),
            "gpu": nvidia_smi()}
