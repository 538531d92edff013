"""A chapter's recorded gate evidence (an expectations file) as the markdown table its README shows.

The README's numbers are the ones the gate compares against, so they are printed from the file,
never typed: tests/integration/test_readme_evidence.py regenerates every table between
`<!-- evidence-table: PATH -->` and `<!-- /evidence-table -->` and fails on any difference, and
`python3 dev/evidence_table.py PATH` prints one to paste. Pure: handed the file's contents and
each pair's book declaration (pairs.book), it reads nothing itself.
"""
from __future__ import annotations

from typing import Any, Mapping

from ...units import duration_3 as per_call, three_digits

KIND_LABELS = {"gpu": "GPU time", "latency": "latency", "steady": "steady"}
HEADER = ("| pair | time | variant | per call | vs baseline | book (B200) |\n"
          "| --- | --- | --- | ---: | ---: | ---: |")


def _variants(summary: Mapping[str, Any]) -> list[str]:
    """Baseline first, then the others as recorded; the reference kernels left out."""
    names = [v for v in summary if not v.startswith("ref:")]
    return sorted(names, key=lambda v: v != "baseline")


def _kind(entry: Mapping[str, Any]) -> str:
    kinds = {s.get("kind", "gpu") for s in entry.get("sessions", [])}
    return "/".join(KIND_LABELS.get(k, k) for k in sorted(kinds))


def pair_rows(pair: str, entry: Mapping[str, Any], book: Any | None) -> list[str]:
    """One pair's rows: its kind of time, each variant's median per call and speedup (1 / the
    side-by-side ratio), and the book's B200 ratio beside each variant that ports the book's code."""
    summary = entry.get("summary", {}).get("variants", {})
    rows = []
    for i, variant in enumerate(_variants(summary)):
        v = summary[variant]
        ratio = v.get("time_vs_baseline")
        speedup = "1.00x" if variant == "baseline" else (f"{three_digits(1 / ratio)}x" if ratio else "")
        book_ratio = book.ratio_of(variant) if book is not None else None
        book_text = f"{book_ratio:.3f}x" if book_ratio else ""
        first = (f"`{pair.split('.', 1)[1]}`", _kind(entry)) if i == 0 else ("", "")
        rows.append(f"| {first[0]} | {first[1]} | {variant} | {per_call(v['median_ns'])} | {speedup} | {book_text} |")
    return rows


def far_from_book(pair: str, entry: Mapping[str, Any], book: Any | None) -> str | None:
    """The line that says why the book's variant lands more than pairs.book.OFF_FACTOR away from
    the book's B200 ratio here (None when it does not); a pair that declares no reason says so."""
    if book is None or book.ratio_b200 is None:
        return None
    ratio = entry.get("summary", {}).get("variants", {}).get(book.variant, {}).get("time_vs_baseline")
    speedup = 1 / ratio if ratio else None
    if speedup is None or not book.off(speedup):
        return None
    why = book.off_reason or "no reason declared (pairs.book: a far-off ratio needs one)"
    return f"- `{pair.split('.', 1)[1]}` {book.variant}: {three_digits(speedup)}x here, {book.ratio_b200:.3f}x in the book. {why}"


def markdown(expectations: Mapping[str, Any], books: Mapping[str, Any]) -> str:
    """The whole file's table, pairs in name order, then a line for each book ratio more than 2x
    away from the measured one, with the pair's declared reason."""
    pairs = sorted(expectations.get("pairs", {}))
    lines = [HEADER]
    for pair in pairs:
        lines += pair_rows(pair, expectations["pairs"][pair], books.get(pair))
    far = [f for f in (far_from_book(p, expectations["pairs"][p], books.get(p)) for p in pairs) if f]
    if far:
        lines += ["", "Where the book's variant lands more than 2x away from the book's B200 ratio:", "", *far]
    return "\n".join(lines)
