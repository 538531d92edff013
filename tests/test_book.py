"""The book's optimization is the headline (aisp_prof.pairs.book, analyze.headline, issue 28).

Each pair names the variant that ports the book's optimized code and the book's B200 ratio; the
headline leads with it (never with a faster variant the book does not have, which follows it,
marked "beyond the book"), and says why the Hopper ratio is far from the book's where it is more
than 2x away. Runs recorded before `book` existed read it from the pair module now.

Runs: profiles/samples_h100_ch10 (real `aisp-prof run` captures on an H100).
"""
from __future__ import annotations

import pytest

from aisp_prof.analyze.headline import add_role_fields, headline
from aisp_prof.pairs import Book, KernelPair
from aisp_prof.pairs.book import BEYOND_THE_BOOK, IN_THE_BOOK, THE_BOOKS, book_of
from aisp_prof.pairs.roles import CONTROL

MICRO = Book("tma_ring3", 1.289, "spec §3.2", off_reason="the book's q and o live in local memory")


def _rows(speedups: dict[str, float], roles: dict[str, str] | None = None, book=None) -> list[dict]:
    rows = [{"variant": "baseline", "gpu_time_ns": 1000.0, "speedup_vs_baseline": 1.0, "correct": True,
             "speedup_timer": "nsys_gpu_time"}]
    rows += [{"variant": v, "gpu_time_ns": 1000.0 / s, "speedup_vs_baseline": s, "correct": True,
              "speedup_timer": "nsys_gpu_time"} for v, s in speedups.items()]
    add_role_fields(rows, {"baseline": "baseline", **(roles or {})}, book)
    return rows


def test_a_book_names_a_variant_and_a_ratio():
    assert MICRO.mark("tma_ring3") == THE_BOOKS and MICRO.mark("rows8") == BEYOND_THE_BOOK
    assert Book("a", 2.0, also={"b": 3.0}).mark("b") == IN_THE_BOOK and Book("a", also={"b": 3.0}).ratio_of("b") == 3.0
    assert not MICRO.off(2.5) and MICRO.off(2.7) and MICRO.off(0.6) and not MICRO.off(None)
    assert not Book("a").off(100.0)                                    # no ratio in the book: never "off"
    assert book_of(MICRO.to_dict()) == MICRO and book_of(None) is None and book_of({"nope": 1}) is None
    with pytest.raises(ValueError, match="not 'baseline'"):
        Book("baseline", 2.0)
    with pytest.raises(ValueError, match="must be > 0"):
        Book("a", 0.0)
    with pytest.raises(ValueError, match="declared a control"):
        KernelPair("x.y", 1, "", lambda *a: {}, {"baseline": None, "c": None}, None, len, len,
                   roles={"c": CONTROL}, book=Book("c", 1.5))


def test_the_headline_is_the_books_optimization_not_the_fastest():
    rows = _rows({"tma_ring3": 2.68, "tma_ring3_rows8": 48.91, "tma_ring3_warp_reduce": 33.16}, book=MICRO)
    assert {r["variant"]: r["book"] for r in rows if r["variant"] != "baseline"} == {
        "tma_ring3": THE_BOOKS, "tma_ring3_rows8": BEYOND_THE_BOOK, "tma_ring3_warp_reduce": BEYOND_THE_BOOK}
    h = headline(rows, book=MICRO)
    assert h["best"] == "tma_ring3" and h["speedup"] == 2.68 and h["book_ratio_b200"] == 1.289
    assert h["book_off"] and h["beyond_the_book"]["variant"] == "tma_ring3_rows8"
    assert h["text"] == ("tma_ring3 (the book's optimization): 2.68x over baseline (nsys GPU time), book B200 1.29x; "
                         "the book's q and o live in local memory; beyond the book: tma_ring3_rows8 48.91x")


def test_the_reason_shows_only_where_the_ratio_is_more_than_2x_away():
    h = headline(_rows({"tma_ring3": 1.9}, book=MICRO), book=MICRO)
    assert not h["book_off"] and h["book_off_reason"] is None and h["beyond_the_book"] is None
    assert h["text"] == "tma_ring3 (the book's optimization): 1.90x over baseline (nsys GPU time), book B200 1.29x"
    bare = Book("tma_ring3", 1.289)
    assert headline(_rows({"tma_ring3": 5.0}), book=bare)["text"].endswith(
        "book B200 1.29x; more than 2x from the book's, no reason declared")
    assert "no B200 ratio in the book" in headline(_rows({"tma_ring3": 5.0}), book=Book("tma_ring3"))["text"]


def test_without_book_data_the_headline_is_the_fastest_optimization():
    rows = _rows({"a": 2.0, "b": 3.0})
    assert "book" not in rows[1]
    h = headline(rows)
    assert h["best"] == "b" and h["book_variant"] is None and h["beyond_the_book"] is None
    assert h["text"] == "b: 3.00x over baseline (nsys GPU time)"


def test_other_book_variants_and_untimed_ones():
    book = Book("a", 1.5, also={"b": 2.0})
    h = headline(_rows({"a": 1.4, "b": 2.2}, book=book), book=book)
    assert h["text"].endswith("book B200 1.5x; in the book: b 2.20x")
    missing = headline(_rows({"b": 2.2, "c": 9.0}, book=book), book=book)      # run with --variants b,c
    assert missing["best"] is None and missing["speedup"] is None
    assert missing["text"] == "a (the book's optimization) was not timed in this run; beyond the book: c 9.00x"


def test_a_library_call_can_be_the_books_optimization_and_comparisons_claim_nothing():
    book = Book("cublas", 4.317)
    rows = _rows({"cublas": 2.2}, roles={"cublas": "reference"}, book=book)
    assert headline(rows, book=book)["text"] == ("cublas (the book's optimization): 2.20x over baseline "
                                                 "(nsys GPU time), book B200 4.32x")
    comparison = headline(_rows({"cutlass_sm80": 0.58}, book=Book("cutlass_sm80", 2.622)), comparison=True,
                          book=Book("cutlass_sm80", 2.622))
    assert comparison["best"] is None
    assert comparison["text"] == ("comparison pair, no speed claim: fastest is baseline; the book's side: "
                                  "cutlass_sm80, book B200 2.62x")
