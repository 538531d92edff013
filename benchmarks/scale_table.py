"""Markdown tables of `scale.py` results, from the JSON it saves: one run, or several side by side.

Rendering works on the saved form only, so a table printed at the end of a run and one rebuilt
later from `--save-json` files (e.g. before and after a change) are the same table:

    python benchmarks/scale.py --from-json before.json after.json --names before after
"""
from __future__ import annotations

from typing import Any

Result = dict[str, Any]      # {"machine": {...}, "sizes": ..., "sample": ..., "measures": [Measure as dict]}


def _size(m: dict[str, Any]) -> str:
    return f"{m['size']:,} {m['size_unit']}" if m.get("size") else "-"


def _cells(m: dict[str, Any] | None) -> tuple[str, str]:
    """(wall_s, peak_rss_mb) as printed; a measurement that is not "ok" shows its status instead."""
    if m is None:
        return "not run", "-"
    if m["status"] != "ok":
        return m["status"], "-"
    return f"{m['wall_s']:.2f}", f"{m['peak_rss_mb']:.0f}"


def machine_line(result: Result) -> str:
    """Where, when and on what code: the numbers mean nothing without it."""
    m = result["machine"]
    dirty = " (with uncommitted changes in aisp_prof/)" if m.get("aisp_prof_changes_uncommitted") else ""
    return (f"`scale.py --sizes {result['sizes']}` at commit {m['commit'][:12]} (aisp_prof/ as of "
            f"{m.get('aisp_prof_commit', '?')[:12]}){dirty}, imported from `{m.get('aisp_prof_imported_from', '?')}`, "
            f"{m['date_utc']}; exports built from `{result['sample']}`. "
            f"Machine: {m['cpu_cores']} cores ({m['cpu_model']}), {m['ram_gb']} GB RAM, {m['os']}; "
            f"Python {m['python']}, pandas {m['pandas']}, numpy {m['numpy']}, sqlite-utils {m['sqlite_utils']}, "
            f"SQLite {m['sqlite']}, matplotlib {m['matplotlib']}.")


def markdown(result: Result) -> str:
    """One run: wall time, peak RSS, status and notes per step."""
    lines = [machine_line(result), "", "| step | size | wall_s | peak_rss_mb | status | notes |",
             "| --- | ---: | ---: | ---: | --- | --- |"]
    for m in result["measures"]:
        wall, rss = _cells(m)
        wall = wall if m["status"] == "ok" else "-"
        lines.append(f"| {m['step']} | {_size(m)} | {wall} | {rss} | {m['status']} | {m['note'].replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def compare(results: list[Result], names: list[str]) -> str:
    """Several runs side by side, one wall_s and one peak_rss_mb column per run, rows matched by
    (step, size) in the order the first run measured them."""
    rows: dict[tuple[str, Any, int], dict[int, dict[str, Any]]] = {}
    for i, r in enumerate(results):
        seen: dict[tuple[str, Any], int] = {}
        for m in r["measures"]:               # a step measured twice at one size (the reference) keeps each
            key = (m["step"], m.get("size"))
            seen[key] = seen.get(key, 0) + 1
            rows.setdefault((*key, seen[key]), {})[i] = m
    head = ["step", "size"] + [f"{c} ({n})" for n in names for c in ("wall_s", "peak_rss_mb")]
    lines = [f"- {n}: {machine_line(r)}" for n, r in zip(names, results)]
    lines += ["", "| " + " | ".join(head) + " |", "| --- | ---: |" + " ---: |" * (2 * len(results))]
    for (step, _, _), by_run in rows.items():
        first = next(iter(by_run.values()))
        cells = [c for i in range(len(results)) for c in _cells(by_run.get(i))]
        lines.append(f"| {step} | {_size(first)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
