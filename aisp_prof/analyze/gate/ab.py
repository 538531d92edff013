"""Two versions of a pair's code judged side by side (`aisp-prof bench ab`): each variant of the
candidate against the same variant of the base, timed interleaved in the same processes.

The gate judges a run against evidence recorded on an earlier machine, and a host-side time
(latency, steady) moves 15-33% between leases of one card, so such a verdict against one
machine's evidence is AMBIGUOUS (`rules.one_machine`). Here `base:X` and `cand:X` are timed in
every round of the same processes (`collect.process.ab_child`: the gate's timer and kind of
time), one right after the other in ABBA order, so whatever the machine does (its CPU, clocks,
co-tenants, a burst of host noise) lands on both. The statistic is the median of the per-block
ratios cand/base (a block: two rounds, each side first in one; `round_ratios`), its 95% interval
from the gate's hierarchical bootstrap (processes, then blocks: `intervals.median_interval`).

The verdict is the gate's (`verdict.decide`): SLOWER when the whole interval lies above 1 + m,
FASTER below 1 - m, SAME inside [1 - m, 1 + m], AMBIGUOUS when it straddles an edge. The margin m
is learnt as the gate learns its margins (MARGIN_FACTOR x the largest distance of one process's
median ratio from their median), never below the A/A floor AB_FLOOR of the kind of time.

AB_FLOOR, measured on the recorded H200 evidence (all 150 variants of kernels/ch*/expectations_h200.json;
each process's samples of one variant dealt to two sides as `bench ab` alternates them, an A/A of
real data: tests/unit/test_bench_ab.py): the per-block ratio's 95% interval reached +-1.9% for a
steady time (7 variants), +-4.9% for a latency (3, ch14.gpu_quantization's compiled call the
widest) and +-0.23% for a GPU time (median of 140; up to 5.1% for the power-capped 2:4 sparse
GEMMs, which come out AMBIGUOUS). A floor of 5% for host-side times keeps those A/As SAME and
still sees a +10% host cost as SLOWER; 2% for GPU time, the gate's own floor for a time. Cycles
are not judged: both sides share each round's clock.
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from ...naming import AB_BASE, AB_CAND
from ..timing.intervals import Groups, median_interval, process_medians, relative_spread, with_cycles
from .expectations import MARGIN_FACTOR
from .rules import CONFIRMING_PROCESSES
from .verdict import AMBIGUOUS, FASTER, MISSING, NEW, SLOWER, MetricVerdict, VariantVerdict, decide

AB_FLOOR = {"gpu": 0.02, "latency": 0.05, "steady": 0.05}
METRIC = "cand_vs_base"


def side_names(variants: Sequence[str]) -> list[str]:
    """The names the timer sees: base:X then cand:X for each variant (ABBA swaps them every round)."""
    return [f"{side}{v}" for v in variants for side in (AB_BASE, AB_CAND)]


def floor_of(kind: str) -> float:
    return AB_FLOOR.get(kind, AB_FLOOR["gpu"])


def round_ratios(samples: pd.DataFrame, variant: str) -> Groups:
    """cand:variant / base:variant of each ABBA block, one array per process: a block is two
    rounds (r, r + 1 for even r), in one of which each side ran first, and its ratio is the sum of
    the candidate's two times over the base's, so that a cost of going first or second (the
    recorded ch14.gpu_quantization gpu_compiled latency differed by ~10% between its two ABBA
    positions, same code) cancels instead of splitting the ratios into two modes. A block where
    either side lacks a round (a gpu block the spin did not hold, a throttled clock) is left out."""
    df = samples
    if "throttled" in df:
        df = df[~df["throttled"].astype(bool)]
    sides = [df[df["variant"] == f"{side}{variant}"].set_index(["process", "round"])["time_ns"].astype(float)
             for side in (AB_BASE, AB_CAND)]
    base, cand = (s[~s.index.duplicated()] for s in sides)
    common = base.index.intersection(cand.index)
    if not len(common):
        return []
    paired = pd.DataFrame({"base": base.loc[common], "cand": cand.loc[common]}).reset_index()
    paired["block"] = paired["round"] // 2
    blocks = paired.groupby(["process", "block"]).agg(base=("base", "sum"), cand=("cand", "sum"),
                                                      rounds=("round", "size"))
    blocks = blocks[blocks["rounds"] == 2]
    ratios = (blocks["cand"] / blocks["base"]).sort_index()
    return [g.to_numpy(float) for _, g in ratios.groupby(level=0, sort=True)]


def margin_of(kind: str, groups: Groups) -> float:
    """The A/A floor of the kind, or MARGIN_FACTOR x the spread of the processes' median ratios."""
    return max(floor_of(kind), MARGIN_FACTOR * relative_spread(process_medians(groups)))


