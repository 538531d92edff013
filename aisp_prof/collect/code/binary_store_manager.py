"""Triton's cache manager for the binary store (collect.code.binary_store), named by TRITON_CACHE_MANAGER
in the processes a gate starts: Triton imports it there. It imports triton; nothing of ours imports it.

It is Triton's own file cache (the run's TRITON_CACHE_DIR) with one fallback and one copy: a compiled
kernel (a cache group: source, IRs, PTX, cubin, metadata) or a launcher module missing from the run's cache
is copied in from the store, and one compiled here is copied to the store. Every store file is written
under a temporary name and renamed, the group last, so a process that sees a group sees it whole; a store
that cannot be read or written is as if empty (the kernel is compiled, as without a store).
"""
from __future__ import annotations

import json
import os
import shutil
import sysconfig
import uuid
from pathlib import Path
from typing import Dict, Optional

from triton.runtime.cache import FileCacheManager

from .binary_store import STORE_ENV

GROUP_PREFIX = "__grp__"
MODULE_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"   # Triton's launcher modules (built by gcc)


class StoreCacheManager(FileCacheManager):
    """The run's Triton cache, backed by the store at $AISP_TRITON_STORE (one folder per cache key)."""

    def __init__(self, key, override=False, dump=False):
        super().__init__(key, override=override, dump=dump)
        root = os.environ.get(STORE_ENV)
        self.store = Path(root) / self.key if root and not (override or dump) else None

    def get_group(self, filename: str) -> Optional[Dict[str, str]]:
        found = super().get_group(filename)
        if found is not None or self.store is None:
            return found
        try:
            names = json.loads((self.store / (GROUP_PREFIX + filename)).read_text())["child_paths"]
            group = {name: FileCacheManager.put(self, (self.store / _plain(name)).read_bytes(), name)
                     for name in names}
        except (OSError, ValueError, KeyError, TypeError):
            return None                   # not in the store, or not whole: compiled here
        FileCacheManager.put_group(self, filename, group)
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
            data = (self.store / _plain(filename)).read_bytes()
        except OSError:
            return None
        _touch(self.store)
        return FileCacheManager.put(self, data, filename)

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
            for name, path in files.items():
                target = self.store / _plain(name)
                if not target.exists():
                    _replace(target, lambda tmp, src=path: shutil.copyfile(src, tmp))
            if group is not None:
                _replace(self.store / group, lambda tmp: tmp.write_text(text))
            _touch(self.store)
        except (OSError, ValueError):
            pass                          # a store that cannot be written: this run's cache still has it


def _plain(name: str) -> str:
    """A store file's name: Triton's own, refused if it would leave the key's folder."""
    if not name or os.sep in name or name in (".", ".."):
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
