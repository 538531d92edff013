"""`aisp-prof report` on the shipped sample run (a real ch09.fused_l2norm run on an H200):
the pages exist, every local link and image resolves, nothing is fetched from the network,
kernel names are escaped exactly, and the CLI's success and error paths. No GPU, no browser."""
from __future__ import annotations

import html as html_lib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pandas as pd
import pytest
from click.testing import CliRunner

from repo_paths import every_sample_run

from aisp_prof.api import open_db, run_summary as summary_of
from aisp_prof.store import db as store
from aisp_prof.errors import AispError, MissingDatabaseError, UnknownTargetError
from aisp_prof.store.ingest import load_run_dir, sample_run_dirs, store_path
from aisp_prof.analyze.page.tables import short_kernel_name
from aisp_prof.render.report import TEMPLATES

RUN_ID = "20261126T011557Z-ch09.fused_l2norm-90df"
XSS_RUN_ID = RUN_ID + "-xss"
XSS_NAME = "void f<script>alert(1)</script><float, 4>(int)"


def sample_dir() -> Path:
    return {d.name: d for d in sample_run_dirs()}[RUN_ID]


def store_xss_run(db: Path) -> str:
    """The real sample run stored again under another id, its CUDA kernel renamed to carry a
    <script> tag (in the ncu kernels table and the nsys timeline)."""
    data = load_run_dir(sample_dir())
    data.run["run_id"] = XSS_RUN_ID
    data.run["label"] = "xss <b>label</b>"
    cuda = data.kernels["variant"] == "cuda"
    data.kernels.loc[cuda, "kernel"] = XSS_NAME
    on_tl = data.timeline["variant"] == "cuda"
    data.timeline.loc[on_tl, "kernel"] = XSS_NAME
    data.timeline.loc[on_tl, "short_name"] = "f<script>alert(2)</script>"
    return store.write_run(db, data)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    db = tmp / "a.db"
    store_path(db, sample_dir())
    store_xss_run(db)
    result = open_db(db).report([RUN_ID, XSS_RUN_ID], out=tmp / "out")
    return db, result


