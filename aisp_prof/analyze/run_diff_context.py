"""What else differed between the two runs of a diff (`analyze.run_diff.compare`): the code each
measured and the SM clock its timed calls ran at. A time that moved between two runs is a code
change only where the code changed and the clock held; these notes say which of the two is known.

Code: the source digests run.json names (`pairs.source.source_digest`: `code_sha256`, the code
without comments and docstrings, decides where both runs name one, else the text's `sha256`). A run
recorded before the digests names neither: then whether the code changed is unknown, said so with
each run's git commit, never taken as the same (`pairs.source.same_code` counts such a session as
the same, which suits the gate's evidence, not a diff).

Clock: the median SM clock of each run's timed calls (its samples, of the kind the gate judges, else
GPU time, else the legacy timer's), against the card's maximum (run.json `gpu.sm_clock_max_mhz`). The
power cap of an H200 held a heavy kernel's clock at ~1400-1700 of 1980 MHz on 2026-11-30, and kernels
answer a lower clock unevenly (`analyze.verdict.clock`), so a change between runs at different clocks
can be the clock's, not the code's. Said where the medians differ by CLOCK_MOVED or more, where one is
under LOW_CLOCK_SHARE of the maximum, or where only one run has clock readings. The nsys and ncu
passes have no clock readings of their own; their times ran in the same processes after the timing.
"""
from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from ..naming import TIMER_KINDS
from .verdict.clock import LOW_CLOCK_SHARE, sm_clock_max_mhz

CLOCK_MOVED = 0.02          # medians 2% apart (the gate's margin floor): another clock


def _digests(info: Mapping[str, Any]) -> dict[str, str | None]:
    source = (info or {}).get("source") or {}
    return {"source_sha256": source.get("sha256") or None, "code_sha256": source.get("code_sha256") or None}


def code_change(a: Mapping[str, Any], b: Mapping[str, Any], run_a: Mapping[str, Any],
                run_b: Mapping[str, Any]) -> dict[str, Any]:
    """{"same": True/False/None (unknown), "note": the line above the table} from the runs' infos."""
    da, db = _digests(a), _digests(b)
    git = f"git {_short(run_a.get('git_sha'))} and {_short(run_b.get('git_sha'))}"
    missing = [n for n, d in (("A", da), ("B", db)) if not any(d.values())]
    if missing:
        who = "neither run names a" if len(missing) == 2 else f"{missing[0]} names no"
        return {"same": None, "note": f"code: {who} source digest (recorded before digests; {git}): whether "
                                      "the code changed is unknown"}
    for key, label in (("code_sha256", "code digest"), ("source_sha256", "source digest")):
        if da[key] and db[key]:
            if da[key] == db[key]:
                return {"same": True, "note": f"code: the same ({label} {da[key][:12]} in both)"}
            if key == "code_sha256" or (da["code_sha256"] is None) == (db["code_sha256"] is None):
                return {"same": False, "note": f"code: differs ({_changes(da, db)}): B measured other code than A"}
            return {"same": None, "note": f"code: source text differs ({_changes(da, db)}) and only one run names a "
                                          "code digest: a code change or an edit of comments alone"}
    return {"same": None, "note": f"code: the runs name different kinds of digest ({git}): whether the code "
                                  "changed is unknown"}


def _changes(da: Mapping[str, str | None], db: Mapping[str, str | None]) -> str:
    return "; ".join(f"{label} {_short(da[k], 12, 'not recorded')} -> {_short(db[k], 12, 'not recorded')}"
                     for k, label in (("source_sha256", "source digest"), ("code_sha256", "code digest"))
                     if da[k] != db[k])


def _short(value: Any, n: int = 7, none: str = "?") -> str:
    return str(value)[:n] if value else none


def sm_clock(samples: pd.DataFrame, info: Mapping[str, Any], kind: str | None) -> dict[str, float | None]:
    """{"sm_clock_median_mhz", "sm_clock_max_mhz"} of a run: the median over its timed calls (not the
    reference kernels) of `kind`, else of GPU time, else of the legacy timer (samples without a kind)."""
    top = sm_clock_max_mhz(info)
    out: dict[str, float | None] = {"sm_clock_median_mhz": None, "sm_clock_max_mhz": top}
    if samples.empty or "sm_clock_mhz" not in samples:
        return out
    timed = samples[~samples["variant"].astype(str).str.startswith("ref:")]
    kinds = timed["kind"].fillna("").astype(str) if "kind" in timed else pd.Series("", index=timed.index)
    for k in (kind, "gpu", ""):
        rows = timed[kinds == k] if k is not None else timed.iloc[0:0]
        clock = pd.to_numeric(rows["sm_clock_mhz"], errors="coerce").dropna()
        if not clock.empty:
            out["sm_clock_median_mhz"] = float(clock.median())
            break
    return out


def clock_change(a: Mapping[str, float | None], b: Mapping[str, float | None]) -> dict[str, Any]:
    """{"moved": True/False/None (unknown), "note": a line or ""} from each run's `sm_clock`."""
    ca, cb = a["sm_clock_median_mhz"], b["sm_clock_median_mhz"]
    if ca is None and cb is None:
        return {"moved": None, "note": ""}
    low = [n for n, c in (("A", a), ("B", b)) if _low(c)]
    if ca is None or cb is None:
        if not low:
            return {"moved": None, "note": ""}
        known = "B" if ca is None else "A"
        return {"moved": None, "note": f"SM clock (median of the timed calls): {_clock(a)} vs {_clock(b)}: {known} "
                                       f"ran at a low clock, the other run's clock is not recorded, so a change "
                                       f"between them may be the clock's, not the code's"}
    moved = abs(cb / ca - 1) >= CLOCK_MOVED
    if not moved and not low:
        return {"moved": False, "note": ""}
    why = ("the runs ran at different clocks" if moved else "both ran at the same low clock") + \
        (f" ({' and '.join(low)} under {LOW_CLOCK_SHARE:.0%} of the card's maximum)" if low else "")
    tail = ": kernels answer a clock unevenly, so a change between them may be the clock's, not the code's" \
        if moved else ": their ratios may differ from ones at full clock"
    return {"moved": moved, "note": f"SM clock (median of the timed calls): {_clock(a)} vs {_clock(b)}; {why}{tail}"}


def _low(side: Mapping[str, float | None]) -> bool:
    c, top = side["sm_clock_median_mhz"], side["sm_clock_max_mhz"]
    return bool(c and top and c < LOW_CLOCK_SHARE * top)


def _clock(side: Mapping[str, float | None]) -> str:
    c, top = side["sm_clock_median_mhz"], side["sm_clock_max_mhz"]
    if c is None:
        return "not recorded"
    return f"{c:.0f} of {top:.0f} MHz" if top else f"{c:.0f} MHz"


def judged_kind(by: str | None) -> str | None:
    """The kind of samples a judged timer reads ('' for the legacy timer's samples without a kind)."""
    if by is None:
        return None
    return TIMER_KINDS.get(by, "")
