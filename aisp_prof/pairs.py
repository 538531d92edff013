"""Kernel pairs: what a chapter's baseline/optimized example is, and how they are found.

A pair is a plain module under `kernels/chNN/` that defines one `PAIR = KernelPair(...)`.
Discovery imports those modules and returns their values; nothing registers itself, so
importing a pair has no side effects and tests can build their own pairs.
"""
from __future__ import annotations

import difflib
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import RequirementError, UnknownTargetError

Inputs = dict[str, Any]
Launch = Callable[[], Any]            # zero-argument closure that only launches work, returns the output
Factory = Callable[[Inputs], Launch]  # builds a closure from inputs (allocations happen here)


@dataclass(frozen=True)
class Requirements:
    """What a pair needs to run. `min_cc`/`max_cc` are (major, minor) compute capabilities."""

    min_cc: tuple[int, int] = (7, 0)
    max_cc: tuple[int, int] | None = None
    needs: tuple[str, ...] = ()         # any of: "triton", "nvcc", "cutlass"
    note: str = ""                       # shown when the pair is skipped, e.g. "needs sm_100 (tcgen05)"


@dataclass(frozen=True)
class KernelPair:
    """One chapter example: an explicit baseline and one or more optimized variants.

    `variants` maps a variant name to its factory; the one named `baseline` is the reference
    that speedups and correctness are measured against, every other entry is an optimization.
    `reference` computes the expected output in float64 so that baseline and optimized are
    both checked against the math, not only against each other.
    """

    name: str                                   # "ch09.fused_l2norm"
    chapter: int
    lesson: str
    make_inputs: Callable[[Mapping[str, int], str, int], Inputs]   # (sizes, device, seed)
    variants: Mapping[str, Factory]
    reference: Callable[[Inputs], Any]
    flops: Callable[[Mapping[str, int]], int]          # analytic FLOPs of one call
    bytes: Callable[[Mapping[str, int]], int]          # analytic minimum DRAM bytes of one call
    sizes: Mapping[str, int] = field(default_factory=dict)    # default problem size
    tolerance: float = 1e-5                     # max ||out - ref|| / ||ref||
    requires: Requirements = field(default_factory=Requirements)
    # per-variant needs beyond the pair's: {"cuda": ("gpu", "nvcc"), "triton": ("triton",)};
    # lets the CPU-only CI check the variants that can run there (Triton under TRITON_INTERPRET=1)
    variant_needs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = ""                            # module path, filled in by discovery

    @property
    def baseline(self) -> Factory:
        return self.variants["baseline"]

    @property
    def optimized(self) -> dict[str, Factory]:
        return {k: v for k, v in self.variants.items() if k != "baseline"}

    @property
    def chapter_key(self) -> str:
        return f"ch{self.chapter:02d}"


def kernels_root() -> Path:
    """Where pair modules live: $AISP_KERNELS, else `kernels/` beside the package."""
    env = os.environ.get("AISP_KERNELS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "kernels"


def _load_module(path: Path) -> Any:
    mod_name = f"aisp_kernels_{path.parent.name}_{path.stem}"
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
            pairs.append(_with_source(pair, path))
    return sorted(pairs, key=lambda p: p.name)


def _with_source(pair: KernelPair, path: Path) -> KernelPair:
    from dataclasses import replace

    return replace(pair, source=str(path))


def find(name: str, root: Path | None = None) -> KernelPair:
    """The pair called `name` (e.g. "ch09.fused_l2norm"), or UnknownTargetError with suggestions."""
    pairs = {p.name: p for p in discover(root)}
    if name in pairs:
        return pairs[name]
    close = difflib.get_close_matches(name, list(pairs), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `aisp-prof list` shows the pairs"
    raise UnknownTargetError(f"unknown target {name!r}{hint}")


def select(targets: list[str], root: Path | None = None) -> list[KernelPair]:
    """Pairs named exactly, or whole chapters ("ch09")."""
    all_pairs = discover(root)
    chosen: list[KernelPair] = []
    for t in targets:
        chapter = [p for p in all_pairs if p.chapter_key == t]
        chosen.extend(chapter if chapter else [find(t, root)])
    return chosen


def parse_sizes(text: str | None, defaults: Mapping[str, int]) -> dict[str, int]:
    """"rows=4096,cols=8192" over a pair's defaults; unknown keys are an error, not ignored."""
    sizes = dict(defaults)
    if not text:
        return sizes
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in sizes or not value.strip().isdigit():
            known = ", ".join(f"{k}=N" for k in defaults) or "none"
            raise UnknownTargetError(f"bad size {part!r}; this pair takes {known}")
        sizes[key] = int(value)
    return sizes
