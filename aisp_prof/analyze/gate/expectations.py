"""What a pair measured on one kind of GPU, kept as evidence: `kernels/chNN/expectations_<key>.json`.

Format 3 keeps, per pair, the recording sessions themselves (newest last, at most MAX_SESSIONS):
each session is one `bench run --update-expectations` on one machine, with its provenance (the
pair's source digests among it: `source_sha256` of its files' text, `code_sha256` of their code
without comments and docstrings, pairs.source), the clocks the GPU ran at, and every sample of the kind of time
the pair's headline uses (`kind`: gpu, latency or steady, collect.timing.samplers; time and SM clock,
one list per process, `process` naming each list's process; the reference kernels' gpu samples beside
them; a session without `process`, written before it was kept, reads as list i = process i). Format 2 kept the one
CUDA-event timer whose times depended on a variant's position (issue 28): such a file reads as
outdated. The summary beside the sessions is derived, for the reader of a diff: each variant's
median time and cycles, its time relative to the baseline, and the A/A margin the gate allows.

The A/A margin is learnt, not set: every process of every session measured the same code, so
how far their medians lie apart is how far an unchanged tree can move. margin = max(floor,
2 x the largest relative distance of a process's median from the median of all of them), per
variant and per metric (time, cycles, time relative to the baseline). One session holds the
spread across processes; sessions recorded on other machines widen it to across machines.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ...naming import FRESH_COMPILE_CACHE
from ...pairs.source import same_code
from ..timing.intervals import (paired_groups, groups, process_medians, process_ratios, relative_spread, slowest_ranks,
                               with_cycles)

FORMAT = 3
MAX_SESSIONS = 4
MARGIN_FACTOR = 2.0
MARGIN_FLOOR = {"time": 0.02, "cycles": 0.02, "ratio": 0.01}
PROVENANCE_KEYS = ("run_id", "date", "git_sha", "gpu_name", "driver_version", "torch_version", "cuda_version",
                   "triton_version", "host", "boot_id", "source_sha256", "code_sha256", "compile_cache",
                   "child_start",          # "forked" (collect.process.preload) or "fresh"; None: before 2026-11-29
                   "triton_binaries")      # "kept between runs" (collect.code.binary_store); None: compiled in the run
HOST_KINDS = ("latency", "steady")       # kinds of time that include the host's work (collect.timing.samplers)


def expectations_path(kernels_root: Path, chapter_key: str, hw_key: str) -> Path:
    return kernels_root / chapter_key / f"expectations_{hw_key}.json"


def load(path: Path) -> dict[str, Any]:
    """The file's contents; an absent file has no pairs. A file of an older format reads as
    `outdated` with no pairs: its numbers carry no samples to compare against."""
    if not path.exists():
        return {"format": FORMAT, "pairs": {}}
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        return {"format": FORMAT, "pairs": {}, "outdated": f"{path.name} was recorded in an older format "
                "(before format 3: one CUDA-event timer whose times depended on a variant's position); record "
                "it again with `aisp-prof bench run --update-expectations`"}
    return data


def read_any(path: Path) -> dict[str, Any]:
    """The file as recorded, whatever its format (tests and readers of older evidence; the gate
    uses `load`, which compares only evidence of the current format)."""
    return json.loads(path.read_text())


def save(path: Path, data: Mapping[str, Any]) -> None:
    """Written compactly (a list of numbers on one line) and atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(dumps(dict(data)) + "\n")
    os.replace(tmp, path)


def dumps(value: Any, indent: int = 0) -> str:
    """JSON with two-space indents where a list of numbers stays on one line: readable in a diff."""
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(str(k))}: {dumps(v, indent + 2)}" for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and value and not all(isinstance(v, (int, float)) or v is None for v in value):
        return "[\n" + ",\n".join(f"{inner}{dumps(v, indent + 2)}" for v in value) + f"\n{pad}]"
    return json.dumps(value)


