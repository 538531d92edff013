"""Every timed sample of a run by round: what the page's "Samples by round" figure draws (issue 28,
"distrust before you publish").

A median says nothing of how its samples lay. The timer (`collect.timing.timer`) takes one sample of
each kind per round, the variants interleaved, so a machine that changes state part-way shows as a
step in every variant's series at the same round, and a variant timed in two states as two bands;
the validity rules (`verdict.validity`: bimodal) withhold a headline for it, and this is the picture
of why. `sample_frame` is the samples as the library API returns them (`RunDatabase.samples`);
`round_panels` groups them for the figure, one panel per kind of time; `panel_summary` is what of
it the page's JSON keeps (the samples themselves stay out: thousands a run). `select_samples` and
`sample_groups` are what `aisp-prof samples` prints: the samples a reviewer asked for, and per variant
and kind of time the statistics to check a headline against.
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from ...errors import UnknownTargetError
from ...naming import TIMER_KINDS
from .intervals import slowest_ranks

COLUMNS = ("round", "process", "variant", "kind", "time_ns")
LEGACY = "legacy"            # samples of a run timed before the kinds (one CUDA-event timer)
KIND_ORDER = ("gpu", "latency", "steady", LEGACY)
KIND_LABELS = {"gpu": "GPU (CUDA events)", "latency": "latency (one call, idle GPU)",
               "steady": "steady (back to back)", LEGACY: "CUDA events (one timer)"}
LOG_SPAN = 10.0              # a panel whose times span more than this (max / min) is drawn on a log axis
REF_PREFIX = "ref:"          # the reference kernels the timer samples beside the variants (GPU time only)
GROUP_COLUMNS = ("variant", "kind", "samples", "processes", "median_ns", "p10_ns", "p90_ns", "min_ns", "max_ns",
                 "headline")


def sample_frame(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per timed call: round, process, variant, kind, time_ns (per call), in the order they were
    taken (process, round, slot); a multi-rank call as its slowest rank's; kind 'legacy' for a run
    timed before the kinds. Empty (those columns) for a run without samples."""
    if samples.empty or not {"variant", "time_ns"} <= set(samples):
        return pd.DataFrame(columns=list(COLUMNS))
    s = slowest_ranks(samples)
    s = s.sort_values([k for k in ("process", "round", "slot") if k in s], kind="stable")
    kind = s["kind"].fillna("").astype(str) if "kind" in s else pd.Series("", index=s.index)
    out = pd.DataFrame({
        "round": s["round"].fillna(0).astype(int) if "round" in s else range(len(s)),
        "process": s["process"].fillna(0).astype(int) if "process" in s else 0,
        "variant": s["variant"].astype(str), "kind": kind.where(kind != "", LEGACY),
        "time_ns": s["time_ns"].astype(float)})
    return out.dropna(subset=["time_ns"]).reset_index(drop=True)


def process_offsets(frame: pd.DataFrame) -> dict[int, int]:
    """process -> the x of its round 0 on the figure: the processes one after another, each as
    many rounds on from the last as the last one sampled (rounds restart at 0 in each process)."""
    out, at = {}, 0
    for p, rounds in frame.groupby("process", sort=True)["round"]:
        out[int(p)] = at
        at += int(rounds.max()) + 1
    return out


def _series(rows: pd.DataFrame, variant: str, offsets: dict[int, int]) -> dict[str, Any]:
    x = rows["round"].to_numpy() + rows["process"].map(offsets).to_numpy()
    return {"variant": variant, "reference": variant.startswith(REF_PREFIX), "samples": len(rows),
            "median_ns": float(rows["time_ns"].median()), "min_ns": float(rows["time_ns"].min()),
            "max_ns": float(rows["time_ns"].max()), "x": [int(v) for v in x],
            "time_ns": [float(t) for t in rows["time_ns"]]}


def round_panels(samples: pd.DataFrame, variants: Sequence[str] = ()) -> dict[str, Any]:
    """The figure's data: `panels`, one per kind of time the run has (gpu, latency, steady; a legacy
    run's one), each with its series (per variant: the x of each sample, its time, its median;
    `variants`' order first, the others and the references after, by name) and whether its times
    span over LOG_SPAN; `variants` (that order, over every panel); `rounds` (the x axis's length), `processes` and `process_starts` (the x where
    each process after the first began)."""
    frame = sample_frame(samples)
    if frame.empty:
        return {"panels": [], "variants": [], "rounds": 0, "processes": 0, "process_starts": []}
    offsets = process_offsets(frame)
    last = max(offsets)
    rounds = offsets[last] + int(frame.loc[frame["process"] == last, "round"].max()) + 1
    panels = []
    for kind in kind_order(frame["kind"]):
        rows = frame[frame["kind"] == kind]
        names = variant_order(rows["variant"], variants)
        series = [_series(rows[rows["variant"] == v], v, offsets) for v in names]
        low = min((s["min_ns"] for s in series if s["min_ns"] > 0), default=0.0)
        high = max(s["max_ns"] for s in series)
        panels.append({"kind": kind, "label": KIND_LABELS.get(kind, kind), "series": series,
                       "log_scale": bool(low and high / low > LOG_SPAN)})
    return {"panels": panels, "variants": variant_order(frame["variant"], variants), "rounds": rounds, "processes": len(offsets),
            "process_starts": sorted(offsets.values())[1:]}


