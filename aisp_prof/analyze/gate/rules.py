"""The gate's decisions beyond one verdict: when to time another process, how far evidence from one
machine may be trusted, which verdicts fail a build, and which time a pair is judged by. Pure
functions of verdicts, samples and the recorded evidence; `bench.runner` runs the pairs and asks.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

from ..timing.speedup import headline_kind
from . import expectations as exp
from ..timing.intervals import Interval
from .verdict import AMBIGUOUS, FASTER, MACHINE_SPREAD_GPU, SLOWER, VariantVerdict, decide, judge

if TYPE_CHECKING:
    from ...pairs import KernelPair

CONFIRMING_PROCESSES = 2              # a FASTER or SLOWER of one process is confirmed by a second

# Machines of one kind differ in GPU time too: on a second H200 lease the unchanged
# ch10.stream_concurrency baseline ran +4.7% [+4.3, +5.1], warp_spec_pingpong +3.7% and
# warp_specialized_elementwise's baseline +2.9% (a recording there confirmed both), and
# ch14.triton_persistent's persistent kernel +3.1%, the reference kernels within 1.5% each time
# (MACHINE_SPREAD_GPU, in verdict.py: the library references' bound uses it too).


def gate_kind(pair: KernelPair) -> str:
    """The kind of time the gate records and judges: the pair's headline's (analyze.timing.speedup)."""
    return headline_kind({"timer": pair.timer, "world_size": pair.world_size})


# A pair's chase of an AMBIGUOUS verdict (more timing processes) stops once another process would take
# the pair past this (nvbench's --timeout, per pair). A pair's first process costs 6-10 s on an H200;
# the whole book at most 10 minutes leaves ~40 s where a chase is cheap. Without it one pair cost
# 160-170 s (ch09.structured_sparsity_ffn: five 28 s processes with cuSPARSELt's search in each;
# ch14.graph_break_control_flow: a 64 s compile, then four of 22-25 s) and still ended AMBIGUOUS.
PAIR_BUDGET_S = 40.0


def undecided(pair: str, entry: Any, kind: str, budget_s: float | None = None,
              max_processes: int = 5, link_bound: bool = False, library: tuple[str, ...] = ()) -> "Chase":
    """Whether the gate needs another timing process: while a verdict is AMBIGUOUS and another process
    may decide it within the pair's budget, and until a second process has confirmed any FASTER or
    SLOWER. One process is enough for a pair whose every variant is SAME: the A/A margin it is
    judged by was learnt from the recorded processes' spread, so the between-process noise is already
    inside it; a change one process shows must show in the next too before it fails a build. This
    halves a passing gate's cost (one fresh process per pair instead of two) without letting one odd
    process decide a failure. `budget_s` None: no budget (every process up to `max_processes`).
    `link_bound`: a multi-rank pair (`one_machine`); `library`: the pair's declared references (`judge`)."""
    return Chase(pair, entry, kind, budget_s, max_processes, link_bound=link_bound, library=library)


