"""Issue 18: every table the CLI prints fits a 120-column terminal (long cells wrap or are cut,
empty and then low-priority columns are hidden, with a line saying which), and `--wide` prints
every column whole. On the real sample runs (profiles/samples*/: H200 and H100, chapters 9
and 10), no GPU. Also: --db, --json and --wide before or after the subcommand."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from repo_paths import every_sample_run

from aisp_prof.cli import cli
from aisp_prof.render.table import bench_table, render

RUN_DIRS = every_sample_run()
WIDTH = 120


def invoke(*args: str, columns: int = WIDTH):
    res = CliRunner().invoke(cli, list(args), env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, (args, res.output, res.exception)
    return res.stdout


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def header_line(text: str, first: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(first + "  "))


@pytest.fixture(scope="module")
def db(tmp_path_factory, sample_dbs) -> str:
    """Every shipped sample run (profiles/samples*), imported once per session (tests/conftest.py)."""
    assert len(RUN_DIRS) >= 40
    return str(sample_dbs.copy(tmp_path_factory.mktemp("tables") / "samples.db", *RUN_DIRS))


@pytest.mark.slow
@pytest.mark.parametrize("run", [d.name for d in RUN_DIRS])
def test_each_runs_tables_fit_120_columns_and_wide_keeps_every_column(db, run):
    for command, first, columns in (
            ("summary", "variant", ["kernels", "gpu time", "memcpy", "memset", "speedup", "correct", "DRAM bytes",
                                    "FLOPs", "DRAM BW", "FLOP/s", "top stalls (cycles/inst)"]),
            ("kernels", "range", ["kernel", "duration", "DRAM bytes", "FLOPs", "grid", "block"]),
            # every NVTX level per thread (issue 16): the thread and depth lead
            ("ranges", "thread", ["depth", "range", "calls", "kernels", "memcpy", "memset", "GPU time", "gaps",
                                  "max gap"]),
            ("roofline", "variant", ["kernel", "time", "FLOPs", "basis", "FLOP/s", "AI DRAM", "AI L2", "AI L1",
                                     "precision", "bound", "% roof", "% meas. roof"])):
        fitted = invoke(command, run, "--db", db)
        assert widest(fitted) <= WIDTH, (command, run, fitted)
        wide = invoke(command, run, "--db", db, "--wide")
        header = header_line(wide, first)
        assert all(f"  {c}" in header for c in columns), (command, header)
        assert "hidden to fit" not in wide
        assert header_line(fitted, first).split()[0] == first


@pytest.mark.slow
def test_run_list_history_list_and_calibrations_fit(db):
    for args in (["runs", "--db", db], ["history", "ch09.fused_l2norm", "--db", db], ["list"],
                 ["bench", "list-targets"], ["calibrate", "--show", "--db", db]):
        text = invoke(*args)
        assert widest(text) <= WIDTH, (args, text)
    runs = invoke("runs", "--db", db, "--wide")
    assert header_line(runs, "run_id").split() == ["run_id", "pair", "label", "source", "status", "created_at",
                                                    "gpu_name"]
    assert widest(runs) > WIDTH                          # the longest run id and pair need more than 120
    history = invoke("history", "ch09.fused_l2norm", "--db", db, "--wide")
    assert header_line(history, "created").split() == ["created", "run", "gpu", "SM", "MHz", "code", "status", "variant",
                                                       "time", "spread", "speedup", "timer", "gate"]
    listing = invoke("list", "--wide")
    assert header_line(listing, "pair").split() == ["pair", "variants", "runs", "here", "lesson"]
    assert widest(listing) > 200                         # lessons whole, one line each


@pytest.mark.slow
def test_a_narrow_terminal_gets_a_narrower_table(db):
    """At 80 columns more is hidden and the stalls wrap narrower; what is left (variant names are
    never cut, the essential columns never hidden) may still need 85."""
    text = invoke("summary", "ch10.warp_specialization_cutlass", "--db", db, columns=80)
    assert widest(text) <= 85 < widest(invoke("summary", "ch10.warp_specialization_cutlass", "--db", db))
    assert "hidden to fit 80" in text and "cooperative_256x128_c2_swizzle8" in text
    assert header_line(text, "variant").split()[:4] == ["variant", "gpu", "time", "speedup"]


@pytest.mark.slow
@pytest.mark.parametrize("columns", [80, 120])
def test_diff_ranks_and_code_fit_80_and_120(db, columns):
    """Issue 31, item 8: `diff`, `ranks` and `code` printed 131-148 columns even at COLUMNS=80;
    their tables and the prose around them now fit (a listing, --show sass, is the compiler's text)."""
    multi = [d.name for d in RUN_DIRS if "quantized_allreduce" in d.name]
    l2 = [d.name for d in RUN_DIRS if "fused_l2norm" in d.name]
    assert len(multi) == 3 and len(l2) >= 2        # 2x H100; 2x H200 of 2026-11-26 and of 2026-11-29
    for args in (["diff", l2[0], l2[1]], *(["ranks", r] for r in multi),
                 ["code", "ch14.graph_break_control_flow"], ["code", "ch14.graph_break_control_flow", "--all"]):
        text = invoke(*args, "--db", db, columns=columns)
        assert widest(text) <= columns, (args, columns, text)
    diff = invoke("diff", l2[0], l2[1], "--db", db, columns=columns)
    assert "times and speedups: nsys GPU time" in diff        # the pair's first timer both (pre-issue-28) runs have
    assert header_line(diff, "variant").split()[:4] == ["variant", "time", "A", "time"]


def test_bench_and_sanitize_tables_fit():
    from aisp_prof.bench.runner import PairOutcome
    from aisp_prof.cli.sanitize import sanitize_table

    why = "variant(s) warp_specialized_tma failed the correctness check (max rel err 1.6e-03 > 1e-05) " * 2
    text = bench_table([PairOutcome("ch09.warp_specialization_producer_consumer", "run-1", "failed_check", why)], WIDTH)
    assert widest(text) <= WIDTH and "FAILED_CHECK" in text
    result = SimpleNamespace(pair="ch10.warp_specialized_cluster_pipeline", tool="racecheck", ok=False, errors=3,
                             wall_s=12.3, first_reports=["Error: Race reported between Write access at 0x1a0 in "
                                                         "kernel_fn and Read access at 0x2b0 in kernel_fn"] * 2)
    pair = SimpleNamespace(name="ch09.nvfp4_gemm")
    text = sanitize_table([result], [(pair, "needs sm_100 (tcgen05), this GPU is sm_90")], WIDTH)
    assert widest(text) <= WIDTH and "3 errors" in text and "skipped: needs sm_100" in text
    wide = sanitize_table([result], [], None)
    assert "Race reported between Write access at 0x1a0 in kernel_fn and Read access" in wide


def test_render_wraps_whole_words_keeps_numbers_with_units_and_says_what_it_hid():
    rows = [["a", "1 x 537 MB, 254.1 us", "-", "x" * 30, "long_scoreboard 14.5, sleeping 2.5, barrier 1.6"]]
    text = render(["variant", "memcpy", "empty", "extra", "stalls"], rows, 70, drop=("extra",),
                  wrap=("memcpy", "stalls"))
    assert widest(text) <= 70
    assert "254.1 us" in text and "long_scoreboard 14.5," in text   # a number stays with its unit or name
    assert text.splitlines()[-1] == "(2 columns hidden to fit 70: empty (empty), extra; --wide shows all)"
    assert render(["a"], [["y" * 200]], None) == "a\n" + "-" * 200 + "\n" + "y" * 200


@pytest.mark.slow
def test_shared_options_before_or_after_the_subcommand(db):
    after = invoke("runs", "--db", db)
    assert invoke("--db", db, "runs") == after
    run = RUN_DIRS[0].name
    as_json = json.loads(invoke("kernels", run, "--db", db, "--json"))
    assert json.loads(invoke("--json", "--db", db, "kernels", run)) == as_json
    assert json.loads(invoke("--db", db, "kernels", run, "--json")) == as_json
    assert json.loads(invoke("--json", "summary", run, "--db", db))["run"]["run_id"] == run
    assert json.loads(invoke("--json", "list"))[0]["name"].startswith("ch")
    assert json.loads(invoke("--json", "bench", "list-targets", "--chapter", "ch10"))[0]["chapter_key"] == "ch10"
    assert invoke("--wide", "--db", db, "summary", run) == invoke("summary", run, "--db", db, "--wide")
    other = str(Path(db).with_name("missing.db"))       # after the subcommand wins over before it
    assert invoke("--db", other, "runs", "--db", db) == after
