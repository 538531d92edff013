"""What torch.compile did while a variant ran: graphs, graph breaks and recompiles, with reasons.

A compiled variant's kernel time tells half its story; the other half is what compiling cost
and whether the compiler captured the code at all. Dynamo keeps global tallies, and this module
reads their difference across a stretch of code (a variant's factory and calls):
  - `torch._dynamo.utils.counters`: "stats"/"unique_graphs" (FX graphs captured), "frames"/"total"
    (frames compiled: first compiles and recompiles), and graph breaks, keyed by their message, in
    "graph_break" (a break resumed in a new frame) and "unimplemented" (what Dynamo could not trace:
    a data-dependent branch, or a frame it gave up on and ran eagerly);
  - `torch._dynamo.utils.get_compilation_metrics()`: one record per frame compiled, with its
    compile id ("frame/recompile", so "0/1" is the first recompile of frame 0), Dynamo's
    `recompile_reason` (the guard that failed) and its compile time.
Both exist from torch 2.1 to 2.13 (recompile_reason from 2.6); a field a version lacks reads as
missing, never as an error. Nothing is switched on: no TORCH_LOGS, no explain(), no callbacks,
so the code runs as it would without the probe. Before a process imports torch._dynamo nothing
can have compiled, so a probe over code that never compiles does not import it either.

Counts are of compile events: a break that recurs in every recompile of its frame counts each
time (as `torch._dynamo.explain` does). Runs without torch (the analysis machines) import this
module without it; the functions that read Dynamo import it lazily.
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

DYNAMO_UTILS = "torch._dynamo.utils"
BREAK_CATEGORIES = ("graph_break", "unimplemented")   # counters categories that hold graph-break messages
REASON_CHARS = 400                                     # a reason's detail is cut here: they hold hints and URLs
_COMPILE_ID = re.compile(r"(\d+)/(\d+)")


@dataclass
class CompileEvents:
    """Dynamo's activity over one stretch of code (all zero: nothing was compiled there)."""

    frames_compiled: int = 0           # frame compilations: first compiles and recompiles
    graphs: int = 0                    # FX graphs captured (a break splits a frame into several)
    graph_breaks: int = 0
    recompiles: int = 0
    dynamo_compile_time_ns: float = 0.0   # Dynamo's own time compiling the frames (incl. the backend)
    graph_break_reasons: list[dict[str, Any]] = field(default_factory=list)   # {reason, count, detail}
    recompile_reasons: list[dict[str, Any]] = field(default_factory=list)     # {frame, compile_id, reason}
    frames: list[str] = field(default_factory=list)   # "name (file:line)" of each frame compiled

    def add(self, other: "CompileEvents") -> None:
        """Fold `other` into this one (reasons by message)."""
        for name in ("frames_compiled", "graphs", "graph_breaks", "recompiles", "dynamo_compile_time_ns"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        by_reason = {r["reason"]: r for r in self.graph_break_reasons}
        for r in other.graph_break_reasons:
            if r["reason"] in by_reason:
                by_reason[r["reason"]]["count"] += r["count"]
            else:
                self.graph_break_reasons.append(dict(r))
                by_reason[r["reason"]] = self.graph_break_reasons[-1]
        self.recompile_reasons += other.recompile_reasons
        self.frames += [f for f in other.frames if f not in self.frames]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def dynamo_loaded() -> bool:
    """Whether this process has imported Dynamo (nothing was compiled before it was)."""
    return DYNAMO_UTILS in sys.modules


def stop_compile_workers() -> bool:
    """Shut down Inductor's compile-worker processes, if a compile started them; True if it had.

    A compile starts a pool of worker processes (one per core, each importing torch) that keeps
    starting up and running for seconds after the compile returned. While it does, the host is
    saturated: on an H200 machine ch14.gpu_quantization's host-side baseline went from 1.6 ms to
    128 ms per call right after the compiled variant's factory, back to 1.6 ms 3 s later, and did
    not slow at all with TORCHINDUCTOR_COMPILE_THREADS=1 (no pool). So the check and the timing
    stop the pool after each factory and first call: a variant's compile cannot slow the variants
    timed after it. The next compile starts a new pool (its cost lands in that compile)."""
    module = sys.modules.get("torch._inductor.async_compile")
    stop = getattr(module, "shutdown_compile_workers", None)
    if stop is None or not getattr(module, "_pool_set", True):
        return False
    stop()
    return True


def _utils() -> Any | None:
    """torch._dynamo.utils once something imported it; None before that or without Dynamo."""
    return sys.modules.get(DYNAMO_UTILS)


@dataclass
class _Snapshot:
    counters: dict[str, dict[str, int]]
    metrics: list[Any]          # the metric records present (kept, so their ids stay unique)


def _snapshot() -> _Snapshot:
    utils = _utils()
    if utils is None:
        return _Snapshot({}, [])
    counters = getattr(utils, "counters", {})
    get_metrics = getattr(utils, "get_compilation_metrics", None)
    try:
        metrics = list(get_metrics()) if get_metrics else []
    except Exception:        # a torch whose metrics need a setting we don't turn on
        metrics = []
    return _Snapshot({cat: dict(c) for cat, c in list(counters.items())}, metrics)


def _frames_total() -> int:
    utils = _utils()
    if utils is None:
        return 0
    return int(utils.counters.get("frames", {}).get("total", 0))


def _delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], category: str) -> Counter:
    old, new = before.get(category, {}), after.get(category, {})
    return Counter({k: v - old.get(k, 0) for k, v in new.items() if v - old.get(k, 0) > 0})


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _break_reasons(before: _Snapshot, after: _Snapshot) -> list[dict[str, Any]]:
    """{reason (the message's first line), count, detail (the message, cut)}, most frequent first."""
    merged: dict[str, dict[str, Any]] = {}
    for category in BREAK_CATEGORIES:
        for msg, n in _delta(before.counters, after.counters, category).items():
            head = _one_line(str(msg).strip().splitlines()[0] if str(msg).strip() else msg)
            entry = merged.setdefault(head, {"reason": head, "count": 0, "detail": _one_line(msg)[:REASON_CHARS]})
            entry["count"] += n
    return sorted(merged.values(), key=lambda r: -r["count"])