@dataclass
class Chase:
    """The gate's sequential stop for one pair (`undecided`), called with the samples so far after
    each timing process. A confirming process is never cut: a failure needs it. A chase of an
    AMBIGUOUS verdict stops (and `stopped` says why, for the verdict's cause) when another process
    would pass `budget_s` since the pair started (the next process is estimated by the last, the
    first by the check's process: like it, a gate's further process compiles anew, though with
    `--compile-cache` the check's found its compiles and the estimate is low), or, from two processes
    on, when even the interval `max_processes` would give (its width x sqrt(n / max), the usual 1/sqrt(n) of
    independent processes) would still straddle the margin's edge for every AMBIGUOUS variant.
    A verdict AMBIGUOUS by a rule (`settled`: its ratio moved only with its baseline) stops it from two
    processes on. No process is asked for whose answer `one_machine` would overrule: a host-side time judged
    against evidence from one machine ends AMBIGUOUS whatever it shows (on an H200 the confirming
    processes of ch14.graph_break_control_flow and gpu_quantization cost 22-24 s each for that)."""

    pair: str
    entry: Any
    kind: str
    budget_s: float | None = PAIR_BUDGET_S
    max_processes: int = 5
    link_bound: bool = False
    library: tuple[str, ...] = ()
    clock: Callable[[], float] = time.monotonic
    stopped: str = ""
    started_s: float = field(default=-1.0)     # clock() when the pair began
    last_s: float = field(default=-1.0)        # clock() at the last call: the process before took since

    def __post_init__(self) -> None:
        self.started_s = self.last_s = self.clock()

    def __call__(self, samples: list[dict[str, Any]], sm_clock_max_mhz: float | None = None) -> bool:
        """Whether to time another process; `sm_clock_max_mhz` (the check's sensor) leaves out the throttled
        samples as the verdict will (`gate_verdicts`), so the two judge the same samples."""
        now = self.clock()
        process_s, self.last_s = now - self.last_s, now
        verdicts = [v for v in judge(self.pair, exp.of_kind(pd.DataFrame(samples), self.kind), self.entry,
                                     sm_clock_max_mhz, library=self.library) if not v.is_reference and not v.library]
        n = len({s.get("process") for s in samples})
        if self.kind in exp.HOST_KINDS and not self.link_bound and exp.machines(self.entry) == 1 and \
                any(v.verdict in (FASTER, SLOWER, AMBIGUOUS) for v in verdicts):
            self.stopped = ("a host-side time against evidence from one machine stays AMBIGUOUS however many "
                            "processes run: one is enough")
            return False
        if any(v.verdict in (FASTER, SLOWER) for v in verdicts) and n < CONFIRMING_PROCESSES:
            return True
        unsure = [v for v in verdicts if v.verdict == AMBIGUOUS]
        if not unsure:
            return False
        spent_s = now - self.started_s
        if n >= self.max_processes:
            self.stopped = f"still AMBIGUOUS after {n} timing processes, the most the gate takes (--max-processes)"
        elif n >= 2 and all(v.settled for v in unsure):
            self.stopped = (f"AMBIGUOUS after {n} timing processes by a rule that more processes on this machine "
                            "would not change (the ratio moved with the baseline)")
        elif n >= 2 and all(v.settled or hopeless(v, n, self.max_processes) for v in unsure):
            self.stopped = (f"AMBIGUOUS after {n} timing processes, and {self.max_processes} would not decide it "
                            "(its interval narrowed by sqrt(n / max) still straddles the margin)")
        elif self.budget_s is not None and spent_s + process_s > self.budget_s:
            self.stopped = (f"AMBIGUOUS after {n} timing process{'es' if n > 1 else ''} ({spent_s:.0f} s): another "
                            f"(~{process_s:.0f} s) would pass the pair's {self.budget_s:.0f} s budget (--pair-budget-s)")
        return not self.stopped


def hopeless(v: VariantVerdict, processes: int, most: int) -> bool:
    """Whether no AMBIGUOUS metric of `v` would be decided by `most` processes: each interval
    shrunk about its estimate by sqrt(processes / most) still straddles an edge of its margin."""
    shrink = (processes / most) ** 0.5
    metrics = [m for m in v.metrics if m.verdict == AMBIGUOUS]
    if not metrics:
        return False
    for m in metrics:
        c = m.change.value
        low, high = c - (c - m.change.low) * shrink, c + (m.change.high - c) * shrink
        if decide(Interval(c, low, high), m.margin) != AMBIGUOUS:
            return False
    return True


def one_machine(verdicts: list[VariantVerdict], kind: str, entry: Any, link_bound: bool = False) -> list[VariantVerdict]:
    """Evidence from one machine holds that machine's spread only. A host-side time (latency,
    steady) moves with the host: the same kind of H200 ran ch14.triton_persistent's baseline at
    1.76 ms per call back to back on one lease and 0.94 ms on the next, GPU reference kernels
    within 1%; there every FASTER and SLOWER becomes AMBIGUOUS. A GPU time moves less, but up to
    MACHINE_SPREAD_GPU: a change whose cycles are not wholly beyond it becomes AMBIGUOUS (a planted
    +6.6% or +10% still fails). Both say so, until a session from another machine widens the
    margin to what machines do. `link_bound`: a multi-rank pair, whose steady time per call (its
    headline's, analyze.timing.speedup.MULTI_RANK_TIMERS) is that of collectives of many MiB over
    the GPUs' link, back to back: it is held to the GPU time's rule, not the host's."""
    if exp.machines(entry) > 1:
        return verdicts
    for v in verdicts:
        if v.verdict not in (FASTER, SLOWER) or v.is_reference or v.library:
            continue
        if kind in exp.HOST_KINDS and not link_bound:
            why = "a host-side time moves with the host"
        elif _within_machine_spread(v):
            why = f"within the {MACHINE_SPREAD_GPU:.0%} by which H200 machines ran unchanged code apart"
        else:
            continue
        v.cause = (f"{v.verdict.lower()} by {kind} time against evidence from one machine, and {why}: record a "
                   "session on another machine (bench run --update-expectations) so the margin covers machines"
                   f"{'; ' + v.cause if v.cause else ''}")
        v.verdict = AMBIGUOUS
    return verdicts


def compiled_variants(compiles: pd.DataFrame) -> set[str]:
    """The variants torch.compile compiled frames of in a run (its `compiles` table), none without one."""
    if compiles is None or compiles.empty or "frames_compiled" not in compiles:
        return set()
    return set(compiles.loc[compiles["frames_compiled"].fillna(0) > 0, "variant"].astype(str))


