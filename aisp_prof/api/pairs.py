"""The pairs' half of the library face, no database needed: which pairs there are and whether
each can run here (`pair_list`), a new pair from the template (`new_pair`), the pairs' checks at
their default size, given sizes or fuzzed shapes (`check`), and those checks under
compute-sanitizer (`sanitize`)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CorrectnessError, NoGpuError, UnknownTargetError

if TYPE_CHECKING:
    from ..collect.correctness.shape_check import ShapeResult
    from ..collect.process.sanitizer import SanitizerResult
    from ..pairs import KernelPair
    from ..pairs.capabilities import Machine
    from ..pairs.new import NewPair


def pair_list(chapter: str | None = None, paths: Sequence[str] = ()) -> list[dict[str, Any]]:
    """`list` rows (the pairs here, and whether each can run), for one chapter or all, or for
    the pair files and folders `paths` (pairs.files). A chapter none of them is in is
    UnknownTargetError (exit 2) naming the chapters there are."""
    from ..arguments import optional_text, texts
    from ..pairs.capabilities import detect_machine, listing
    from ..pairs.discovery import check_chapter, discover_here
    from ..pairs.files import load_target

    chapter = optional_text(chapter, "chapter")
    paths = texts(paths, "paths")                            # one path is one, not its letters
    pairs, unimportable = ([p for t in paths for p in load_target(t)], []) if paths else discover_here()
    rows = listing(pairs, detect_machine(), unimportable)
    if not chapter:
        return rows
    want = check_chapter(chapter, [r["chapter_key"] for r in rows])
    return [r for r in rows if r["chapter_key"] == want]


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
    (`collect.process.sanitizer`). Without a GPU nothing can run: the first pair's reason is raised."""
    from ..collect.process import sanitizer as san
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


GPU_ONLY = frozenset({"gpu", "nvcc", "cutlass"})


@dataclass
class CheckRequest:
    """What `check` runs: the targets, the variants asked for (empty: all that run here), one size
    over each pair's default (None: the default, or none with `fuzz`), `fuzz` shapes more per pair
    drawn with `seed` inside the budgets, `trials` fresh inputs per shape, on `device`; with
    `time_limit_s`, no new shape once that many seconds have passed (the one in progress finishes);
    with `shard` (k, n), only the k-th of every n of each pair's shapes (1-based), so that n
    processes or machines split one seeded fuzz and together check exactly its shapes."""

    targets: Sequence[str]
    variants: Sequence[str] = ()
    sizes: str | None = None
    fuzz: int = 0
    seed: int = 0
    budget_gb: float = 2.0
    budget_tflop: float = 2.0
    trials: int = 1
    device: str = "cuda"
    time_limit_s: float | None = None
    shard: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        """Checked as they come in (`aisp_prof.arguments`, ArgumentError): a NaN budget failed as int(nan)
        deep inside (or drew no shape and passed), one str target was taken as its letters."""
        from .. import arguments as arg

        self.targets, self.variants = arg.texts(self.targets, "targets"), arg.texts(self.variants, "variants")
        self.sizes = arg.optional_text(self.sizes, "sizes", "text such as 'rows=4096,cols=8192'")
        self.budget_gb, self.budget_tflop = arg.positive(self.budget_gb, "budget_gb"), arg.positive(
            self.budget_tflop, "budget_tflop")
        self.time_limit_s = None if self.time_limit_s is None else arg.positive(self.time_limit_s, "time_limit_s")
        self.fuzz, self.seed, self.trials = arg.whole(self.fuzz, "fuzz", 0), arg.whole(self.seed, "seed"), arg.whole(
            self.trials, "trials", 1)


@dataclass
class CheckOutcome:
    """One result per pair and shape (a pair that cannot run here: one skipped result). A check
    stopped part way (`stopped`: "interrupted" or "time limit") holds the shapes finished before
    it stopped; `not_checked` counts the rest."""

    results: list[ShapeResult]
    not_checked: int = 0
    stopped: str | None = None

    @property
    def failed(self) -> list[ShapeResult]:
        from ..collect.correctness.shape_check import FAIL

        return [r for r in self.results if r.status == FAIL]

    @property
    def error(self) -> CorrectnessError | None:
        """The CorrectnessError (exit 7) naming the first failed shapes (and, when the check was
        stopped, how many were not checked); None when none failed."""
        failed = self.failed
        if not failed:
            return None
        return CorrectnessError(f"{len(failed)} of {len(self.results)} shapes failed the check: "
                                + "; ".join(f"{r.pair} at {r.to_dict()['shape']}" for r in failed[:5])
                                + (" ..." if len(failed) > 5 else "")
                                + (f" ({self.stopped}: {self.not_checked} shape(s) not checked)" if self.stopped else ""))

    def stop_line(self) -> str:
        """What a stopped check says: "interrupted: 3 shape(s) checked, 17 not checked"."""
        return f"{self.stopped}: {len(self.results)} shape(s) checked, {self.not_checked} not checked"

    def as_list(self) -> list[dict[str, Any]]:
        """One dict per finished shape."""
        return [r.to_dict() for r in self.results]

    def as_dict(self) -> dict[str, Any]:
        """What `aisp-prof check --json` prints: the finished shapes, and why and how many not."""
        return {"results": self.as_list(), "stopped": self.stopped, "not_checked": self.not_checked}


class _TimeUp(Exception):
    """The time limit passed after a shape finished: the check stops there."""


