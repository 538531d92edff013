"""Which code a run measured: the pair's module and the sources beside it that share its name
(fused_l2norm.py and fused_l2norm.cu), hashed together.

Recorded evidence must come from the pair's own code. A run made from a test fixture under
$AISP_KERNELS (the gate's deliberate slowdowns carry the real pair's name) or from an older
version of the pair is refused by `bench record`, which compares this digest with the file the
pair resolves to now. Nothing here imports the module (no torch needed).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping

from ..errors import AispError
from ..paths import data_root, kernels_root

SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".h", ".hpp")


def pair_files(module: Path) -> list[Path]:
    """The module and its same-named sources, in a fixed order."""
    return sorted(p for p in module.parent.glob(f"{module.stem}.*")
                  if p.suffix in SOURCE_SUFFIXES and p.is_file())


def shown_path(path: Path) -> str:
    """Relative to the project root when inside it (the same on every machine), else absolute."""
    path = path.resolve()
    try:
        return path.relative_to(data_root().resolve()).as_posix()
    except (ValueError, AispError):
        return str(path)


def source_digest(module: Path) -> dict[str, Any]:
    """{path, sha256, files} of a pair module; {} when it is not a file (a pair built in a test)."""
    if not module.is_file():
        return {}
    digest, files = hashlib.sha256(), pair_files(module)
    for f in files:
        digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return {"path": shown_path(module), "sha256": digest.hexdigest(), "files": [f.name for f in files]}


def expected_module(pair_name: str) -> Path:
    """Where the pair's module is now: kernels/chNN/<name>.py under the current kernels root."""
    chapter, _, stem = pair_name.partition(".")
    return kernels_root() / chapter / f"{stem}.py"


def source_mismatch(recorded: Mapping[str, Any] | None, pair_name: str) -> str:
    """Why a run's code is not the pair's code now ('' when it is, or when the run predates digests)."""
    if not recorded:
        return ""
    now = source_digest(expected_module(pair_name))
    if not now:
        return f"the pair's module {shown_path(expected_module(pair_name))} is not here to compare with"
    if recorded.get("path") != now["path"]:
        return f"the run measured {recorded.get('path')}, not the pair's module {now['path']}"
    if recorded.get("sha256") != now["sha256"]:
        return f"{now['path']} (with {', '.join(now['files'])}) changed since the run"
    return ""
