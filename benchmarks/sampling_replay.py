"""Replay the timer's stopping rule on real samples at looser targets, and judge the truncated samples
with the gate's own code: would a stop derived from the margin save sampling time without moving a
verdict?

A timing process (collect.timing.timer.time_rounds) samples interleaved rounds until every series
(variant x kind, the reference kernels' gpu samples included) has its median's 95% interval within
`target_rel_ci` (+-0.25%, stats.median_rel_halfwidth), or its time budget is spent (2.0 s in the gate),
after at least `min_rounds` (10). The gate then judges against margins of at least 2%. Here, per
timing process of a stored run and per target, the first round r >= min_rounds at which every series
of the gate's kind of time (analyze.gate.rules.gate_kind; the references' gpu samples beside them,
as exp.of_kind keeps them) is within the target; the run's samples cut there (each process at its
own round) are judged as bench.runner judges a run: `judge`, then `one_machine`, then
`compile_draw`, against the same evidence entry (the pair's kernels/chNN/expectations_<gpu>.json,
or --expectations). A target "margin/K" gives each series its own: the smallest recorded margin of
its variant (time, cycles, ratio) over K.

Sources (real samples only):
  --db G.DB         runs a `bench run` stored (the gate's own processes: its kind and the references
                    only, min 10 rounds, 2 s budget); their stored verdicts are the oracle of the judging
  --runs DIR        `aisp-prof run` folders (check.json.gz 'samples'); only the gate's kind is replayed,
                    though the process sampled all three kinds (its rounds were set by all of them)
  --evidence FILE   the recording sessions of an expectations file: each process of a recording is a
                    gate process (same plan); judged against the entry that holds it (circular: shows
                    only whether a cut widens an interval past the margin)

Seconds saved are estimated from the samples alone: a round costs at least the sum over its rows of
time_ns x calls (calls: a steady sample's back-to-back count, else 1). That leaves out the L2 flush
before each gpu/latency sample, the launch and synchronize of each sample, the sensor read and any
host-bound wait: a lower bound (the report compares it with the 2 s budget where a process ran out).

    python benchmarks/sampling_replay.py --db g.db --runs profiles/samples_h200_ch10_early/*/ \\
        --evidence kernels/ch09/expectations_h200.json --json
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.analyze.gate import rules
from aisp_prof.analyze.gate.rules import hopeless
from aisp_prof.analyze.gate.verdict import AMBIGUOUS, MetricVerdict, VariantVerdict, decide, judge
from aisp_prof.analyze.timing.intervals import Interval
from aisp_prof.analyze.timing.speedup import headline_kind
from aisp_prof.collect.timing.timer import SamplingPlan
from aisp_prof.naming import hardware_key
from aisp_prof.paths import data_root
from aisp_prof.stats import median_rel_halfwidth

GATE_TARGET = 0.0025          # SamplingPlan.target_rel_ci
GATE_MIN_ROUNDS = 10          # BenchOptions.repeats
GATE_BUDGET_S = 2.0           # BenchOptions.budget_s
FLOOR_ROUNDS = 40             # BenchOptions.floor_rounds (the cap: SamplingPlan's, 5 budgets)
MAX_ROUNDS = 400              # SamplingPlan.max_rounds
DECIDED = "decided"           # stop once the process's own samples leave no variant AMBIGUOUS (decided_round)
TARGETS = ("0.0025", "0.005", "0.01", "margin/4", "margin/8", DECIDED)
GRID_GROWTH = 1.25            # "decided" judges at min_rounds, then every 25% more rounds
Target = Callable[[str], float]


class ReplayError(Exception):
    """Input the replay cannot read: said in one line, exit 2."""


@dataclass
class Timed:
    """One timed run: its samples of the gate's kind (+ the references' gpu ones) and its evidence."""

    source: str
    pair: str
    run_id: str
    kind: str
    samples: pd.DataFrame
    entry: dict[str, Any] | None
    sm_clock_max_mhz: float | None = None
    compiles: pd.DataFrame = field(default_factory=pd.DataFrame)
    stored: dict[str, str] = field(default_factory=dict)    # variant -> verdict the gate stored
    outdated: str = ""
    note: str = ""


def gate_verdicts(t: Timed, samples: pd.DataFrame) -> list[VariantVerdict]:
    """The verdicts bench.runner.bench_one stores for these samples (its `annotate`, the same calls)."""
    return rules.gate_verdicts(t.pair, samples, t.kind, t.entry, t.sm_clock_max_mhz, t.outdated, t.compiles)


def stop_round(rows: pd.DataFrame, target: Target, min_rounds: int = GATE_MIN_ROUNDS) -> int | None:
    """time_rounds' stop by precision on one process's rows: the number of rounds after which every
    (variant, kind) series has median_rel_halfwidth <= target(variant); None if it never does."""
    series: dict[tuple[str, str], list[float]] = {}
    for i, (_, g) in enumerate(rows.groupby("round", sort=True)):
        for v, k, t in zip(g["variant"], g["kind"].fillna("legacy"), g["time_ns"]):
            series.setdefault((str(v), str(k)), []).append(float(t))
        if i + 1 >= min_rounds and all(median_rel_halfwidth(s) <= target(v) for (v, _), s in series.items()):
            return i + 1
    return None


def round_seconds(rows: pd.DataFrame) -> pd.Series:
    """Per round, the timed seconds its samples hold (time_ns x calls): a lower bound of its wall time."""
    calls = pd.to_numeric(rows["calls"], errors="coerce").fillna(1.0) if "calls" in rows else 1.0
    return (rows["time_ns"].astype(float) * calls).groupby(rows["round"]).sum() / 1e9


def margin_target(entry: dict[str, Any] | None, divisor: float) -> Target:
    """Each series' target: the smallest recorded margin of its variant over `divisor` (the gate's
    0.25% where the entry records none)."""
    recorded = ((entry or {}).get("summary") or {}).get("variants", {})

    def target(variant: str) -> float:
        margins = [m for m in ((recorded.get(variant) or {}).get("margin") or {}).values() if m]
        return min(margins) / divisor if margins else GATE_TARGET
    return target


def parse_target(text: str, entry: dict[str, Any] | None) -> Target:
    if text == DECIDED:
        return lambda _v: GATE_TARGET          # stands in where a precision is asked (rounds_to_target)
    if text.startswith("margin/"):
        return margin_target(entry, float(text.split("/", 1)[1]))
    value = float(text)
    return lambda _v: value


def how_stopped(rows: pd.DataFrame, taken: int, min_rounds: int) -> str:
    """Why the real process stopped where it did: by precision (the replay at the gate's target stops
    there), at the most rounds, or else by its time budget (or, for a run folder, another kind's series).
    A process sampled with the round floor (gate runs of dbfb913 on: `--floor-rounds`, stored only in its
    run folder's plan) reads as "budget" here and its floor as costing nothing: replay samples taken
    without a floor."""
    if stop_round(rows, lambda _v: GATE_TARGET, min_rounds) == taken:
        return "ci"
    return "max_rounds" if taken >= MAX_ROUNDS else "budget"


def replay(t: Timed, targets: Iterable[str], min_rounds: int = GATE_MIN_ROUNDS) -> dict[str, Any]:
    """Per process the rounds taken and kept at each target, the seconds estimate, and every verdict
    that the cut samples change against the uncut ones."""
    full = {v.variant: v for v in gate_verdicts(t, t.samples)}
    procs = {int(p): g for p, g in t.samples.groupby("process", sort=True)}
    out: dict[str, Any] = {
        "source": t.source, "pair": t.pair, "run_id": t.run_id, "kind": t.kind, "note": t.note,
        "verdicts": {v: x.verdict for v, x in full.items()}, "stored_verdicts": t.stored,
        "processes": [{"process": p, "rounds_taken": int(g["round"].nunique()),
                       "how_stopped": how_stopped(g, int(g["round"].nunique()), min_rounds),
                       "timed_s": float(round_seconds(g).sum())} for p, g in procs.items()],
        "targets": {}}
    for text in targets:
        out["targets"][text] = cut_and_judge(t, procs, text, full, min_rounds)
    out["budget"] = rounds_to_decide(full.values(), out["processes"])
    return out


def decided_round(t: Timed, rows: pd.DataFrame, min_rounds: int = GATE_MIN_ROUNDS) -> int | None:
    """A stop by verdict rather than precision: the first of min_rounds, then every GRID_GROWTH more,
    at which `judge` of the process's own samples so far leaves no variant AMBIGUOUS (the reference
    kernels and the one-machine rule aside); None if that never happens."""
    rounds = sorted(rows["round"].unique())
    n = min_rounds
    while n <= len(rounds):
        cut = rows[rows["round"].isin(rounds[:n])]
        verdicts = judge(t.pair, exp.of_kind(cut, t.kind), t.entry, t.sm_clock_max_mhz, t.outdated)
        if not any(v.verdict == AMBIGUOUS for v in verdicts if not v.is_reference):
            return n
        n = max(n + 1, int(n * GRID_GROWTH))
    return None


def cut_and_judge(t: Timed, procs: dict[int, pd.DataFrame], text: str, full: dict[str, VariantVerdict],
                  min_rounds: int) -> dict[str, Any]:
    kept_rows, per_process = [], []
    target = parse_target(text, t.entry)
    for p, g in procs.items():
        rounds = sorted(g["round"].unique())
        stop = decided_round(t, g, min_rounds) if text == DECIDED else stop_round(g, target, min_rounds)
        kept = len(rounds) if stop is None else min(stop, len(rounds))
        cut = g[g["round"].isin(rounds[:kept])]
        secs = round_seconds(g)
        per_process.append({"process": p, "rounds_kept": kept, "rounds_taken": len(rounds),
                            "saved_s": float(secs.sum() - secs.loc[rounds[:kept]].sum()),
                            "rounds_to_target": None if stop is not None else
                            (undecided_rounds(t, g) if text == DECIDED else rounds_to_target(g, target))})
        kept_rows.append(cut)
    cut = {v.variant: v for v in gate_verdicts(t, pd.concat(kept_rows, ignore_index=True))}
    changes = [{"variant": v, "from": full[v].verdict, "to": cut[v].verdict if v in cut else "MISSING",
                "why": undecided_text(cut.get(v))} for v in full if (cut[v].verdict if v in cut else "MISSING")
               != full[v].verdict]
    return {"processes": per_process, "changes": changes}


def rounds_to_target(rows: pd.DataFrame, target: Target) -> int:
    """For a process that ended before its series met the target: the rounds they would take, each
    series' half-width shrunk as 1/sqrt(n) (an extrapolation; the sqrt(n) check in the report says
    how well real intervals follow it)."""
    n = int(rows["round"].nunique())
    need = [n * (median_rel_halfwidth(list(g["time_ns"].astype(float))) / target(str(v))) ** 2
            for (v, _), g in rows.groupby(["variant", rows["kind"].fillna("legacy")])]
    return int(math.ceil(max(need))) if need else n


def undecided_rounds(t: Timed, rows: pd.DataFrame) -> int:
    """For "decided": the rounds at which the gate's `hopeless` test (sqrt(n / N)) lets every AMBIGUOUS
    variant of the process's judged samples decide (MAX_ROUNDS when it never would)."""
    n = int(rows["round"].nunique())
    found = rounds_to_decide(judge(t.pair, exp.of_kind(rows, t.kind), t.entry, t.sm_clock_max_mhz, t.outdated),
                             [{"rounds_taken": n, "timed_s": 0.0}])
    return MAX_ROUNDS if found is None or found["timed_s_needed"] is None and None in found["rounds_needed"].values() \
        else max(found["rounds_needed"].values())


