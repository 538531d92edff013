"""The one-line answer of a run: the book's optimization over the baseline (or, for a pair with no
book counterpart, the best optimization), and how close it comes to the references (a vendor
library, a roof), from summary rows that carry their `role`.

The headline leads with the variant that ports the book's optimized code (pairs.book), with the
book's B200 ratio beside it and, where the two are more than 2x apart, the pair's stated reason:
"tma_ring3 (the book's optimization): 2.68x over baseline (nsys GPU time), book B200 1.29x; <why>".
A faster optimization follows it, marked "beyond the book" (or "in the book" for another of the
book's own variants); it never takes the headline, because a port is judged by what the book
taught, not by what was added to it. A reference never wins the headline either: "pipelined 1.99x
over baseline, reaches 93% of cublas", not "cublas 2.15x" (unless the book's optimization is
itself a library call). A comparison pair claims nothing: its line says so and names the fastest
variant. The speedup is the summary's primary `speedup_vs_baseline` (`analyze.timing.speedup`: nsys GPU
time per call where the run has it), named with its timer; the pct of a reference is by
`gpu_time_ns`.

Pure: rows and the declared book in, a JSON-ready dict out, no reading of files or the database,
so the summary, the report and the notebook API say the same line from the same numbers.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...pairs.book import THE_BOOKS, Book, book_of
from ...pairs.roles import BASELINE, OPTIMIZATION, REFERENCE
from ...units import duration
from ..timing.speedup import TIMER_LABELS


def add_role_fields(rows: list[dict[str, Any]], roles: Mapping[str, str], book: Any = None) -> None:
    """Each row's `role`; each baseline and optimization row's `pct_of_reference`: its speed as a
    percentage of the fastest reference's (reference time / its time), with `reference_variant`.
    Where the pair declares its book (a Book or run.json's dict), each row's `book` mark (the
    book's optimization, in the book, beyond the book; None for the baseline, references and
    controls the book does not have) and `book_ratio_b200` (the book's ratio for that variant)."""
    for r in rows:
        r["role"] = roles.get(r["variant"]) or (BASELINE if r["variant"] == "baseline" else OPTIMIZATION)
    b = book_of(book)
    for r in rows if b is not None else ():
        ours = r["variant"] == b.variant or r["variant"] in b.also
        r["book"] = b.mark(r["variant"]) if ours or r["role"] == OPTIMIZATION else None
        r["book_ratio_b200"] = b.ratio_of(r["variant"])
    refs = [r for r in rows if r["role"] == REFERENCE and r.get("gpu_time_ns")]
    ref = min(refs, key=lambda r: r["gpu_time_ns"], default=None)
    for r in rows:
        if r["role"] != REFERENCE:
            r["reference_variant"] = ref["variant"] if ref else None
            r["pct_of_reference"] = (100.0 * ref["gpu_time_ns"] / r["gpu_time_ns"]
                                     if ref and r.get("gpu_time_ns") else None)


def claim_rank(row: Mapping[str, Any]) -> tuple[bool, bool]:
    """How far a row's speedup may be claimed, to sort by: an output that passed its check (or had
    none) first, then one whose check was skipped (not run at these sizes: no claim), a wrong one last."""
    return row.get("correct") is not False, row.get("check_result") != "skipped"


def no_claim(row: Mapping[str, Any]) -> str:
    """Why a row's speedup claims nothing ('' where it may): its output failed, or its check was skipped."""
    if row.get("correct") is False:
        return "its output FAILED the correctness check"
    return "its correctness check was skipped at these sizes: no speed claim" * (row.get("check_result") == "skipped")


def best_optimization(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The fastest optimization whose output passed (or was not checked); one whose check was
    skipped only if none did, a wrong one only if all are (`claim_rank`)."""
    opts = [r for r in rows if r.get("role") == OPTIMIZATION and r.get("speedup_vs_baseline")]
    return max(opts, key=lambda r: (*claim_rank(r), r["speedup_vs_baseline"]), default=None)


def headline(rows: Sequence[Mapping[str, Any]], comparison: bool = False, book: Any = None,
             own_sizes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """{best, speedup, speedup_timer, correct, reference, pct_of_reference, comparison, book_*,
    beyond_the_book, text}: JSON-ready. `best` is the headline's variant: the book's optimization
    where the pair declares one (`book`: a Book or run.json's dict), else the fastest optimization.
    `own_sizes`: the run's sizes where they are not the pair's defaults (`other_sizes`): the book's
    ratio was measured at its own, so it is shown as such and never called far off."""
    b = book_of(book)
    fastest = None if comparison else best_optimization(rows)
    if b is None or comparison:
        lead = fastest
    else:
        lead = next((r for r in rows if r["variant"] == b.variant and r.get("speedup_vs_baseline")), None)
    base = next((r for r in rows if r.get("role") == BASELINE), None)
    subject = lead or base
    out = {"comparison": comparison, "best": lead["variant"] if lead else None,
           "speedup": lead.get("speedup_vs_baseline") if lead else None,
           "speedup_timer": lead.get("speedup_timer") if lead else None,
           "speedup_time_ns": lead.get("speedup_time_ns") if lead else None,
           "speedup_baseline_time_ns": lead.get("speedup_baseline_time_ns") if lead else None,
           "correct": lead.get("correct") if lead else None,
           "check_result": lead.get("check_result") if lead else None,
           "reference": subject.get("reference_variant") if subject else None,
           "pct_of_reference": subject.get("pct_of_reference") if subject else None,
           **_book_fields(b, lead.get("speedup_vs_baseline") if lead else None, own_sizes),
           "beyond_the_book": _beyond(rows, b, lead) if b is not None and not comparison else None}
    out["text"] = _text(out, rows, subject, b)
    return out


def _book_fields(b: Book | None, speedup: float | None, own_sizes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The book's variant and B200 ratio, and its off_reason where the measured ratio is more than
    2x away from the book's (None otherwise: the reason is for far-off ratios only; and at sizes
    of the user's own, where the two ratios are of different problems, never far off)."""
    if b is None:
        return {"book_variant": None, "book_ratio_b200": None, "book_source": None, "book_off": None,
                "book_off_reason": None, "book_other_sizes": None}
    off = b.off(speedup) and not own_sizes
    return {"book_variant": b.variant, "book_ratio_b200": b.ratio_b200, "book_source": b.source or None,
            "book_off": off, "book_off_reason": (b.off_reason or None) if off else None,
            "book_other_sizes": dict(own_sizes) if own_sizes else None}


def other_sizes(info: Mapping[str, Any]) -> dict[str, Any] | None:
    """A run's sizes where run.json says they are not its pair's defaults (`--sizes`), else None
    (runs recorded before run.json kept `default_sizes` say nothing)."""
    sizes, defaults = info.get("sizes"), info.get("default_sizes")
    if not isinstance(sizes, Mapping) or not isinstance(defaults, Mapping) or dict(sizes) == dict(defaults):
        return None
    return dict(sizes)


def _beyond(rows: Sequence[Mapping[str, Any]], b: Book, lead: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The fastest other optimization (a correct one first), where it beats the headline's."""
    others = [r for r in rows if r.get("role") == OPTIMIZATION and r["variant"] != b.variant
              and r.get("speedup_vs_baseline")]
    other = max(others, key=lambda r: (*claim_rank(r), r["speedup_vs_baseline"]), default=None)
    if other is None or (lead is not None and other["speedup_vs_baseline"] <= lead["speedup_vs_baseline"]):
        return None
    return {"variant": other["variant"], "speedup": other["speedup_vs_baseline"], "mark": b.mark(other["variant"]),
            "correct": other.get("correct"), "no_claim": no_claim(other)}


def _text(h: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], subject: Mapping[str, Any] | None,
          b: Book | None) -> str:
    ref = (f", reaches {h['pct_of_reference']:.0f}% of {h['reference']}'s speed"
           if h["pct_of_reference"] is not None and h["reference"] and subject else "")
    if h["comparison"]:
        timed = [r for r in rows if r.get("gpu_time_ns")]
        fastest = min(timed, key=lambda r: r["gpu_time_ns"], default=None)
        side = f"; the book's side: {b.variant}{_ratio(b)}" if b is not None else ""
        return ("comparison pair, no speed claim" +
                (f": fastest is {fastest['variant']}" if fastest else ": no timing") + side)
    if h["best"] is None:
        if b is not None:
            return f"{b.variant} ({THE_BOOKS}) was not timed in this run" + _beyond_text(h)
        if subject is None:
            return "no baseline and no optimization to compare"
        return f"no optimization variant: {subject['variant']}{ref}" if ref else "no optimization variant timed"
    wrong = f" ({no_claim(h)})" if no_claim(h) else ""
    timer = TIMER_LABELS.get(h.get("speedup_timer") or "nsys_gpu_time", "nsys GPU time")
    times = ""                                  # the two times the speedup is the ratio of (issue 31)
    if h.get("speedup_time_ns") and h.get("speedup_baseline_time_ns"):
        times = f", {duration(h['speedup_baseline_time_ns'])} -> {duration(h['speedup_time_ns'])} per call"
    if b is None:
        return f"{h['best']}: {h['speedup']:.2f}x over baseline ({timer}){times}{ref}{wrong}"
    book = _ratio(b).lstrip(",") or " no B200 ratio in the book"
    if h.get("book_other_sizes") and b.ratio_b200 is not None:
        own = ",".join(f"{k}={v}" for k, v in h["book_other_sizes"].items())
        book += f" (at the book's sizes; this run's {own} are not the pair's defaults)"
    why = ""
    if h["book_off"]:
        why = f"; {h['book_off_reason']}" if h["book_off_reason"] else "; more than 2x from the book's, no reason declared"
    return (f"{h['best']} ({THE_BOOKS}): {h['speedup']:.2f}x over baseline ({timer}){times},{book}{why}{ref}{wrong}"
            + _beyond_text(h))


def _ratio(b: Book) -> str:
    return f", book B200 {b.ratio_b200:.3g}x" if b.ratio_b200 is not None else ""


def _beyond_text(h: Mapping[str, Any]) -> str:
    other = h.get("beyond_the_book")
    if not other:
        return ""
    wrong = f", {other['no_claim']}" if other.get("no_claim") else ""
    return f"; {other['mark']}: {other['variant']} {other['speedup']:.2f}x{wrong}"
