"""Where `aisp-prof bench ab --base` finds the base version of a pair: a kernels folder, or a git
revision whose files are extracted into a temporary folder (`git archive`; the user's work tree,
index and HEAD are never touched).

A pair found by name (the shipped kernels folder, or `$AISP_KERNELS`) has its base at the same
place under the base folder (`chNN/<module>.py`), or in the checkout's `kernels/` folder at the
revision: so the gate's slowdown fixtures (`AISP_KERNELS=tests/fixtures/gate_kernels`) are judged
against the real pair. A pair file outside the repository has its base beside it in the base
folder, or in its own folder at the revision of the git repository it lives in. The whole folder
comes along, so the pair's `.cu` source and the siblings it loads are of the same version.
"""
from __future__ import annotations

import contextlib
import io
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Iterator

from ..errors import UnknownTargetError
from ..pairs import KernelPair
from ..pairs.files import is_external
from ..paths import data_root, kernels_root


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    except OSError as exc:
        raise UnknownTargetError(f"git is not available ({exc}); give --base a kernels folder instead") from exc


def _where(pair: KernelPair) -> tuple[Path, Path, Path]:
    """(a folder of the repository, the folder to take from it, the pair's file inside that folder)."""
    source = Path(pair.source).resolve()
    if is_external(pair):
        return source.parent, source.parent, Path(source.name)
    return data_root(), data_root().resolve() / "kernels", source.relative_to(kernels_root().resolve())


def in_folder(folder: Path, pair: KernelPair) -> Path:
    """The base version's module in a kernels folder (or, for a pair file, the folder beside it)."""
    inner = Path(Path(pair.source).name) if is_external(pair) else _where(pair)[2]
    path = folder / inner
    if not path.is_file():
        raise UnknownTargetError(f"--base {folder}: no {inner} there (a kernels folder holds chNN/<pair>.py)")
    return path


@contextlib.contextmanager
def at_revision(rev: str, pair: KernelPair) -> Iterator[tuple[Path, str]]:
    """(the base version's module extracted from `rev` into a temporary folder, 'REV (sha)'); the
    folder is removed afterwards. UnknownTargetError for a revision git does not know, a folder
    that is not in a git repository, or a revision without the pair's file."""
    if rev.startswith("-"):
        raise UnknownTargetError(f"--base {rev}: neither a folder nor a git revision")
    repo, folder, inner = _where(pair)
    top = _git(repo, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise UnknownTargetError(f"--base {rev}: not a folder, and {repo} is not in a git repository")
    toplevel = Path(top.stdout.decode().strip()).resolve()
    sha = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if sha.returncode != 0:
        raise UnknownTargetError(f"--base {rev}: neither a folder nor a git revision of {toplevel}")
    commit, relative = sha.stdout.decode().strip(), folder.resolve().relative_to(toplevel)
    archive = _git(toplevel, "archive", "--format=tar", commit, "--", relative.as_posix())
    if archive.returncode != 0:
        raise UnknownTargetError(f"--base {rev}: {relative} is not in {commit[:12]}")
    with tempfile.TemporaryDirectory(prefix="aisp-ab-base-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        path = Path(tmp) / relative / inner
        if not path.is_file():
            raise UnknownTargetError(f"--base {rev}: {relative / inner} is not in {commit[:12]}")
        yield path, f"{rev} ({commit[:12]})"


@contextlib.contextmanager
def base_version(base: str, pair: KernelPair) -> Iterator[tuple[Path, str]]:
    """`--base`: a folder if one is there by that name, else a git revision."""
    if Path(base).is_dir():
        yield in_folder(Path(base), pair), f"folder {base}"
        return
    with at_revision(base, pair) as found:
        yield found
