"""What a gate sets up for the processes it starts and gives back after: folders it must write,
environment variables for a block (the compile caches, the Triton binary store), and files written whole."""
from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping


def made_writable(paths: Iterable[Path]) -> None:
    """Make each folder (parents too) and check this process may write in it; OSError otherwise
    (as root, os.access is the only way a folder like /proc tells it cannot hold files)."""
    for path in paths:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """`values` in os.environ inside the block (the processes started meanwhile inherit them); each
    variable as it was after, however the block ends."""
    before = {var: os.environ.get(var) for var in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for var, value in before.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


def replaced(target: Path, write: Callable[[Path], object]) -> None:
    """`write(tmp)` to a temporary file beside `target`, then renamed onto it: a reader sees all of it or
    nothing (the binary store's `.*.tmp` names, which `binary_store.prune` clears when stale)."""
    tmp = target.with_name(f".{target.name[:150]}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