def budget_cost(results: list[dict[str, Any]], target: str, caps_s: Iterable[float]) -> list[dict[str, Any]]:
    """A process of the gate's plan that ran out of its 2 s budget before its series met `target`
    would, under a larger cap, go on to the rounds `rounds_to_target` says (at most 400, or the cap);
    each more round costs what its rounds cost (max(2 s, timed s) / rounds). Per cap: the wall seconds they add, one
    process a pair (each pair's mean over its processes, summed), against the seconds `target` saves."""
    out = []
    for cap in caps_s:
        per_pair: dict[tuple[str, str], list[float]] = {}
        for r in results:
            if r["source"] == "run folder":
                continue
            for p, how in zip(r["targets"][target]["processes"], r["processes"]):
                extra = 0.0
                if how["how_stopped"] == "budget" and p["rounds_to_target"] is not None:
                    per_round = max(GATE_BUDGET_S, how["timed_s"]) / p["rounds_taken"]
                    more = min(p["rounds_to_target"], MAX_ROUNDS, int(cap / per_round)) - p["rounds_taken"]
                    extra = max(0, more) * per_round
                per_pair.setdefault((r["source"], r["pair"]), []).append(extra - (p["saved_wall_s"] or 0.0))
        for source in dict.fromkeys(k[0] for k in per_pair):
            net = [statistics.mean(v) for k, v in per_pair.items() if k[0] == source]
            out.append({"source": source, "target": target, "cap_s": cap, "pairs": len(net),
                        "net_wall_s_one_process_per_pair": sum(net)})
    return out


