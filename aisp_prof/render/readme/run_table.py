"""Shipped profiled runs (`aisp-prof run` folders) as the markdown table a chapter README shows:
one row per run, its headline as `aisp-prof summary` states it.

Nothing is computed here: each row is read from what `aisp-prof summary --json` holds for the run
(`api.run.Run.result`: the headline of `analyze.verdict.headline`, withheld or not by
`analyze.verdict.validity`, and the headline variant's `speedup_by_timer`), and its ratios are
written as the summary writes them (two decimals, the book's B200 ratio three digits).
tests/integration/test_readme_runs.py regenerates every table between `<!-- run-table: FOLDER -->`
and `<!-- /run-table -->` and fails on any difference; `python dev/run_table.py FOLDER` prints one.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

# the headline's kind of time, short (the summary's TIMER_LABELS say them in full)
KIND_LABELS = {"gpu_events": "GPU", "latency": "latency", "steady": "steady", "nsys_gpu_time": "nsys GPU",
               "cuda_events": "CUDA events", "ncu_duration": "ncu"}
HEADER = ("| pair | headline | speedup | nsys GPU | ncu | book B200 | warnings |\n"
          "| --- | --- | --- | ---: | ---: | ---: | --- |")
LEGEND = ("headline: the variant the summary's headline names (the book's optimization where the pair declares one);\n"
          "speedup: its ratio over baseline by the pair's kind of time (GPU: GPU time by CUDA events; latency: one\n"
          "call on an idle GPU; steady: back to back); nsys GPU, ncu: the same ratio by nsys GPU time and ncu duration;\n"
          "warnings: the validity rules that warn on the headline's variant, the baseline or the whole run (low_clock:\n"
          "timed well below the card's maximum SM clock) (`aisp-prof summary RUN`).")


def ratio(x: float | None) -> str:
    """A speedup as the summary writes it ('1.29x'); '-' where there is none."""
    return f"{x:.2f}x" if x is not None else "-"


def _lead(result: Mapping[str, Any]) -> Mapping[str, Any]:
    best = result["headline"].get("best")
    return next((r for r in result.get("summary", []) if best and r.get("variant") == best), {})


def headline_cell(head: Mapping[str, Any]) -> str:
    """The headline's variant, 'withheld: <rules>' or 'comparison'."""
    if head.get("comparison"):
        return "comparison"
    if head.get("withheld"):
        return "withheld: " + ", ".join(dict.fromkeys(w["rule"] for w in head["withheld"]))
    return head.get("best") or "none timed"


def speedup_cell(head: Mapping[str, Any]) -> str:
    """'1.29x GPU': the headline's ratio and its kind of time; a withheld one's measured ratio, marked."""
    if head.get("speedup") is None:
        return "-"
    kind = KIND_LABELS.get(head.get("speedup_timer") or "nsys_gpu_time", head.get("speedup_timer"))
    return f"{ratio(head['speedup'])} {kind}" + (", withheld" if head.get("withheld") else "")


def book_cell(head: Mapping[str, Any]) -> str:
    """The book's B200 ratio as the summary's headline writes it, its variant named where the headline's is another."""
    book = head.get("book_ratio_b200")
    if book is None:
        return "-"
    other = head.get("book_variant") if head.get("book_variant") != head.get("best") else None
    return f"{book:.3g}x" + (f" ({other})" if other else "")


def warnings_cell(result: Mapping[str, Any]) -> str:
    """Rules that warn on the headline's variant, the baseline or the whole run (every variant of a
    comparison pair), those that withhold it left to the headline cell; and the run's own warnings."""
    head = result["headline"]
    subjects = {head["best"], "baseline"} if head.get("best") else None
    withheld = {w["rule"] for w in head.get("withheld") or ()}
    rules = [f["rule"] for f in result.get("findings") or () if f.get("severity") == "warning"
             and (subjects is None or f.get("variant") in subjects | {None}) and f["rule"] not in withheld]
    rules += [w["code"] for w in result.get("warnings") or () if w.get("severity") == "warning"]
    return ", ".join(dict.fromkeys(rules))


def row(result: Mapping[str, Any]) -> str:
    """One run's row, from its `aisp-prof summary --json` result."""
    head, by_timer = result["headline"], _lead(result).get("speedup_by_timer") or {}
    pair = str(result["run"]["pair"]).split(".", 1)[-1]
    cells = [pair, headline_cell(head), speedup_cell(head), ratio(by_timer.get("nsys_gpu_time")),
             ratio(by_timer.get("ncu_duration")), book_cell(head), warnings_cell(result)]
    return "| " + " | ".join(cells) + " |"


def markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """The runs' table, by pair name (then run id), and the legend under it."""
    ordered = sorted(results, key=lambda r: (r["run"]["pair"], r["run"]["run_id"]))
    return "\n".join([HEADER, *(row(r) for r in ordered), "", LEGEND])
