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
"""
from __future__ import annotations

import json
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
SHAPE_TIMEOUT_S = 900.0      # one shape with its first build and compiles (CUTLASS: minutes); past it, a hang
POLL_S = 0.5


@dataclass
class ShapeResult:
    pair: str
    sizes: dict[str, int]
    status: str                                    # pass | skip | fail
    detail: str = ""                               # why it failed or was skipped; "" when it passed
    skipped: dict[str, str] = field(default_factory=dict)   # variants without a kernel at this shape

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shape": shape_text(self.sizes)}


def from_line(pair: str, line: Mapping[str, Any]) -> ShapeResult:
    """One shape's result from what the check wrote: {"sizes", "check"} or {"sizes", "error", "error_type"}."""
    sizes = dict(line["sizes"])
    if "check" not in line:
        fails = line.get("error_type") in (None, "exception", BuildError.__name__)
        return ShapeResult(pair, sizes, FAIL if fails else SKIP, str(line.get("error", "")))
    check = line["check"]
    skipped = dict(check.get("skipped_variants") or {})
    if check.get("passed"):
        return ShapeResult(pair, sizes, PASS, "", skipped)
    bad = [c for c in check.get("checks", []) if not (c.get("passed") or c.get("skipped"))]
    detail = "; ".join(dict.fromkeys(f"{c['variant']}: {c['message']}" for c in bad)) or "no variant was checked"
    return ShapeResult(pair, sizes, FAIL, detail, skipped)


def check_line(pair: KernelPair, sizes: Mapping[str, int], device: str, variants: list[str],
               trials: int) -> dict[str, Any]:
    """Check one shape; what `from_line` reads. A shape the pair refuses (its own ValueError
    inside the size rules) or an environment problem (AispError) is reported, never raised."""
    from .check import check_pair

    try:
        result = check_pair(pair, pair.checked_sizes(sizes), device=device, variants=variants, trials=trials)
    except AispError as exc:
        return {"sizes": dict(sizes), "error": str(exc), "error_type": type(exc).__name__}
    except Exception as exc:  # noqa: BLE001 - the pair refused a shape inside its rules: a finding
        return {"sizes": dict(sizes), "error": " ".join(f"{type(exc).__name__}: {exc}".split()),
                "error_type": "exception"}
    return {"sizes": dict(sizes), "check": result.to_dict()}


def check_here(pair: KernelPair, shapes: Iterable[Mapping[str, int]], variants: list[str], device: str = "cpu",
               trials: int = 1) -> list[ShapeResult]:
    """Every shape checked in this process, on `device`."""
    return [from_line(pair.name, check_line(pair, s, device, variants, trials)) for s in shapes]


def check_in_children(pair: KernelPair, shapes: list[dict[str, int]], variants: list[str], trials: int = 1,
                      progress: Callable[[str], None] = lambda m: None) -> list[ShapeResult]:
    """Every shape checked on the GPU in child processes: one for all of them, and a new one
    after a process died, from the shape after the one it died at (module docstring)."""
    results: list[ShapeResult] = []
    with tempfile.TemporaryDirectory(prefix="aisp-check-") as tmp:
        while len(results) < len(shapes):
            todo = shapes[len(results):]
            lines, fatal, rc, tail = _child(pair, todo, variants, trials, Path(tmp))
            results += [from_line(pair.name, ln) for ln in lines]
            if fatal is not None:            # the pair did not load: every shape left says why
                results += [from_line(pair.name, {**fatal, "sizes": s}) for s in todo[len(lines):]]
            elif len(lines) < len(todo):
                died = todo[len(lines)]
                progress(f"   {shape_text(died)}: the check process died (exit {rc}); a new one takes the rest")
                results.append(ShapeResult(pair.name, died, FAIL, f"the check process died (exit {rc}): {tail}"))
    return results


def _child(pair: KernelPair, shapes: list[dict[str, int]], variants: list[str], trials: int,
           tmp: Path) -> tuple[list[dict[str, Any]], dict[str, Any] | None, int, str]:
    """Run one child over `shapes`: (its lines, its fatal line or None, exit code, last output line)."""
    shapes_file, out = tmp / "shapes.json", tmp / "results.jsonl"
    shapes_file.write_text(json.dumps(shapes))
    out.unlink(missing_ok=True)
    cmd = python_module(SHAPE_CHILD, "--pair", pair.name, *pair_file_args(pair), "--variants", ",".join(variants),
                        "--shapes", str(shapes_file), "--out", str(out), "--trials", str(trials))
    rc, tail = _run_watched(cmd, out, SHAPE_TIMEOUT_S)
    lines = [json.loads(ln) for ln in out.read_text().splitlines() if ln.strip()] if out.exists() else []
    fatal = next((ln for ln in lines if "fatal" in ln), None)
    return [ln for ln in lines if "fatal" not in ln], fatal, rc, tail


def _lines(path: Path) -> int:
    try:
        return path.read_text().count("\n")
    except OSError:
        return 0


def _run_watched(cmd: list[str], out: Path, timeout_s: float) -> tuple[int, str]:
    """Run the child; kill it when no shape's line appears for `timeout_s` (a kernel that hangs
    costs its shape, not the whole check). (exit code, its last output line, or why it was killed)."""
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
        seen, since = -1, time.monotonic()
        while proc.poll() is None:
            if _lines(out) != seen:
                seen, since = _lines(out), time.monotonic()
            elif time.monotonic() - since > timeout_s:
                proc.kill()
                proc.wait()
                return proc.returncode, f"no result for {timeout_s:.0f} s: killed (a kernel that never finishes?)"
            time.sleep(POLL_S)
        log.seek(0)
        said = [ln.strip() for ln in log.read().splitlines() if ln.strip()]
    return proc.returncode, (said[-1] if said else "no output")[:300]