def precise_by_round(rows: pd.DataFrame, target: float = GATE_TARGET) -> list[bool]:
    """After each round of one process: whether every series' median is known to `target` (the
    timer's precision test, `stop_round`'s, at every round rather than the first)."""
    series: dict[tuple[str, str], list[float]] = {}
    out = []
    for _, g in rows.groupby("round", sort=True):
        for v, k, t in zip(g["variant"], g["kind"].fillna("legacy"), g["time_ns"]):
            series.setdefault((str(v), str(k)), []).append(float(t))
        out.append(all(median_rel_halfwidth(s) <= target for s in series.values()))
    return out


def gate_clock(rows: pd.DataFrame, overhead_s: float) -> list[float]:
    """The gate process's wall seconds after each round: its samples' timed seconds plus `overhead_s`
    a round (what the samples do not hold; see add_wall_estimates)."""
    return list((round_seconds(rows) + overhead_s).cumsum())


def rule_stop(plan: SamplingPlan, clock: list[float], precise: list[bool]) -> int | None:
    """The rounds after which the timer's own rule (`SamplingPlan.stops`) stops, on this clock and
    precision; None if it would go on past the samples (or to max_rounds)."""
    return next((n for n in range(plan.min_rounds, min(len(clock), plan.max_rounds) + 1)
                 if plan.stops(n, clock[n - 1], precise[n - 1])), None)


def own_overhead(rows: pd.DataFrame, how: str, source: str, median_s: float) -> float:
    """A round's wall seconds beyond its timed samples: a gate process that ran out of its budget
    measured its own (the budget crossed midway through its last round), the rest get the median."""
    if source == "run folder" or how != "budget":
        return median_s
    timed = float(round_seconds(rows).sum())
    return max(0.0, (GATE_BUDGET_S - timed) / (rows["round"].nunique() - 0.5))


def floor_process(rows: pd.DataFrame, how: str, source: str, plans: tuple[SamplingPlan, SamplingPlan],
                  median_s: float) -> dict[str, Any]:
    """One process under the gate's rule without and with the floor: the rounds each keeps and the
    wall seconds the floor adds. A process of the gate's plan stopped where the rule without the floor
    stopped it; a run folder's gate stop is found on its estimated clock. `beyond`: the samples end
    before the floor's stop, whose rounds are then extrapolated (each series' half-width as 1/sqrt(n),
    the floor, the cap); `rounds_gate` None: they end before the gate's own stop too."""
    without, floor = plans
    clock = gate_clock(rows, own_overhead(rows, how, source, median_s))
    taken = len(clock)
    if source == "run folder":
        precise = precise_by_round(rows)
        old, new = rule_stop(without, clock, precise), rule_stop(floor, clock, precise)
    else:
        old = taken
        new = taken if how != "budget" or taken >= floor.floor_rounds else None
    out = {"rounds_taken": taken, "how_stopped": how, "rounds_gate": old, "beyond": new is None}
    if old is None:
        return {**out, "rounds_floor": None, "extra_wall_s": 0.0, "wall_s_gate": None}
    if new is None:
        per_round = clock[old - 1] / old
        to_cap = int(max(floor.budget_s, floor.floor_cap_s or 0.0) / per_round) + 1
        new = max(old, min(floor.floor_rounds, rounds_to_target(rows, lambda _v: GATE_TARGET), to_cap,
                           floor.max_rounds))
        extra = (new - old) * per_round
    else:
        extra = clock[new - 1] - clock[old - 1]
    return {**out, "rounds_floor": new, "extra_wall_s": extra, "wall_s_gate": clock[old - 1]}


