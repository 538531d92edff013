"""The profiled child's command line (`runner.child_command` and `runner.timing_args` write it;
`child.main` reads it)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..timing.samplers import KINDS
from ..timing.timer import SamplingPlan


def parser() -> argparse.ArgumentParser:
    """The child's command line (runner.child_command writes it)."""
    ap = argparse.ArgumentParser(prog="python -m aisp_prof.collect.process.child")
    ap.add_argument("--pair", required=True)
    ap.add_argument("--pair-file", type=Path, help="the module of a pair outside the kernels folder (pairs.files)")
    ap.add_argument("--variants", required=True, help="comma-separated, baseline first")
    ap.add_argument("--sizes", default="")
    ap.add_argument("--mode", choices=("check", "profile", "bench", "sanitize"), required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=20, help="timing: rounds at least")
    ap.add_argument("--budget-s", type=float, default=2.0, help="timing: wall seconds of sampling")
    ap.add_argument("--floor-rounds", type=int, default=0,
                    help="timing: where the budget runs out first, rounds at least (0: none; timer.SamplingPlan)")
    ap.add_argument("--process", type=int, default=0, help="bench: which repeat process this is")
    ap.add_argument("--references", action="store_true", help="bench: time the reference kernels too")
    ap.add_argument("--kinds", default=",".join(KINDS), help="timing: which kinds of time (collect.timing.samplers)")
    ap.add_argument("--fresh-compile-cache", action="store_true",
                    help="Inductor's and Triton's caches in an empty folder of this process (removed at its end)")
    ap.add_argument("--nsys-iterations", type=int, default=0,
                    help="check: then run this many iterations per variant inside a cudaProfilerStart/Stop "
                         "capture range, for nsys --capture-range=cudaProfilerApi (0: none)")
    ap.add_argument("--nsys-out", type=Path, help="check: where the capture's report goes "
                                                  "(default: nsys_child.json beside --out)")
    ap.add_argument("--release", type=Path, help="check: touch this file when done with the GPU (a passed check "
                                                 "and capture only): an ncu child started beside it may begin")
    ap.add_argument("--wait-for", type=Path, help="profile: import and load the pair, then wait for this file "
                                                  "before any CUDA call (the check process's --release)")
    ap.add_argument("--wait-parent", type=int, default=0, help="with --wait-for: give up if this process ends")
    return ap


def sampling_plan(args: argparse.Namespace, flush_bytes: int) -> SamplingPlan:
    """The timing plan of the child's flags (stored with its samples, `child.run_timing`)."""
    return SamplingPlan(min_rounds=args.repeats, budget_s=args.budget_s, floor_rounds=args.floor_rounds,
                        flush_bytes=flush_bytes, kinds=tuple(args.kinds.split(",")))