def check(request: CheckRequest, progress: Callable[[str], None] = lambda m: None,
          tick: Callable[[], None] = lambda: None) -> CheckOutcome:
    """Every selected pair's shapes checked against the float64 reference (`collect.correctness.shape_check`):
    in child processes on the GPU, or here on CPU tensors, a progress line per shape as it finishes.
    --sizes is validated for every pair before anything runs (exit 12); without a GPU (device cuda)
    NoGpuError (exit 3). On the GPU, the pending CUDA libraries of the pairs that run are first
    built in parallel (`collect.code.prebuild`). KeyboardInterrupt (Ctrl-C, or raised by `tick`,
    called wherever the check can stop) or `time_limit_s` passed stops it: it returns the shapes
    finished so far, `stopped` and `not_checked` set, and no check process is left running."""
    import time

    from ..collect.code.prebuild import prebuild
    from ..pairs import pair_sizes, select
    from ..pairs.capabilities import detect_machine

    began = time.monotonic()
    pairs, machine = select(list(request.targets)), detect_machine()
    given = {p.name: pair_sizes(p, request.sizes) for p in pairs} if request.sizes else {}
    plans = {p.name: _check_variants(p, machine, tuple(request.variants), request.device) for p in pairs}
    work = [(p, *plans[p.name], [] if plans[p.name][1] else _check_shapes(p, given.get(p.name), request))
            for p in pairs]
    if request.device == "cuda":
        prebuild([p for p in pairs if not plans[p.name][1]], progress,
                 variants={p.name: plans[p.name][0] for p in pairs})
    outcome = CheckOutcome([])
    deadline = began + request.time_limit_s if request.time_limit_s else None
    try:
        _check_all(work, request, outcome, progress, tick, deadline)
    except KeyboardInterrupt:
        outcome.stopped = "interrupted"
    except _TimeUp:
        outcome.stopped = "time limit"
    # a skipped pair gives one result; a pair whose --shard holds none of its shapes gives none (and lacks none)
    outcome.not_checked = sum(1 if why else len(shapes) for _, _, why, shapes in work) - len(outcome.results)
    return outcome


def _check_all(work: list[tuple[KernelPair, list[str], str, list[dict[str, int]]]], request: CheckRequest,
               outcome: CheckOutcome, progress: Callable[[str], None], tick: Callable[[], None],
               deadline: float | None) -> None:
    """Each pair's shapes checked in turn, each result added to `outcome` as it finishes."""
    import time

    from ..collect.code.builds import pending_line
    from ..collect.correctness.shape_check import ShapeResult, check_here, check_in_children

    for i, (pair, variants, why, shapes) in enumerate(work, 1):
        if why:
            progress(f"== {pair.name} ({i}/{len(work)}): skipped: {why}")
            outcome.results.append(ShapeResult(pair.name, {}, "skip", why))
            continue
        progress(f"== {pair.name} ({i}/{len(work)}): {len(shapes)} shape(s), {', '.join(variants)}")
        building = pending_line(pair) if request.device == "cuda" else None
        if building:
            progress(building)
        first = len(outcome.results)

        def done(result: ShapeResult) -> None:
            outcome.results.append(result)
            progress(result.progress_line(len(outcome.results) - first, len(shapes)))
            tick()
            left = len(outcome.results) - first < len(shapes) or any(later for *_, later in work[i:])   # shapes to go
            if deadline is not None and time.monotonic() > deadline and left:
                raise _TimeUp
        if request.device == "cpu":
            check_here(pair, shapes, variants, "cpu", request.trials, done)
        else:
            check_in_children(pair, shapes, variants, request.trials, progress, done, tick)


def _check_shapes(pair: KernelPair, given: dict[str, int] | None, request: CheckRequest) -> list[dict[str, int]]:
    """--sizes (or the defaults, without --fuzz), then the fuzzed shapes not already there."""
    from ..collect.correctness.fuzz import Budget, draw_shapes

    shapes = [given] if given else ([] if request.fuzz else [dict(pair.sizes)])
    budget = Budget(int(request.budget_gb * 2**30), request.budget_tflop * 1e12)
    shapes += [s for s in draw_shapes(pair, request.fuzz, request.seed, budget) if s not in shapes]
    if request.shard:
        k, n = request.shard
        shapes = shapes[k - 1::n]
    return shapes


def _check_variants(pair: KernelPair, machine: Machine, wanted: tuple[str, ...], device: str) -> tuple[list[str], str]:
    """The variants to check here, or ([], why the pair is skipped)."""
    from ..pairs.capabilities import runnable

    if pair.distributed:
        return [], f"runs as {pair.world_size} ranks (torchrun): `aisp-prof run` checks it"
    if device == "cpu":
        runnable(pair, machine, wanted)          # an unknown variant is an error, as on the GPU
        names = ["baseline"] + [v for v in (wanted or pair.variants) if v != "baseline"]
        here = [v for v in names if not (set(pair.needs(v)) & GPU_ONLY) and set(pair.needs(v)) <= machine.have]
        return (here, "") if "baseline" in here else ([], "the baseline needs a GPU")
    answer = runnable(pair, machine, wanted)
    if not answer.ok and not machine.gpu:        # no GPU at all: exit 3, as `run` does, saying what checks here
        if answer.error is NoGpuError:
            raise NoGpuError(f"{pair.name}: {answer.reason}; `aisp-prof check --device cpu` checks the variants "
                             "that need no GPU (Triton's under TRITON_INTERPRET=1)")
        answer.require()
    return (list(answer.variants), "") if answer.ok else ([], answer.reason)