def cut_at(procs: dict[int, pd.DataFrame], per: list[dict[str, Any]], key: str) -> pd.DataFrame:
    """Each process's first `per[i][key]` rounds, together."""
    return pd.concat([g[g["round"].isin(sorted(g["round"].unique())[:x[key]])] for g, x in zip(procs.values(), per)],
                     ignore_index=True)


def floor_replay(timed: list[Timed], floor_rounds: int = FLOOR_ROUNDS,
                 median_s: float = 0.0, min_rounds: int = GATE_MIN_ROUNDS,
                 budget_s: float = GATE_BUDGET_S) -> list[dict[str, Any]]:
    """The round floor (`SamplingPlan.floor_rounds`, the gate's `--floor-rounds`) replayed per run:
    each process's gate rule with and without it (`floor_process`), and where the samples reach both
    stops, the run judged cut at each (`gate_verdicts`): the verdicts the floor changes. Run folders
    sampled three kinds (min 20 rounds), so a gate process of their kind alone would have stopped
    sooner: there the samples can go past the gate's cut. A gate process that ran out of its budget
    ended at the gate's cut: the floor's rounds past it are extrapolated, not judged (`changes` None).
    `budget_s` other than the gate's: a run folder's samples as if its rounds were slower (a test)."""
    plans = (SamplingPlan(min_rounds=min_rounds, budget_s=budget_s),
             SamplingPlan(min_rounds=min_rounds, budget_s=budget_s, floor_rounds=floor_rounds))
    out = []
    for t in timed:
        procs = {int(p): g for p, g in t.samples.groupby("process", sort=True)}
        per = [floor_process(g, how_stopped(g, int(g["round"].nunique()), min_rounds), t.source, plans, median_s)
               for g in procs.values()]
        if not any(p["rounds_floor"] != p["rounds_gate"] for p in per):
            continue
        changes = None
        if not any(p["beyond"] or p["rounds_gate"] is None for p in per):
            gate, floor = ({x.variant: x for x in gate_verdicts(t, cut_at(procs, per, key))}
                           for key in ("rounds_gate", "rounds_floor"))
            changes = [{"variant": v, "from": x.verdict, "to": floor[v].verdict, "why_before": undecided_text(x),
                        "why_after": undecided_text(floor[v])}
                       for v, x in gate.items() if v in floor and floor[v].verdict != x.verdict]
        out.append({"source": t.source, "pair": t.pair, "run_id": t.run_id, "kind": t.kind,
                    "floor_rounds": floor_rounds, "cap_s": plans[1].floor_cap_s, "processes": per,
                    "changes": changes})
    return out


