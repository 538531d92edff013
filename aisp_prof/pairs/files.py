"""Pairs that live outside the repository: `aisp-prof run path/to/my_pair.py` (or a folder of them).

A pair file is imported from its path under a module name of its own (derived from the
resolved path, so two `my_pair.py` in different folders never collide and nothing lands in
`sys.modules` under a name a shipped module uses). It must define `PAIR`, like a shipped pair,
and may do nothing else on import. The profiled child processes load the same file again:
`collect.process.runner.child_command` passes `--pair-file` for a pair whose source is not under the
kernels folder, so shipped pairs keep their command line exactly.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

from ..errors import RequirementError, UnknownTargetError
from ..naming import chapter_key, chapter_of_pair
from ..paths import kernels_root
from .model import KernelPair

SKIPPED_IN_FOLDERS = ("test_", "conftest", "_")   # a folder's tests and private helpers are not pairs


def is_pair_path(target: str) -> bool:
    """A target that names a file or a folder rather than a pair or a chapter."""
    if target.endswith(".py") or "/" in target or "\\" in target:
        return True
    return Path(target).is_dir() and not chapter_key(target)


def module_name(path: Path) -> str:
    """A module name unique to the resolved path."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"aisp_pair_file_{digest}_{stem}"


def load_file(path: str | Path) -> KernelPair:
    """The `PAIR` of the module at `path`, its `source` set to the resolved path.

    UnknownTargetError (exit 2) for a missing file, a file that is not Python, a syntax error
    or any other failure on import, and a module without a `PAIR`; RequirementError (exit 9)
    when it imports a package that is not installed (torch, triton...)."""
    path = Path(path)
    if not path.is_file():
        raise UnknownTargetError(f"no pair file {path}: it does not exist (or is not a file)" + _name_hint(str(path)))
    if path.suffix != ".py":
        raise UnknownTargetError(f"{path} is not a pair module: a pair file is a .py file that defines PAIR")
    name = module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UnknownTargetError(f"{path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        raise UnknownTargetError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from exc
    except ModuleNotFoundError as exc:
        del sys.modules[name]
        from ..paths import kernels_extra_install

        raise RequirementError(f"cannot import {path}: {exc}; install it (the kernels extra: "
                               f"{kernels_extra_install()})") from exc
    except Exception as exc:  # a user's module may raise anything on import: one line says what
        del sys.modules[name]
        raise UnknownTargetError(f"cannot import {path}: {type(exc).__name__}: {exc}") from exc
    pair = getattr(module, "PAIR", None)
    if not isinstance(pair, KernelPair):
        del sys.modules[name]
        what = "no PAIR" if pair is None else f"PAIR is a {type(pair).__name__}, not a KernelPair"
        raise UnknownTargetError(f"{path} is not a pair module ({what}); `aisp-prof new NAME` writes a template")
    return replace(pair, source=str(path.resolve()))


def folder_files(folder: Path) -> list[Path]:
    """The candidate pair modules of a folder (not recursive; tests and _private files left out)."""
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith(SKIPPED_IN_FOLDERS))


def _name_hint(target: str) -> str:
    """How to ask for a chapter or a pair by name, where one was given as a pair file (`aisp-prof list ch09`)."""
    if "/" in target or "\\" in target or target.endswith(".py"):
        return ""
    chapter = chapter_key(target)
    if chapter:
        return f"; for chapter {chapter}'s pairs: aisp-prof list --chapter {chapter}"
    chapter = chapter_of_pair(target)
    return f"; for the pair {target}: aisp-prof list --chapter {chapter}" if chapter else ""


def load_target(target: str) -> list[KernelPair]:
    """A file's pair, or every pair of a folder (its modules without a PAIR are skipped; a
    folder with none is an UnknownTargetError)."""
    path = Path(target)
    if not path.is_dir():
        return [load_file(path)]
    pairs = []
    for file in folder_files(path):
        try:
            pairs.append(load_file(file))
        except UnknownTargetError as exc:
            if "is not a pair module" not in str(exc):
                raise
    if not pairs:
        raise UnknownTargetError(f"no pair module in {path} (a .py file that defines PAIR)")
    return sorted(pairs, key=lambda p: p.name)


def is_external(pair: KernelPair) -> bool:
    """A pair whose module is not under the kernels folder: the child must be told its file."""
    if not pair.source:
        return False
    try:
        Path(pair.source).resolve().relative_to(kernels_root().resolve())
        return False
    except ValueError:
        return True


def pair_file_args(pair: KernelPair) -> list[str]:
    """`--pair-file PATH` for an external pair, nothing for a shipped one."""
    return ["--pair-file", str(Path(pair.source).resolve())] if is_external(pair) else []
