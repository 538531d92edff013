"""Choosing stored runs by what an engineer types: a run id, a unique prefix of one, 'latest',
a pair name or a job's name (its latest run) or a chapter (the latest run of each of its pairs).

The one resolver behind every command that reads runs. Pure functions of the run listing
(`Reader.list_runs()`, oldest first), so they are tested without a database.
"""
from __future__ import annotations

import difflib
from typing import Any, Sequence

from ..arguments import text as checked_text, texts
from ..errors import UnknownTargetError
from ..naming import chapter_key, chapter_of_pair, close_names

Listing = Sequence[dict[str, Any]]
RUN_WHAT = "a run id, a unique prefix of one, 'latest', or a pair or job name"


def _no_runs(where: str) -> UnknownTargetError:
    return UnknownTargetError(f"no runs in {where}; `aisp-prof run` or `aisp-prof import` first")


def resolve_run(listing: Listing, text: str, where: str = "the database") -> str:
    """The run id `text` names: an id, a unique prefix, 'latest', or a pair name or the NAME of an
    `import --job NAME` (its latest run). An engineer types the pair after `aisp-prof run
    ch09.fused_l2norm`, or the job's name, not the run id. Anything but a str is an ArgumentError."""
    text = checked_text(text, "run", RUN_WHAT)
    runs = [r["run_id"] for r in listing]
    if not runs:
        raise _no_runs(where)
    if text == "latest":
        return runs[-1]
    if text in runs:
        return text
    of_name = [r["run_id"] for r in listing if text in (r.get("pair"), r.get("job"))]
    if of_name:
        return of_name[-1]
    matches = [r for r in runs if r.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise UnknownTargetError(f"run {text!r} is ambiguous: {', '.join(matches[:5])}{more}; give more of the id")
    names = sorted({r[k] for r in listing for k in ("pair", "job") if r.get(k)})
    # 0.6, not the 0.4 of a target's hint: a word unlike any run ('nosuchrun') scored 0.4 against
    # 'ch09.triton' and was offered it; a typo of a pair, job or id ('step43') scores far above 0.6
    close = difflib.get_close_matches(text, runs + names, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `aisp-prof runs` lists them"
    raise UnknownTargetError(f"unknown run {text!r}{hint}")


def latest_by_pair(listing: Listing) -> dict[str, str]:
    """{pair (or 'label:<label>' for runs without one): its latest run id}, oldest pair first."""
    latest: dict[str, str] = {}
    for r in listing:                                    # oldest first: the last one wins
        latest[r.get("pair") or f"label:{r.get('label') or r['run_id']}"] = r["run_id"]
    return latest


def _target_runs(latest: dict[str, str], target: str) -> list[str]:
    chapter = chapter_key(target)
    hits = [rid for key, rid in latest.items() if not key.startswith("label:") and
            (key == target or (chapter is not None and chapter_of_pair(key) == chapter))]
    if hits:
        return hits
    raise UnknownTargetError(f"no stored run of target {target!r}{_stored_hint(target, latest)}")


def _stored_hint(target: str, latest: dict[str, str], chapters: bool = True) -> str:
    """'; did you mean ch09.fused_l2norm?' (stored pairs, and with `chapters` theirs), else the stored pairs."""
    pairs = sorted(k for k in latest if not k.startswith("label:"))
    close = close_names(target, pairs, cutoff=0.4, chapters=chapters)
    return (f"; did you mean {', '.join(close)}?" if close else
            f"; stored pairs: {', '.join(pairs)}" if pairs else "; no stored run names a pair")


def check_stored_pair(listing: Listing, pair: str) -> None:
    """UnknownTargetError with close names unless a stored run is of the pair called `pair`."""
    latest = latest_by_pair(listing)
    if checked_text(pair, "pair", "a pair's name") not in latest:
        raise UnknownTargetError(f"no stored run of pair {pair!r}{_stored_hint(pair, latest, chapters=False)}")


def select_runs(listing: Listing, runs: Sequence[str] = (), targets: Sequence[str] = (),
                where: str = "the database") -> list[str]:
    """Run ids, oldest first, without duplicates. `runs`: ids, prefixes, 'latest' or pair names.
    `targets`: chapters or pair names (comma-separated allowed), each the latest run of every
    matching pair. Neither: the latest run of every stored pair (single imports count by label)."""
    runs = texts(runs, "runs", RUN_WHAT)      # one str is one run, not its letters
    if not listing:
        raise _no_runs(where)
    items = texts(targets, "targets", "a chapter or pair name")
    targets = [t.strip() for item in items for t in item.split(",") if t.strip()]
    latest = latest_by_pair(listing)
    chosen = [resolve_run(listing, r, where) for r in runs]
    for t in targets:
        chosen += _target_runs(latest, t)
    if not runs and not targets:
        chosen = list(latest.values())
    order = {r["run_id"]: i for i, r in enumerate(listing)}
    return sorted(dict.fromkeys(chosen), key=order.__getitem__)
