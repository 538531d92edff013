"""The book's optimization is the headline (aisp_prof.pairs.book, analyze.verdict.headline, issue 28).

Each pair names the variant that ports the book's optimized code and the book's B200 ratio; the
headline leads with it (never with a faster variant the book does not have, which follows it,
marked "beyond the book"), and says why the Hopper ratio is far from the book's where it is more
than 2x away. Runs recorded before `book` existed read it from the pair module now.

Runs: profiles/samples_h100_ch10 (real `aisp-prof run` captures on an H100).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aisp_prof.analyze.verdict.headline import add_role_fields, headline
from aisp_prof.api import summary_records
from aisp_prof.cli import cli
from aisp_prof.pairs import Book, KernelPair, discover
from aisp_prof.pairs.book import BEYOND_THE_BOOK, IN_THE_BOOK, THE_BOOKS, book_of
from aisp_prof.pairs.declared import module_declarations, with_declarations
from aisp_prof.pairs.roles import CONTROL, run_declarations
from verdict_samples import sample

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


def test_every_shipped_book_names_one_of_its_pairs_optimizations():
    pairs = {p.name: p for p in discover()}
    without = sorted(n for n, p in pairs.items() if p.book is None)
    assert without == ["ch09.compute_bound", "ch14.quantized_allreduce", "ch14.sliding_window"]
    for p in pairs.values():
        if p.book is None:
            continue
        for v in (p.book.variant, *p.book.also):
            assert v in p.variants and p.role(v) not in ("baseline", "control"), (p.name, v)
        assert p.book.source, p.name
    ratios = {n: p.book.ratio_b200 for n, p in pairs.items() if p.book}
    assert ratios["ch10.flash_attn_tma_micro_pipeline"] == 1.289 and ratios["ch14.gpu_quantization"] == 11.334
    assert ratios["ch14.regional_triton"] == 2.471 and ratios["ch10.warp_specialized_pipeline"] == 1.283
    assert pairs["ch14.triton_persistent"].book.variant == "persistent"            # not the retuned tile
    assert pairs["ch10.persistent_matmul_tma"].book.variant == "persistent_tma_b200"
    assert pairs["ch10.warp_specialization_cutlass"].comparison and pairs["ch14.cublas_vs_cutlass"].comparison


def test_run_json_carries_the_book_and_old_runs_read_the_module_now():
    rec = run_declarations(["baseline", "tma_ring3"], {}, False, (), book=MICRO)
    assert rec["book"] == MICRO.to_dict() and json.dumps(rec)
    assert "book" not in run_declarations(["baseline"], {}, False, ())
    stored = with_declarations({"pair": "ch10.flash_attn_tma_micro_pipeline", "variants": ["baseline", "tma_ring3"],
                                **rec})
    assert stored["book"] == MICRO.to_dict() and stored["declared_from"] == "run"
    old = with_declarations({"pair": "ch10.flash_attn_tma_micro_pipeline", "variants": ["baseline", "tma_ring3"],
                             "roles": {"baseline": "baseline", "tma_ring3": "optimization"}})
    assert old["book"]["variant"] == "tma_ring3" and "book from the pair module now" in old["declared_from"]
    assert with_declarations({"pair": "ch99.nothing", "variants": ["baseline"]}).get("book") is None
    source = Path(discover()[0].source).parent.parent / "ch10" / "flash_attn_tma_micro_pipeline.py"
    assert module_declarations(source)["book"].ratio_b200 == 1.289


def test_a_stored_run_recorded_before_the_book_leads_with_it():
    """The shipped H100 sample of flash_attn_tma_micro_pipeline headlined 49x from a variant the book
    does not have, while TMA itself gives 2.68x; it now leads with tma_ring3 and says why."""
    run = sample("samples_h100_ch10", "ch10.flash_attn_tma_micro_pipeline")
    assert run.info["declared_from"] == "pair module now" and run.info["book"]["variant"] == "tma_ring3"
    rows = summary_records(run)
    h = headline(rows, book=run.info["book"])
    assert h["best"] == "tma_ring3" and round(h["speedup"], 2) == 2.68 and h["book_off"]
    assert h["beyond_the_book"]["variant"] == "tma_ring3_rows8" and h["beyond_the_book"]["speedup"] > 40
    assert "local memory" in h["text"]
    assert {r["variant"]: r.get("book") for r in rows}["tma_ring3_rows8"] == BEYOND_THE_BOOK


def test_list_json_shows_the_book():
    res = CliRunner().invoke(cli, ["list", "--chapter", "ch10", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.stdout)}
    assert rows["ch10.flash_attn_tma_micro_pipeline"]["book"]["variant"] == "tma_ring3"
    assert rows["ch10.warp_specialization_cutlass"]["comparison"] is True


@pytest.mark.slow
def test_summary_leads_with_the_book_and_marks_the_rest(tmp_path, sample_dbs):
    from verdict_samples import PROFILES

    run_dir = next((PROFILES / "samples_h100_ch10").glob("*ch10.flash_attn_tma_micro_pipeline*"))
    db = sample_dbs.copy(tmp_path / "a.db", run_dir)
    run_id = run_dir.name
    res = CliRunner().invoke(cli, ["summary", run_id, "--db", str(db), "--wide"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert ("headline: tma_ring3 (the book's optimization): 2.68x over baseline (nsys GPU time), 24.462 ms -> 9.123 ms "
            "per call, book B200 1.29x;") in text       # the two times the speedup is the ratio of (issue 31)
    assert text.split("; beyond the book: ")[1].startswith("tma_ring3_rows8 49.19x")
    table = res.output.split("\nvariant ", 1)[1].split("\n\n")[0]                 # the summary table only
    cells = {line.split()[0]: line.split() for line in table.splitlines() if line.startswith("tma_ring3")}
    assert "book" in cells["tma_ring3"] and "beyond" in cells["tma_ring3_rows8"]
    data = json.loads(CliRunner().invoke(cli, ["summary", run_id, "--db", str(db), "--json"]).stdout)
    assert data["headline"]["best"] == "tma_ring3" and data["headline"]["book_ratio_b200"] == 1.289
    assert {r["variant"]: r.get("book") for r in data["summary"]}["tma_ring3"] == THE_BOOKS


def test_at_a_users_own_sizes_the_books_ratio_is_said_to_be_the_books_and_never_far_off():
    """`run --sizes` measures another problem than the book's: its ratio stands beside the book's
    with that said, and a 5x gap is not called far from the book (the off_reason is about the
    book's sizes). run.json keeps the pair's default sizes, so `other_sizes` can tell."""
    from aisp_prof.analyze.verdict.headline import other_sizes
    from aisp_prof.collect.process.runner import RunOptions, _new_info, _Plan

    own = {"batch": 1, "seq": 77}
    h = headline(_rows({"tma_ring3": 5.0}, book=MICRO), book=MICRO, own_sizes=own)
    assert not h["book_off"] and h["book_off_reason"] is None and h["book_other_sizes"] == own
    assert h["text"].endswith("book B200 1.29x (at the book's sizes; this run's batch=1,seq=77 are not the pair's "
                              "defaults)")
    assert headline(_rows({"tma_ring3": 5.0}, book=MICRO), book=MICRO)["book_off"]          # at the defaults: far off
    pair = next(p for p in discover() if p.name == "ch10.flash_attn_tma_micro_pipeline")
    info = _new_info("r", _Plan(pair, ["baseline"], {**pair.sizes}, None, None), RunOptions(pair=pair))
    assert info["default_sizes"] == dict(pair.sizes) and other_sizes(info) is None
    first = next(iter(pair.sizes))
    mine = {**pair.sizes, first: pair.sizes[first] * 2}
    info = _new_info("r", _Plan(pair, ["baseline"], mine, None, None), RunOptions(pair=pair))
    assert other_sizes(info) == mine
    assert other_sizes({"sizes": mine}) is None                          # a run from before: nothing said
