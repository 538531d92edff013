"""The report's folder on disk: written under a hidden partial name, locked while written,
renamed into place when complete; what a killed report left behind is found and removed.

A report is all or nothing: `prepare_out` makes `.<name>.partial-<pid>` beside the target and
holds an flock on its WRITER_LOCK (freed by the kernel however the writer dies), `move_into_place`
renames it over the previous report, and `unlock` + removal clean up on any failure.
"""
from __future__ import annotations

import contextlib
import errno
import glob
import logging
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:                  # Windows: no flock; stale folders are then found by age alone
    fcntl = None

from ...errors import OutputError, os_error_message, shorten

log = logging.getLogger(__name__)

MARKER = ".aisp-report"            # marks a folder this module wrote (safe to replace)
STALE_REPORT_S = 600               # a killed report's partial folder without a lock is removed once this old
WRITER_LOCK = ".writer.lock"       # in a partial folder: flock-ed by the report writing it, freed when it dies


def prepare_out(out_dir: Path) -> Path:
    """A fresh partial folder beside `out_dir`; refuses to replace a folder we did not write."""
    partial = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    try:
        _remove_stale(out_dir)
        if out_dir.exists() and (not out_dir.is_dir() or
                                 (any(out_dir.iterdir()) and not (out_dir / MARKER).exists())):
            raise OutputError(f"{shorten(out_dir)} exists and is not an aisp-prof report folder; choose another --out")
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        if partial.exists():
            shutil.rmtree(partial)
        (partial / "img").mkdir(parents=True)
        (partial / "data").mkdir()
        _lock(partial)
    except OSError as exc:
        unlock(partial)
        shutil.rmtree(partial, ignore_errors=True)
        raise OutputError(os_error_message(exc, f"creating the report folder {shorten(out_dir)}", name_file=False)) from exc
    return partial


_held: dict[Path, Any] = {}        # partial folder -> the open lock file this process holds


def _lock(partial: Path) -> None:
    """Hold an flock on partial/WRITER_LOCK while the report is written: the kernel frees it when
    the process dies however it dies (SIGKILL), so the next report knows at once that the folder
    is nobody's (issue 31), on any host sharing the folder."""
    f = open(partial / WRITER_LOCK, "w")
    if fcntl is not None:
        fcntl.flock(f, fcntl.LOCK_EX)
    f.write(f"{os.getpid()} on {os.uname().nodename}\n")
    f.flush()
    _held[partial] = f


def unlock(partial: Path) -> None:
    """Remove the lock file (it is not part of the report) and let the lock go."""
    f = _held.pop(partial, None)
    if f is not None:
        with contextlib.suppress(OSError):
            (partial / WRITER_LOCK).unlink()
        f.close()


def _writer_gone(path: Path) -> bool | None:
    """True when `path`'s lock file is there and free (its report died), False when a live report
    holds it, None when there is no lock to ask (an older aisp-prof, or a set-aside folder)."""
    try:
        with open(path / WRITER_LOCK, "r+") as f:
            if fcntl is None:
                return None
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return bool(f.read().strip()) or None        # empty: its writer is about to lock it
    except OSError:
        return None


def _remove_stale(out_dir: Path) -> None:
    """Remove partial and set-aside folders of `out_dir` whose writing process is gone (killed
    outright, so it could not clean up): at once when its lock is free, else once untouched for
    STALE_REPORT_S and its process id names no live process (an id means nothing on another host
    sharing the folder); a concurrent report's stay."""
    if not out_dir.parent.is_dir():
        return
    for path in out_dir.parent.glob(f".{glob.escape(out_dir.name)}.*-*"):
        match = re.fullmatch(rf"\.{re.escape(out_dir.name)}\.(?:partial-(\d+)|old-(\d+)-\d+)", path.name)
        if not match:
            continue
        gone = _writer_gone(path)
        if gone is None:
            old = False
            with contextlib.suppress(OSError):
                old = time.time() - path.stat().st_mtime > STALE_REPORT_S
            gone = old and not _alive(int(match.group(1) or match.group(2)))
        if gone:
            shutil.rmtree(path, ignore_errors=True)
            log.warning("removed %s: left half-written by a report that was killed", path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # another user's live process
        return True
    return True


def move_into_place(partial: Path, out_dir: Path) -> None:
    """Rename the finished partial folder to `out_dir`, replacing a previous report there. A
    report written into the same folder at the same moment (two quickstarts) may move in between
    our steps: then the old one is moved aside again, a few times; the last to finish stays."""
    for attempt in range(10):
        if out_dir.exists():
            aside = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}-{attempt}"
            try:
                out_dir.rename(aside)
            except FileNotFoundError:        # another report moved it first
                pass
            else:
                shutil.rmtree(aside, ignore_errors=True)
        try:
            partial.rename(out_dir)
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or attempt == 9:
                shutil.rmtree(partial, ignore_errors=True)
                raise OutputError(os_error_message(exc, f"moving the report into {shorten(out_dir)}", name_file=False)) from exc
