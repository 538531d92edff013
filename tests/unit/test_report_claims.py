"""What a report page claims is what `aisp-prof summary` says of the same run, by the same timer:

- the 95% interval beside a speedup is of that speedup's own timer (the samples of its kind), never of
  every kind of time pooled: the H200 ch10.stream_concurrency page put [0.91x, 0.93x] beside streams32's
  3.74x (GPU time, CUDA events) and ch14.gpu_quantization's [14.39x, 14.80x] beside gpu's 12.13x
  (latency), both on a "CUDA events" line that read "-";
- the roofline caption names the timer its arrows' speedups are by (it said "nsys GPU time where the
  run has it", 0.99x for streams32, while the arrow read the summary's 3.74x by CUDA events);
- the index makes no speed claim for a headline variant whose check failed (it showed "3.13x");
- a diff page (`diff --html`, one page on its own) links to no index.html it does not have;
- the provenance names the digest of the pair's code the run measured.

Real runs: profiles/samples_h200_ch10_early, samples_h200_ch14 and samples (ch09.fused_l2norm, H200)."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner
from repo_paths import PROFILES, SAMPLES

from aisp_prof.api import open_db
from aisp_prof.cli import cli
from aisp_prof.store import db as store
from aisp_prof.store.ingest import load_run_dir

STREAMS = PROFILES / "samples_h200_ch10_early" / "20261129T055115Z-ch10.stream_concurrency-ae8e"
QUANT = PROFILES / "samples_h200_ch14" / "20261129T054503Z-ch14.gpu_quantization-7853"
L2NORM_H200 = SAMPLES / "20261126T011557Z-ch09.fused_l2norm-90df"
L2NORM_H100 = PROFILES / "samples_h100" / "20261126T045251Z-ch09.fused_l2norm-ba93"
HEADLINES = ((STREAMS, "streams32", "gpu_events"), (QUANT, "gpu", "latency"))


def _times(x: float) -> str:
    return f"{x:.2f}×"


def test_the_interval_beside_a_speedup_is_of_its_own_timer(sample_dbs):
    db = open_db(sample_dbs.original(STREAMS, QUANT))
    for run, variant, timer in HEADLINES:
        row = next(r for r in db.summary_result(run.name)["summary"] if r["variant"] == variant)
        card = next(h for h in db.page(run.name)["headline"] if h["variant"] == variant)
        assert row["speedup_timer"] == card["speedup_timer"] == card["speedup_interval_timer"] == timer
        low, high = card["speedup_interval"]["low"], card["speedup_interval"]["high"]
        assert low <= row["speedup_vs_baseline"] <= high, (run.name, low, row["speedup_vs_baseline"], high)


def test_the_page_shows_the_interval_beside_the_speedup_it_is_of(sample_dbs, tmp_path):
    db = open_db(sample_dbs.original(STREAMS, QUANT))
    report = db.report([STREAMS.name, QUANT.name], out=tmp_path / "out")
    pages = {p.name: p.read_text(encoding="utf-8") for p in report.pages}
    for (run, variant, _), html in zip(HEADLINES, (pages["ch10.stream_concurrency.html"],
                                                   pages["ch14.gpu_quantization.html"])):
        card = next(h for h in db.page(run.name)["headline"] if h["variant"] == variant)
        interval = f"[{_times(card['speedup_interval']['low'])}, {_times(card['speedup_interval']['high'])}] 95%"
        assert f"by {card['speedup_label']}, as in the summary, the roofline and history; {interval}" in html
        assert not re.search(r"<dt>CUDA events</dt><dd>[^<]*<span[^>]*>\[", html)     # not on another timer's line


def test_the_roofline_caption_names_the_timer_of_its_arrows(sample_dbs, tmp_path):
    db = open_db(sample_dbs.original(STREAMS))
    html = db.report([STREAMS.name], out=tmp_path / "out").pages[0].read_text(encoding="utf-8")
    assert "arrows: baseline → optimized, labelled with the run's one primary speedup, the summary's " \
           "(by GPU time, CUDA events)." in html
    assert "nsys GPU time where the run has it" not in html


def test_the_index_claims_no_speedup_for_a_variant_that_failed_its_check(tmp_path):
    db = tmp_path / "a.db"
    data = load_run_dir(L2NORM_H200)
    data.run["status"] = "failed"
    cuda = data.checks["variant"] == "cuda"
    data.checks.loc[cuda, "passed"], data.checks.loc[cuda, "message"] = False, "FAIL: rel_err_vs_reference=3.2e-01"
    store.write_run(db, data)
    report = open_db(db).report([L2NORM_H200.name], out=tmp_path / "out")
    best = open_db(db).page(L2NORM_H200.name)["best"]
    assert best["variant"] == "cuda" and best["correct"] is False
    cell = re.search(r'<td class="n" data-sort="([^"]*)">(.*?)</td>', report.index.read_text(), re.S)
    assert cell.group(1) == ""                                           # sorts with the runs that claim nothing
    assert cell.group(2).startswith('<span class="bad">wrong output</span>')
    assert f"{_times(best['speedup'])} measured, no claim" in cell.group(2)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.hrefs += [v for k, v in attrs if k in ("href", "src") and v]


def test_a_diff_page_links_only_to_what_is_there(sample_dbs, tmp_path):
    path = sample_dbs.original(L2NORM_H200, L2NORM_H100)
    out = tmp_path / "reports" / "diff.html"
    result = CliRunner().invoke(cli, ["--db", str(path), "diff", L2NORM_H200.name, L2NORM_H100.name, "--html", str(out)])
    assert result.exit_code == 0, result.output
    links = _Links()
    links.feed(out.read_text(encoding="utf-8"))
    local = [h.split("#")[0] for h in links.hrefs if not h.startswith(("data:", "#"))]
    assert [h for h in local if not (out.parent / h).exists()] == []
    assert Path(out.parent / "index.html").exists() is False


def test_the_provenance_names_the_digest_of_the_pairs_code(sample_dbs, tmp_path):
    """run.json records the pair's code it measured (`source`: path, sha256, code_sha256); the page's
    provenance listed card, dates, commands and versions but not that digest."""
    import json

    source = json.loads((STREAMS / "run.json").read_text())["source"]
    db = open_db(sample_dbs.original(STREAMS))
    assert db.page(STREAMS.name)["provenance"]["pair_source"] == {k: source[k] for k in ("path", "sha256", "code_sha256")}
    html = db.report([STREAMS.name], out=tmp_path / "out").pages[0].read_text(encoding="utf-8")
    assert f'<code title="{source["sha256"]}">{source["sha256"][:12]}</code>' in html
    assert f'<code title="{source["code_sha256"]}">{source["code_sha256"][:12]}</code>' in html


def test_a_multi_rank_run_s_card_is_its_ranks_and_card_as_the_index_says(sample_dbs, tmp_path):
    """The card switch of ch14.quantized_allreduce's pages said 'H100 · H200 · H200' where the index said
    '2x H100' and '2x H200': the page names and the switch now carry the rank count too."""
    runs = [PROFILES / "samples_h100x2_ch14" / "20261126T174545Z-ch14.quantized_allreduce-cbe0",
            PROFILES / "samples_h200x2_ch14" / "20261129T180029Z-ch14.quantized_allreduce-7cd8"]
    db = open_db(sample_dbs.original(*runs))
    report = db.report([r.name for r in runs], out=tmp_path / "r")
    pages = sorted(p.name for p in (tmp_path / "r").glob("ch14.*.html"))
    assert pages == ["ch14.quantized_allreduce.2x-H100.html", "ch14.quantized_allreduce.2x-H200.html"], report
    html = (tmp_path / "r" / pages[0]).read_text(encoding="utf-8")
    assert re.search(r'This pair on: <b>2x H100</b> · <a href="ch14\.quantized_allreduce\.2x-H200\.html">2x H200</a>',
                     html)