def floor_totals(floors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per source: the wall seconds the floor adds to a gate (one process a pair: each pair's mean over
    its processes and runs, summed), the pairs it acts on, and the verdicts it changes where judged."""
    out = []
    for source in dict.fromkeys(f["source"] for f in floors):
        mine = [f for f in floors if f["source"] == source]
        per_pair: dict[str, list[float]] = {}
        for f in mine:
            per_pair.setdefault(f["pair"], []).extend(p["extra_wall_s"] for p in f["processes"])
        out.append({"source": source, "runs": len(mine), "pairs": len(per_pair),
                    "wall_s_one_process_per_pair": sum(statistics.mean(v) for v in per_pair.values()),
                    "judged": sum(f["changes"] is not None for f in mine),
                    "changes": [f"{f['pair']}:{c['variant']} {c['from']}->{c['to']}" for f in mine
                                for c in f["changes"] or []]})
    return out


def undecided_text(v: VariantVerdict | None) -> str:
    """Each metric of `v` whose verdict is not SAME: 'time +1.2% [-0.3, +2.6] (margin 2.0%)'."""
    if v is None:
        return ""
    return ", ".join(f"{m.metric} {m.verdict} {(m.change.value - 1) * 100:+.1f}% [{(m.change.low - 1) * 100:+.1f}, "
                     f"{(m.change.high - 1) * 100:+.1f}] (margin {m.margin * 100:.1f}%)"
                     for m in v.metrics if m.verdict != "SAME")


def rounds_to_decide(verdicts: Iterable[VariantVerdict], processes: list[dict[str, Any]],
                     most: int = MAX_ROUNDS) -> dict[str, Any] | None:
    """For a run with an AMBIGUOUS variant: the fewest rounds per process (up to `most`) at which the
    gate's own `hopeless` test (each interval shrunk by sqrt(n / N)) no longer says every AMBIGUOUS
    metric would stay undecided, and the timed seconds that many rounds hold. An extrapolation: it
    treats rounds of one process like independent processes (what `hopeless` assumes of processes)."""
    unsure = [v for v in verdicts if v.verdict == AMBIGUOUS and not v.is_reference
              and any(m.verdict == AMBIGUOUS for m in v.metrics)]     # not the one-machine rule's
    if not unsure:
        return None
    n = min(p["rounds_taken"] for p in processes)
    s_per_round = sum(p["timed_s"] for p in processes) / sum(p["rounds_taken"] for p in processes)
    need = {v.variant: next((m for m in range(n, most + 1) if not hopeless(v, n, m)), None) for v in unsure}
    worst = None if None in need.values() else max(need.values())
    return {"rounds_now": n, "rounds_needed": need, "timed_s_per_round": s_per_round,
            "timed_s_needed": None if worst is None else worst * s_per_round}


def add_wall_estimates(results: list[dict[str, Any]], min_rounds: int = GATE_MIN_ROUNDS) -> float:
    """Each cut's wall seconds saved, estimated: its timed seconds saved plus, per round dropped, the
    part of a round the samples do not hold (flushes, launches, synchronizes, the sensor, the host). A
    process of the gate's plan that ran out of its budget past min_rounds measured that part: (budget -
    timed) / rounds; the others get the median of those. None for run folders (they sampled three
    kinds, the gate samples one). Returns the median, s per round."""
    own = {}
    for r in results:
        for p in r["processes"]:
            if r["source"] != "run folder" and p["how_stopped"] == "budget" and p["rounds_taken"] > min_rounds:
                own[(r["run_id"], r["pair"], p["process"])] = (GATE_BUDGET_S - p["timed_s"]) / p["rounds_taken"]
    median = statistics.median(own.values()) if own else 0.0
    for r in results:
        for p in r["processes"]:
            key = (r["run_id"], r["pair"], p["process"])
            p["wall_s_est"] = None if r["source"] == "run folder" else \
                max(GATE_BUDGET_S, p["timed_s"]) if key in own else p["timed_s"] + median * p["rounds_taken"]
        for cut in r["targets"].values():
            for p in cut["processes"]:
                extra = own.get((r["run_id"], r["pair"], p["process"]), median)
                p["saved_wall_s"] = None if r["source"] == "run folder" else \
                    p["saved_s"] + (p["rounds_taken"] - p["rounds_kept"]) * extra
    return median


def interval_scaling(t: Timed, short: int = 20, min_long: int = 80) -> list[dict[str, Any]]:
    """Checks the sqrt(n) extrapolation of `rounds_to_decide` on real processes: per process of at
    least `min_long` rounds, each variant's time interval (the gate's own judging of that process
    alone) from its first `short` rounds against all, as the width ratio over sqrt(rounds / short)."""
    out = []
    for p, g in t.samples.groupby("process", sort=True):
        rounds = sorted(g["round"].unique())
        if len(rounds) < min_long:
            continue
        whole = {v.variant: v.metric("time") for v in gate_verdicts(t, g)}
        head = {v.variant: v.metric("time") for v in gate_verdicts(t, g[g["round"].isin(rounds[:short])])}
        for v, m in whole.items():
            h = head.get(v)
            if m is None or h is None or v.startswith("ref:") or m.change.high <= m.change.low:
                continue
            ratio = (h.change.high - h.change.low) / (m.change.high - m.change.low)
            out.append({"pair": t.pair, "process": int(p), "variant": v, "rounds": len(rounds),
                        "width_ratio_over_sqrt": ratio / math.sqrt(len(rounds) / short)})
    return out


GATE_LINE = re.compile(r"(?P<variant>[\w:]+) AMBIGUOUS (?P<metric>time|ratio|cycles) (?P<c>[+-][\d.]+)% "
                       r"\[(?P<lo>[+-][\d.]+), (?P<hi>[+-][\d.]+)\] \(margin (?P<m>[\d.]+)%\)")
PAIR_LINE = re.compile(r"(?P<pair>ch\d+\.\S+): ok: (?P<rest>.*)$")


def what_if_longer(log: Path, evidence: list[Timed]) -> list[dict[str, Any]]:
    """For each AMBIGUOUS interval a gate's progress log printed (one timing process, its interval
    straddling the margin), the rounds per process at which the gate's `hopeless` test says the
    interval would fit (sqrt(n / N) shrink), n being the rounds the same plan took in the pair's
    recording processes, and the timed seconds per round those held. The log prints one metric
    (time or ratio), rounded to 0.1%."""
    out = []
    for line in log.read_text().splitlines():
        m = PAIR_LINE.search(line)
        if not m:
            continue
        mine = [p for t in evidence if t.pair == m["pair"] for _, p in t.samples.groupby("process")]
        for g in GATE_LINE.finditer(m["rest"]):
            c, margin = tuple(1 + float(g[k]) / 100 for k in ("c", "lo", "hi")), float(g["m"]) / 100
            metric = MetricVerdict(g["metric"], Interval(*c), 0.0, 0.0, margin, decide(Interval(*c), margin))
            if metric.verdict != AMBIGUOUS or not mine:
                continue
            n = int(statistics.median(p["round"].nunique() for p in mine))
            s_round = statistics.median(float(round_seconds(p).sum()) / p["round"].nunique() for p in mine)
            v = VariantVerdict(m["pair"], g["variant"], AMBIGUOUS, metrics=[metric])
            need = next((k for k in range(n, MAX_ROUNDS + 1) if not hopeless(v, n, k)), None)
            out.append({"pair": m["pair"], "variant": g["variant"], "metric": g["metric"], "interval": g[0],
                        "rounds_now": n, "rounds_needed": need, "timed_s_per_round": s_round,
                        "timed_s_needed": None if need is None else need * s_round})
    return out


# ------------------------------------------------------------------ sources


def evidence_entry(pair: str, gpu_name: str | None, override: Path | None) -> tuple[dict[str, Any] | None, str]:
    """The entry the gate would judge `pair` by on this GPU, and the file's `outdated` note."""
    path = override or exp.expectations_path(data_root() / "kernels", pair.split(".", 1)[0],
                                              hardware_key(gpu_name, 1))
    if not path.exists():
        raise ReplayError(f"no evidence file {path} for {pair}")
    recorded = load_evidence(path)
    return recorded["pairs"].get(pair), recorded.get("outdated", "")


