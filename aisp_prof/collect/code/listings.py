"""cuobjdump's listings of a Triton cubin (SASS, resource usage), made once per cubin.

`generated.index_generated` lists every kept Triton kernel of a run with cuobjdump, two calls of
0.1-0.4 s each. A gate's every GPU-timed run compiles the harness's own hold kernel (collect.timing.hold)
and lists it again, and a gate after a gate lists the same cubins its store gave back: on an H200
(2026-11-30, ten pairs of chapters 9 and 10) indexing took 0.59 s a pair in the gate's parent, nearly
all of it cuobjdump on cubins listed before. A listing is a function of the cubin's bytes and the tool,
so it is kept by their digest: in this process, and, where the run's Triton compiles go through the
binary store (collect.code.binary_store), beside the kernel in the store's folder for its key (pruned
with it; never copied into a run's cache, whose groups name their files), as `listing-<digest>.txt`.
"""
from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable

from .scoped import replaced

MEMO_CHARS = 32 << 20            # the listings remembered in this process, in characters (SASS: ~0.2 MB a kernel)
MEMO_LONGEST = 1 << 20           # a longer listing is not remembered here (the store keeps it)
LISTING_PREFIX = "listing-"


class _Memory(OrderedDict):
    """Listings by digest, oldest first, and the characters they hold."""

    def __init__(self) -> None:
        super().__init__()
        self.chars = 0


_MEMO = _Memory()
_LOCK = threading.Lock()           # index_generated lists a run's kernels from a pool of threads

Lister = Callable[[Path, str, Path], "str | None"]


def listing(tool: Path, flag: str, cubin: Path, make: Lister, store_folder: Path | None = None) -> str | None:
    """`make(tool, flag, cubin)` (cuobjdump's stdout, None when it failed), or the listing it gave for the
    same bytes before: remembered here, and in `store_folder` (the kernel's folder in the binary store)
    when that exists. A failed listing is not kept."""
    try:
        key = _digest(tool, flag, cubin.read_bytes())
    except OSError:
        return make(tool, flag, cubin)
    with _LOCK:
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key]
    kept = store_folder / f"{LISTING_PREFIX}{key}.txt" if store_folder is not None and store_folder.is_dir() else None
    text = _read(kept)
    if text is None:
        text = make(tool, flag, cubin)
        if text is not None and kept is not None:
            _write(kept, text)
    if text is not None and len(text) <= MEMO_LONGEST:
        with _LOCK:
            _MEMO.chars += len(text) - len(_MEMO.pop(key, ""))
            _MEMO[key] = text
            while _MEMO.chars > MEMO_CHARS:
                _MEMO.chars -= len(_MEMO.popitem(last=False)[1])
    return text


def _digest(tool: Path, flag: str, data: bytes) -> str:
    """The cubin's bytes, the flag, and the tool as found (its path, size and time: an upgraded cuobjdump
    at the same path lists anew)."""
    h = hashlib.sha256()
    try:
        st = os.stat(tool)
        h.update(f"{tool}\0{st.st_size}\0{st.st_mtime_ns}\0{flag}\0".encode())
    except OSError:
        h.update(f"{tool}\0?\0{flag}\0".encode())
    h.update(data)
    return h.hexdigest()[:40]


def _read(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _write(path: Path, text: str) -> None:
    """Best effort: a store that cannot be written only costs the next gate the listing again."""
    try:
        replaced(path, lambda tmp: tmp.write_text(text))
    except OSError:
        pass
