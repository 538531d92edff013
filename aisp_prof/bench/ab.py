"""`aisp-prof bench ab`: a pair's candidate code against a base version of it, on one machine.

The gate (`bench.runner`) judges against evidence recorded on an earlier machine, which cannot
see a host-side regression smaller than the 15-33% by which host times move between leases
(README, "Known limit"). Here both versions run in the same fresh processes: the base from a
kernels folder or a git revision (`bench.base`), the candidate from the working tree (or
`$AISP_KERNELS`). The first process checks both against their float64 reference; every process
times base:X and cand:X interleaved (`collect.process.ab_child`, the gate's timer and kind of
time); `analyze.gate.ab` judges each variant by the ratio cand/base. Processes: at least
`processes` (the margin is learnt across them), then more while a verdict is AMBIGUOUS or a
FASTER/SLOWER is not yet confirmed, up to `max_processes`. Nothing is stored and nothing is left
behind: the extracted base, the processes' reports and their compile caches live in temporary folders.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .. import errors
from ..analyze.gate.ab import floor_of, judge_ab, times_of, undecided_ab
from ..analyze.gate.rules import failing, gate_kind
from ..analyze.gate.verdict import VariantVerdict
from ..collect.commands import python_module
from ..collect.process.agents import run_logged
from ..collect.process.steps import child_env
from ..errors import AispError, ProfilerFailedError, RequirementError, UnknownTargetError
from ..pairs import KernelPair, pair_sizes
from ..pairs import capabilities
from ..pairs.capabilities import Machine, runnable
from ..pairs.files import load_file
from .base import base_version

CHILD_MODULE = "aisp_prof.collect.process.ab_child"
ChildRunner = Callable[[list[str], Path, Path], dict[str, Any]]   # (command, report, log) -> report


@dataclass(frozen=True)
class AbOptions:
    """How `bench ab` times: the gate's sampling per process, and how many processes."""

    repeats: int = 10              # interleaved rounds per process, at least
    budget_s: float = 2.0          # sampling time per process (the gate's)
    processes: int = 2             # at least: the margin is learnt from the spread between them
    max_processes: int = 4         # at most: while AMBIGUOUS, or to confirm a FASTER/SLOWER
    strict: bool = False           # AMBIGUOUS fails too
    sizes: str | None = None       # --sizes over the candidate's defaults, the same for both


@dataclass
class AbOutcome:
    """One pair's A/B: where the base came from, the kind of time, each variant's verdict."""

    pair: str
    base: str
    kind: str
    status: str                    # ok | failed_check
    message: str = ""
    verdicts: list[VariantVerdict] = field(default_factory=list)
    times: dict[str, dict[str, float | None]] = field(default_factory=dict)
    processes: int = 0
    wall_s: list[float] = field(default_factory=list)
    strict: bool = False

    @property
    def failing(self) -> list[VariantVerdict]:
        return failing(self.verdicts, self.strict)

    @property
    def fails(self) -> bool:
        return self.status != "ok" or bool(self.failing)

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair, "base": self.base, "kind": self.kind, "status": self.status,
                "message": self.message, "fails": self.fails, "processes": self.processes,
                "floor": floor_of(self.kind), "process_wall_s": [round(w, 2) for w in self.wall_s],
                "verdicts": [{**v.to_dict(), **self.times.get(v.variant, {})} for v in self.verdicts]}


def run_child(command: list[str], report: Path, log: Path) -> dict[str, Any]:
    """Run one timing process; its report, or its error as the AispError it raised (exit code
    kept), or ProfilerFailedError with its output's last lines when it left no report."""
    rc, text, _ = run_logged(command, log, child_env())
    try:
        import json

        out = json.loads(report.read_text())
    except (OSError, ValueError):
        tail = " | ".join(text.strip().splitlines()[1:][-3:])[:300]     # the first line is the command
        raise ProfilerFailedError(f"the A/B timing process exited {rc} with no report: {tail}") from None
    if not out.get("ok"):
        kind = getattr(errors, str(out.get("error_type")), None)
        cls = kind if isinstance(kind, type) and issubclass(kind, AispError) else ProfilerFailedError
        raise cls(f"the A/B timing process: {out.get('error', 'unknown error')}")
    return out