def panel_summary(figure: dict[str, Any]) -> dict[str, Any]:
    """What the page's JSON keeps of the figure: everything but each sample's x and time (a run has
    thousands: `aisp_prof.open_db(DB).samples(RUN)` returns them)."""
    return {**figure, "panels": [{**p, "series": [{k: v for k, v in s.items() if k not in ("x", "time_ns")}
                                                   for s in p["series"]]} for p in figure["panels"]]}


def kind_order(kinds: Any) -> list[str]:
    """Kinds of time as the figure and `aisp-prof samples` show them: gpu, latency, steady, legacy, others."""
    return sorted(set(kinds), key=lambda k: (KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER), k))


def variant_order(names: Any, variants: Sequence[str] = ()) -> list[str]:
    """`variants`' order first, the other names by name, the reference kernels (`ref:`) last."""
    rank = {v: i for i, v in enumerate(variants)}
    return sorted(set(names), key=lambda v: (v.startswith(REF_PREFIX), rank.get(v, len(rank)), v))


def timer_kind(timer: str | None) -> str | None:
    """The kind of samples a speedup timer (`analyze.timing.speedup`) is the median of: gpu, latency,
    steady, or legacy for the one CUDA-event timer of older runs; None for nsys's and ncu's times."""
    return TIMER_KINDS.get(timer or "") or (LEGACY if timer == "cuda_events" else None)


def select_samples(frame: pd.DataFrame, variants: Sequence[str] = (), kind: str | None = None,
                   run_id: str = "the run") -> pd.DataFrame:
    """`sample_frame`'s rows of `variants` (every variant where none) and of `kind` (every kind where
    None). A variant or kind the samples lack, or a variant asked for without samples of `kind`, is
    UnknownTargetError naming what there is; a run without samples stays empty, unchecked."""
    if frame.empty:
        return frame
    missing = [v for v in variants if v not in set(frame["variant"])]
    if missing:
        raise UnknownTargetError(f"run {run_id} has no samples of variant {missing[0]!r}; it has "
                                 f"{', '.join(variant_order(frame['variant']))}")
    if kind is not None and kind not in set(frame["kind"]):
        raise UnknownTargetError(f"run {run_id} has no {kind} samples; it has {', '.join(kind_order(frame['kind']))}")
    out = frame[frame["variant"].isin(variants)] if variants else frame
    if kind is not None:
        for v in variants:
            if not (mine := out[out["variant"] == v])["kind"].eq(kind).any():
                raise UnknownTargetError(f"run {run_id} has no {kind} samples of {v}; it has its "
                                         f"{', '.join(kind_order(mine['kind']))} samples")
        out = out[out["kind"] == kind]
    return out.reset_index(drop=True)


def sample_groups(frame: pd.DataFrame, variants: Sequence[str] = (), headline_kind: str | None = None) -> pd.DataFrame:
    """Per variant and kind of time (`variant_order`, then `kind_order`) of `sample_frame`'s rows:
    samples, processes, median_ns, p10_ns, p90_ns, min_ns, max_ns (pandas' linear quantiles), and
    `headline`: the kind is `headline_kind`, the one the run's headline speedup is the median of."""
    if frame.empty:
        return pd.DataFrame(columns=list(GROUP_COLUMNS))
    groups = frame.groupby(["variant", "kind"])
    times = groups["time_ns"]
    out = pd.DataFrame({"samples": times.size(), "processes": groups["process"].nunique(),
                        "median_ns": times.median(), "p10_ns": times.quantile(0.1), "p90_ns": times.quantile(0.9),
                        "min_ns": times.min(), "max_ns": times.max()}).reset_index()
    out["headline"] = out["kind"] == headline_kind
    rank_v = {v: i for i, v in enumerate(variant_order(out["variant"], variants))}
    rank_k = {k: i for i, k in enumerate(kind_order(out["kind"]))}
    out = out.iloc[sorted(range(len(out)), key=lambda i: (rank_v[out["variant"][i]], rank_k[out["kind"][i]]))]
    return out[list(GROUP_COLUMNS)].reset_index(drop=True)