class _Page(HTMLParser):
    """Collects references, ids and script tags of one page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str]] = []
        self.ids: set[str] = set()
        self.scripts: list[dict[str, str | None]] = []
        self.in_script = False
        self.script_text: list[str] = []
        self.event_handlers: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for name in ("src", "href", "data", "poster", "action", "srcset"):
            if a.get(name) is not None:
                self.refs.append((tag, a[name]))
        self.event_handlers += [k for k in a if k.startswith("on")]
        if tag == "script":
            self.scripts.append(a)
            self.in_script = True

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False

    def handle_data(self, data):
        if self.in_script:
            self.script_text.append(data)


def parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def all_pages(result) -> list[Path]:
    return [result.index, *result.pages]


@pytest.mark.slow
def test_writes_index_and_one_page_per_run(built):
    _, result = built
    assert result.index == result.out_dir / "index.html" and result.index.exists()
    names = sorted(p.name for p in result.pages)
    # two runs of the same pair: each page is named after its run
    assert names == sorted([f"{RUN_ID}.html", f"{XSS_RUN_ID}.html"])
    assert all(p.exists() for p in result.pages)
    html = (result.out_dir / f"{RUN_ID}.html").read_text()
    for section in ("headline", "roofline", "stalls", "sol", "memory", "kernels", "timeline", "flops",
                    "warnings", "correctness", "provenance"):
        assert f'id="{section}"' in html, section
    for chart in ("stalls", "memory", "timeline", "roofline-thumb"):       # SVG written directly (issue 33)
        assert (result.out_dir / "img" / f"{RUN_ID}-{chart}.svg").stat().st_size > 1500, chart
    index = result.index.read_text()
    assert index.count('<tr data-chapter="ch09" data-card="H200">') == 2 and 'id="chapter-filter"' in index
    assert 'id="card-filter"' in index and re.search(r'data-chapter="ch09" data-card="H200">2</button>', index)
    assert not list(result.out_dir.parent.glob(".*partial*"))


@pytest.mark.slow
def test_every_local_reference_resolves_and_nothing_is_remote(built):
    _, result = built
    for page in all_pages(result):
        text = page.read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text, page
        # only the inline roofline SVG's clip paths, url(#id), which must name an id of the page
        assert "@import" not in text and not re.search(r"url\((?!#)", text), page
        assert set(re.findall(r"url\(#([\w-]+)\)", text)) <= set(re.findall(r'id="([\w-]+)"', text)), page
        parsed = parse(page)
        assert parsed.refs, page
        for tag, ref in parsed.refs:
            url = urlsplit(ref)
            assert url.scheme in ("", "data"), (page.name, ref)
            assert not ref.startswith("//"), (page.name, ref)
            if url.scheme == "data":
                continue
            if url.path:
                target = (page.parent / unquote(url.path)).resolve()
                assert target.is_file(), (page.name, ref)
                assert result.out_dir.resolve() in target.parents, (page.name, ref)   # stays in the folder
                if url.fragment and target.suffix == ".html":
                    assert f'id="{url.fragment}"' in target.read_text(), (page.name, ref)
            elif url.fragment:
                assert url.fragment in parsed.ids, (page.name, ref)


@pytest.mark.slow
def test_script_in_a_kernel_name_is_escaped_and_inert_on_every_page(built):
    _, result = built
    js = (TEMPLATES / "report.js").read_text()
    xss_page = result.out_dir / f"{XSS_RUN_ID}.html"
    html = xss_page.read_text()
    # shown exactly, escaped: the full name in the kernel table
    assert "void f&lt;script&gt;alert(1)&lt;/script&gt;&lt;float, 4&gt;(int)" in html
    assert "xss &lt;b&gt;label&lt;/b&gt;" in html
    for page in all_pages(result):
        text = page.read_text()
        assert "<script>alert" not in text and "<b>label" not in text, page
        parsed = parse(page)
        # the only script is the report's own sorting/filter script, allowed by hash in the CSP
        assert len(parsed.scripts) == 1 and "".join(parsed.script_text) == js, page
        assert parsed.event_handlers == [], page
        assert "Content-Security-Policy" in text and "script-src 'sha256-" in html_lib.unescape(text)
    # the data behind the page keeps the name as it was measured
    data = json.loads((result.out_dir / "data" / f"{XSS_RUN_ID}.json").read_text())
    assert XSS_NAME in {k["kernel"] for k in data["kernels"]}


@pytest.mark.slow
def test_kernel_names_with_templates_show_exactly(built):
    db, result = built
    html = (result.out_dir / f"{RUN_ID}.html").read_text()
    kernels = store.read_table(db, "kernels", RUN_ID)
    from markupsafe import escape

    for name in kernels["kernel"]:
        assert str(escape(name)) in html, name
    assert "void &lt;unnamed&gt;::l2norm_rows_in_registers&lt;float4, 8&gt;(const T1 *, T1 *, int, int, float)" in html


@pytest.mark.slow
def test_report_data_from_the_sample(tmp_path, sample_dbs):
    db = sample_dbs.copy(tmp_path / "a.db", sample_dir())
    data = open_db(db).page("latest")
    json.dumps(data)                                   # plain data, JSON-ready
    summary = {s["variant"]: s for s in summary_of(open_db(db).run(RUN_ID))["summary"]}
    assert data["variants"] == ["baseline", "cuda", "triton"] and data["chapter"] == "ch09"
    heads = {h["variant"]: h for h in data["headline"]}
    assert set(heads) == {"cuda", "triton"}
    for v, h in heads.items():
        assert h["speedup"] == pytest.approx(summary[v]["speedup_vs_baseline"])
        assert h["correct"] is True
    # the headline is the book's fused CUDA kernel even where the Triton one (beyond the book) is faster
    assert data["best"]["variant"] == "cuda" == data["answer"]["best"] != max(heads, key=lambda v: heads[v]["speedup"])
    assert heads["triton"]["book"] == "beyond the book" and heads["cuda"]["book_ratio_b200"] == 2.44
    # CUDA-event speedup from the check child's medians (run.json timing_cuda_events)
    events = json.loads((sample_dir() / "run.json").read_text())["timing_cuda_events"]
    assert heads["cuda"]["speedup_cuda_events"] == pytest.approx(events["baseline"]["median_ns"] / events["cuda"]["median_ns"])
    # stalls: instruction-weighted like the summary's top stalls, 'selected' kept apart
    kernels = store.read_table(db, "kernels", RUN_ID)
    cuda_k = kernels[kernels["variant"] == "cuda"].iloc[0]
    assert data["stalls"]["cuda"]["long_scoreboard"] == pytest.approx(cuda_k["stall_long_scoreboard"])
    assert "selected" not in data["stalls"]["cuda"] and data["stall_selected"]["cuda"] == cuda_k["stall_selected"]
    base_k = kernels[kernels["variant"] == "baseline"]
    w = base_k["inst_executed"]
    assert data["stalls"]["baseline"]["long_scoreboard"] == pytest.approx(
        (base_k["stall_long_scoreboard"] * w).sum() / w.sum())
    assert data["stall_reasons"][0] == "long_scoreboard"
    # memory per level: sums over the variant's ncu kernels
    mem = {m["variant"]: m for m in data["memory"]}
    assert mem["baseline"]["l2_bytes"] == pytest.approx(base_k["l2_bytes"].sum())
    assert mem["cuda"]["dram_bytes"] == pytest.approx(cuda_k["dram_read_bytes"] + cuda_k["dram_write_bytes"])
    # kernel table: 5 distinct baseline kernels, one launch each in the ncu replay
    ktab = [k for k in data["kernels"] if k["variant"] == "baseline"]
    assert len(ktab) == 5 and all(k["launches"] == 1 and k["source"] == "ncu" for k in ktab)
    cuda_row = next(k for k in data["kernels"] if k["variant"] == "cuda")
    assert (cuda_row["grid_dim"], cuda_row["block_dim"], cuda_row["registers_per_thread"]) == (
        cuda_k["grid_dim"], cuda_k["block_dim"], cuda_k["registers_per_thread"])
    assert cuda_row["shared_bytes"] == cuda_k["static_shared_bytes"] + cuda_k["dynamic_shared_bytes"]
    # timeline: one call per variant; the baseline call's gaps are one fifth-ish of the range's
    ranges = store.read_table(db, "ranges", RUN_ID).set_index("variant")
    tl = data["timeline"]
    assert [len(tl[v]["kernels"]) for v in ("baseline", "cuda", "triton")] == [5, 1, 1]
    assert tl["cuda"]["gap_total_ns"] == 0
    assert 0 < tl["baseline"]["gap_total_ns"] <= ranges.loc["baseline", "gap_total_ns"]
    assert tl["baseline"]["gap_max_ns"] <= ranges.loc["baseline", "gap_max_ns"]
    # speed of light: per kernel plus a duration-weighted baseline row
    sol = [r for r in data["sol"] if r["variant"] == "baseline"]
    assert len(sol) == 6 and sol[-1]["total"]
    assert sol[-1]["sol_dram_pct"] == pytest.approx(
        (base_k["sol_dram_pct"] * base_k["duration_ns"]).sum() / base_k["duration_ns"].sum())
    # provenance straight from run.json
    info = json.loads((sample_dir() / "run.json").read_text())
    p = data["provenance"]
    assert p["driver_version"] == info["gpu"]["driver_version"] and p["cuda_version"] == info["env"]["torch_cuda_version"]
    assert p["git_sha"] == info["git_sha"] and p["ncu_version"] == info["tools"]["ncu"]["version"]
    assert p["clock_control"] == "none" and p["sm_clock_max_mhz"] == info["gpu"]["sm_clock_max_mhz"]
    assert p["commands"]["ncu"].startswith(info["commands"]["ncu"][0]) and "--nvtx-include" in p["commands"]["ncu"]


def test_short_kernel_names():
    assert short_kernel_name("void at::native::f<float, 4>(float*, int)") == "at::native::f"
    assert short_kernel_name("void <unnamed>::k<float4, 8>(const T1 *)") == "<unnamed>::k"
    assert short_kernel_name("_l2norm_rows") == "_l2norm_rows"


@pytest.mark.slow
def test_select_runs(tmp_path, sample_dbs):
    db = sample_dbs.copy(tmp_path / "a.db", sample_dir())
    store_xss_run(db)
    assert open_db(db).select() == [XSS_RUN_ID]                  # latest run of each pair
    assert open_db(db).select(targets=["ch09"]) == [XSS_RUN_ID]
    assert open_db(db).select(targets=["ch9"]) == [XSS_RUN_ID]
    assert open_db(db).select(targets=["ch09.fused_l2norm"]) == [XSS_RUN_ID]
    assert open_db(db).select(runs=[RUN_ID, "latest", RUN_ID]) == [RUN_ID, XSS_RUN_ID]
    with pytest.raises(UnknownTargetError, match="ch14"):
        open_db(db).select(targets=["ch14"])
    with pytest.raises(UnknownTargetError, match="unknown run"):
        open_db(db).select(runs=["nope"])
    with pytest.raises(MissingDatabaseError, match="no run database"):
        open_db(tmp_path / "missing.db").select()
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.slow
def test_default_name_and_replacing_a_report(tmp_path, sample_dbs):
    db = sample_dbs.copy(tmp_path / "a.db", sample_dir())
    first = open_db(db).report([RUN_ID], reports_dir=tmp_path / "reports")
    assert first.out_dir == tmp_path / "reports" / "ch09.fused_l2norm-20261126T011557Z"
    assert [p.name for p in first.pages] == ["ch09.fused_l2norm.html"]
    again = open_db(db).report([RUN_ID], out=first.out_dir)     # a report folder is replaced
    assert again.index.exists()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(AispError, match="not an aisp-prof report folder"):
        open_db(db).report([RUN_ID], out=foreign)
    assert (foreign / "notes.txt").read_text() == "keep me"


@pytest.mark.slow
def test_nsys_only_import_still_reports(tmp_path, fixtures_dir):
    """A bare nsys export: no counters, no checks: the page says what is missing, no crash."""
    db = tmp_path / "a.db"
    run_id = store_path(db, fixtures_dir / "h200" / "l2norm_pair_nsys.sqlite.gz")
    result = open_db(db).report([run_id], out=tmp_path / "out")
    html = result.pages[0].read_text()
    assert "No Nsight Compute counters" in html or "no Nsight Compute counters" in html
    assert (result.out_dir / "img").is_dir()
    data = open_db(db).page(run_id)
    assert data["kernels"] and all(k["source"] == "nsys" for k in data["kernels"])


# ----------------------------------------------------------------------------------------- CLI


def invoke(*args: str):
    from aisp_prof.cli import cli

    return CliRunner().invoke(cli, list(args))


@pytest.mark.slow
def test_cli_report_prints_the_index_path(tmp_path, sample_dbs):
    db = sample_dbs.copy(tmp_path / "a.db", sample_dir())
    out = tmp_path / "rep"
    res = invoke("report", "latest", "--db", str(db), "--out", str(out))
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == str(out / "index.html")
    assert (out / "index.html").exists() and (out / "ch09.fused_l2norm.html").exists()
    res = invoke("report", "--targets", "ch09", "--db", str(db), "--out", str(out))
    assert res.exit_code == 0, res.output


@pytest.mark.slow
def test_cli_report_unknown_run_is_exit_2_one_line(tmp_path, sample_dbs):
    db = sample_dbs.copy(tmp_path / "a.db", sample_dir())
    for args in (["no-such-run"], ["--targets", "ch99"]):
        res = invoke("report", *args, "--db", str(db), "--out", str(tmp_path / "x"))
        assert res.exit_code == 2, res.output
        assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("aisp-prof: error:")
    assert not (tmp_path / "x").exists()


def test_cli_report_help_has_example():
    res = invoke("report", "--help")
    assert res.exit_code == 0 and "Example" in res.output and "--targets" in res.output


@pytest.mark.slow
def test_quickstart_without_gpu_builds_the_sample_report(quickstart_without_gpu):
    res = quickstart_without_gpu                     # run once per session (tests/conftest.py)
    assert res.exit_code == 0, res.output
    index = Path(res.stdout.strip().splitlines()[-1].split()[-1])
    assert index.name == "index.html" and (res.folder / index).exists()
    html = (res.folder / index).read_text()
    # every shipped sample set: three chapters on both cards, and the 2-GPU runs, grouped by both
    assert len(re.findall(r'<tr data-chapter="', html)) == len(every_sample_run())
    for chapter, card in (("ch09", "H200"), ("ch09", "H100"), ("ch10", "H100"), ("ch10", "H200"),
                          ("ch14", "H100"), ("ch14", "2x H100"), ("ch14", "2x H200")):
        assert re.search(rf'class="group-pick" data-chapter="{chapter}" data-card="{card}">\d+</button>', html)
    # the same pair on two cards, one run on each: one page each, named by the card (two runs of a pair on one
    # card, as ch09.fused_l2norm's H200 runs of 2026-11-26 and 2026-11-30, are named by their run ids)
    assert re.search(r'href="ch14\.regional_triton\.H200\.html"', html)
    assert re.search(r'href="ch14\.regional_triton\.H100\.html"', html)
    assert re.search(r'href="20261130T081134Z-ch09\.fused_l2norm-3868\.html"', html)
    chapters = re.findall(r'<tr data-chapter="(ch\d+)" data-card="([^"]+)"', html)
    assert chapters == sorted(chapters)


@pytest.mark.slow
def test_cli_report_open_hands_the_index_to_the_browser(tmp_path, monkeypatch, sample_dbs):
    import webbrowser

    opened = []
    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: opened.append(url) or True)
    db = sample_dbs.copy(tmp_path / "a.db", sample_dir())
    res = invoke("report", RUN_ID[:8], "--db", str(db), "--out", str(tmp_path / "rep"), "--open")
    assert res.exit_code == 0, res.output
    assert opened == [(tmp_path / "rep" / "index.html").resolve().as_uri()]


@pytest.mark.slow
def test_a_failed_check_is_shown_as_failed(tmp_path):
    """The sample run stored as if the cuda variant had failed its check (as `aisp-prof run`
    stores a failing pair): NO on the card, the table and the index, the message, a warning."""
    db = tmp_path / "a.db"
    data = load_run_dir(sample_dir())
    data.run["status"] = "failed"
    message = "FAIL: rel_err_vs_reference=3.2e-01 > tolerance 1e-05"
    cuda = data.checks["variant"] == "cuda"
    data.checks.loc[cuda, "passed"], data.checks.loc[cuda, "message"] = False, message
    store.write_run(db, data)
    rep = open_db(db).report([RUN_ID], out=tmp_path / "out")
    html = rep.pages[0].read_text()
    assert '<span class="bad">NO</span>' in html and html_lib.escape(message, quote=False) in html
    assert "cuda: FAILED its correctness check" in html and "run status is &#39;failed&#39;" in html
    assert '<div class="big bad">wrong output</div>' in html
    assert '<span class="bad">NO</span>' in rep.index.read_text()
    data = open_db(db).page(RUN_ID)
    assert {h["variant"]: h["correct"] for h in data["headline"]} == {"cuda": False, "triton": True}


@pytest.mark.slow
def test_report_labels_the_sparse_roof_of_the_sparsity_sample(tmp_path):
    """ch09.structured_sparsity (H200 sample): the baseline is judged against the dense bf16 roof
    (96% of it), sparse24 and sparse24_tuned against the 2:4-sparse one (50% and 77% of it), and
    the page names both."""
    db = tmp_path / "a.db"
    run_id = "20261126T034324Z-ch09.structured_sparsity-c433"
    store_path(db, {d.name: d for d in sample_run_dirs()}[run_id])
    data = open_db(db).page(run_id)
    bound = {s["variant"]: s["bound"] for s in data["summary"]}
    assert bound == {"baseline": "compute (tensor_bf16)", "sparse24": "compute (tensor_bf16 2:4 sparse)",
                     "sparse24_tuned": "compute (tensor_bf16 2:4 sparse)"}
    rows = {r["variant"]: r for r in data["roofline_rows"] if r["total"]}
    assert rows["baseline"]["precision_name"] == "tensor_bf16"
    assert rows["baseline"]["pct_of_roof"] == pytest.approx(96.2, abs=0.5)
    for variant, pct in (("sparse24", 49.6), ("sparse24_tuned", 77.2)):
        assert rows[variant]["precision_name"] == "tensor_bf16 2:4 sparse"
        assert rows[variant]["pct_of_roof"] == pytest.approx(pct, abs=0.5), variant
    ceilings = {c["name"]: c for c in data["ceilings"]}
    sparse = ceilings["tensor_bf16 2:4 sparse compute"]
    assert sparse["theoretical"] == pytest.approx(2 * ceilings["tensor_bf16 compute"]["theoretical"])
    assert "derived" in sparse["note"]


# ------------------------------------------------------------------------- memcpy on the timeline

SPARSITY_RUN_ID = "20261126T034324Z-ch09.structured_sparsity-c433"
COPY_BYTES = 536_870_912                  # sparse24's c.copy_(result): a 512 MiB DtoD copy per call


@pytest.mark.slow
def test_timeline_strip_shows_the_memcpy_a_call_ends_with(tmp_path, sample_dbs):
    """ch09.structured_sparsity: sparse24 and sparse24_tuned end each call with a 537 MB DtoD
    copy; the strip carries it (after the kernel), the row label names it, the legend too, and
    the pair page's memory-op and timeline tables list it."""
    from aisp_prof.render.timeline import row_label, timeline_figure

    db = sample_dbs.copy(tmp_path / "a.db", SPARSITY_RUN_ID)
    data = open_db(db).page(SPARSITY_RUN_ID)
    tl = data["timeline"]
    for v in ("sparse24", "sparse24_tuned"):
        copies = [m for m in tl[v]["memory_ops"] if m["operation"] == "memcpy"]
        assert [(m["copy_kind"], m["size_bytes"]) for m in copies] == [("DtoD", COPY_BYTES)], v
        assert tl[v]["memcpy_count"] == 1 and tl[v]["memcpy_bytes"] == COPY_BYTES
        assert copies[0]["start_ns"] >= tl[v]["kernels"][-1]["end_ns"]          # the call ends with it
        assert copies[0]["end_ns"] == tl[v]["span_ns"]
        assert 240_000 < copies[0]["duration_ns"] < 270_000
        assert tl[v]["busy_ns"] >= tl[v]["kernel_time_ns"] + copies[0]["duration_ns"]
        assert "1 kernel, 1 memcpy (537 MB)" in row_label(v, tl[v])
    assert tl["baseline"]["memcpy_count"] == 0 and "memcpy" not in row_label("baseline", tl["baseline"])
    assert row_label("baseline", tl["baseline"]).splitlines()[1] == "1 kernel, 1 memset (4 B)"

    fig = timeline_figure(tl)
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert sum("1 kernel, 1 memcpy (537 MB)" in t for t in ticks) == 2
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "memcpy DtoD 537 MB" in legend
    hatched = [c for c in ax.collections if c.get_hatch() == "////"]
    assert len(hatched) == 2                                                    # one copy box per optimized row

    ops = [m for m in data["memory_ops"] if m["operation"] == "memcpy"]
    assert [(m["variant"], m["size_bytes"], m["per_call"]) for m in ops] == [
        ("sparse24", COPY_BYTES, 1), ("sparse24_tuned", COPY_BYTES, 1)]
    page = open_db(db).report([SPARSITY_RUN_ID], out=tmp_path / "out").pages[0].read_text()
    assert 'id="memory-ops"' in page and "memcpy DtoD" in page
    timeline_table = page[page.index('id="timeline"'):page.index('id="flops"')]
    assert timeline_table.count("1 × 537 MB") == 2


