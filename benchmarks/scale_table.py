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
    return f"{m['wall_s']:.2f}", "-" if m.get("peak_rss_mb") is None else f"{m['peak_rss_mb']:.0f}"


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


# issue 33's targets: (step, size in millions of kernels) -> (wall_s, peak_rss_mb); None: no target
TARGETS = {
    ("nsys import", 1): (10.0, None), ("nsys import", 10): (None, 2000.0), ("nsys report (one run)", 1): (5.0, None),
    **{(step, 1): (2.0, 300.0) for step in ("nsys summary --json", "nsys diff --json", "nsys ranges --json",
                                            "nsys kernels --json --limit 1000")},
}


def _millions(m: dict[str, Any]) -> int | None:
    return round(m["size"] / 1e6) if m.get("size_unit") == "kernels" and m.get("size", 0) >= 500_000 else None


def _target_text(target: tuple[float | None, float | None] | None) -> str:
    if target is None:
        return "-"
    wall, rss = target
    return " and ".join(t for t in (wall and f"<= {wall:g} s", rss and f"<= {rss:g} MB") if t)


def _meets(m: dict[str, Any] | None, target: tuple[float | None, float | None] | None) -> bool | None:
    if target is None or m is None:
        return None
    if m["status"] != "ok":
        return False
    wall, rss = target
    return (wall is None or m["wall_s"] <= wall) and (rss is None or m["peak_rss_mb"] <= rss)


def _run_cell(m: dict[str, Any] | None) -> str:
    """'wall s, peak MB (load a-b)'; a step that did not run says why."""
    if m is None:
        return "not run"
    load = m.get("data", {}).get("load_avg_1m")
    at = f" (load {min(load):.1f}-{max(load):.1f})" if load else ""
    if m["status"] != "ok":
        return f"{m['status']}: {m['note'][:60]}"
    if m["step"].startswith("SQL reference"):
        return f"{m['wall_s']:.2f} s, 0 differences"
    rss = "" if m.get("peak_rss_mb") is None else f", {m['peak_rss_mb']:.0f} MB"
    cpu = m.get("data", {}).get("cpu_s_each")
    cpu = f", cpu {sorted(cpu)[len(cpu) // 2]:.2f} s" if cpu else ""
    return f"{m['wall_s']:.2f} s{rss}{cpu}{at}"


def targets_table(results: list[Result], names: list[str]) -> str:
    """Issue 33: per measure at 1M kernels and up, the target, the first run (before) and each
    later run (after, measured twice), and whether every after run that measured it met the target."""
    rows: dict[tuple[str, int], list[dict[str, Any] | None]] = {}
    for i, r in enumerate(results):
        for m in r["measures"]:
            size = _millions(m)
            if size is not None:
                rows.setdefault((m["step"], size), [None] * len(results))[i] = m
    head = ["measure", "kernels", "target"] + names + ["met"]
    lines = [f"- {n}: {machine_line(r)}" for n, r in zip(names, results)]
    lines += ["", "| " + " | ".join(head) + " |", "| --- | ---: | --- |" + " ---: |" * len(results) + " --- |"]
    for (step, size), by_run in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        target = TARGETS.get((step, size))
        met = [v for v in (_meets(m, target) for m in by_run[1:]) if v is not None]    # the after runs that ran it
        verdict = "-" if target is None or not met else ("yes" if all(met) else "no")
        lines.append(f"| {step} | {size}M | {_target_text(target)} | "
                     + " | ".join(_run_cell(m) for m in by_run) + f" | {verdict} |")
    return "\n".join(lines) + "\n"
