"""`aisp-prof`: a thin click layer over the library.

Each command parses options, makes one library call and prints; library errors become one
line on stderr and the error's own exit code (see aisp_prof.errors).
"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Callable

import click

from . import __version__
from .errors import AispError, RequirementError

EXAMPLES = """
\b
Examples:
  aisp-prof list                          # the pairs, and whether each runs here
  aisp-prof run ch09.fused_l2norm         # check, profile (ncu + nsys), store, summarize
  aisp-prof import profiles/samples/*/    # store saved runs/exports, no GPU needed
  aisp-prof summary latest                # per-variant summary of the newest run
  aisp-prof kernels latest --json         # one record per profiled kernel launch
  aisp-prof report latest --open          # HTML report (offline, one page per pair)
"""


class _Group(click.Group):
    """Turns AispError into `aisp-prof: error: ...` and the error's exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AispError as exc:
            click.echo(f"aisp-prof: error: {exc}", err=True)
            ctx.exit(exc.exit_code)


def db_option(f: Callable) -> Callable:
    return click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help="Run database (default: $AISP_PROF_DB or profiles/aisp.db).")(f)


def json_option(f: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(f)


def _db(db: Path | None) -> Path:
    from .store import db_path

    return db_path(db)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=_json_default))


def _json_default(v: Any) -> Any:
    if hasattr(v, "item"):
        return v.item()
    return str(v)


@click.group(cls=_Group, epilog=EXAMPLES)
@click.version_option(__version__, prog_name="aisp-prof")
@click.option("-v", "--verbose", is_flag=True, help="Log what the library does (to stderr).")
def cli(verbose: bool) -> None:
    """Profile baseline/optimized GPU kernel pairs with Nsight Compute and Nsight Systems,
    store the runs in SQLite, and read them back anywhere, GPU or not."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="aisp-prof: %(levelname)s: %(message)s", stream=sys.stderr)


@cli.command("list")
@click.option("--chapter", help="Only this chapter, e.g. ch09.")
@json_option
def list_cmd(chapter: str | None, as_json: bool) -> None:
    """The kernel pairs under kernels/ch*/, with their lesson and whether they can run here.

    \b
    Example:
      aisp-prof list --chapter ch09 --json
    """
    from .availability import pair_listing

    rows = [r for r in pair_listing() if not chapter or r["chapter_key"] == chapter]
    if as_json:
        _echo_json(rows)
        return
    from .render.table import render

    click.echo(render(["pair", "variants", "runs here", "lesson"],
                      [[r["name"], ",".join(r["variants"]), "yes" if r["can_run"] else f"no: {r['reason']}",
                        r["lesson"]] for r in rows]))


@cli.command("run")
@click.argument("targets", nargs=-1, required=True)
@click.option("--variants", help="Comma-separated variants (default: all that can run here).")
@click.option("--sizes", help="Problem size over the pair's default, e.g. rows=4096,cols=8192.")
@click.option("--label", help="A label stored with the run.")
@click.option("--profiles-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("profiles"),
              show_default=True, help="Where run folders are written.")
@click.option("--ncu", help="Path to ncu (default: $AISP_NCU, PATH, standard installs).")
@click.option("--nsys", help="Path to nsys (default: $AISP_NSYS, PATH, /opt/nvidia, beside ncu).")
@click.option("--no-ncu", is_flag=True, help="Skip Nsight Compute (timeline only).")
@click.option("--no-nsys", is_flag=True, help="Skip Nsight Systems (counters only).")
@click.option("--nsys-iterations", default=5, show_default=True, help="Calls per variant under nsys.")
@click.option("--extra-metrics", multiple=True, type=click.Choice(["sol_breakdown", "stall_sampled"]),
              help="More ncu metric groups: sol_breakdown (ncu's headline SM/memory throughput, "
                   "+8 replay passes), stall_sampled (PC-sampled stall reasons, +2).")
@db_option
@json_option
def run_cmd(targets: tuple[str, ...], variants: str | None, sizes: str | None, label: str | None,
            profiles_dir: Path, ncu: str | None, nsys: str | None, no_ncu: bool, no_nsys: bool,
            nsys_iterations: int, extra_metrics: tuple[str, ...], db: Path | None, as_json: bool) -> None:
    """Check, profile (ncu + nsys), store and summarize pairs. TARGETS are pair names or chapters.

    Exit codes: 0 ok, 2 unknown target, 3 no GPU, 4 profiler missing, 5 counter permission
    denied, 6 bad export, 7 correctness check failed (run stored as failed), 8 profiler failed,
    9 pair cannot run on this GPU.

    \b
    Example:
      aisp-prof run ch09.fused_l2norm
      aisp-prof run ch09.fused_l2norm --variants cuda --sizes rows=4096,cols=4096 --json
    """
    from . import pairs as pairs_mod
    from .pipeline import run_and_store

    selected = pairs_mod.select(list(targets))
    results = []
    for i, pair in enumerate(selected, 1):
        click.echo(f"== {pair.name} ({i}/{len(selected)})", err=True)
        try:
            result = run_and_store(
                pair, db=_db(db), profiles_dir=profiles_dir, variants=variants.split(",") if variants else [],
                sizes_text=sizes, label=label, ncu=ncu, nsys=nsys, with_ncu=not no_ncu, with_nsys=not no_nsys,
                nsys_iterations=nsys_iterations, extra_metric_groups=extra_metrics,
                progress=lambda m: click.echo(f"   {m}", err=True))
        except RequirementError as exc:
            if len(selected) == 1:
                raise
            click.echo(f"   skipped: {exc}", err=True)   # e.g. a Blackwell-only pair in a chapter run
            continue
        results.append(result)
        if not as_json:
            _print_summary(result.as_dict())
    if as_json:
        data = [r.as_dict() for r in results]
        _echo_json(data if len(data) != 1 else data[0])
    failed = next((r.error for r in results if r.error is not None), None)
    if failed is not None:
        raise failed


def _print_summary(result: dict[str, Any]) -> None:
    from .render.table import summary_table

    info = result["run"]
    click.echo(f"run {info['run_id']}  ({info.get('gpu_name') or 'unknown GPU'}, status {info['status']})")
    click.echo(summary_table(result["summary"]))


@cli.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--label", help="A label stored with the run (default: the file name).")
@db_option
@json_option
def import_cmd(paths: tuple[Path, ...], label: str | None, db: Path | None, as_json: bool) -> None:
    """Store saved exports without a GPU: an aisp-prof run folder, an ncu CSV (--page raw) or
    .ncu-rep, or an nsys SQLite export. Prints each new run id.

    \b
    Example:
      aisp-prof import profiles/samples/*/
      aisp-prof import my_kernel.ncu-rep --label before
    """
    from .ingest import store_path

    ids = [store_path(_db(db), p, label) for p in paths]
    if as_json:
        _echo_json([{"path": str(p), "run_id": r} for p, r in zip(paths, ids)])
    else:
        for r in ids:
            click.echo(r)


@cli.command("runs")
@db_option
@json_option
def runs_cmd(db: Path | None, as_json: bool) -> None:
    """The stored runs, oldest first.

    \b
    Example:
      aisp-prof runs --json
    """
    from .store import list_runs

    rows = list_runs(_db(db))
    if as_json:
        _echo_json(rows)
        return
    from .render.table import render

    cols = ["run_id", "pair", "label", "source", "status", "created_at", "gpu_name"]
    click.echo(render(cols, [[r[c] for c in cols] for r in rows]))


@cli.command("kernels")
@click.argument("run")
@click.option("--variant", help="Only this variant.")
@db_option
@json_option
def kernels_cmd(run: str, variant: str | None, db: Path | None, as_json: bool) -> None:
    """Kernel launches of RUN (an id, a unique prefix, 'latest', or a pair name: its latest run).

    \b
    Example:
      aisp-prof kernels latest --json
    """
    from .queries import kernel_records

    rows = kernel_records(_db(db), run, variant)
    if as_json:
        _echo_json(rows)
        return
    from .render.table import duration, render, si

    click.echo(render(["range", "kernel", "duration", "DRAM bytes", "FLOPs", "grid", "block"],
                      [[r["nvtx_range"], _short(r["kernel"]), duration(r["duration_ns"]),
                        si(r.get("dram_bytes"), "B"), si(r.get("flops_total")), r.get("grid_dim"),
                        r.get("block_dim")] for r in rows]))


@cli.command("ranges")
@click.argument("run")
@db_option
@json_option
def ranges_cmd(run: str, db: Path | None, as_json: bool) -> None:
    """NVTX ranges of RUN from the nsys timeline: kernels, memcpys, memsets, GPU time, gaps.

    GPU time is the range's busy time summed over its calls: kernels, memcpys and memsets
    launched in it (attributed by their API call, like kernels); gaps are idle GPU time
    between them within a call.

    \b
    Example:
      aisp-prof ranges latest --json
    """
    from .queries import range_records

    rows = range_records(_db(db), run)
    if as_json:
        _echo_json(rows)
        return
    from .render.table import duration, memory_ops_cell, render

    click.echo(render(["range", "calls", "kernels", "memcpy", "memset", "GPU time", "gaps", "max gap"],
                      [[r["range"], r.get("occurrences"), r["kernel_count"],
                        memory_ops_cell(r.get("memcpy_count"), r.get("memcpy_bytes"), r.get("memcpy_time_ns")),
                        memory_ops_cell(r.get("memset_count"), r.get("memset_bytes"), r.get("memset_time_ns")),
                        duration(r["gpu_time_ns"]), duration(r.get("gap_total_ns")), duration(r.get("gap_max_ns"))]
                       for r in rows]))


@cli.command("summary")
@click.argument("run")
@db_option
@json_option
def summary_cmd(run: str, db: Path | None, as_json: bool) -> None:
    """Per-variant summary of RUN: kernels, GPU time, speedup, correctness, bytes, FLOPs, stalls.

    RUN is a run id, a unique prefix of one, 'latest', or a pair name (its latest run).

    \b
    Examples:
      aisp-prof summary latest
      aisp-prof summary ch09.fused_l2norm --json
    """
    from .queries import run_summary

    result = run_summary(_db(db), run)
    if as_json:
        _echo_json({"run": result["run"], "summary": result["summary"]})
    else:
        _print_summary(result)


QUICKSTART_REPORT = Path("reports") / "quickstart"


@cli.command("quickstart")
@click.option("--profiles-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("profiles"),
              show_default=True, help="Where run folders are written.")
@db_option
def quickstart_cmd(profiles_dir: Path, db: Path | None) -> None:
    """The README's first command. On a GPU: profile ch09.fused_l2norm. Without one: store
    the real sample runs shipped in profiles/samples/ and summarize them. Either way, write
    the HTML report to reports/quickstart/ and print the path of its index.html.

    \b
    Example:
      aisp-prof quickstart
    """
    from .availability import machine_capabilities

    if machine_capabilities()["gpu"]:
        ctx = click.get_current_context()
        ctx.invoke(run_cmd, targets=("ch09.fused_l2norm",), profiles_dir=profiles_dir, db=db,
                   variants=None, sizes=None, label="quickstart", ncu=None, nsys=None, no_ncu=False,
                   no_nsys=False, nsys_iterations=5, extra_metrics=(), as_json=False)
        from .render.report import build_report, select_runs

        report = build_report(_db(db), select_runs(_db(db), targets=["ch09.fused_l2norm"]), out=QUICKSTART_REPORT)
        click.echo(f"report: {report.index}")
        return
    from .ingest import sample_run_dirs, store_path
    from .queries import run_summary
    from .render.report import build_report

    samples = sample_run_dirs()
    click.echo(f"no CUDA GPU here: reading {len(samples)} sample run(s) recorded on real GPUs", err=True)
    run_ids = []
    for run_dir in samples:
        run_ids.append(store_path(_db(db), run_dir, skip_stored=True))
        _print_summary(run_summary(_db(db), run_ids[-1]))
        click.echo("")
    report = build_report(_db(db), run_ids, out=QUICKSTART_REPORT)
    click.echo(f"report: {report.index}")


def _short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


_PRECISIONS = ("fp64", "fp32", "fp16", "tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_fp8",
               "tensor_int8", "tensor_fp64", "tensor_fp16_sparse", "tensor_bf16_sparse", "tensor_tf32_sparse",
               "tensor_fp8_sparse", "tensor_int8_sparse")   # = analyze.ceilings.PRECISIONS (not imported: pandas)


@cli.command("roofline")
@click.argument("targets", nargs=-1)
@click.option("--compare", is_flag=True, help="Join baseline and each optimized variant by an arrow labelled "
              "with the speedup (several RUNs: the first run's variants against the same variants of the others).")
@click.option("--level", type=click.Choice(["dram", "l2", "l1", "all"]), default="dram", show_default=True,
              help="Intensity at this memory level; 'all' is the hierarchical view (L1, L2, DRAM on one line).")
@click.option("--precision", "precisions", multiple=True, type=click.Choice(_PRECISIONS),
              help="Compute ceilings to show (repeatable; default: the precisions the kernels use).")
@click.option("--flops", "flop_basis", type=click.Choice(["auto", "counted", "analytic"]), default="auto",
              show_default=True, help="FLOPs of a variant's point: auto = the pair's analytic FLOPs when known "
              "(arrows then rise by exactly the speedup), counted = ncu's hardware counts. Kernels are always counted.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the chart to FILE.png or FILE.svg.")
@click.option("--kernels/--no-kernels", default=True, show_default=True, help="Draw single kernels beside the variants.")
@db_option
@json_option
def roofline_cmd(targets: tuple[str, ...], compare: bool, level: str, precisions: tuple[str, ...], flop_basis: str,
                 out: Path | None, kernels: bool, db: Path | None, as_json: bool) -> None:
    """Roofline of stored runs: ceilings (theoretical from the profile's peaks, measured from
    `aisp-prof calibrate`), one point per kernel and per variant, counted vs analytic FLOPs, and
    warnings where a roofline would mislead. TARGETS are run ids, prefixes, 'latest' (default)
    or pair names (their newest run). Works on imported profiles, no GPU needed.

    \b
    Example:
      aisp-prof roofline ch09.fused_l2norm --compare --out roofline.png
      aisp-prof roofline latest --level all --out hierarchy.svg
      aisp-prof roofline latest --json
    """
    from .analyze.roofline import roofline_for_runs
    from .errors import AispError as _Err

    if out is not None and out.suffix.lower() not in (".png", ".svg"):
        raise _Err(f"--out {out}: the chart is written as .png or .svg")
    result = roofline_for_runs(_db(db), list(targets) or ["latest"], flop_basis)
    chart = None
    if out is not None:
        from .render.roofline_plot import draw

        chart = draw(result, out, level=level, compare=compare, precisions=precisions or None, kernels=kernels)
    if as_json:
        data = result.to_dict()
        if not compare:
            data.pop("comparisons")
        data["chart"] = str(chart) if chart else None
        _echo_json(data)
        return
    from .render.roofline_plot import roofline_table

    click.echo(roofline_table(result, precisions or None))
    if chart:
        click.echo(f"\nchart: {chart}")


@cli.command("calibrate")
@click.option("--probes", help="Comma-separated probes (default: all): copy_dram, stream_l2, stream_l1, fma_fp32, "
              "gemm_bf16, gemm_fp16, gemm_tf32, gemm_fp8, gemm_int8, gemm_fp64.")
@click.option("--repeats", default=30, show_default=True, help="Timed calls per probe (median reported).")
@click.option("--write-json", type=click.Path(file_okay=False, path_type=Path),
              help="Also write DIR/<hardware_key>.json (commit it under profiles/calibration/).")
@click.option("--profile", is_flag=True, help="Also profile the probes under ncu into a run folder, stored as a run.")
@click.option("--profiles-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("profiles"),
              show_default=True, help="Where --profile writes its run folder.")
@click.option("--ncu", help="Path to ncu (default: $AISP_NCU, PATH, standard installs).")
@click.option("--show", is_flag=True, help="Print the stored calibrations (database, then profiles/calibration/); no GPU.")
@db_option
@json_option
def calibrate_cmd(probes: str | None, repeats: int, write_json: Path | None, profile: bool, profiles_dir: Path,
                  ncu: str | None, show: bool, db: Path | None, as_json: bool) -> None:
    """Measure this GPU's ceilings (device copy, L2- and L1-resident streams, FP32 FMA loop, GEMMs
    per precision), timed with CUDA events, and store them per hardware key so `roofline` draws
    them beside the theoretical ones. Exit code 3 without a GPU.

    \b
    Example:
      aisp-prof calibrate --write-json profiles/calibration
      aisp-prof calibrate --show --json
    """
    from .render.roofline_plot import calibration_table

    if show:
        from .calibrate.store import stored_calibrations

        rows = stored_calibrations(_db(db))
        if as_json:
            _echo_json(rows)
        else:
            click.echo(calibration_table(rows))
        return
    from .calibrate.run import CalibrateOptions, calibrate

    opts = CalibrateOptions(db=_db(db), probes=[p for p in (probes or "").split(",") if p], repeats=repeats,
                            write_json=write_json, profile=profile, profiles_dir=profiles_dir, ncu=ncu)
    outcome = calibrate(opts, progress=lambda m: click.echo(f"   {m}", err=True))
    if as_json:
        _echo_json(outcome.as_dict())
        return
    click.echo(calibration_table([outcome.calibration]))
    if outcome.json_path:
        click.echo(f"written: {outcome.json_path}")
    if outcome.profiled_run_id:
        click.echo(f"profiled run: {outcome.profiled_run_id}")


@cli.command("report")
@click.argument("runs", nargs=-1)
@click.option("--targets", multiple=True, help="A chapter (ch09) or pair name: the latest stored run of "
              "each matching pair (repeatable or comma-separated).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Report folder (default: reports/<pair>-<run time> for one run, reports/report-<UTC time> "
                   "for several); a previous report there is replaced.")
@click.option("--open", "open_browser", is_flag=True, help="Open index.html in the default web browser.")
@db_option
def report_cmd(runs: tuple[str, ...], targets: tuple[str, ...], out: Path | None, open_browser: bool,
               db: Path | None) -> None:
    """Write an HTML report of stored runs and print the path of its index.html: an index of
    every pair (sortable, filter by chapter, roofline thumbnails) and one page per pair (speedup,
    correctness, what bound it before and after, stalls, speed of light, memory traffic,
    kernels, nsys timeline, FLOP check, warnings, provenance). Static files that open from
    file:// with no network. RUNS are ids, prefixes or 'latest'; with neither RUNS nor
    --targets, the latest run of every stored pair.

    \b
    Example:
      aisp-prof report latest --open
      aisp-prof report --targets ch09 --out reports/ch09
    """
    from .render.report import build_report, select_runs

    run_ids = select_runs(_db(db), runs, targets)
    with click.progressbar(length=len(run_ids), label="report", file=sys.stderr,
                           item_show_func=lambda name: name) as bar:
        result = build_report(_db(db), run_ids, out=out, progress=lambda name: bar.update(1, name))
    click.echo(str(result.index))
    if open_browser:
        import webbrowser

        webbrowser.open(result.index.resolve().as_uri())


def _register_subcommands() -> None:
    from .cli_bench import bench_group, history_cmd

    cli.add_command(bench_group)
    cli.add_command(history_cmd)


_register_subcommands()


def main() -> None:
    cli(prog_name="aisp-prof")