def _frame_name(m: Any) -> str:
    name = getattr(m, "co_name", None) or "?"
    filename, line = getattr(m, "co_filename", None), getattr(m, "co_firstlineno", None)
    return f"{name} ({filename}:{line})" if filename else str(name)


def _is_recompile(m: Any) -> bool:
    match = _COMPILE_ID.findall(str(getattr(m, "compile_id", "") or ""))
    if match:
        return int(match[-1][1]) > 0
    return bool(getattr(m, "recompile_reason", None))


def events_between(before: _Snapshot, after: _Snapshot) -> CompileEvents:
    """What Dynamo did between two snapshots."""
    seen = {id(m) for m in before.metrics}
    # runtime records (Triton autotuning or CUDA-graph recording at a call) are not frame compiles
    new = [m for m in after.metrics if id(m) not in seen and not getattr(m, "is_runtime", False)]
    frames = _delta(before.counters, after.counters, "frames").get("total", 0)
    events = CompileEvents(
        frames_compiled=frames if "frames" in after.counters else len(new),
        graphs=_delta(before.counters, after.counters, "stats").get("unique_graphs", 0),
        graph_break_reasons=_break_reasons(before, after),
        frames=list(dict.fromkeys(_frame_name(m) for m in new)),
    )
    events.graph_breaks = sum(r["count"] for r in events.graph_break_reasons)
    for m in new:
        seconds = getattr(m, "entire_frame_compile_time_s", None)
        if seconds:
            events.dynamo_compile_time_ns += float(seconds) * 1e9
        if _is_recompile(m):
            events.recompiles += 1
            events.recompile_reasons.append({
                "frame": _frame_name(m), "compile_id": str(getattr(m, "compile_id", "") or ""),
                "reason": _one_line(getattr(m, "recompile_reason", None) or "not recorded by this torch")[:REASON_CHARS]})
    return events


class CompileWatch:
    """Dynamo's events since the watch was made (or last taken):

        watch = CompileWatch()
        launch = factory(inputs); launch()
        events = watch.take()        # and the watch starts over
    """

    def __init__(self) -> None:
        self._before = _snapshot()

    def take(self) -> CompileEvents:
        after = _snapshot()
        events = events_between(self._before, after)
        self._before = after
        return events


class CallObserver:
    """Attributes Dynamo's compiles to the call that caused them, during timing.

    `observer(variant, timed)` is called after each call of a variant (`timing.time_rounds`); it
    reads one counter, and takes the full difference only when a frame was compiled, so it costs
    a dict lookup per call, outside the CUDA events. `events[(variant, timed)]` accumulates.
    """

    def __init__(self) -> None:
        self._watch = CompileWatch()
        self._frames = _frames_total()
        self.events: dict[tuple[str, bool], CompileEvents] = {}

    def __call__(self, variant: str, timed: bool) -> None:
        frames = _frames_total()
        if frames == self._frames:
            return
        self._frames = frames
        self.events.setdefault((variant, timed), CompileEvents()).add(self._watch.take())

    def rows(self, variants: list[str], process: int) -> list[dict[str, Any]]:
        """One row per variant and phase ("timing_warmup": untimed calls, "timed": calls inside
        CUDA events and the untimed call opening each block), zeros included."""
        out = []
        for v in variants:
            for timed, phase in ((False, "timing_warmup"), (True, "timed")):
                out.append(compile_row(v, process, phase, self.events.get((v, timed), CompileEvents())))
        return out


def compile_row(variant: str, process: int, phase: str, events: CompileEvents | None,
                trial: int | None = None, **walls: float | None) -> dict[str, Any]:
    """One row of the run's `compiles` table: a variant's compile events in one phase of one
    process ("check" per trial, "timing_warmup", "timed"), with wall times where measured."""
    row: dict[str, Any] = {"variant": variant, "process": process, "phase": phase, "trial": trial,
                           "factory_wall_ns": None, "first_call_wall_ns": None, "second_call_wall_ns": None}
    row.update(walls)
    row.update((events or CompileEvents()).to_dict())
    row["dynamo_loaded"] = dynamo_loaded()
    return row


def observer_if_compiling() -> Callable[[str, bool], None] | None:
    """A CallObserver when Dynamo is loaded (something may compile), else None (no cost at all)."""
    return CallObserver() if dynamo_loaded() else None
