"""Finding pairs: scan `kernels/ch*/*.py` for a `PAIR` value, and pick pairs by name or chapter.

Discovery imports the modules and returns their values; nothing registers itself in a global,
so tests build their own pairs and a broken module fails where it is found. Where the kernels
extra (torch, triton) is not installed, `discover_here` and `pair_names` read what they can
from the sources instead (`static`), so `list` and `history` work without torch.
"""
from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..arguments import INT64_MAX
from ..errors import RequirementError, SizesError, UnknownTargetError, shorten
from ..naming import chapter_key, close_names
from ..paths import data_root, kernels_extra_install
from .model import KernelPair
from .static import PairInfo, pair_infos, pair_modules, read_pair_info

KERNELS_EXTRA_MISSING = "kernels extra not installed"
KERNELS_EXTRA_HINT = "pip install -e '.[kernels]' (or pip install 'aisp-prof[kernels]') to run the pairs"


def _needs_torch(exc: ImportError) -> RequirementError:
    """The kernel pairs cannot be imported here: what is missing and how to add it, naming no
    one pair module (the first one scanned said nothing about the pair asked for)."""
    return RequirementError(f"running the kernel pairs needs the kernels extra ({exc}): {kernels_extra_install()}")


def _load_module(path: Path, prefix: str = "aisp_pairs") -> Any:
    mod_name = f"{prefix}_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shipped_module(chapter: str, stem: str) -> Any:
    """The shipped pair module kernels/<chapter>/<stem>.py (under `data_root`, never $AISP_KERNELS),
    imported under a name of its own and left as written: for a module under $AISP_KERNELS that
    wraps a shipped pair (the gate's planted slowdowns in tests/fixtures/gate_kernels). Unlike
    `files.load_file` it sets no `source` on the PAIR: the wrapper's PAIR, found by `discover`,
    must name the wrapper's file, not the real one."""
    return _load_module(data_root() / "kernels" / chapter / f"{stem}.py", "aisp_shipped")


def discover(root: Path | None = None) -> list[KernelPair]:
    """Import every `kernels/ch*/*.py` that defines `PAIR` and return the pairs, sorted by name."""
    pairs: list[KernelPair] = []
    for path in pair_modules(root):
        try:
            pair = _import_pair(path)
        except ImportError as exc:
            if _package_missing(exc):
                raise _needs_torch(exc) from exc
            raise RequirementError(f"cannot import {path}: {exc}; the kernel pairs need torch "
                                   f"({kernels_extra_install()})") from exc
        if pair is not None:
            pairs.append(pair)
    return sorted(pairs, key=lambda p: p.name)


def _import_pair(path: Path) -> KernelPair | None:
    pair = getattr(_load_module(path), "PAIR", None)
    return replace(pair, source=str(path)) if isinstance(pair, KernelPair) else None


def discover_here(root: Path | None = None) -> tuple[list[KernelPair], list[tuple[PairInfo, str]]]:
    """The pairs that import here, and, for each module that needs what is not installed (the
    kernels extra: torch, triton...), its metadata read from the source with the reason. A
    module that is not a pair, or fails for another reason than a missing package, is handled
    as `discover` does."""
    pairs: list[KernelPair] = []
    missing: list[tuple[PairInfo, str]] = []
    for path in pair_modules(root):
        try:
            pair = _import_pair(path)
        except ImportError as exc:
            info = read_pair_info(path) if _package_missing(exc) else None
            if info is None:
                raise RequirementError(f"cannot import {path}: {exc}; the kernel pairs need torch "
                                       f"({kernels_extra_install()})") from exc
            missing.append((info, f"{KERNELS_EXTRA_MISSING} ({_missing_module(exc)})"))
            continue
        if pair is not None:
            pairs.append(pair)
    return sorted(pairs, key=lambda p: p.name), sorted(missing, key=lambda m: m[0].name)


def _package_missing(exc: ImportError) -> bool:
    """A package that is not installed (torch, triton...), not a broken import of our own code."""
    name = getattr(exc, "name", None) or ""
    return isinstance(exc, ModuleNotFoundError) and name.split(".")[0] not in ("aisp_prof", "aisp_kernels", "")


def _missing_module(exc: ImportError) -> str:
    name = getattr(exc, "name", None)
    return f"no module {name}" if name else str(exc)


def pair_names(root: Path | None = None) -> list[str]:
    """Every pair's name, read from the sources (no import, no torch)."""
    return [i.name for i in pair_infos(root)]


def check_name(name: str, root: Path | None = None) -> str:
    """`name` if a pair is called so, else UnknownTargetError with suggestions; no import."""
    names = pair_names(root)
    if name in names:
        return name
    raise _unknown(name, names, "target", "aisp-prof list", chapters=False)