@pytest.mark.slow
def test_timeline_gaps_and_busy_time_agree_with_the_range_table(tmp_path, sample_dbs):
    """Every call of every variant, taken as a strip, sums to the ranges table's GPU time and
    gaps (nsys_sqlite's definition: idle time between any two operations of one call)."""
    from aisp_prof.analyze.timeline.call import strip_rows

    db = sample_dbs.copy(tmp_path / "a.db", SPARSITY_RUN_ID)
    timeline = store.read_table(db, "timeline", SPARSITY_RUN_ID).assign(operation="kernel")
    memory_ops = store.read_table(db, "memory_ops", SPARSITY_RUN_ID)
    ranges = store.read_table(db, "ranges", SPARSITY_RUN_ID).set_index("variant")
    work = pd.concat([timeline, memory_ops], ignore_index=True)
    for v in ("baseline", "sparse24", "sparse24_tuned"):
        mine = work[work["variant"] == v]
        strips = [strip_rows(call) for _, call in mine.groupby("range_instance")]
        assert len(strips) == ranges.loc[v, "occurrences"]
        assert sum(s["busy_ns"] for s in strips) == ranges.loc[v, "gpu_time_ns"], v
        assert sum(s["gap_total_ns"] for s in strips) == ranges.loc[v, "gap_total_ns"], v
        assert max(s["gap_max_ns"] for s in strips) == ranges.loc[v, "gap_max_ns"], v
        assert sum(s["kernel_time_ns"] for s in strips) == ranges.loc[v, "kernel_time_ns"], v
        assert sum(s["memcpy_bytes"] for s in strips) == ranges.loc[v, "memcpy_bytes"], v


