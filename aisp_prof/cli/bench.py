"""`aisp-prof bench ...`: whole chapters timed against recorded per-GPU expectations (the CI gate)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import INTERRUPTED_EXIT_CODE
from .common import (chapter_option, database, db_option, echo_json, extra_hint, json_option, profiles_dir_option,
                     finite_number, output_path, table_width, terminate_as_interrupt, whole_number, wide_option)


@click.group("bench")
def bench_group() -> None:
    """Time whole chapters against recorded per-GPU expectations (a regression gate for CI).

    \b
    Examples:
      aisp-prof bench list-targets --chapter ch09
      aisp-prof bench run --targets ch09                       # fails (exit 11) on a regression
      aisp-prof bench run --targets ch09.fused_l2norm --update-expectations
      aisp-prof bench ab --targets ch14.attention_eager_sdpa --base HEAD   # your change, side by side
      aisp-prof bench agree --targets ch10          # stored runs against the gate's evidence
    """


@bench_group.command("list-targets")
@chapter_option
@json_option
@wide_option
def list_targets(chapter: str | None, as_json: bool) -> None:
    """Pairs `bench run --targets` accepts (a chapter name selects all of its pairs).

    \b
    Example:
      aisp-prof bench list-targets --chapter ch09
    """
    from ..api.pairs import pair_list

    rows = pair_list(chapter)
    extra_hint(rows)
    if as_json:
        echo_json([{k: r[k] for k in ("name", "chapter_key", "can_run", "reason")} for r in rows])
        return
    width = table_width()
    for r in rows:
        line = f"{r['name']}\t{'runs here' if r['can_run'] else 'skipped here: ' + r['reason']}"
        click.echo(line if width is None or len(line.expandtabs()) <= width else line[: width - 11] + "...")


@bench_group.command("record")
@click.argument("runs", nargs=-1, required=True)
@click.option("--expectations", type=click.Path(dir_okay=False, path_type=Path),
              help="Record into this file instead of kernels/chNN/expectations_<gpu of the run>.json.")
@click.option("--force", is_flag=True, help="Record a throttled run, or one made from other code than the pair's module now.")
@db_option
@json_option
def bench_record(runs: tuple[str, ...], expectations: Path | None, force: bool, db: Path | None, as_json: bool) -> None:
    """Add stored runs (ids, prefixes, 'latest' or pair names) as sessions of their pairs'
    recorded evidence: e.g. a `bench run` on another machine that changed no code, which widens
    each A/A margin to what two machines showed. Runs without timed samples or a passing check,
    runs of other code than the pair's module now (a test fixture, an older version), and runs
    already recorded (their processes would count twice; even with --force) are refused (exit 1
    if any was; with --json each refused run's "message" says why).

    \b
    Example:
      aisp-prof bench record ch09.fused_l2norm ch09.triton
    """
    from ..bench.runner import record_error

    outcomes = database(db).bench_record(runs, expectations, force)
    if as_json:
        echo_json([o.to_dict() for o in outcomes])
    else:
        for o in outcomes:
            click.echo(f"{o.pair}\t{o.run_id}\t" + (f"recorded -> {o.recorded}" if o.recorded else o.message))
    error = record_error(outcomes, as_json)
    if error is not None:
        raise error


@bench_group.command("run")
@click.option("--targets", multiple=True, required=True, help="Chapters (ch09) or pairs; repeatable.")
@click.option("--profile", type=click.Choice(["none", "minimal", "roofline", "full"]), default="none",
              show_default=True, help="none: timing only; minimal: + nsys; roofline: + ncu; full: + both, more metrics.")
@click.option("--repeats", default=10, show_default=True, type=whole_number(1),
              help="Interleaved rounds per timing process, at least.")
@click.option("--budget-s", default=2.0, show_default=True, type=finite_number(0.0),
              help="Sampling time per timing process (seconds).")
@click.option("--floor-rounds", default=40, show_default=True, type=whole_number(0),
              help="Where a process's budget runs out before its medians are known to 0.25%, it samples on to "
                   "this many rounds (at most 5 budgets of wall time): a slow pair's one process can decide. "
                   "0: none (e.g. --floor-rounds 0 for the old stop).")
@click.option("--processes", default=1, show_default=True, type=whole_number(1),
              help="Timing processes per pair, at least; a second always confirms a FASTER or SLOWER.")
@click.option("--max-processes", default=5, show_default=True, type=whole_number(1),
              help="Processes at most: the confirming one, then more while a verdict is AMBIGUOUS.")
@click.option("--pair-budget-s", type=finite_number(0.0, min_open=False), default=40.0, show_default=True,
              help="Seconds a pair may take before the chase of an AMBIGUOUS verdict stops (a confirming process "
                   "always runs); the verdict's cause says why it stopped. 0: no chase.")
@click.option("--update-expectations", is_flag=True, help="Record this run as a new session of each passing pair's "
              "evidence in expectations_<gpu>.json (refused for a throttled run).")
@click.option("--record-processes", default=4, show_default=True, type=whole_number(1),
              help="Timing processes of a recording session.")
@click.option("--force", is_flag=True, help="With --update-expectations: record a throttled run too.")
@click.option("--strict", is_flag=True, help="AMBIGUOUS fails the gate too (exit 11): for a CI job that must decide.")
@click.option("--expectations", type=click.Path(dir_okay=False, path_type=Path),
              help="Compare with (or record into) this file instead of kernels/chNN/expectations_<gpu>.json.")
@click.option("--nproc-per-node", type=click.IntRange(2, 64), default=None,
              help="Ranks of the multi-GPU pairs (default: each pair's world_size); their evidence is kept per "
                   "rank count and card, kernels/chNN/expectations_<N>x_<gpu>.json, and a call's time is its "
                   "slowest rank's. With --profile minimal the collectives' bus bandwidth is shown too.")
@click.option("--fresh-processes", "preload", flag_value=False, default=True,
              help="Start every check and timing process afresh (each imports torch: ~4 s on an H200 machine). "
                   "By default those of a GPU-timed pair are forked from one process that imported torch once; "
                   "a pair judged by host-side time always gets fresh ones.")
@click.option("--compile-cache", type=output_path(folder=True), default=None,
              help="Keep torch.compile's and Triton's caches in DIR between gates (e.g. --compile-cache "
                   "~/.cache/aisp-gate): a gate after a gate finds its pairs' first processes' compiles and "
                   "autotuning done (the whole book: 7.7 instead of ~11 minutes on an H200); a process that "
                   "confirms or chases a verdict still compiles anew. Runs then say compile_cache 'kept between "
                   "runs' and index no generated code. Default: each run compiles afresh in its own folder (Triton's "
                   "binaries aside: --fresh-binaries).")
@click.option("--fresh-binaries", is_flag=True,
              help="Compile every Triton binary anew, as on a fresh machine. By default a gate keeps the cubins and "
                   "launchers Triton compiles in ~/.cache/aisp-prof/triton-binaries ($AISP_TRITON_STORE) and finds "
                   "them there in later gates; every torch.compile lowering and autotune choice is still made "
                   "anew (on an H200, regional_triton 96.6 s compiling them anew, 70.4 s finding them). Runs then say "
                   "triton_binaries 'kept between runs' and count the kernels found (generated.from_store).")
@click.option("--junit", "junit", type=output_path(folder=False),
              help="Also write the verdicts as JUnit XML to FILE: a test case per pair and variant, a failure's "
                   "message the verdict's cause (e.g. --junit gate.xml).")
@click.option("--markdown", "markdown", type=output_path(folder=False),
              help="Also write a Markdown summary to FILE, a row per pair and variant (e.g. --markdown gate.md).")
@profiles_dir_option
@db_option
@json_option
@wide_option
def bench_run(targets: tuple[str, ...], db: Path | None, as_json: bool, junit: Path | None, markdown: Path | None,
              **options: Any) -> None:
    """Check every pair of TARGETS, time its variants side by side with two reference kernels,
    and judge each variant against the recorded evidence: FASTER, SLOWER, SAME or AMBIGUOUS.

    A variant is SLOWER (a regression) when its time (or its time relative to the baseline) and
    its cycles both moved beyond the A/A margin, and no reference kernel (nor the pair's library
    variant, cuBLAS say, within 5%) moved as far; a time that moved with the SM clock, or with the
    machine, is reported as such and does not fail.
    Exit 11 on a regression or a variant gone missing (with --strict, also on AMBIGUOUS), 7 on a
    failed check, 3 without a GPU.

    Stopped part way (Ctrl-C, or SIGTERM as a CI job's time limit sends), the pair in progress is
    abandoned (nothing of it stored) and the pairs that finished are still reported: the table,
    --json ("interrupted": true, the rest with status "not run"), --junit (skipped cases) and
    --markdown; then exit 130, or 7 or 11 if a finished pair failed (never hidden by the interrupt).

    \b
    Example:
      aisp-prof bench run --targets ch09                         # the gate
      aisp-prof bench run --targets ch09 --update-expectations  # record this GPU's evidence
      aisp-prof bench run --targets ch09.fused_l2norm --json
      aisp-prof bench run --targets ch14.quantized_allreduce --nproc-per-node 4 --profile minimal
      aisp-prof bench run --targets ch09 --junit gate.xml --markdown gate.md   # files for a CI job
      aisp-prof bench run --targets ch14 --compile-cache ~/.cache/aisp-gate    # a runner that keeps its caches
      timeout 3000 aisp-prof bench run --targets ch09 --json   # cut off (SIGTERM): the finished pairs
    """
    _check_out_files(junit, markdown)
    if options["compile_cache"] is not None:
        if options["update_expectations"]:
            raise click.UsageError("--compile-cache and --update-expectations: a recording compiles each timing "
                                   "process anew (its margin must hold the compiler's choices); drop one")
        options["compile_cache"] = options["compile_cache"].expanduser().resolve()

    # A line per pair and step on stderr (not a progress bar, which a log shows only at its end): a
    # gate cut off by a CI job's time limit says how far it got and what each pair cost. SIGTERM (the
    # time limit) stops it as Ctrl-C does, at its next step; the pairs that finished are still reported.
    with terminate_as_interrupt() as stop:
        gate = database(db).bench(targets, options, progress=lambda m: click.echo(m, err=True), tick=stop.check)
        payload = gate.payload()
        _write_ci_files(payload, junit, markdown, options["strict"])
        if as_json:
            echo_json(payload)
        else:
            _print_gate(gate)
        stop.seen = False        # a SIGTERM after the gate: its report is whole, its exit code stands
    error = gate.error(options["update_expectations"])
    if error is not None:
        raise error
    if gate.interrupted:
        click.echo(f"aisp-prof: {gate.stop_line()}", err=True)
        raise click.exceptions.Exit(INTERRUPTED_EXIT_CODE)


def _print_gate(gate: Any) -> None:
    """The text table of `bench run`, and what each multi-rank pair was judged against."""
    from ..render.table import bench_table

    click.echo(f"hardware key: {gate.hardware_key}")
    click.echo(bench_table(gate.outcomes, table_width()))
    for o in gate.outcomes:
        if o.hardware_key and o.hardware_key != gate.hardware_key:
            click.echo(f"{o.pair}: judged against the {o.hardware_key} evidence (a call's slowest rank)")
        for b in o.bus_bandwidth:
            click.echo(f"  {o.pair} {b['variant']} {b['op']}: {_gb(b.get('busbw_gb_per_s'))} bus bandwidth "
                       f"(nccl-tests), transfer {_us(b.get('collective_ns'))} after the last rank arrived")
    if gate.interrupted:
        click.echo(gate.stop_line())


@bench_group.command("agree")
@click.option("--targets", multiple=True, help="Chapters (ch10) or pairs; repeatable (default: every stored pair).")
@click.option("--card", default=None, help="Only runs on this card: its expectations key, e.g. h200, h100_80gb_hbm3 "
              "or 2x_h200 (default: every card with a stored run).")
@db_option
@json_option
@wide_option
def bench_agree(targets: tuple[str, ...], card: str | None, db: Path | None, as_json: bool) -> None:
    """Does a stored `aisp-prof run` say what the gate's evidence says? For the newest stored run of
    every pair and card, each optimized variant's headline speedup (its timer, its samples' 95%
    interval) beside the gate's recorded one in kernels/chNN/expectations_<card>.json (its A/A margin):
    AGREE when the run's interval reaches into the gate's margin, DIFFER when it lies wholly beyond
    it, NO-EVIDENCE without a recorded ratio. A DIFFER names the likely reasons the data shows:
    other code (source digests), other timers (and what the run says by the gate's), other sizes,
    validity warnings on the run, evidence of the legacy format-2 timer, or the gate's one-machine
    rule (evidence from one machine, the run from another: a host-side time, or a GPU time within
    what machines do).

    Exit 0 when every variant agrees or is explained, 11 when one differs with no reason the data
    shows, 2 when a target or card has no stored run.

    \b
    Example:
      aisp-prof import profiles/samples*/2026*       # the shipped runs, once
      aisp-prof bench agree --targets ch10 --card h100_80gb_hbm3
      aisp-prof bench agree --json
    """
    from ..bench.agree import agree, agree_error

    found = agree(database(db), targets, card)
    if as_json:
        echo_json([a.to_dict() for a in found])
    else:
        from ..render.table import agree_table

        click.echo(agree_table(found, table_width()))
        counts = {v: sum(a.verdict == v for a in found) for v in dict.fromkeys(a.verdict for a in found)}
        click.echo(", ".join(f"{n} {v}" for v, n in counts.items()) +
                   f" ({sum(not a.explained for a in found)} unexplained)")
    error = agree_error(found)
    if error is not None:
        raise error


def _check_out_files(*paths: Path | None) -> None:
    """Refuse, before a gate that may take minutes, a --junit/--markdown file that cannot be written
    there (its folder missing, or a folder by that name): exit 14."""
    from ..errors import OutputError, shorten

    for path in paths:
        if path is not None and (path.is_dir() or not path.resolve().parent.is_dir()):
            raise OutputError(f"cannot write {shorten(path)}: " + ("it is a folder" if path.is_dir() else
                                                                   "its folder does not exist"))


def _write_ci_files(payload: dict[str, Any], junit: Path | None, markdown: Path | None, strict: bool) -> None:
    """--junit and --markdown: each file whole or not at all (exit 14 naming it)."""
    from ..bench import ci_files
    from ..errors import OutputError, os_error_message, shorten

    for path, render in ((junit, ci_files.junit_xml), (markdown, ci_files.markdown)):
        if path is None:
            continue
        try:
            ci_files.write_atomic(path, render(payload, strict))
        except OSError as exc:
            raise OutputError(os_error_message(exc, f"writing {shorten(path)}", name_file=False)) from exc


def _gb(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} GB/s"


def _us(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e3:.1f} us"


@bench_group.command("ab")
@click.option("--targets", multiple=True, required=True, help="Pairs (or a chapter); repeatable.")
@click.option("--base", required=True, help="The base version: a kernels folder (holding chNN/<pair>.py) or a git "
              "revision (its kernels/ folder is extracted to a temporary folder; the work tree is not touched).")
@click.option("--sizes", default=None, help="Sizes for both versions, e.g. 'n=4096' (default: the pair's).")
@click.option("--repeats", default=10, show_default=True, type=whole_number(1),
              help="Interleaved rounds per timing process, at least.")
@click.option("--budget-s", default=2.0, show_default=True, type=finite_number(0.1, min_open=False),
              help="Sampling time per timing process (seconds).")
@click.option("--processes", default=2, show_default=True, type=whole_number(1),
              help="Timing processes, at least (the margin is learnt from their spread).")
@click.option("--max-processes", default=4, show_default=True, type=whole_number(1),
              help="Processes at most: more while a verdict is AMBIGUOUS or a change is not yet confirmed.")
@click.option("--strict", is_flag=True, help="AMBIGUOUS fails too (exit 11).")
@json_option
@wide_option
def bench_ab(targets: tuple[str, ...], base: str, as_json: bool, **options: Any) -> None:
    """Time each pair's code against a base version of it, side by side on this machine: both
    versions loaded in the same fresh processes, checked against their float64 reference, and
    every variant's base and candidate timed interleaved, round by round, by the gate's timer and
    the pair's kind of time. Each variant's candidate/base ratio (95% interval, hierarchical
    bootstrap) is FASTER, SLOWER, SAME or AMBIGUOUS against a margin learnt from the processes'
    spread, at least the A/A floor (2% for GPU time, 5% for latency and steady). This catches a
    host-side regression that `bench run` cannot tell from a machine moving.

    The candidate is the working tree's pair (or $AISP_KERNELS's). Exit 11 on SLOWER (or a variant
    gone missing; with --strict also AMBIGUOUS), 7 on a failed check, 2 on a --base that is
    neither a folder nor a git revision, 3 without a GPU.

    \b
    Examples:
      aisp-prof bench ab --targets ch14.attention_eager_sdpa --base HEAD      # uncommitted changes
      aisp-prof bench ab --targets ch09.fused_l2norm --base main~3 --json
      AISP_KERNELS=tests/fixtures/gate_kernels AISP_GATE_SLOWDOWN=0.10 \\
        aisp-prof bench ab --targets ch14.attention_eager_sdpa --base kernels   # a planted +10% host cost
    """
    from ..api.profiling import bench_ab as run_ab
    from ..bench.runner import gate_error

    # SIGTERM (a CI job's time limit) stops it as Ctrl-C does, at its next step: its temporary folder (the
    # extracted base, the reports, each process's compile cache) goes with it, exit 130
    with terminate_as_interrupt() as stop:
        def say(message: str) -> None:
            click.echo(message, err=True)
            stop.check()
        outcomes = run_ab(targets, base, options, progress=say)
    if as_json:
        echo_json({"base": base, "fails": any(o.fails for o in outcomes), "pairs": [o.to_dict() for o in outcomes]})
    else:
        from ..render.table import ab_table

        for o in outcomes:
            click.echo(f"{o.pair}: candidate vs base {o.base}, {o.kind} time, {o.processes} processes, "
                       f"A/A floor +-{o.to_dict()['floor']:.0%}" + (f"; {o.message}" if o.message and o.verdicts else ""))
        click.echo(ab_table(outcomes, table_width()))
    error = gate_error(outcomes)
    if error is not None:
        raise error
