"""Triton's cache manager for the binary store (collect.code.binary_store), named by TRITON_CACHE_MANAGER
in the processes a gate starts: Triton imports it there. It imports triton; nothing of ours imports it.

It is Triton's own file cache (the run's TRITON_CACHE_DIR) with one fallback and one copy: a compiled
kernel (a cache group: source, IRs, PTX, cubin, metadata) or a launcher module missing from the run's cache
is copied in from the store, and one compiled here is copied to the store. Every store file is written
under a temporary name and renamed, the group last, so a process that sees a group sees it whole; a store
that cannot be read or written, or holds anything unexpected, is as if empty (the kernel is compiled, as
without a store): nothing of the store's may fail a compile, since Inductor drops an autotune candidate
whose compile failed, and the choice would then be made among fewer.

Triton leaves some settings out of its cache key (3.6: TRITON_KERNEL_OVERRIDE, TRITON_STORE_BINARY_ONLY,
TRITON_KERNEL_DUMP, TRITON_ALWAYS_COMPILE, a stages inspection hook); with any of them on, this process
neither reads nor writes the store (`_store_safe`), so a kernel compiled under one is never found without it.
"""
from __future__ import annotations

import json
import os
import shutil
import sysconfig
import uuid
from pathlib import Path
from typing import Dict, Optional

from triton import knobs
from triton.runtime.cache import FileCacheManager

from .binary_store import STORE_ENV

GROUP_PREFIX = "__grp__"
MODULE_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"   # Triton's launcher modules (built by gcc)


class StoreCacheManager(FileCacheManager):
    """The run's Triton cache, backed by the store at $AISP_TRITON_STORE (one folder per cache key)."""

    def __init__(self, key, override=False, dump=False):
        super().__init__(key, override=override, dump=dump)
        root = os.environ.get(STORE_ENV)
        self.store = Path(root) / self.key if root and not (override or dump) and _store_safe() else None

    def get_group(self, filename: str) -> Optional[Dict[str, str]]:
        found = super().get_group(filename)
        if found is not None or self.store is None:
            return found
        try:
            names = json.loads((self.store / (GROUP_PREFIX + filename)).read_text())["child_paths"]
            if not isinstance(names, list) or not names:
                return None
            group = {name: FileCacheManager.put(self, (self.store / _plain(name)).read_bytes(), name)
                     for name in names}
            FileCacheManager.put_group(self, filename, group)
        except Exception:                 # noqa: BLE001 (not in the store, or not whole: compiled here)
            return None
        _touch(self.store)
        return super().get_group(filename)

    def put_group(self, filename: str, group: Dict[str, str]) -> str:
        path = super().put_group(filename, group)
        if self.store is not None:
            self._publish(group, GROUP_PREFIX + filename, json.dumps({"child_paths": sorted(group)}))
        return path

    def get_file(self, filename: str) -> Optional[str]:
        found = super().get_file(filename)
        if found is not None or self.store is None or not filename.endswith(MODULE_SUFFIX):
            return found                  # only launcher modules: an autotuner's timings are choices
        try:
            path = FileCacheManager.put(self, (self.store / _plain(filename)).read_bytes(), filename)
        except Exception:                 # noqa: BLE001 (not in the store: built here)
            return None
        _touch(self.store)
        return path

    def put(self, data, filename: str, binary: bool = True) -> str:
        path = super().put(data, filename, binary)
        if self.store is not None and filename.endswith(MODULE_SUFFIX):
            self._publish({filename: path})
        return path

    def _publish(self, files: Dict[str, str], group: str | None = None, text: str = "") -> None:
        """Copy `files` (name -> path in the run's cache) into the store, then write the group file."""
        assert self.store is not None
        try:
            self.store.mkdir(parents=True, exist_ok=True)
            for name, path in files.items():     # replaced, not skipped: a bad file there is mended
                _replace(self.store / _plain(name), lambda tmp, src=path: shutil.copyfile(src, tmp))
            if group is not None:
                _replace(self.store / group, lambda tmp: tmp.write_text(text))
            _touch(self.store)
        except Exception:                 # noqa: BLE001 (a store that cannot be written: the run's cache has it)
            pass


def _store_safe() -> bool:
    """Whether this process compiles as its cache key says: none of the settings Triton leaves out of it on."""
    compilation, runtime = knobs.compilation, getattr(knobs, "runtime", None)
    unkeyed = [getattr(compilation, name, False) for name in ("override", "store_binary_only", "dump_ir",
                                                              "always_compile")]
    return not any(unkeyed) and getattr(runtime, "add_stages_inspection_hook", None) is None


def _plain(name: str) -> str:
    """A store file's name: Triton's own, refused if it would leave the key's folder."""
    if not isinstance(name, str) or not name or os.sep in name or "\0" in name or name in (".", ".."):
        raise ValueError(name)
    return name


def _replace(target: Path, write) -> None:
    """Write through a temporary file beside `target` and rename it: readers see all of it or nothing."""
    tmp = target.with_name(f".{target.name[:150]}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def _touch(folder: Path) -> None:
    """Mark a key's folder used now: `binary_store.prune` removes the least recently used first."""
    try:
        os.utime(folder)
    except OSError:
        pass