@pytest.mark.slow
def test_a_run_stored_without_memory_ops_still_renders(tmp_path):
    """A database written before memory ops were kept (no memory_ops table): kernels only,
    no memory-op table on the page, nothing breaks."""
    db = tmp_path / "old.db"
    old = load_run_dir({d.name: d for d in sample_run_dirs()}[SPARSITY_RUN_ID])
    old.memory_ops = old.memory_ops.iloc[0:0]
    old.ranges = old.ranges.drop(columns=[c for c in old.ranges if c.startswith(("memcpy_", "memset_"))])
    store.write_run(db, old)
    assert store.read_table(db, "memory_ops", SPARSITY_RUN_ID).empty
    data = open_db(db).page(SPARSITY_RUN_ID)
    assert data["memory_ops"] == []
    assert all(not t["memory_ops"] and len(t["kernels"]) == 1 for t in data["timeline"].values())
    result = open_db(db).report([SPARSITY_RUN_ID], out=tmp_path / "out")
    html = result.pages[0].read_text()
    assert 'id="memory-ops"' not in html and 'id="timeline"' in html
    assert (result.out_dir / "img" / "ch09.structured_sparsity-timeline.svg").stat().st_size > 3000


@pytest.mark.slow
def test_the_same_pair_on_two_cards_gets_a_page_each_and_a_card_switch(tmp_path, sample_dbs):
    """ch09.fused_l2norm recorded on the H200 (profiles/samples) and the H100 (samples_h100): one
    page per card, named by it, each linking to the other from its title."""
    h100 = "20261126T045251Z-ch09.fused_l2norm-ba93"
    db = sample_dbs.copy(tmp_path / "a.db", sample_dir(), next(every_sample_run_named(h100)))
    rep = open_db(db).report([RUN_ID, h100], out=tmp_path / "out")
    assert sorted(p.name for p in rep.pages) == ["ch09.fused_l2norm.H100.html", "ch09.fused_l2norm.H200.html"]
    h200_page = (tmp_path / "out" / "ch09.fused_l2norm.H200.html").read_text()
    assert re.search(r'<p class="card-switch">This pair on: <a href="ch09\.fused_l2norm\.H100\.html">H100</a> · '
                     r'<b>H200</b></p>', h200_page)
    h100_page = (tmp_path / "out" / "ch09.fused_l2norm.H100.html").read_text()
    assert '<b>H100</b> · <a href="ch09.fused_l2norm.H200.html">H200</a>' in h100_page
    index = rep.index.read_text()
    assert index.index('data-card="H100"') < index.index('data-card="H200"')     # grouped by card


def every_sample_run_named(run_id):
    return (d for d in every_sample_run() if d.name == run_id)
