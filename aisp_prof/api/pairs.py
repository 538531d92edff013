"""The pairs' half of the library face, no database needed: which pairs there are and whether
each can run here (`pair_list`), a new pair from the template (`new_pair`), and the pairs'
checks under compute-sanitizer (`sanitize`)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UnknownTargetError

if TYPE_CHECKING:
    from ..collect.sanitizer import SanitizerResult
    from ..pairs import KernelPair
    from ..pairs.new import NewPair


def pair_list(chapter: str | None = None, paths: Sequence[str] = ()) -> list[dict[str, Any]]:
    """`list` rows (the pairs here, and whether each can run), for one chapter or all, or for
    the pair files and folders `paths` (pairs.files)."""
    from ..naming import chapter_key
    from ..pairs.capabilities import detect_machine, listing
    from ..pairs.discovery import discover_here
    from ..pairs.files import load_target

    want = chapter_key(chapter) if chapter else None
    pairs, unimportable = ([p for t in paths for p in load_target(t)], []) if paths else discover_here()
    return [r for r in listing(pairs, detect_machine(), unimportable) if want is None or r["chapter_key"] == want]


def new_pair(name: str, folder: Path = Path("."), chapter: int = 0) -> NewPair:
    """Write the template pair `name` and its test into `folder` (`pairs.new.write_new`);
    UnknownTargetError (exit 2) for a bad name, OutputError (exit 14) if a file exists."""
    from ..pairs.new import write_new

    try:
        return write_new(name, folder, chapter)
    except ValueError as exc:
        raise UnknownTargetError(str(exc)) from exc


@dataclass
class SanitizeRequest:
    """What `sanitize` runs: the targets, the tools (empty: the default three), the variants
    asked for (empty: all that run here), one size for every target (None: each pair's small
    size), where to keep the logs and which compute-sanitizer (None: found)."""

    targets: Sequence[str]
    tools: Sequence[str] = ()
    variants: Sequence[str] = ()
    sizes: str | None = None
    log_dir: Path | None = None
    sanitizer: str | None = None


@dataclass
class SanitizeOutcome:
    """Every (pair, tool) result, and the pairs this machine cannot run with the reason."""

    results: list[SanitizerResult]
    skipped: list[tuple[KernelPair, str]] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        """'pair (tool)' of every result that found a problem or whose check failed."""
        return [f"{r.pair} ({r.tool})" for r in self.results if not r.ok]

    def as_dict(self) -> dict[str, Any]:
        return {"results": [r.to_dict() for r in self.results],
                "skipped": [{"pair": p.name, "reason": why} for p, why in self.skipped]}


def sanitize(request: SanitizeRequest, progress: Callable[[str], None] = lambda m: None) -> SanitizeOutcome:
    """Each pair's correctness check under compute-sanitizer, once per tool, at a small size
    (`collect.sanitizer`). Without a GPU nothing can run: the first pair's reason is raised."""
    from ..collect import sanitizer as san
    from ..pairs import capabilities, pair_sizes, select
    from ..tools import find_sanitizer

    tool_path = find_sanitizer(request.sanitizer)
    machine = capabilities.detect_machine()
    answers = [(pair, capabilities.runnable(pair, machine, tuple(request.variants)))
               for pair in select(list(request.targets))]
    if not machine.gpu:                       # nothing can run: say why once (exit 3, or 9 without torch)
        answers[0][1].require()
    chosen = [(p, list(a.variants)) for p, a in answers if a.ok]
    size_of = {p.name: pair_sizes(p, request.sizes) if request.sizes else dict(p.small_sizes or p.sizes)
               for p, _ in chosen}
    results = san.sanitize_pairs(chosen, tuple(request.tools) or san.DEFAULT_TOOLS, lambda p: size_of[p.name],
                                 tool_path, request.log_dir, progress)
    return SanitizeOutcome(results, [(p, a.reason) for p, a in answers if not a.ok])
