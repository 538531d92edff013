"""Commands for your own pairs and runs: new (a pair template), diff (two runs of one pair)."""
from __future__ import annotations

from pathlib import Path

import click

from .common import (
    database,
    db_option,
    echo_json,
    json_option,
    output_path,
    table_width,
    whole_number,
    wide_option,
)


@click.command("new")
@click.argument("name")
@click.option("--dir", "folder", default=".", show_default=True, type=output_path(folder=True),
              help="Where to write <name>.py and test_<name>.py.")
@click.option("--chapter", default=0, show_default=True, type=whole_number(0),
              help="The chapter number stored with the pair's runs.")
@json_option
def new_cmd(name: str, folder: Path, chapter: int, as_json: bool) -> None:
    """Write a commented template pair module (eager mul + add + relu against one fused Triton
    kernel: make_inputs, a float64 reference, FLOPs and bytes, roles, the expected mechanism,
    sizes) and its pytest file. The module file is named after NAME's last part. Never
    overwrites: exit 14 if either file exists; exit 2 for a bad NAME.

    \b
    Example:
      aisp-prof new mine.fused_relu --dir my_pairs
      TRITON_INTERPRET=1 python -m pytest my_pairs/test_fused_relu.py   # CPU check
      aisp-prof run my_pairs/fused_relu.py                               # GPU
    """
    from ..api.pairs import new_pair

    written = new_pair(name, folder, chapter)
    if as_json:
        echo_json(written.as_dict())
        return
    click.echo(f"wrote {written.module}\nwrote {written.test}")
    click.echo(f"next: TRITON_INTERPRET=1 python -m pytest {written.test}   then, on a GPU: aisp-prof run {written.module}")


@click.command("diff")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--html", "html_out", type=click.Path(path_type=Path), help="Also write an offline HTML page here "
              "(a .html file, or a folder that gets diff.html).")
@db_option
@json_option
@wide_option
def diff_cmd(run_a: str, run_b: str, html_out: Path | None, db: Path | None, as_json: bool) -> None:
    """Compare two stored runs of the same pair (before/after a change, or two GPUs): per
    variant the time and speedup of each by one timer both runs have (named above the table:
    the first of the pair's order), DRAM bytes, FLOPs, top stalls and roofline position, and
    a verdict SAME/FASTER/SLOWER/AMBIGUOUS for B against A from the bench gate's rule on the
    runs' timed samples ("no samples: not judged" where a run has none). RUN_A and RUN_B are
    run ids, unique prefixes or 'latest'. Exit 2 for runs of different pairs.

    \b
    Example:
      aisp-prof import profiles/samples/*fused_l2norm*/ profiles/samples_h100/*fused_l2norm*/
      aisp-prof diff 20261126T011557Z 20261126T045251Z --html reports/diff.html
    """
    from ..render.diff_table import headline, table_rows
    from ..render.table import render, wrap_lines

    diff = database(db).diff(run_a, run_b)
    if html_out is not None:
        from ..render.diff_page import write_diff_page

        page = write_diff_page(diff, html_out)
        if not as_json:
            click.echo(f"page: {page}", err=True)
    if as_json:
        echo_json(diff)
        return
    header, rows = table_rows(diff)
    width = table_width()
    click.echo("\n".join(wrap_lines(headline(diff), width)))
    click.echo(render(header, rows, width, wrap=("verdict", "stalls A", "stalls B"),
                      drop=("stalls A", "stalls B", "FLOPs B/A", "DRAM A", "DRAM B", "speedup A", "speedup B")))
