"""`aisp-prof check`: a pair's correctness check at several shapes, with no profiler.

Each shape runs `collect.correctness.check.check_pair` (every variant against the float64 reference and the
baseline, as `run`'s check does) and ends as one `ShapeResult`:
  pass  no variant was wrong (a variant whose backend has no kernel for the shape is skipped,
        named in `skipped`);
  skip  the pair cannot run here at all (no GPU, a tool or a build missing: an AispError other
        than a wrong result, named in `detail`);
  fail  a variant was wrong or raised, the pair refused a shape inside its own size rules (the
        rules are incomplete), or the check process died at this shape (a crashed kernel).
On a GPU every shape of a pair runs in one child process (`collect.process.shape_child`), which writes a
line per shape as it goes: a process that dies (an illegal address leaves CUDA unusable), or
writes nothing for SHAPE_TIMEOUT_S (a kernel that hangs: it is killed), costs only the shape it
was at, and a new process takes the rest. On the CPU (`device="cpu"`: torch
variants, Triton's under TRITON_INTERPRET=1) the shapes run in this process.

Each result is handed to `done` as soon as its shape finishes (the parent reads the child's lines
as they appear), so a caller that is stopped (Ctrl-C, a time limit raised from `done`) keeps every
shape finished so far. The child runs in its own session and process group: whatever stops the
parent (an exception, KeyboardInterrupt) kills that whole group (the child, Inductor's compile
workers, an nvcc it started) before it propagates; `tick` is called at every poll, a point where
the caller may raise to stop (a SIGTERM marked by `cli.common.terminate_as_interrupt`).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ...errors import AispError, BuildError
from ...pairs import KernelPair
from ...pairs.files import pair_file_args
from ..commands import python_module
from .fuzz import shape_text

SHAPE_CHILD = "aisp_prof.collect.process.shape_child"
PASS, SKIP, FAIL = "pass", "skip", "fail"
PROGRESS_COLUMNS = 120
SHAPE_TIMEOUT_S = 900.0      # one shape with its first build and compiles (CUTLASS: minutes); past it, a hang
POLL_S = 0.5


@dataclass
class ShapeResult:
    pair: str
    sizes: dict[str, int]
    status: str                                    # pass | skip | fail
    detail: str = ""                               # why it failed or was skipped; "" when it passed
    skipped: dict[str, str] = field(default_factory=dict)   # variants without a kernel at this shape
    wall_s: float = 0.0                            # the shape's check, as the process that ran it timed it

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shape": shape_text(self.sizes)}

    def progress_line(self, index: int, total: int, width: int = PROGRESS_COLUMNS) -> str:
        """"   [3/20] s=1,h=7,d=64: pass (16.8 s)", with the reason after a skip or a fail (and the
        variants skipped at a pass), cut to `width` columns."""
        why = self.detail or "; ".join(f"{v} {w}" for v, w in self.skipped.items())
        line = f"   [{index}/{total}] {shape_text(self.sizes) or '-'}: {self.status} ({self.wall_s:.1f} s)"
        line += f": {' '.join(why.split())}" if why else ""
        return line if len(line) <= width else line[:width - 3] + "..."


def from_line(pair: str, line: Mapping[str, Any]) -> ShapeResult:
    """One shape's result from what the check wrote: {"sizes", "check"} or {"sizes", "error", "error_type"}."""
    sizes, wall_s = dict(line["sizes"]), round(float(line.get("wall_s", 0.0)), 2)
    if "check" not in line:
        fails = line.get("error_type") in (None, "exception", BuildError.__name__)
        return ShapeResult(pair, sizes, FAIL if fails else SKIP, str(line.get("error", "")), wall_s=wall_s)
    check = line["check"]
    skipped = dict(check.get("skipped_variants") or {})
    if check.get("passed"):
        return ShapeResult(pair, sizes, PASS, "", skipped, wall_s)
    bad = [c for c in check.get("checks", []) if not (c.get("passed") or c.get("skipped"))]
    detail = "; ".join(dict.fromkeys(f"{c['variant']}: {c['message']}" for c in bad)) or "no variant was checked"
    return ShapeResult(pair, sizes, FAIL, detail, skipped, wall_s)


def check_line(pair: KernelPair, sizes: Mapping[str, int], device: str, variants: list[str],
               trials: int) -> dict[str, Any]:
    """Check one shape; what `from_line` reads. A shape the pair refuses (its own ValueError
    inside the size rules) or an environment problem (AispError) is reported, never raised; `wall_s`
    is how long the check took."""
    from .check import check_pair

    began = time.monotonic()
    try:
        result = check_pair(pair, pair.checked_sizes(sizes), device=device, variants=variants, trials=trials)
    except AispError as exc:
        line = {"error": str(exc), "error_type": type(exc).__name__}
    except Exception as exc:  # noqa: BLE001 - the pair refused a shape inside its rules: a finding
        line = {"error": " ".join(f"{type(exc).__name__}: {exc}".split()), "error_type": "exception"}
    else:
        line = {"check": result.to_dict()}
    return {"sizes": dict(sizes), **line, "wall_s": round(time.monotonic() - began, 3)}


