"""Commands over stored runs, no GPU needed: list, import, rm, runs, kernels, ranges, summary, history."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import ArgumentError
from .common import (chapter_option, database, db_option, echo_json, extra_hint, json_option, record_texts, short,
                     stream_json_texts, stream_ndjson, table_width, whole_number, wide_option)


@click.command("list")
@click.argument("paths", nargs=-1)
@chapter_option
@json_option
@wide_option
def list_cmd(paths: tuple[str, ...], chapter: str | None, as_json: bool) -> None:
    """The kernel pairs under kernels/ch*/, with their lesson and whether they can run here.
    PATHS (optional): pair files or folders of them outside the repository, listed instead
    (exit 2 for a missing file, a syntax error or a module without PAIR).

    \b
    Example:
      aisp-prof list --chapter ch09 --json
      aisp-prof list my_pair.py
    """
    from ..api.pairs import pair_list

    rows = pair_list(chapter, paths)
    extra_hint(rows)
    if as_json:
        echo_json(rows)
        return
    from ..render.table import render

    click.echo(render(["pair", "variants", "runs here", "lesson"],
                      [[r["name"], ", ".join(r["variants"]), _runs_here(r), r["lesson"]] for r in rows], table_width(),
                      drop=("variants",), wrap=("lesson", "runs here", "variants"),
                      min_width={"lesson": 40, "runs here": 32}))


def _runs_here(row: dict[str, Any]) -> str:
    """'yes', or 'no: ' and the reason ('--json' has the missing module of the kernels extra)."""
    from ..pairs.discovery import KERNELS_EXTRA_MISSING

    if row["can_run"]:
        return "yes"
    return "no: " + (KERNELS_EXTRA_MISSING if row["reason"].startswith(KERNELS_EXTRA_MISSING) else row["reason"])


@click.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--label", help="A label stored with the run (default: the file name).")
@click.option("--job", help="The PATHS are the nsys SQLite exports of one multi-rank job's ranks (or folders of "
                            "them): store them as ONE run called NAME, with a rank column (see `aisp-prof ranks`).",
              metavar="NAME")
@click.option("--replace", is_flag=True, help="Replace the stored run of the same content (or run folder's run id) "
                                              "instead of saying it is already there, e.g. after `--label` was wrong.")
@db_option
@json_option
@click.pass_context
def import_cmd(ctx: click.Context, paths: tuple[Path, ...], label: str | None, job: str | None, replace: bool,
               db: Path | None, as_json: bool) -> None:
    """Store saved exports without a GPU: an aisp-prof run folder, an ncu CSV (--page raw; or
    gzipped, .csv.gz) or .ncu-rep, an nsys SQLite export (or gzipped, .sqlite.gz), or an nsys
    .nsys-rep (exported to SQLite on the fly by nsys from $AISP_NSYS or PATH; without nsys it
    exits 4 and says the `nsys export` command to run). Prints each run id.

    \b
    Every import is keyed by the content it read (the export's bytes, a run folder's files, a
    job's exports): the same content imported again stores nothing, prints the stored run's id
    and says on stderr it was already there (exit 0); --replace stores it anew in its place. A
    run folder missing an export its run.json says was made is refused (exit 6), named.
    Every path is tried; one that fails stores nothing and is reported on stderr (--json: status
    'failed' and its message), and the import exits with the first failure's code (6: a bad or
    incomplete export). A database that cannot be written stops it at once (exit 13).

    \b
    With --job, the exports of a job's ranks become one run: ranks from each export's environment
    (torchrun's RANK, Slurm's, Open MPI's; else the order given), timelines on one clock. Exports
    of different jobs, a rank missing or given twice, an export naming its rank beside one naming
    none: exit 6, nothing stored. `aisp-prof ranks NAME` (or summary, report...) then reads the run.

    \b
    Example:
      aisp-prof import profiles/samples/*/
      aisp-prof import my_kernel.ncu-rep --label before
      aisp-prof import my_kernel.ncu-rep --label after --replace     # fix the label of a stored export
      aisp-prof import timeline.nsys-rep
      aisp-prof import --job step42 rank0.sqlite rank1.sqlite    # or a folder of them
    """
    runs = database(db)
    done = [_import_job(runs, paths, job, label, replace)] if job else runs.import_paths(paths, label, replace)
    for record in done:
        if record["status"] == "failed":
            click.echo(f"aisp-prof: error: {record['message']}", err=True)
        elif record["status"] == "already stored" or record.get("replaced"):
            click.echo(record["message"] or f"{record['path']}: replaced run {', '.join(record['replaced'])}", err=True)
    if as_json:
        echo_json(done)
    else:
        for record in done:
            if record["run_id"] and record["status"] != "failed":
                click.echo(record["run_id"])
    failed = [r["exit_code"] for r in done if r["status"] == "failed"]
    if failed:
        ctx.exit(failed[0])


def _import_job(runs: Any, paths: tuple[Path, ...], job: str, label: str | None, replace: bool) -> dict[str, Any]:
    """`import --job`'s one record (a failure is raised: the job is one run, stored whole or not at all)."""
    from ..errors import RunExistsError

    record: dict[str, Any] = {"paths": [str(p) for p in paths], "job": job, "status": "stored", "message": None}
    try:
        record["run_id"] = runs.import_job(paths, job, label, replace)
    except RunExistsError as exc:
        record.update(run_id=exc.run_id, status="already stored", message=f"{job}: {exc}")
    return record


@click.command("rm")
@click.argument("runs", nargs=-1, required=True)
@db_option
@json_option
def rm_cmd(runs: tuple[str, ...], db: Path | None, as_json: bool) -> None:
    """Remove stored runs and every row of them (RUN: a run id, a unique prefix of one, 'latest',
    or a pair or job name: its latest run), all in one transaction. A RUN that names no stored run
    removes nothing and exits 2. The run folders on disk are left alone.

    \b
    Example:
      aisp-prof rm 20261126T011557Z-ch09.fused_l2norm-90df
      aisp-prof rm latest --json
    """
    removed = database(db).remove(runs)
    if as_json:
        echo_json(removed)
        return
    for r in removed:
        click.echo(f"removed {r['run_id']} ({r['pair'] or r['job'] or r['label']}: {r['rows_removed']} rows)")


@click.command("runs")
@db_option
@json_option
@wide_option
def runs_cmd(db: Path | None, as_json: bool) -> None:
    """The stored runs, oldest first.

    \b
    Example:
      aisp-prof runs --json
    """
    rows = database(db).run_list()
    if as_json:
        echo_json(rows)
        return
    from ..render.table import render

    cols = ["run_id", "pair", "label", "source", "status", "created_at", "gpu_name"]
    click.echo(render(cols, [[when(r[c]) if c == "created_at" else r[c] for c in cols] for r in rows], table_width(),
                      drop=("source", "pair", "created_at", "label"), clip=("label", "gpu_name", "pair")))


@click.command("kernels")
@click.argument("run")
@click.option("--variant", help="Only this variant.")
@click.option("--limit", type=whole_number(0), help="Only the first N launches, in stored order "
              "(a 1M-kernel timeline: `--limit 1000` reads 1000 rows).")
@click.option("--ndjson", is_flag=True, help="One compact JSON record per line instead of --json's array "
              "(the same records; streams a long timeline to jq or a file; not with --json).")
@db_option
@json_option
@wide_option
def kernels_cmd(run: str, variant: str | None, limit: int | None, ndjson: bool, db: Path | None,
                as_json: bool) -> None:
    """Kernel launches of RUN (an id, a unique prefix, 'latest', or a pair name: its latest run).

    \b
    Examples:
      aisp-prof kernels latest --json
      aisp-prof kernels latest --limit 20
      aisp-prof kernels latest --ndjson | jq -c 'select(.duration_ns > 100000)'
    """
    from ..api import KERNEL_RECORD_LAYOUT, kernel_records

    if as_json and ndjson:          # NDJSON was printed without a word: options at odds, exit 2
        raise ArgumentError("--json prints one JSON array, --ndjson one record per line: give one of them")
    if as_json or ndjson:          # 25k launches at a time: their text and encoded columns stay ~100 MB
        chunks = database(db).iter_kernels(run, variant, chunk_rows=25_000, limit=limit)
        texts = (record_texts(chunk, KERNEL_RECORD_LAYOUT, compact=ndjson) for chunk in chunks)
        stream_ndjson(texts) if ndjson else stream_json_texts(texts)
        return
    chunks = database(db).iter_kernels(run, variant, limit=limit)
    rows = [r for chunk in chunks for r in kernel_records(chunk)]
    from ..parse.metrics.rate_counts import derivation_note, derives_flops
    from ..render.table import render, wrap_lines
    from ..units import duration, si

    clusters = any(r.get("cluster_dim") for r in rows)      # the column only where a launch had one
    click.echo(render(["range", "kernel", "duration", "DRAM bytes", "FLOPs", "grid", "block"] + ["cluster"] * clusters,
                      [[r["nvtx_range"], short(r["kernel"]), duration(r["duration_ns"]),
                        si(r.get("dram_bytes"), "B"), si(r.get("flops_total")) + ("*" if derives_flops(r.get("derived_from_rates")) else ""),
                        r.get("grid_dim"), r.get("block_dim")] + [r.get("cluster_dim") or "-"] * clusters for r in rows],
                      table_width(), drop=("cluster", "block", "grid", "FLOPs"), clip=("kernel",),
                      clip_start=("range",), min_width={"kernel": 40, "range": 24}))
    derived = sorted({c for r in rows for c in (r.get("derived_from_rates") or "").split(",") if c})
    if derived:
        note = ("* FLOPs (derived from rates): " if derives_flops(derived) else "") + derivation_note(derived)
        for line in wrap_lines([note], table_width()):
            click.echo(line)


@click.command("ranges")
@click.argument("run")
@click.option("--depth", type=whole_number(1), help="Only ranges at this depth (1: outermost).")
@click.option("--max-depth", type=whole_number(1), help="Only ranges at most this deep.")
@click.option("--name", help="Only ranges whose path contains this text, or matches this glob "
                             "(`*`, `?`, `[...]`: the whole path or the range's own name).")
@db_option
@json_option
@wide_option
def ranges_cmd(run: str, depth: int | None, max_depth: int | None, name: str | None, db: Path | None,
               as_json: bool) -> None:
    """NVTX ranges of RUN from the nsys timeline, every level of every thread: kernels, CUDA
    graph launches, memcpys, memsets, GPU time, gaps.

    As Nsight Systems' nvtx_kern_sum: a range's work includes its children's (step0 counts the
    kernels of step0/forward/layer1), and a range on two threads is two rows. GPU time is the
    range's busy time summed over its calls: work launched in it (attributed by its API call);
    gaps are idle GPU time between its operations within a call. A CUDA graph traced as a whole
    (nsys's default) counts as one launch with its GPU time; its kernels need
    --cuda-graph-trace=node.

    \b
    Examples:
      aisp-prof ranges latest --depth 1
      aisp-prof ranges latest --name 'layer*' --json
      aisp-prof ranges latest --name forward --max-depth 2
    """
    from ..analyze.timeline.range_levels import GRAPH_NODE_HINT, has_whole_graphs
    from ..analyze.records import frame_records

    levels = database(db).range_levels(run, depth, max_depth, name)
    graphs = has_whole_graphs(levels)
    if as_json:
        echo_json(frame_records(levels))
        if graphs:
            click.echo(f"note: {GRAPH_NODE_HINT}", err=True)
        return
    from ..render.table import memory_ops_cell, render
    from ..units import duration

    rows = frame_records(levels)
    threads = any(r.get("thread_id") is not None for r in rows)
    head = ["thread"] * threads + ["depth", "range", "calls", "kernels"] + ["graphs"] * graphs + [
        "memcpy", "memset", "GPU time", "gaps", "max gap"]
    click.echo(render(head, [
        [r.get("thread_id")] * threads + [r.get("depth"), r["nvtx_range"], r.get("occurrences"), r["kernel_count"]]
        + [_graph_cell(r)] * graphs
        + [memory_ops_cell(r.get("memcpy_count"), r.get("memcpy_bytes"), r.get("memcpy_time_ns")),
           memory_ops_cell(r.get("memset_count"), r.get("memset_bytes"), r.get("memset_time_ns")),
           duration(r["gpu_time_ns"]), duration(r.get("gap_total_ns")), duration(r.get("gap_max_ns"))]
        for r in rows], table_width(), drop=("max gap", "memset", "memcpy", "calls", "depth"),
        clip_start=("range",), wrap=("memcpy", "memset")))
    if graphs:
        click.echo(f"note: {GRAPH_NODE_HINT}")


def _graph_cell(row: dict[str, Any]) -> str:
    """Whole-graph launches of a range: '3, 49.4 us'; none -> '-'."""
    from ..units import duration

    count = row.get("graph_launch_count")
    return f"{count:g}, {duration(row.get('graph_time_ns'))}" if count else "-"


@click.command("summary")
@click.argument("run")
@db_option
@json_option
@wide_option
def summary_cmd(run: str, db: Path | None, as_json: bool) -> None:
    """Per-variant summary of RUN: kernels, GPU time, speedup, correctness, bytes, FLOPs, stalls,
    the headline (the best optimization; a reference such as cuBLAS is shown as the share of its
    speed reached, never as the speedup) and what the numbers say (host-bound launches, timers
    that disagree, a predicted mechanism that did not happen).

    RUN is a run id, a unique prefix of one, 'latest', or a pair or job name (its latest run).

    \b
    Examples:
      aisp-prof summary latest
      aisp-prof summary ch09.fused_l2norm --json
    """
    result = database(db).summary_result(run)
    if as_json:
        echo_json({"run": result["run"], "headline": result["headline"], "verdict": result["verdict"],
                   "summary": result["summary"], "findings": result["findings"], "warnings": result["warnings"],
                   **({"per_rank": result["per_rank"]} if "per_rank" in result else {})})
    else:
        print_summary(result)


def print_summary(result: dict[str, Any]) -> None:
    """A run's header line, its headline, per-variant table, launches and compile cost, then what
    the numbers mean (verdict rules) and compile warnings."""
    from ..render.table import launch_compile_table, summary_table, wrap_lines
    from ..render.times_table import times_table

    info, width = result["run"], table_width()
    for line in wrap_lines([f"run {info['run_id']}  ({info.get('gpu_name') or 'unknown GPU'}, status {info['status']})"],
                           width):
        click.echo(line)
    if result.get("headline"):
        for line in wrap_lines([f"headline: {result['headline']['text']}"], width):
            click.echo(line)
    click.echo(summary_table(result["summary"], width))
    times = times_table(result["summary"], width)
    if times:
        click.echo("")
        for line in wrap_lines(["times per call (GPU: CUDA events, calls queued ahead; latency: one call on an idle "
                                "GPU; steady: back to back; host issue: the host's time to issue one call):"], width):
            click.echo(line)
        click.echo(times)
    launches = launch_compile_table(result["summary"], width)
    if launches:
        click.echo("\nlaunches (nsys, per call) and first call (wall):")
        click.echo(launches)
    if result.get("verdict") or result.get("findings"):
        click.echo("\nwhat the numbers say:")
    lines = list(result.get("verdict") or [])
    lines += [f"{f['severity']}: {f['message']}" for f in result.get("findings") or []]
    lines += [f"{w['severity']}: {w['message']}" for w in result.get("warnings") or []]
    for line in wrap_lines(lines, width):
        click.echo(line)


@click.command("history")
@click.argument("target")
@db_option
@json_option
@wide_option
def history_cmd(target: str, db: Path | None, as_json: bool) -> None:
    """A pair's stored runs over time, per variant: the speedup (the summary's, by the pair's timer
    where the run has it, `analyze.timing.speedup`), its own time per call and spread by that timer,
    and the timer, always shown (runs of one pair can have different timers); --json adds every
    timer's figure and the CUDA-event median (`cuda_event_median_ns`). Beside each run, its timed calls'
    median SM clock and the code digest it measured (a trend across clocks or code is not the code's alone).
    A reference variant (a vendor library the pair is measured against) is marked: its speedup is no claim.

    \b
    Example:
      aisp-prof history ch09.fused_l2norm
    """
    from ..analyze.records import frame_records
    from ..naming import TIMER_SHORT
    from ..render.table import render
    from ..units import duration

    rows = frame_records(database(db).history(target))
    if as_json:
        echo_json(rows)
        return
    click.echo(render(["created", "run", "gpu", "SM MHz", "code", "status", "variant", "time", "spread", "speedup",
                       "timer", "gate"],
                      [[when(r["created_at"]), r["run_id"], r["gpu_name"], _mhz(r.get("sm_clock_median_mhz")),
                        (r.get("code_sha256") or "-")[:7], r["status"],
                        f"{r['variant']} ({r['role']})" if r.get("role") in ("reference", "control") else r["variant"],
                        duration(r["speedup_time_ns"]),
                        "-" if r["speedup_rel_spread"] is None else f"{r['speedup_rel_spread']:.1%}",
                        "-" if r["speedup_vs_baseline"] is None else f"{r['speedup_vs_baseline']:.2f}x",
                        TIMER_SHORT.get(r.get("speedup_timer") or "", "-"),
                        _gate_cell(r)] for r in rows], table_width(),
                      drop=("status", "created", "code", "spread", "gpu", "SM MHz"), wrap=("gate",),
                      clip=("gpu", "variant"),
                      min_width={"gate": 40}))


def _mhz(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def when(created_at: str | None) -> str | None:
    """'2026-11-26 01:15' from '2026-11-26T01:15:57+00:00' (times are stored in UTC); --json keeps it whole."""
    return created_at[:16].replace("T", " ") if created_at else created_at


def _gate_cell(r: dict[str, Any]) -> str:
    """'SAME, vs baseline +0.3% [-0.1, +0.6]': the bench verdict and the side-by-side interval."""
    if not r.get("verdict"):
        return "-"
    if r.get("ratio_change") is None:
        return r["verdict"]
    pct = (lambda x: f"{(x - 1) * 100:+.1f}")
    return (f"{r['verdict']}, vs baseline {pct(r['ratio_change'])}% "
            f"[{pct(r['ratio_change_low'])}, {pct(r['ratio_change_high'])}]")