def load_evidence(path: Path) -> dict[str, Any]:
    """exp.load, of a gzipped copy too (tests/fixtures/gate keeps one)."""
    if path.suffix != ".gz":
        return exp.load(path)
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / path.stem
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        return exp.load(plain)


def from_db(path: Path, override: Path | None) -> list[Timed]:
    """Every run of a `bench run` database, read through the API as the gate stored it."""
    from aisp_prof.api import open_db

    if not path.exists():
        raise ReplayError(f"no database {path}")
    db = open_db(path)
    out = []
    for row in db.run_list():
        data = db.run(row["run_id"])
        if data.samples.empty or int(data.info.get("world_size") or 1) > 1:
            continue
        entry, outdated = evidence_entry(row["pair"], data.run.get("gpu_name"), override)
        stored = {} if data.verdicts.empty else dict(zip(data.verdicts["variant"], data.verdicts["verdict"]))
        kind = headline_kind(data.info)
        out.append(Timed("gate db", row["pair"], row["run_id"], kind, exp.of_kind(data.samples, kind), entry,
                         (data.info.get("sensor") or {}).get("sm_clock_max_mhz"), data.compiles, stored, outdated))
    return out


def from_run_folder(folder: Path, override: Path | None) -> Timed | None:
    """An `aisp-prof run` folder's timed samples (check.json.gz), the gate's kind only; None without samples."""
    run_json, check = folder / "run.json", folder / "check.json.gz"
    if not run_json.exists() or not check.exists():
        raise ReplayError(f"{folder} is not a run folder (run.json and check.json.gz)")
    info = json.loads(run_json.read_text())
    samples = pd.DataFrame(json.loads(gzip.open(check).read()).get("samples") or [])
    if samples.empty:
        return None
    legacy = "kind" not in samples or samples["kind"].isna().all()
    kind = headline_kind(info)
    if legacy:
        samples = samples.drop(columns=["kind"], errors="ignore").assign(kind="legacy")
    entry, outdated = evidence_entry(info["pair"], (info.get("gpu") or {}).get("gpu_name"), override)
    note = "legacy samples: one timer" if legacy else f"run: all 3 kinds sampled, {kind} replayed"
    return Timed("run folder", info["pair"], info["run_id"], kind,
                 samples if legacy else exp.of_kind(samples, kind), entry,
                 (info.get("sensor") or {}).get("sm_clock_max_mhz"), note=note, outdated=outdated)


def from_evidence(path: Path) -> list[Timed]:
    """Each recording session of each pair in an expectations file, its processes as gate processes
    (round = position in the process's list: a sample the recording left out, throttled or a spin
    block discarded, shifts the later ones of its series by one)."""
    if not path.exists():
        raise ReplayError(f"no evidence file {path}")
    recorded = load_evidence(path)
    out = []
    for pair, entry in recorded["pairs"].items():
        for session in entry.get("sessions") or []:
            if session.get("world_size"):
                continue
            rows = [{"process": p, "round": i, "variant": v, "time_ns": t,
                     "kind": "gpu" if v.startswith("ref:") else session["kind"],
                     "sm_clock_mhz": (per["sm_clock_mhz"][k][i] if k < len(per["sm_clock_mhz"])
                                      and i < len(per["sm_clock_mhz"][k]) else None)}
                    for v, per in session["samples"].items()
                    for k, (p, times) in enumerate(zip(exp.process_ids(per), per["time_ns"]))
                    for i, t in enumerate(times)]
            out.append(Timed("evidence", pair, session.get("run_id") or "?", session["kind"], pd.DataFrame(rows),
                             entry, (session.get("clocks") or {}).get("sm_clock_max_mhz"),
                             note="recording judged against its own entry"))
    return out


# ------------------------------------------------------------------ report


def totals(results: list[dict[str, Any]], targets: Iterable[str]) -> list[dict[str, Any]]:
    """Per source and target: processes, rounds kept of taken, timed and wall seconds saved (the wall
    also as one process per pair: each pair's mean over its processes, summed), every verdict changed."""
    out = []
    for source in dict.fromkeys(r["source"] for r in results):
        mine = [r for r in results if r["source"] == source]
        held = sum(p["timed_s"] for r in mine for p in r["processes"])
        for t in targets:
            procs = [p for r in mine for p in r["targets"][t]["processes"]]
            walls = [p.get("saved_wall_s") for p in procs]
            per_pair: dict[str, list[float]] = {}
            for r in mine:
                per_pair.setdefault(r["pair"], []).extend(p.get("saved_wall_s") or 0.0 for p in r["targets"][t]["processes"])
            held_wall: dict[str, list[float]] = {}
            for r in mine:
                held_wall.setdefault(r["pair"], []).extend(p.get("wall_s_est") or 0.0 for p in r["processes"])
            out.append({"source": source, "target": t, "processes": len(procs), "pairs": len(per_pair),
                        "rounds_kept": sum(p["rounds_kept"] for p in procs),
                        "rounds_taken": sum(p["rounds_taken"] for p in procs),
                        "timed_s_saved": sum(p["saved_s"] for p in procs), "timed_s_held": held,
                        "wall_s_saved": None if None in walls else sum(walls),
                        "wall_s_saved_one_process_per_pair": None if None in walls else
                        sum(statistics.mean(v) for v in per_pair.values()),
                        "wall_s_held_one_process_per_pair": None if None in walls else
                        sum(statistics.mean(v) for v in held_wall.values()),
                        "changes": [f"{r['pair']}:{c['variant']} {c['from']}->{c['to']}"
                                    for r in mine for c in r["targets"][t]["changes"]]})
    return out