def check_here(pair: KernelPair, shapes: Iterable[Mapping[str, int]], variants: list[str], device: str = "cpu",
               trials: int = 1, done: Callable[[ShapeResult], None] = lambda r: None) -> list[ShapeResult]:
    """Every shape checked in this process, on `device`; each result handed to `done` as it is made."""
    results: list[ShapeResult] = []
    for sizes in shapes:
        results.append(from_line(pair.name, check_line(pair, sizes, device, variants, trials)))
        done(results[-1])
    return results


def check_in_children(pair: KernelPair, shapes: list[dict[str, int]], variants: list[str], trials: int = 1,
                      progress: Callable[[str], None] = lambda m: None,
                      done: Callable[[ShapeResult], None] = lambda r: None,
                      tick: Callable[[], None] = lambda: None) -> list[ShapeResult]:
    """Every shape checked on the GPU in child processes: one for all of them, and a new one
    after a process died, from the shape after the one it died at (module docstring)."""
    results: list[ShapeResult] = []
    last = [time.monotonic()]               # when the last shape finished: a shape that died took since then

    def add(result: ShapeResult) -> None:
        results.append(result)
        last[0] = time.monotonic()
        done(result)
    with tempfile.TemporaryDirectory(prefix="aisp-check-") as tmp:
        while len(results) < len(shapes):
            todo, began = shapes[len(results):], len(results)
            fatal, rc, tail = _child(pair, todo, variants, trials, Path(tmp),
                                     lambda line: add(from_line(pair.name, line)), tick)
            finished = len(results) - began
            if fatal is not None:            # the pair did not load: every shape left says why
                for sizes in todo[finished:]:
                    add(from_line(pair.name, {**fatal, "sizes": sizes}))
            elif finished < len(todo):
                died = todo[finished]
                progress(f"   {shape_text(died)}: the check process died (exit {rc}); a new one takes the rest")
                add(ShapeResult(pair.name, died, FAIL, f"the check process died (exit {rc}): {tail}",
                                wall_s=round(time.monotonic() - last[0], 2)))
    return results


def _child(pair: KernelPair, shapes: list[dict[str, int]], variants: list[str], trials: int, tmp: Path,
           seen: Callable[[dict[str, Any]], None], tick: Callable[[], None] = lambda: None,
           ) -> tuple[dict[str, Any] | None, int, str]:
    """Run one child over `shapes`, each shape's line handed to `seen` as it appears: (its fatal
    line or None, exit code, last output line)."""
    shapes_file, out = tmp / "shapes.json", tmp / "results.jsonl"
    shapes_file.write_text(json.dumps(shapes))
    out.unlink(missing_ok=True)
    cmd = python_module(SHAPE_CHILD, "--pair", pair.name, *pair_file_args(pair), "--variants", ",".join(variants),
                        "--shapes", str(shapes_file), "--out", str(out), "--trials", str(trials))
    fatal: list[dict[str, Any]] = []

    def lines(texts: list[str]) -> None:
        stop: BaseException | None = None      # every finished shape is handed over before a stop is raised
        for line in map(json.loads, texts):
            if "fatal" in line:
                fatal.append(line)
                continue
            try:
                seen(line)
            except (Exception, KeyboardInterrupt) as exc:
                stop = stop or exc
        if stop is not None:
            raise stop
    rc, tail = _run_watched(cmd, out, SHAPE_TIMEOUT_S, lines, tick)
    return (fatal[0] if fatal else None), rc, tail


def _new_lines(path: Path, skip: int) -> list[str]:
    """The whole lines of `path` after its first `skip` (a line still being written is left)."""
    try:
        text = path.read_text()
    except OSError:
        return []
    return [ln for ln in text[:text.rfind("\n") + 1].splitlines()[skip:]]


def _run_watched(cmd: list[str], out: Path, timeout_s: float, new: Callable[[list[str]], None] = lambda t: None,
                 tick: Callable[[], None] = lambda: None) -> tuple[int, str]:
    """Run the child in its own process group, handing `new` each line it adds to `out`; kill the
    group when no line appears for `timeout_s` (a kernel that hangs costs its shape, not the whole
    check), and whatever way this returns or raises. (exit code, its last output line, or why it
    was killed)."""
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        seen, since, hung = 0, time.monotonic(), False
        try:
            while not hung:
                running = proc.poll() is None        # before reading: the lines of a child that exited are all there
                if lines := _new_lines(out, seen):
                    seen, since = seen + len(lines), time.monotonic()
                    new([ln for ln in lines if ln.strip()])
                if not running:
                    break
                hung = time.monotonic() - since > timeout_s
                tick()
                time.sleep(0 if hung else POLL_S)
        finally:
            _kill_group(proc)
        if hung:
            return proc.returncode, f"no result for {timeout_s:.0f} s: killed (a kernel that never finishes?)"
        log.seek(0)
        said = [ln.strip() for ln in log.read().splitlines() if ln.strip()]
    return proc.returncode, (said[-1] if said else "no output")[:300]


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group (itself and what it started: an exited child's compile
    workers too), then reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
