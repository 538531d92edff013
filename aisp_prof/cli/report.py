"""Commands that analyze and draw stored runs: roofline, report."""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import OutputError, os_error_message, shorten
from ..naming import PRECISIONS
from .common import (database, db_option, echo_json, json_option, output_path, table_width, terminate_as_interrupt,
                     wide_option)


@click.command("roofline")
@click.argument("targets", nargs=-1)
@click.option("--compare", is_flag=True, help="Join baseline and each optimized variant by an arrow labelled "
              "with the speedup (several RUNs: the first run's variants against the same variants of the others).")
@click.option("--level", type=click.Choice(["dram", "l2", "l1", "all"]), default="dram", show_default=True,
              help="Intensity at this memory level; 'all' is the hierarchical view (L1, L2, DRAM on one line).")
@click.option("--precision", "precisions", multiple=True, type=click.Choice(PRECISIONS), metavar="NAME",
              help="Compute ceilings to show (repeatable; default: the precisions the kernels use): "
              + ", ".join(PRECISIONS) + ".")
@click.option("--flops", "flop_basis", type=click.Choice(["auto", "counted", "analytic"]), default="auto",
              show_default=True, help="FLOPs of a variant's point: auto = the pair's analytic FLOPs when known "
              "(arrows then rise by exactly the speedup), counted = ncu's hardware counts. Kernels are always counted.")
@click.option("--out", type=output_path(folder=False), help="Write the chart to FILE.png or FILE.svg.")
@click.option("--kernels/--no-kernels", default=True, show_default=True, help="Draw single kernels beside the variants.")
@db_option
@json_option
@wide_option
def roofline_cmd(targets: tuple[str, ...], flop_basis: str, out: Path | None, db: Path | None, as_json: bool,
                 **chart: Any) -> None:
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
    if out is not None and out.suffix.lower() not in (".png", ".svg"):
        raise OutputError(f"--out {out}: the chart is written as .png or .svg")
    result = database(db).roofline(*targets, flop_basis=flop_basis)
    precisions = chart.pop("precisions") or None
    path = _write_chart(result, out, precisions=precisions, **chart) if out is not None else None
    if as_json:
        data = result.to_dict()
        if not chart["compare"]:
            data.pop("comparisons")
        data["chart"] = str(path) if path else None
        echo_json(data)
        return
    from ..render.roofline_text import roofline_table

    click.echo(roofline_table(result, precisions, table_width()))
    if path:
        click.echo(f"\nchart: {path}")


def _write_chart(result: Any, out: Path, **options: Any) -> Path:
    """Draw into a hidden file beside `out`, then rename: never half a chart, even on Ctrl-C;
    an unwritable place (/proc, a read-only folder, a name too long) is one OutputError line."""
    from ..render.roofline_plot import draw

    tmp = out.with_name(f".{out.stem[:50]}.partial-{os.getpid()}{out.suffix}")
    try:
        draw(result, tmp, **options)
        os.replace(tmp, out)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise OutputError(os_error_message(exc, f"writing the chart to {shorten(out)}", name_file=False)) from exc
        raise
    return out


@click.command("report")
@click.argument("runs", nargs=-1)
@click.option("--targets", multiple=True, help="A chapter (ch09) or pair name: the latest stored run of "
              "each matching pair (repeatable or comma-separated).")
@click.option("--out", type=output_path(folder=True),
              help="Report folder (default: reports/<pair>-<run time> for one run, reports/report-<UTC time> "
                   "for several); a previous report there is replaced.")
@click.option("--open", "open_browser", is_flag=True, help="Open index.html in the default web browser.")
@db_option
@json_option
def report_cmd(runs: tuple[str, ...], targets: tuple[str, ...], out: Path | None, open_browser: bool,
               db: Path | None, as_json: bool) -> None:
    """Write an HTML report of stored runs and print the path of its index.html: an index of
    every pair (sortable, filter by chapter, roofline thumbnails) and one page per pair (speedup,
    correctness, what bound it before and after, stalls, speed of light, memory traffic,
    kernels, nsys timeline, FLOP check, warnings, provenance). Static files that open from
    file:// with no network. RUNS are ids, prefixes or 'latest'; with neither RUNS nor
    --targets, the latest run of every stored pair. --json: the paths written (index, folder, pages).

    \b
    Example:
      aisp-prof report latest --open
      aisp-prof report --targets ch09 --out reports/ch09
    """
    # SIGTERM (`kill PID`, `timeout`) stops it as Ctrl-C does, at the next page or just before the finished
    # folder is renamed into place: exit 130, nothing left. One that comes after the rename changes
    # nothing: the report is whole and in place, so it exits 0 and prints its path (`Terminated.settle`).
    # Before this command starts (Python importing aisp-prof, ~0.7 s) SIGTERM still kills it, with nothing written.
    with terminate_as_interrupt() as stop:
        store = database(db)
        count = len(store.select(runs, targets))
        stop.check()
        with _progress(count) as progress:
            result = store.report(runs, targets, out=out, progress=progress, tick=stop.check)
        stop.settle()
        if as_json:
            echo_json({"index": str(result.index), "out_dir": str(result.out_dir),
                       "pages": [str(p) for p in result.pages]})
        else:
            click.echo(str(result.index))
    if open_browser:
        import webbrowser

        webbrowser.open(result.index.resolve().as_uri())


