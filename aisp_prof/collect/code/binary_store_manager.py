"""Triton's cache manager for the binary store (collect.code.binary_store), named by TRITON_CACHE_MANAGER
in the processes a gate starts: Triton imports it there. Importing it does not import triton (aisp_prof
imports without torch and triton): `StoreCacheManager`, a subclass of Triton's own, is made on first use.

It is Triton's own file cache (the run's TRITON_CACHE_DIR) with one fallback and one copy: a compiled
kernel (a cache group: source, IRs, PTX, cubin, metadata) or a launcher module missing from the run's cache
is copied in from the store, and one compiled here is copied to the store. Every store file is written
under a temporary name and renamed, the group last (with each file's sha256, checked when it is copied
back), so a process that sees a group sees it whole and as written; a store
that cannot be read or written, or holds anything unexpected, is as if empty (the kernel is compiled, as
without a store): nothing of the store's may fail a compile, since Inductor drops an autotune candidate
whose compile failed, and the choice would then be made among fewer.

Triton leaves some settings out of its cache key (3.6: TRITON_KERNEL_OVERRIDE, TRITON_STORE_BINARY_ONLY,
TRITON_KERNEL_DUMP, TRITON_ALWAYS_COMPILE, a stages inspection hook); with any of them on, this process
neither reads nor writes the store (`_store_safe`), so a kernel compiled under one is never found without it.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sysconfig
from pathlib import Path
from typing import Any, Dict, Optional

from .binary_store import FOUND_MARK, GROUP_PREFIX, STORE_ENV
from .scoped import replaced

MODULE_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"   # Triton's launcher modules (built by gcc)


def __getattr__(name: str) -> Any:
    """`StoreCacheManager`, made (and triton imported) when Triton first asks for it (PEP 562): the run's
    Triton cache (Triton's FileCacheManager), backed by the store at $AISP_TRITON_STORE, a folder per key."""
    if name != "StoreCacheManager":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    methods = {"__init__": _init, "get_group": _get_group, "put_group": _put_group, "get_file": _get_file,
               "put": _put, "__module__": __name__, "__doc__": __getattr__.__doc__}
    cls = type(name, (_file_cache(),), methods)
    globals()[name] = cls
    return cls


def _file_cache() -> type:
    from triton.runtime.cache import FileCacheManager

    return FileCacheManager


def _init(self, key, override=False, dump=False):
    _file_cache().__init__(self, key, override=override, dump=dump)
    root = os.environ.get(STORE_ENV)
    self.store = Path(root) / self.key if root and not (override or dump) and _store_safe() else None


def _get_group(self, filename: str) -> Optional[Dict[str, str]]:
    """The run's own group; else the store's, copied in whole (None when not there, or not whole)."""
    base = _file_cache()
    found = base.get_group(self, filename)
    if found is not None or self.store is None:
        return found
    try:
        digests = json.loads((self.store / (GROUP_PREFIX + filename)).read_text())["sha256"]
        if not isinstance(digests, dict) or not digests:
            return None
        found_bytes = {name: (self.store / _plain(name)).read_bytes() for name in digests}
        if any(hashlib.sha256(data).hexdigest() != digests[name] for name, data in found_bytes.items()):
            return None                   # a file damaged since it was written: compiled here, and mended
        group = {name: base.put(self, data, name) for name, data in found_bytes.items()}
        base.put_group(self, filename, group)
    except Exception:                     # noqa: BLE001 (not in the store, or not whole: compiled here)
        return None
    _touch(self.store)
    try:                                  # what the run's generated-code index counts (binary_store.found_in_store)
        (Path(self.cache_dir) / FOUND_MARK).touch()
    except OSError:
        pass
    return base.get_group(self, filename)


def _put_group(self, filename: str, group: Dict[str, str]) -> str:
    path = _file_cache().put_group(self, filename, group)
    if self.store is not None:
        try:
            digests = {name: hashlib.sha256(Path(p).read_bytes()).hexdigest() for name, p in sorted(group.items())}
        except OSError:
            return path
        _publish(self.store, group, GROUP_PREFIX + filename, json.dumps({"sha256": digests}))
    return path


def _get_file(self, filename: str) -> Optional[str]:
    """The run's own file; else, for a launcher module only (an autotuner's timings are choices), the store's."""
    base = _file_cache()
    found = base.get_file(self, filename)
    if found is not None or self.store is None or not filename.endswith(MODULE_SUFFIX):
        return found
    try:
        path = base.put(self, (self.store / _plain(filename)).read_bytes(), filename)
    except Exception:                     # noqa: BLE001 (not in the store: built here)
        return None
    _touch(self.store)
    return path


def _put(self, data, filename: str, binary: bool = True) -> str:
    path = _file_cache().put(self, data, filename, binary)
    if self.store is not None and filename.endswith(MODULE_SUFFIX):
        _publish(self.store, {filename: path})
    return path


def _publish(store: Path, files: Dict[str, str], group: str | None = None, text: str = "") -> None:
    """Copy `files` (name -> path in the run's cache) into the store, then write the group file."""
    try:
        store.mkdir(parents=True, exist_ok=True)
        for name, path in files.items():         # replaced, not skipped: a bad file there is mended
            replaced(store / _plain(name), lambda tmp, src=path: shutil.copyfile(src, tmp))
        if group is not None:
            replaced(store / group, lambda tmp: tmp.write_text(text))
        _touch(store)
    except Exception:                     # noqa: BLE001 (a store that cannot be written: the run's cache has it)
        pass


def _store_safe() -> bool:
    """Whether this process compiles as its cache key says: none of the settings Triton leaves out of it on."""
    from triton import knobs

    compilation, runtime = knobs.compilation, getattr(knobs, "runtime", None)
    unkeyed = [getattr(compilation, name, False) for name in ("override", "store_binary_only", "dump_ir",
                                                              "always_compile")]
    return not any(unkeyed) and getattr(runtime, "add_stages_inspection_hook", None) is None


def _plain(name: str) -> str:
    """A store file's name: Triton's own, refused if it would leave the key's folder."""
    if not isinstance(name, str) or not name or os.sep in name or "\0" in name or name in (".", ".."):
        raise ValueError(name)
    return name


def _touch(folder: Path) -> None:
    """Mark a key's folder used now: `binary_store.prune` removes the least recently used first."""
    try:
        os.utime(folder)
    except OSError:
        pass
