"""Triton's compiled binaries kept between gates, while every lowering and autotune choice is made anew.

A gate compiles afresh in every run (collect.code.compile_cache): Dynamo traces, Inductor lowers and
max-autotune draws its choices again, so a gate samples the compilers as a fresh machine would. Much of
the cost is not those choices but Triton turning each candidate kernel into a cubin (ptxas) and building
its launcher (gcc): on an H200, ch14.regional_triton took 96.6 s with Triton's binaries compiled anew and
70.4 s with them found in a kept cache, every verdict SAME; with this store the everyday whole-book gate
took ~589 s instead of ~11 minutes (two calls, 67fa0bb), and 467 s in one call since the parent's own work was cut
(4a4881d; benchmarks/results/gate_cost_h200.md). A Triton binary is
determined by its cache key (the kernel's source, its options, the target, Triton's own version and the
environment variables that change a compile; the few settings Triton leaves out of it keep a process off
the store: binary_store_manager), so finding it kept changes nothing that runs; which kernels run is
still decided afresh.

`kept_binaries(store)` points every process started meanwhile at `binary_store_manager.StoreCacheManager`
(Triton's TRITON_CACHE_MANAGER): a kernel or launcher missing from the run's own Triton cache is looked
for in the store and copied in, so the run's cache still holds every kernel the run compiled or found
(collect.code.generated indexes it); one compiled anew is put in the store too. Never kept: the results of
Triton's own autotuner (`*.autotune.json`), which are choices. The store lives at `$AISP_TRITON_STORE`,
else ~/.cache/aisp-prof/triton-binaries/, and is pruned to MAX_STORE_BYTES, least recently used first.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Iterator, Mapping

from ...errors import OutputError
from .scoped import environment, made_writable

STORE_ENV = "AISP_TRITON_STORE"          # the user's choice of folder; also what the children read
MANAGER_ENV = "TRITON_CACHE_MANAGER"     # Triton's: MODULE:CLASS of its cache manager
MANAGER = "aisp_prof.collect.code.binary_store_manager:StoreCacheManager"
MAX_STORE_BYTES = 4 << 30                # the whole book's binaries: 170 MB on an H200; ~20 versions of it
KEPT_BINARIES = "kept between runs"      # run.json `triton_binaries` when the store was used
STALE_TMP_S = 3600.0                     # a store file still being written after this was left by a killed process
GROUP_PREFIX = "__grp__"                 # Triton's name for a kernel's group file: __grp__<name>.json
FOUND_MARK = ".found_in_store"           # in a run's Triton cache folder the manager filled from the store


def default_store(environ: Mapping[str, str] = os.environ) -> Path:
    """$AISP_TRITON_STORE, else ~/.cache/aisp-prof/triton-binaries (beside the CUDA build cache)."""
    chosen = environ.get(STORE_ENV)
    return Path(chosen).expanduser() if chosen else Path.home() / ".cache" / "aisp-prof" / "triton-binaries"


def store_in_use(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The store this process's Triton compiles go through, or None (Triton's own cache alone)."""
    if environ.get(MANAGER_ENV) != MANAGER or not environ.get(STORE_ENV):
        return None
    return Path(environ[STORE_ENV])


def require_manager(environ: Mapping[str, str] = os.environ) -> None:
    """In a process that compiles through the store: InstallError unless Triton will find the manager (and
    so will Inductor's compile workers, started on this process's path). Triton, failing to import it, would
    fail every compile, and Inductor would drop each failed autotune candidate without a word. Found
    without being imported (that imports triton: a CUDA pair's process need not)."""
    if store_in_use(environ) is None:
        return
    import importlib.util

    module = MANAGER.split(":")[0]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        from ...errors import InstallError

        raise InstallError(f"Triton's binary store needs {module}, which this process cannot import; reinstall "
                           "aisp-prof, or pass bench run --fresh-binaries")


def found_in_store(cached: Path) -> bool:
    """Whether the run found the kernel in its Triton cache folder `cached` in the store rather than compiling it:
    the manager marks a folder it filled from the store (FOUND_MARK); a kernel compiled in the run, or in a
    process kept off the store, has no mark."""
    return (cached / FOUND_MARK).is_file()


def binaries_kind(environ: Mapping[str, str] = os.environ) -> str | None:
    """What a run's `triton_binaries` says: KEPT_BINARIES when its processes used the store, else None
    (every binary compiled in the run: its first calls' times hold Triton's whole compile)."""
    return KEPT_BINARIES if store_in_use(environ) is not None else None


@contextlib.contextmanager
def kept_binaries(store: Path | None) -> Iterator[None]:
    """Every process started inside the block compiles through the store at `store` (made if missing,
    pruned first); None: nothing changes. The environment is restored after. A user who set their own
    TRITON_CACHE_MANAGER keeps it (no store). OutputError when the folder cannot be made or written."""
    if store is None or os.environ.get(MANAGER_ENV, MANAGER) != MANAGER:
        yield
        return
    store = store.expanduser().resolve()
    try:
        made_writable([store])
    except OSError as exc:
        raise OutputError(f"the Triton binary store {store} cannot be made or written ({exc.strerror or exc}): "
                          f"set {STORE_ENV} to a folder you can write, or pass --fresh-binaries") from None
    prune(store, MAX_STORE_BYTES)
    with environment({MANAGER_ENV: MANAGER, STORE_ENV: str(store)}):
        yield


def prune(store: Path, max_bytes: int = MAX_STORE_BYTES, now_s: float | None = None) -> int:
    """Remove the least recently used entries (one folder per Triton cache key; a hit touches it) until
    the store holds at most `max_bytes`, and any file a process killed mid-write left (`.*.tmp`, an hour
    old); the bytes removed. Best effort: what cannot be read is left."""
    entries, left_s = [], (time.time() if now_s is None else now_s) - STALE_TMP_S
    with contextlib.suppress(OSError):
        for entry in store.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                with contextlib.suppress(OSError):
                    for tmp in entry.glob(".*.tmp"):
                        if tmp.is_file() and tmp.stat().st_mtime < left_s:
                            tmp.unlink()
                    size = sum(f.stat().st_size for f in entry.iterdir() if f.is_file())
                    entries.append((entry.stat().st_mtime, size, entry))
    total, removed = sum(size for _, size, _ in entries), 0
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total - removed <= max_bytes:
            break
        shutil.rmtree(entry, ignore_errors=True)
        removed += size
    return removed
