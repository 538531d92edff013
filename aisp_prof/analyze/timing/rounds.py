"""Every timed sample of a run by round: what the page's "Samples by round" figure draws (issue 28,
"distrust before you publish").

A median says nothing of how its samples lay. The timer (`collect.timing.timer`) takes one sample of
each kind per round, the variants interleaved, so a machine that changes state part-way shows as a
step in every variant's series at the same round, and a variant timed in two states as two bands;
the validity rules (`verdict.validity`: bimodal) withhold a headline for it, and this is the picture
of why. `sample_frame` is the samples as the library API returns them (`RunDatabase.samples`);
`round_panels` groups them for the figure, one panel per kind of time; `panel_summary` is what of
it the page's JSON keeps (the samples themselves stay out: thousands a run).
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from .intervals import slowest_ranks

COLUMNS = ("round", "process", "variant", "kind", "time_ns")
LEGACY = "legacy"            # samples of a run timed before the kinds (one CUDA-event timer)
KIND_ORDER = ("gpu", "latency", "steady", LEGACY)
KIND_LABELS = {"gpu": "GPU (CUDA events)", "latency": "latency (one call, idle GPU)",
               "steady": "steady (back to back)", LEGACY: "CUDA events (one timer)"}
LOG_SPAN = 10.0              # a panel whose times span more than this (max / min) is drawn on a log axis
REF_PREFIX = "ref:"          # the reference kernels the timer samples beside the variants (GPU time only)


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
    rank = {v: i for i, v in enumerate(variants)}
    order = lambda v: (v.startswith(REF_PREFIX), rank.get(v, len(rank)), v)      # noqa: E731
    panels = []
    for kind in sorted(set(frame["kind"]), key=lambda k: (KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER), k)):
        rows = frame[frame["kind"] == kind]
        names = sorted(set(rows["variant"]), key=order)
        series = [_series(rows[rows["variant"] == v], v, offsets) for v in names]
        low = min((s["min_ns"] for s in series if s["min_ns"] > 0), default=0.0)
        high = max(s["max_ns"] for s in series)
        panels.append({"kind": kind, "label": KIND_LABELS.get(kind, kind), "series": series,
                       "log_scale": bool(low and high / low > LOG_SPAN)})
    return {"panels": panels, "variants": sorted(set(frame["variant"]), key=order), "rounds": rounds, "processes": len(offsets),
            "process_starts": sorted(offsets.values())[1:]}


def panel_summary(figure: dict[str, Any]) -> dict[str, Any]:
    """What the page's JSON keeps of the figure: everything but each sample's x and time (a run has
    thousands: `aisp_prof.open_db(DB).samples(RUN)` returns them)."""
    return {**figure, "panels": [{**p, "series": [{k: v for k, v in s.items() if k not in ("x", "time_ns")}
                                                   for s in p["series"]]} for p in figure["panels"]]}