@contextlib.contextmanager
def _progress(count: int) -> Any:
    """A progress bar of `count` pages on a terminal's stderr, what `report` hands the library as `progress`;
    nothing on a pipe or a file (click's bar printed its label there, a stray 'report' line)."""
    if not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=count, label="report", file=sys.stderr, item_show_func=lambda name: name) as bar:
        yield lambda name: bar.update(1, name)


@click.command("compare")
@click.argument("pair")
@click.option("--cards", is_flag=True, required=True,
              help="Side by side, the pair's latest run on each card it is stored on (the only comparison so far).")
@click.option("--plot", "plot_dir", type=output_path(folder=True),
              help="Also draw the pair's DRAM roofline on each card, all on the same axes, as DIR/<pair>.<card>.png.")
@db_option
@json_option
@wide_option
def compare_cmd(pair: str, cards: bool, plot_dir: Path | None, db: Path | None, as_json: bool) -> None:
    """The same pair on each card: its headline speedup beside the book's B200 ratio, and each
    machine difference beyond the noise that can explain a different ratio (ridge point, DRAM
    bandwidth, peak compute, SM count, SM clock). With --plot, one roofline per card on shared
    axes (the same x and y limits), so ridge points and roofs compare by eye. No GPU needed.

    \b
    Example:
      aisp-prof import profiles/samples/*/ profiles/samples_h100/*/
      aisp-prof compare ch09.fused_l2norm --cards
      aisp-prof compare ch09.fused_l2norm --cards --plot cards/   # cards/ch09.fused_l2norm.H100.png, .H200.png
    """
    from ..render.table import wrap_lines

    result = database(db).compare_cards(pair, plot_dir)
    if as_json:
        echo_json(result)
        return
    book, width = result["book_ratio_b200"], table_width()
    click.echo(f"{result['pair']}: latest run per card" + (f"; the book's B200 ratio {book:.2f}x" if book else ""))
    for line in wrap_lines([result["timer_note"]] if result["timer_note"] else [], width):
        click.echo(line)
    click.echo(f"{'card':<8} {'speedup':>8} {'variant':<22} {'bound after':<12} {'DRAM TB/s':>9} {'peak TFLOP/s':>13} "
               f"{'ridge FLOP/B':>12} {'SMs':>4} {'SM GHz':>6}")
    num = (lambda v, s, f: "-" if v is None else f.format(v / s))
    for r in result["cards"]:
        click.echo(f"{r['card']:<8} {num(r['common_timer_speedup'], 1, '{:.2f}x'):>8} "
                   f"{str(r['variant'] or '-')[:22]:<22} "
                   f"{str(r['bound_after'] or '-')[:12]:<12} {num(r['dram_bytes_per_s'], 1e12, '{:.2f}'):>9} "
                   f"{num(r['peak_flops_per_s'], 1e12, '{:.1f}'):>13} {num(r['ridge_flop_per_byte'], 1, '{:.1f}'):>12} "
                   f"{num(r['sm_count'], 1, '{:.0f}'):>4} {num(r['sm_clock_hz'], 1e9, '{:.2f}'):>6}")
    runs = [f"{r['card']} run: {r['run_id']} ({r['gpu_name']}; "
            + (f"its headline {r['speedup']:.2f}x by {r['speedup_label']})" if r["speedup"] else "no headline speedup)")
            for r in result["cards"]]
    for line in wrap_lines(runs + result["explanations"], width, indent="    "):
        click.echo(line)
    axes = result["roofline_axes"]
    if axes:
        (x0, x1), (y0, y1) = axes["x_flop_per_byte"], axes["y_flop_per_s"]
        click.echo(f"roofline axes shared by the cards: {x0:.3g}-{x1:.3g} FLOP/B, {y0:.3g}-{y1:.3g} FLOP/s")
    for card, path in result["charts"].items():
        click.echo(f"roofline on the {card}: {path}")