def compile_draw(verdicts: list[VariantVerdict], entry: Any, compiled: set[str]) -> list[VariantVerdict]:
    """Say where a compiled variant's change may be the compiler's draw: torch.compile's autotuning
    chooses kernels anew with an empty cache, and on fresh H200 leases ch14.regional_triton's compiled
    variants ran up to 11% apart from one empty cache to the next (eager: 0%), while its first
    session's processes shared one cache and so one choice: a fresh machine read FASTER by 8-10%. A
    FASTER, SLOWER or AMBIGUOUS of a variant that compiled (`compiled`: torch.compile ran in this run)
    against evidence with no session of fresh caches per process gets that said in its cause. The
    verdict stands: a regression of compiled code must still fail."""
    if not compiled or exp.fresh_compile_sessions(entry):
        return verdicts
    for v in verdicts:
        if v.variant in compiled and not v.is_reference and v.verdict in (FASTER, SLOWER, AMBIGUOUS):
            why = ("it compiled, and every recorded session shared one compile cache: a fresh machine's "
                   "autotuner may choose other kernels (record with bench run --update-expectations, which "
                   "compiles each process anew)")
            v.cause = "; ".join(c for c in (v.cause, why) if c)
    return verdicts


@dataclass(frozen=True)
class Traits:
    """What the gate's rules read of a pair beyond its samples."""

    link_bound: bool = False          # a multi-rank pair: its steady time is its collectives' (`one_machine`)
    library: tuple[str, ...] = ()     # its declared reference variants: a library's code (verdict.judge)


def gate_verdicts(pair: str, samples: pd.DataFrame, kind: str, entry: Any, sm_clock_max_mhz: float | None = None,
                  outdated: str = "", compiles: pd.DataFrame | None = None, traits: Traits = Traits()
                  ) -> list[VariantVerdict]:
    """What `bench run` says of a run's samples: each variant judged by the gate's kind of time
    (`judge`), the one-machine rule (`one_machine`), and where a compiled variant's change may be
    the compiler's draw (`compile_draw`, the variants `compiles` shows torch.compile compiled)."""
    verdicts = judge(pair, exp.of_kind(samples, kind), entry, sm_clock_max_mhz, outdated, traits.library)
    return compile_draw(one_machine(verdicts, kind, entry, link_bound=traits.link_bound), entry,
                        compiled_variants(compiles))


def _within_machine_spread(v: VariantVerdict) -> bool:
    """Whether the change that decided v (its cycles, else its time) may lie within MACHINE_SPREAD_GPU."""
    m = v.metric("cycles") or v.metric("time")
    if m is None:
        return False
    return m.change.low <= 1 + MACHINE_SPREAD_GPU if v.verdict == SLOWER else m.change.high >= 1 - MACHINE_SPREAD_GPU


def failing(verdicts: list[VariantVerdict], strict: bool = False) -> list[VariantVerdict]:
    """The verdicts that fail the gate: SLOWER ones, and with `strict` (CI that must decide) an
    AMBIGUOUS variant too; a reference kernel's verdict, or a library's (the pair's declared reference
    variant), never fails it."""
    return [v for v in verdicts if v.fails or (strict and v.verdict == AMBIGUOUS and not v.is_reference
                                                and not v.library)]


def refusal(other_code: str, throttled_samples: int, force: bool) -> str:
    """Why a session may not become recorded evidence ("" when it may): it measured other code than
    the pair's module now, or its clocks were throttled; `force` records it anyway."""
    if force:
        return ""
    if other_code:
        return f"not recorded: {other_code}; run the pair again, or pass --force"
    if throttled_samples:
        return (f"not recorded: {throttled_samples} samples ran below 75% of the maximum SM clock "
                "(a throttled machine); measure again, or pass --force")
    return ""


def verdict_frame(verdicts: list[VariantVerdict], source: str) -> pd.DataFrame:
    """The verdicts as stored rows: one per variant, each metric's change, interval and margin."""
    rows = []
    for v in verdicts:
        row: dict[str, Any] = {"pair": v.pair, "variant": v.variant, "verdict": v.verdict, "cause": v.cause,
                               "reference": v.is_reference, "library": v.library, "expectations": source}
        for m in v.metrics:
            row.update({f"{m.metric}_change": m.change.value, f"{m.metric}_change_low": m.change.low,
                        f"{m.metric}_change_high": m.change.high, f"{m.metric}_margin": m.margin,
                        f"{m.metric}_verdict": m.verdict})
        rows.append(row)
    return pd.DataFrame(rows)
