"""Finding pairs: scan `kernels/ch*/*.py` for a `PAIR` value, and pick pairs by name or chapter.

Discovery imports the modules and returns their values; nothing registers itself in a global,
so tests build their own pairs and a broken module fails where it is found.
"""
from __future__ import annotations

import difflib
import importlib.util
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ..errors import RequirementError, SizesError, UnknownTargetError
from ..naming import chapter_key
from ..paths import kernels_root
from .model import KernelPair


def _load_module(path: Path) -> Any:
    mod_name = f"aisp_pairs_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def discover(root: Path | None = None) -> list[KernelPair]:
    """Import every `kernels/ch*/*.py` that defines `PAIR` and return the pairs, sorted by name."""
    root = root or kernels_root()
    pairs: list[KernelPair] = []
    for path in sorted(root.glob("ch*/*.py")):
        if path.name.startswith("_"):
            continue
        try:
            module = _load_module(path)
        except ImportError as exc:
            raise RequirementError(f"cannot import {path}: {exc}; the kernel pairs need torch "
                                   "(pip install -e '.[kernels]')") from exc
        pair = getattr(module, "PAIR", None)
        if isinstance(pair, KernelPair):
            pairs.append(replace(pair, source=str(path)))
    return sorted(pairs, key=lambda p: p.name)


def _unknown(name: str, known: list[str], what: str, listing: str) -> UnknownTargetError:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; `{listing}` shows them"
    return UnknownTargetError(f"unknown {what} {name!r}{hint}")


def find(name: str, root: Path | None = None) -> KernelPair:
    """The pair called `name` (e.g. "ch09.fused_l2norm"), or UnknownTargetError with suggestions."""
    pairs = {p.name: p for p in discover(root)}
    if name in pairs:
        return pairs[name]
    raise _unknown(name, list(pairs), "target", "aisp-prof list")


def select(targets: list[str], root: Path | None = None) -> list[KernelPair]:
    """Pairs named exactly, or whole chapters ("ch09", "ch9"), in the order asked."""
    all_pairs = discover(root)
    by_name = {p.name: p for p in all_pairs}
    chosen: list[KernelPair] = []
    for t in targets:
        chapter = chapter_key(t)
        in_chapter = [p for p in all_pairs if chapter and p.chapter_key == chapter]
        if in_chapter:
            chosen.extend(in_chapter)
        elif t in by_name:
            chosen.append(by_name[t])
        else:
            raise _unknown(t, list(by_name), "target", "aisp-prof list")
    return list({p.name: p for p in chosen}.values())


def parse_sizes(text: str | None, defaults: Mapping[str, int]) -> dict[str, int]:
    """"rows=4096,cols=8192" over a pair's defaults; an unknown key or a value that is not a
    whole number is a SizesError, never silently ignored (0 can mean "auto", e.g. blocks_per_sm)."""
    sizes = dict(defaults)
    if not text:
        return sizes
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in sizes or not value.isdigit():
            known = ", ".join(f"{k}=N" for k in defaults) or "no sizes"
            raise SizesError(f"bad size {part.strip()!r}; this pair takes {known} (whole numbers)")
        sizes[key] = int(value)
    return sizes
