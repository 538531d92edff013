"""The process `aisp-prof check` runs a pair's shapes in, on the GPU (collect.correctness.shape_check).

    python -m aisp_prof.collect.process.shape_child --pair ch10.double_buffered_pipeline \
        --variants baseline,tiled --shapes shapes.json --out results.jsonl [--trials 1]

It writes one JSON line per shape as soon as the shape is checked (`shape_check.check_line`), so
the parent knows where a process that died stopped; a line {"fatal": ...} when the pair could not
be loaded at all. After a shape whose kernels left CUDA unusable (an illegal address is sticky:
every later call fails), it exits 1 and the parent starts a new process for the shapes left.
It runs in its own process group, which the parent kills when it stops; a parent killed outright
(SIGKILL: no chance to) is noticed within a second, and the child kills its own group.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from ...errors import AispError, NoGpuError
from .child import load_pair


def _usable() -> bool:
    """Whether CUDA still works in this process after a shape (a sticky error says not)."""
    import torch

    try:
        torch.cuda.synchronize()
        torch.empty(1, device="cuda").add_(1)
        torch.cuda.synchronize()
    except RuntimeError:
        return False
    return True


def _fresh() -> None:
    """What one shape left behind, dropped before the next: compiled frames, cached memory."""
    import torch

    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()
    gc.collect()
    torch.cuda.empty_cache()


def _orphaned(parent: int, poll_s: float = 1.0) -> None:
    """Once the parent is gone (the child is then re-parented): kill this process group where this
    child leads it (as `shape_check` starts it), else this process alone."""
    while os.getppid() == parent:
        time.sleep(poll_s)
    if os.getpgid(0) == os.getpid():
        os.killpg(0, signal.SIGKILL)
    os._exit(1)


def _write(out: TextIO, line: dict[str, Any]) -> None:
    out.write(json.dumps(line, default=str) + "\n")
    out.flush()


def main(argv: list[str] | None = None) -> int:
    from ..correctness.shape_check import check_line

    ap = argparse.ArgumentParser(prog="python -m aisp_prof.collect.process.shape_child")
    ap.add_argument("--pair", required=True)
    ap.add_argument("--pair-file", type=Path)
    ap.add_argument("--variants", required=True)
    ap.add_argument("--shapes", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--trials", type=int, default=1)
    args = ap.parse_args(argv)
    threading.Thread(target=_orphaned, args=(os.getppid(),), daemon=True, name="aisp-orphan-watch").start()
    with open(args.out, "a") as out:
        try:
            import torch

            if not torch.cuda.is_available():
                raise NoGpuError("no CUDA GPU visible to torch in the check process")
            pair = load_pair(args.pair, args.pair_file)
        except AispError as exc:
            _write(out, {"fatal": True, "error": str(exc), "error_type": type(exc).__name__})
            return exc.exit_code
        for sizes in json.loads(args.shapes.read_text()):
            _write(out, check_line(pair, sizes, "cuda", args.variants.split(","), args.trials))
            if not _usable():
                return 1
            _fresh()
    return 0


if __name__ == "__main__":
    sys.exit(main())