def child_args(pair: KernelPair, base_file: Path, variants: list[str], kind: str, opts: AbOptions,
               process: int, out: Path) -> list[str]:
    """The timing process's command line (the first also checks both versions). Each process compiles
    with empty caches of its own (beside its report, in the temporary folder): a process that confirms
    a verdict is a new draw of the compiler's choices, as a gate's is, and the machine's own compile
    caches are not touched."""
    return python_module(CHILD_MODULE, "--pair", pair.name, "--base-file", str(base_file),
                         "--cand-file", str(Path(pair.source).resolve()), "--variants", ",".join(variants),
                         "--sizes", opts.sizes or "", "--kind", kind, "--repeats", str(opts.repeats),
                         "--budget-s", str(opts.budget_s), "--process", str(process), "--out", str(out),
                         "--fresh-compile-cache", *(["--check"] if process == 0 else []))


def _failed_checks(checks: dict[str, Any]) -> str:
    bad = [f"{side}: {', '.join(c.get('failed_variants') or ['?'])}" for side, c in checks.items() if not c["passed"]]
    return f"failed the correctness check ({'; '.join(bad)})" if bad else ""


def skipped_variants(checks: dict[str, Any]) -> dict[str, str]:
    """The variants either version's check skipped (its backend has no kernel at these sizes):
    not timed, not judged; the reason said."""
    return {v: why for c in checks.values() for v, why in (c.get("skipped_variants") or {}).items()}


def ab_one(pair: KernelPair, base: str, opts: AbOptions, progress: Callable[[str], None] = lambda m: None,
           machine: Machine | None = None, child: ChildRunner | None = None) -> AbOutcome:
    """Check and time `pair` against its base version (`base`: a folder or a git revision)."""
    if pair.distributed:
        raise RequirementError(f"{pair.name} runs as a torchrun job; bench ab times one process")
    machine, kind, child = machine or capabilities.detect_machine(), gate_kind(pair), child or run_child
    pair_sizes(pair, opts.sizes)                       # a bad --sizes fails here (exit 12), before anything runs
    with base_version(base, pair) as (base_file, label):
        old = load_file(base_file)
        if old.name != pair.name:
            raise UnknownTargetError(f"--base {base}: {base_file.name} defines {old.name!r}, not {pair.name!r}")
        cand_vars, base_vars = runnable(pair, machine).require(), runnable(old, machine).require()
        both = [v for v in cand_vars if v in base_vars]
        outcome = AbOutcome(pair.name, label, kind, "ok", strict=opts.strict)
        samples: list[dict[str, Any]] = []
        sensor: dict[str, Any] = {}
        with tempfile.TemporaryDirectory(prefix="aisp-ab-") as work:
            for p in range(max(opts.processes, opts.max_processes)):
                if p >= opts.processes and not undecided_ab(samples, kind, both, opts.processes):
                    break
                progress(f"{pair.name}: {'checking both versions, then ' if p == 0 else ''}timing base and "
                         f"candidate side by side ({kind} time), process {p + 1}")
                began, out = time.time(), Path(work) / f"ab_p{p}.json"
                report = child(child_args(pair, base_file, both, kind, opts, p, out), out, Path(work) / f"ab_p{p}.log")
                outcome.wall_s.append(time.time() - began)
                if why := _failed_checks(report.get("checks") or {}):
                    outcome.status, outcome.message = "failed_check", why
                    return outcome
                if skipped := skipped_variants(report.get("checks") or {}):   # no kernel at these sizes
                    both, cand_vars, base_vars = ([v for v in vs if v not in skipped] for vs in (both, cand_vars, base_vars))
                    outcome.message = "; ".join(f"{v} skipped: {why}" for v, why in skipped.items())
                samples += report.get("samples") or []
                sensor = report.get("sensor") or sensor
    df = pd.DataFrame(samples)
    outcome.processes = int(df["process"].nunique()) if not df.empty else 0
    outcome.verdicts = judge_ab(pair.name, df, kind, base_vars, cand_vars, sensor.get("sm_clock_max_mhz"))
    outcome.times = times_of(df, both)
    return outcome