def _pct(x: float) -> str:
    return f"{(x - 1) * 100:+.1f}%"


def _cause(verdict: str, metric: MetricVerdict, processes: int) -> str:
    c, m = metric.change, metric.margin
    where = f"[{_pct(c.low)}, {_pct(c.high)}] in {processes} process{'es' * (processes != 1)}"
    if verdict in (SLOWER, FASTER):
        return f"the candidate is {_pct(c.value)} {where}, beyond the +-{m:.1%} margin"
    if verdict == AMBIGUOUS:
        return f"{_pct(c.value)} {where} straddles the +-{m:.1%} margin: more processes would decide"
    return ""


def judge_ab(pair: str, samples: pd.DataFrame, kind: str, base_variants: Sequence[str],
             cand_variants: Sequence[str], sm_clock_max_mhz: float | None = None) -> list[VariantVerdict]:
    """Each variant of the candidate against the base's (one metric, `cand_vs_base`: observed is
    the median ratio, expected 1); NEW where only the candidate has it, MISSING (fails, as in the
    gate) where only the base does."""
    df = with_cycles(samples, sm_clock_max_mhz) if not samples.empty else samples
    out = []
    for v in cand_variants:
        if v not in base_variants:
            out.append(VariantVerdict(pair, v, NEW, "only the candidate has this variant"))
            continue
        groups = round_ratios(df, v) if not df.empty else []
        if not groups:
            out.append(VariantVerdict(pair, v, AMBIGUOUS, "no round timed both sides"))
            continue
        change, margin = median_interval(groups), margin_of(kind, groups)
        verdict = decide(change, margin)
        metric = MetricVerdict(METRIC, change, change.value, 1.0, margin, verdict)
        out.append(VariantVerdict(pair, v, verdict, _cause(verdict, metric, len(groups)), [metric]))
    out += [VariantVerdict(pair, v, MISSING, "the base has this variant, the candidate does not")
            for v in base_variants if v not in cand_variants]
    return out


def undecided_ab(samples: list[dict[str, Any]], kind: str, variants: Sequence[str], at_least: int) -> bool:
    """Whether another timing process is needed: fewer than `at_least` so far (the margin is learnt
    across processes), a verdict still AMBIGUOUS, or a FASTER/SLOWER not yet seen in
    CONFIRMING_PROCESSES processes (the gate's rule)."""
    processes = len({s.get("process") for s in samples})
    if processes < at_least:
        return True
    verdicts = judge_ab("", pd.DataFrame(samples), kind, variants, variants)
    return any(v.verdict == AMBIGUOUS or (v.verdict in (FASTER, SLOWER) and processes < CONFIRMING_PROCESSES)
               for v in verdicts)


def times_of(samples: pd.DataFrame, variants: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """Each variant's median time per call on each side (ns), for the table."""
    out: dict[str, dict[str, float | None]] = {}
    for v in variants:
        row: dict[str, float | None] = {}
        for side, key in ((AB_BASE, "base_ns"), (AB_CAND, "cand_ns")):
            s = samples.loc[samples["variant"] == f"{side}{v}", "time_ns"] if not samples.empty else []
            row[key] = float(s.median()) if len(s) else None
        out[v] = row
    return out