def _s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}"


def _saved(run: dict[str, Any], target: str) -> str:
    """The seconds a cut saves in a run, summed over its processes: wall (estimated), else timed ('t')."""
    procs = run["targets"][target]["processes"]
    if all(p.get("saved_wall_s") is not None for p in procs):
        return f"{sum(p['saved_wall_s'] for p in procs):.2f}"
    return f"{sum(p['saved_s'] for p in procs):.2f}t"


def markdown(doc: dict[str, Any]) -> str:
    targets, results = doc["targets"], doc["runs"]
    lines = ["| source | target | pairs | processes | rounds kept / taken | timed s saved / held | wall s saved "
             "(a gate: 1 process a pair, of its s sampling) | verdicts changed |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for t in doc["totals"]:
        lines.append(f"| {t['source']} | {t['target']} | {t['pairs']} | {t['processes']} | {t['rounds_kept']} / "
                     f"{t['rounds_taken']} | {t['timed_s_saved']:.2f} / {t['timed_s_held']:.2f} | {_s(t['wall_s_saved'])} "
                     f"({_s(t['wall_s_saved_one_process_per_pair'])} of {_s(t['wall_s_held_one_process_per_pair'])}) "
                     f"| {'; '.join(t['changes']) or 'none'} |")
    lines += ["", "rounds kept at each target per process (s saved: wall estimated; t: timed only, a run folder)", "",
              "| source | pair | kind | taken (how) | " + " | ".join(f"kept {t}" for t in targets) + " | changes |",
              "| --- | --- | --- | --- | " + " | ".join("---:" for _ in targets) + " | --- |"]
    for r in results:
        taken = ", ".join(f"{p['rounds_taken']} ({p['how_stopped']})" for p in r["processes"])
        kept = [", ".join(str(p["rounds_kept"]) for p in r["targets"][t]["processes"]) + f" ({_saved(r, t)})"
                for t in targets]
        changes = "; ".join(f"{t}: {c['variant']} {c['from']}->{c['to']} ({c['why']})" for t in targets
                            for c in r["targets"][t]["changes"])
        lines.append(f"| {r['source']} | {r['pair']} | {r['kind']} | {taken} | " + " | ".join(kept)
                     + f" | {changes or 'none'} |")
    if doc.get("scaling"):
        q = sorted(x["width_ratio_over_sqrt"] for x in doc["scaling"])
        lines += ["", f"sqrt(n) check: {len(q)} variant-processes of >= 80 rounds, interval width at 20 rounds / at all, "
                  f"over sqrt(rounds / 20): median {statistics.median(q):.2f}, range {q[0]:.2f}-{q[-1]:.2f}"]
    if doc.get("what_if"):
        lines += ["", "| pair | variant | gate's interval | rounds now | rounds to decide | timed s/round | timed s then |",
                  "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
        lines += [f"| {w['pair']} | {w['variant']} | {w['interval']} | {w['rounds_now']} | {w['rounds_needed'] or '>400'} "
                  f"| {w['timed_s_per_round']:.3f} | {_s(w['timed_s_needed'])} |" for w in doc["what_if"]]
    if doc.get("budget_caps"):
        caps = list(dict.fromkeys(b["cap_s"] for b in doc["budget_caps"]))
        net: dict[tuple[str, str], dict[float, float]] = {}
        for b in doc["budget_caps"]:
            net.setdefault((b["source"], b["target"]), {})[b["cap_s"]] = b["net_wall_s_one_process_per_pair"]
        lines += ["", "net wall s a gate (one process a pair; - saves, + costs) with the budget capped at:", "",
                  "| source | target | " + " | ".join(f"{c:.0f} s" for c in caps) + " |",
                  "| --- | --- | " + " | ".join("---:" for _ in caps) + " |"]
        lines += [f"| {src} | {t} | " + " | ".join(f"{by[c]:+.1f}" for c in caps) + " |" for (src, t), by in net.items()]
    lines += floor_markdown(doc.get("floor") or [], doc.get("floor_totals") or [])
    for st in doc.get("floor_stress") or []:
        lines += floor_stress_markdown(st)
    lines += ["", f"overhead per round beyond the timed samples (median of budget-stopped gate processes): "
              f"{doc['overhead_s_per_round'] * 1e3:.1f} ms"]
    return "\n".join(lines)


def floor_markdown(floors: list[dict[str, Any]], floor_totals_: list[dict[str, Any]]) -> list[str]:
    """The floor's tables: per source its cost and changes, then per run each process's rounds."""
    if not floors:
        return []
    f0 = floors[0]
    lines = ["", f"The round floor: at least {f0['floor_rounds']} rounds where the 2 s budget runs out first (at most "
             f"{f0['cap_s']:.0f} s), replayed (`floor_replay`):", "",
             "| source | runs | pairs | + wall s a gate (1 process a pair) | runs judged | verdicts changed |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    lines += [f"| {t['source']} | {t['runs']} | {t['pairs']} | +{t['wall_s_one_process_per_pair']:.1f} | {t['judged']} "
              f"| {'; '.join(t['changes']) or 'none'} |" for t in floor_totals_]
    lines += ["", "| source | pair | rounds: taken (how) -> gate's stop -> floor's (* past the samples) | + wall s "
              "| verdicts |", "| --- | --- | --- | ---: | --- |"]
    for f in floors:
        procs = ", ".join(f"{p['rounds_taken']} ({p['how_stopped']}) -> {p['rounds_gate']} -> {p['rounds_floor']}"
                          + ("*" if p["beyond"] else "") for p in f["processes"])
        verdicts = ("not judged: the samples end at the gate's cut" if f["changes"] is None else
                    "; ".join(f"{c['variant']} {c['from']}->{c['to']} ({c['why_before']} -> {c['why_after']})"
                              for c in f["changes"]) or "none changed")
        lines.append(f"| {f['source']} | {f['pair']} | {procs} | +{sum(p['extra_wall_s'] for p in f['processes']):.1f} "
                     f"| {verdicts} |")
    return lines


def floor_stress_markdown(stress: dict[str, Any]) -> list[str]:
    """One line per budget of the stress replay: where the floor acted and every verdict it changed."""
    runs = stress["runs"]
    judged = [f for f in runs if f["changes"] is not None]
    changes = [f"{f['pair']}:{c['variant']} {c['from']}->{c['to']}" for f in judged for c in f["changes"]]
    rounds = ", ".join(f"{f['pair'].split('.', 1)[1]} " + "/".join(f"{p['rounds_gate']}->{p['rounds_floor']}"
                                                                    + ("*" if p["beyond"] else "") for p in f["processes"])
                       for f in runs)
    return ["", f"Run folders as if their budget were {stress['budget_s']} s: the floor acts on {len(runs)} runs "
            f"({rounds}); {len(judged)} judged at both stops, verdicts changed: {'; '.join(changes) or 'none'}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example: python benchmarks/sampling_replay.py --db g.db --runs "
                                        "profiles/samples_h200_ch10_early/*/ --evidence kernels/ch09/expectations_h200.json")
    ap.add_argument("--db", type=Path, action="append", default=[], help="a `bench run` database (repeatable)")
    ap.add_argument("--runs", type=Path, nargs="*", default=[], help="`aisp-prof run` folders")
    ap.add_argument("--evidence", type=Path, action="append", default=[], help="an expectations file's sessions")
    ap.add_argument("--expectations", type=Path, help="judge --db/--runs against this file (default: the shipped one)")
    ap.add_argument("--gate-log", type=Path, help="a gate's progress log: rounds its AMBIGUOUS intervals would need")
    ap.add_argument("--targets", default=",".join(TARGETS), help="comma-separated: fractions or margin/K")
    ap.add_argument("--min-rounds", type=int, default=GATE_MIN_ROUNDS)
    ap.add_argument("--floor-rounds", type=int, default=FLOOR_ROUNDS,
                    help="the round floor to replay (the gate's --floor-rounds; e.g. --floor-rounds 30)")
    ap.add_argument("--floor-stress-budgets", default="0.05,0.2",
                    help="also replay the floor on the run folders as if each had only this many seconds of budget "
                         "(comma-separated; '' for none): their rounds go on past that cut, so the verdicts the "
                         "floor's extra rounds change are judged on real samples")
    ap.add_argument("--json", action="store_true", help="print the raw results as JSON")
    ap.add_argument("--save-json", type=Path, help="also write the raw results here (gzipped where it ends .gz)")
    ap.add_argument("--from-json", type=Path, help="print the tables of results saved by --save-json (no replay)")
    args = ap.parse_args(argv)
    if args.from_json:
        if not args.from_json.exists():
            print(f"error: no results file {args.from_json}", file=sys.stderr)
            return 2
        raw = args.from_json.read_bytes()
        print(markdown(json.loads(gzip.decompress(raw) if args.from_json.suffix == ".gz" else raw)))
        return 0
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    try:
        stress = [float(b) for b in args.floor_stress_budgets.split(",") if b.strip()]
        for t in targets:
            parse_target(t, None)
        timed = [t for db in args.db for t in from_db(db, args.expectations)]
        timed += [t for f in args.runs if (t := from_run_folder(f, args.expectations)) is not None]
        evidence = [t for e in args.evidence for t in from_evidence(e)]
        if args.gate_log and not args.gate_log.exists():
            raise ReplayError(f"no gate log {args.gate_log}")
    except (ReplayError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    results = [replay(t, targets, args.min_rounds) for t in timed + evidence]
    doc = {"targets": targets, "min_rounds": args.min_rounds,
           "overhead_s_per_round": add_wall_estimates(results, args.min_rounds)}
    doc.update(totals=totals(results, targets), runs=results,
               scaling=[x for t in timed + evidence if t.source != "run folder" for x in interval_scaling(t)],
               what_if=what_if_longer(args.gate_log, evidence) if args.gate_log else [],
               budget_caps=[x for t in targets for x in budget_cost(results, t, (2.0, 5.0, 10.0))],
               floor=floor_replay(timed + evidence, args.floor_rounds, doc["overhead_s_per_round"],
                                  args.min_rounds))
    doc["floor_totals"] = floor_totals(doc["floor"])
    folders = [t for t in timed if t.source == "run folder"]
    doc["floor_stress"] = [{"budget_s": b, "totals": floor_totals(fl), "runs": fl} for b in stress
                           for fl in [floor_replay(folders, args.floor_rounds, doc["overhead_s_per_round"],
                                                   args.min_rounds, b)]]
    if args.save_json:
        text = (json.dumps(doc, indent=1, default=_plain) + "\n").encode()
        args.save_json.write_bytes(gzip.compress(text, mtime=0) if args.save_json.suffix == ".gz" else text)
    print(json.dumps(doc, indent=1, default=_plain) if args.json else markdown(doc))
    return 0


def _plain(x: Any) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else str(x)


if __name__ == "__main__":
    sys.exit(main())