def _unknown(name: str, known: list[str], what: str, listing: str, chapters: bool = True) -> UnknownTargetError:
    close = close_names(name, known, chapters=chapters)        # `chapters`: where a chapter is a target too
    hint = f"; did you mean {', '.join(close)}?" if close else f"; `{listing}` shows them"
    return UnknownTargetError(f"unknown {what} {name!r}{hint}")


def check_chapter(chapter: str, keys: Iterable[str]) -> str:
    """The chapter key of `chapter` ('ch9' -> 'ch09') if it is among the chapter `keys` of the pairs, else
    UnknownTargetError naming those there are (a typo was an empty listing, exit 0)."""
    key = chapter_key(chapter)
    chapters = sorted(set(keys))
    if key is not None and key in chapters:
        return key
    close = close_names(chapter.strip().lower(), chapters)[:1]
    hint = f"did you mean {close[0]}? " if close else ""
    raise UnknownTargetError(f"no pair in chapter {chapter!r}; {hint}the chapters: {', '.join(chapters) or 'none'}")


def find(name: str, root: Path | None = None) -> KernelPair:
    """The pair called `name` (e.g. "ch09.fused_l2norm"), or UnknownTargetError with suggestions."""
    pairs = {p.name: p for p in discover(root)}
    if name in pairs:
        return pairs[name]
    raise _unknown(name, list(pairs), "target", "aisp-prof list", chapters=False)


def select(targets: list[str], root: Path | None = None) -> list[KernelPair]:
    """Pairs named exactly, whole chapters ("ch09", "ch9"), or pair files and folders of them
    outside the repository ("my_pair.py", "mine/": `pairs.files`), in the order asked."""
    from .files import is_pair_path, load_target

    chosen: list[KernelPair] = []
    named = [t for t in targets if not is_pair_path(t)]
    if named:                  # a typo is an unknown target (exit 2) before anything is imported
        known = _known_names(named, root)
        for t in named:
            if not (chapter_key(t) and any(n.startswith(f"{chapter_key(t)}.") for n in known)) and t not in known:
                raise _unknown(t, known, "target", "aisp-prof list")
    all_pairs = discover(root) if named else []
    by_name = {p.name: p for p in all_pairs}
    for t in targets:
        if is_pair_path(t):
            chosen.extend(load_target(t))
            continue
        chapter = chapter_key(t)
        in_chapter = [p for p in all_pairs if chapter and p.chapter_key == chapter]
        if in_chapter:
            chosen.extend(in_chapter)
        elif t in by_name:
            chosen.append(by_name[t])
        else:
            raise _unknown(t, list(by_name), "target", "aisp-prof list")
    return list({p.name: p for p in chosen}.values())


def _known_names(targets: list[str], root: Path | None) -> list[str]:
    """The pairs' names, read without importing; where a target is not among them and a module's
    PAIR is not written out (the gate's planted slowdowns build theirs from the shipped pair:
    tests/fixtures/gate_kernels), the names of the imported modules too: without them
    `bench run --targets ch09.fused_l2norm` under that $AISP_KERNELS was an unknown target."""
    modules, infos = pair_modules(root), pair_infos(root)
    known = [i.name for i in infos]
    missing = [t for t in targets if t not in known and not (chapter_key(t) and
                                                            any(n.startswith(f"{chapter_key(t)}.") for n in known))]
    if missing and len(infos) < len(modules):
        known += [p.name for p in discover(root) if p.name not in known]
    return known


def parse_sizes(text: str | None, defaults: Mapping[str, int]) -> dict[str, int]:
    """"rows=4096,cols=8192" over a pair's defaults; an unknown key or a value that is not a
    whole number is a SizesError, never silently ignored (0 can mean "auto", e.g. blocks_per_sm), and
    so is one past a C long long (torch failed on it with a C++ stack trace as a failed check, exit 7)."""
    sizes = dict(defaults)
    if not text:
        return sizes
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in sizes or not (value.isascii() and value.isdigit()):
            known = ", ".join(f"{k}=N" for k in defaults) or "no sizes"
            raise SizesError(f"bad size {part.strip()!r}; this pair takes {known} (whole numbers)")
        if int(value) > INT64_MAX:
            raise SizesError(f"bad size {key}={shorten(value, 40)}: a size is at most {INT64_MAX} (2**63-1)")
        sizes[key] = int(value)
    return sizes


def pair_sizes(pair: KernelPair, text: str | None = None) -> dict[str, int]:
    """`--sizes` over the pair's defaults (`parse_sizes`), held to its size rules: SizesError
    naming each broken rule and the nearest valid sizes (pairs.size_rules), before anything runs."""
    return pair.checked_sizes(parse_sizes(text, pair.sizes))