def of_kind(samples: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The samples the gate compares: the variants' of `kind`, the reference kernels' gpu ones
    (samples without a kind, from runs before issue 28, are all one timer's); of a multi-rank run,
    each call's slowest rank (`slowest_ranks`)."""
    if samples.empty or "kind" not in samples:
        return slowest_ranks(samples)
    refs = samples["variant"].astype(str).str.startswith("ref:")
    return slowest_ranks(samples[(samples["kind"] == kind) | (refs & (samples["kind"] == "gpu"))].reset_index(drop=True))


def clocks_per_rank(samples: pd.DataFrame, kind: str, limits: Mapping[str, Any]) -> dict[str, Any]:
    """Each rank's clocks over a multi-rank session's samples of `kind` (every rank's, not only the
    slowest's): a rank whose GPU ran slower clocks shows here; {} for one process."""
    if samples.empty or "rank" not in samples or samples["rank"].isna().all():
        return {}
    df = samples[samples["kind"] == kind] if "kind" in samples else samples
    df = with_cycles(df, limits.get("sm_clock_max_mhz"))
    return {str(int(r)): _clocks(g, limits) for r, g in df.groupby("rank", sort=True)}


def session_of(samples: pd.DataFrame, provenance: Mapping[str, Any], limits: Mapping[str, Any],
               kind: str = "gpu") -> dict[str, Any]:
    """One recording: provenance, the clocks the GPU ran at, and every unthrottled sample of
    `kind` by variant and process (throttled ones are counted, not kept)."""
    df = with_cycles(of_kind(samples, kind), limits.get("sm_clock_max_mhz"))
    per_variant: dict[str, Any] = {}
    for v, rows in df[~df["throttled"]].groupby("variant", sort=False):
        ids, by_process = zip(*rows.groupby("process", sort=True))
        per_variant[str(v)] = {"process": [int(p) for p in ids],
                               "time_ns": [[round(float(t)) for t in g["time_ns"]] for g in by_process],
                               "sm_clock_mhz": [[_int(c) for c in g["sm_clock_mhz"]] if "sm_clock_mhz" in g else []
                                                for g in by_process]}
    kind = kind if "kind" in samples else "legacy"      # a run before issue 28: one timer
    per_rank = clocks_per_rank(samples, kind, limits)
    return {**{k: provenance.get(k) for k in PROVENANCE_KEYS}, "kind": kind, "processes": int(df["process"].nunique()),
            "clocks": _clocks(df, limits), "samples": per_variant,
            **({"world_size": len(per_rank), "time_of": "each call's slowest rank", "clocks_per_rank": per_rank}
               if per_rank else {})}


def _int(v: Any) -> int | None:
    return int(v) if v is not None and v == v else None


def _clocks(df: pd.DataFrame, limits: Mapping[str, Any]) -> dict[str, Any]:
    def q(col: str) -> list[float] | None:
        if col not in df or df[col].isna().all():
            return None
        s = pd.to_numeric(df[col], errors="coerce").dropna()
        return [round(float(s.min()), 1), round(float(s.median()), 1), round(float(s.max()), 1)]
    return {"sm_clock_mhz_min_median_max": q("sm_clock_mhz"), "mem_clock_mhz_min_median_max": q("mem_clock_mhz"),
            "power_w_min_median_max": q("power_w"), "temperature_c_min_median_max": q("temperature_c"),
            "throttled_samples": int(df["throttled"].sum()), "power_capped_samples": int(df["power_capped"].sum()),
            "sm_clock_max_mhz": limits.get("sm_clock_max_mhz"),
            "power_limit_w": limits.get("power_limit_w")}


def session_samples(entry: Mapping[str, Any]) -> pd.DataFrame:
    """Every recorded sample of a pair, processes numbered across sessions (a session's process p is
    the sessions' before it plus p), so a ratio pairs each variant with the baseline of its own process."""
    rows, offset = [], 0
    for session in entry.get("sessions", []):
        seen = [session["processes"]]
        for variant, lists in session["samples"].items():
            clocks = lists.get("sm_clock_mhz") or [[] for _ in lists["time_ns"]]
            ids = process_ids(lists)
            for p, times, mhz in zip(ids, lists["time_ns"], clocks):
                mhz = mhz or [None] * len(times)
                rows += [{"process": offset + p, "variant": variant, "time_ns": t, "sm_clock_mhz": c}
                         for t, c in zip(times, mhz)]
            seen += [1 + p for p in ids]
        offset += max(seen)
    if not rows:
        return pd.DataFrame(columns=["process", "variant", "time_ns", "sm_clock_mhz"])
    df = pd.DataFrame(rows)
    df["sm_clock_mhz"] = pd.to_numeric(df["sm_clock_mhz"], errors="coerce")
    return with_cycles(df)


def process_ids(lists: Mapping[str, Any]) -> list[int]:
    """The process each of a variant's sample lists came from: `process` as recorded; a session
    recorded before it kept one list per process in order (list i is process i), as it then read."""
    ids = lists.get("process")
    return [int(p) for p in ids] if ids is not None else list(range(len(lists["time_ns"])))


def summarize(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Per variant: median time and cycles of all sessions, time relative to the baseline, the
    A/A margins (see the module docstring) and how many processes they rest on."""
    df = session_samples(entry)
    out: dict[str, Any] = {}
    for v in dict.fromkeys(df["variant"]):
        t = process_medians(groups(df, v, "time_ns"))
        c = process_medians(groups(df, v, "cycles"))
        row: dict[str, Any] = {"median_ns": float(df.loc[df["variant"] == v, "time_ns"].median()),
                               "median_cycles": _median(df.loc[df["variant"] == v, "cycles"]), "processes": len(t),
                               "margin": {"time": _margin("time", t), "cycles": _margin("cycles", c) if c else None}}
        if v != "baseline" and "baseline" in set(df["variant"]) and not str(v).startswith("ref:"):
            num, den = paired_groups(df, v, "baseline")
            ratios = process_ratios(num, den)
            row["time_vs_baseline"] = float(pd.Series(ratios).median()) if ratios else None
            row["margin"]["ratio"] = _margin("ratio", ratios)
        out[str(v)] = row
    return {"variants": out}


def _median(s: pd.Series) -> float | None:
    s = s.dropna()
    return float(s.median()) if len(s) else None


def _margin(metric: str, replicas: list[float]) -> float:
    return max(MARGIN_FLOOR[metric], MARGIN_FACTOR * relative_spread(replicas))


def add_session(entry: Mapping[str, Any] | None, session: Mapping[str, Any], sizes: Mapping[str, int]) -> dict[str, Any]:
    """The pair's entry with `session` appended (the oldest dropped beyond MAX_SESSIONS) and its
    summary recomputed. Sessions of other problem sizes, of another kind of time, or of other code
    (another source digest, where both are known), are dropped: they measured another thing, and
    pooling them would blend the old kernel's times into the new one's. A session of the same run is
    replaced, never pooled twice (`recorded_session` lets a caller refuse it first)."""
    kept = [s for s in (entry or {}).get("sessions", [])
            if (entry or {}).get("sizes") == dict(sizes) and same_code(s, session)
            and s.get("kind", "legacy") == session.get("kind", "legacy")
            and not (session.get("run_id") and s.get("run_id") == session.get("run_id"))]
    new = {"sizes": dict(sizes), "sessions": (kept + [dict(session)])[-MAX_SESSIONS:]}
    new["summary"] = summarize(new)
    return new


def recorded_session(entry: Mapping[str, Any] | None, run_id: str | None) -> dict[str, Any] | None:
    """The pair's recorded session of run `run_id` (None: not recorded). Recording a run twice would
    count its processes twice: each A/A margin and median would lean towards that one run."""
    found = [s for s in (entry or {}).get("sessions") or [] if run_id and s.get("run_id") == run_id]
    return found[-1] if found else None


def other_code(entry: Mapping[str, Any] | None, sha256: str | None, code_sha256: str | None = None) -> str:
    """Why the recorded evidence is not of the code measured now ('' when every session measured
    the same code as `sha256`/`code_sha256` name (same_code), or nothing is recorded): the gate's
    verdict then says it compares other code, and which digests differ."""
    sessions = (entry or {}).get("sessions") or []
    if not sessions or not (sha256 or code_sha256):
        return ""
    now = {"source_sha256": sha256, "code_sha256": code_sha256}
    if any(not s.get("source_sha256") and not s.get("code_sha256") for s in sessions):
        return "some recorded sessions name no source digest: which code they measured is unknown"
    others = [s for s in sessions if not same_code(s, now)]
    if not others:
        return ""
    return f"the evidence was recorded from other code ({digest_difference(others, now)}): record it again"


def digest_difference(recorded: list[Mapping[str, Any]], now: Mapping[str, Any]) -> str:
    """'source digest a, now b; code digest c, now d' for the digests `recorded` sessions name and
    that differ from `now`'s ('not recorded' for a code digest a session lacks)."""
    said = []
    for key, label in (("source_sha256", "source digest"), ("code_sha256", "code digest")):
        mine = {s.get(key) for s in recorded}
        if now.get(key) and mine != {now[key]}:
            names = sorted(x[:12] for x in mine if x) + (["not recorded"] if None in mine else [])
            said.append(f"{label} {', '.join(names)}, now {now[key][:12]}")
    return "; ".join(said)


def machines(entry: Mapping[str, Any] | None) -> int:
    """How many machines the recorded sessions of a pair come from, as far as known: distinct
    boot ids (a session without one counts as a machine of its own)."""
    sessions = (entry or {}).get("sessions") or []
    known = {s.get("boot_id") for s in sessions if s.get("boot_id")}
    return len(known) + sum(1 for s in sessions if not s.get("boot_id"))


def fresh_compile_sessions(entry: Mapping[str, Any] | None) -> int:
    """How many recorded sessions of a pair compiled with an empty Inductor/Triton cache per process
    (collect.code.compile_cache): only those hold the spread of the compilers' choices across fresh
    machines."""
    return sum(1 for s in (entry or {}).get("sessions") or [] if s.get("compile_cache") == FRESH_COMPILE_CACHE)
