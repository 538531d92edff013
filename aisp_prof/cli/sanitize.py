"""`aisp-prof sanitize`: compute-sanitizer (memcheck, racecheck, synccheck) over pairs' checks."""
from __future__ import annotations

from pathlib import Path

import click

from ..errors import CorrectnessError
from .common import echo_json, json_option, output_path, table_width, wide_option


@click.command("sanitize")
@click.argument("targets", nargs=-1, required=True)
@click.option("--tool", "tools", multiple=True, type=click.Choice(["memcheck", "racecheck", "synccheck", "initcheck"]),
              help="Repeatable (default: memcheck, racecheck and synccheck).")
@click.option("--variants", help="Comma-separated variants (default: all that run here; the baseline always runs).")
@click.option("--sizes", help="Problem size for every target, e.g. n=65536 (default: each pair's small size).")
@click.option("--log-dir", type=output_path(folder=True), help="Keep each tool's full output here.")
@click.option("--sanitizer", help="compute-sanitizer to use (default: $AISP_SANITIZER, PATH, /usr/local/cuda/bin).")
@json_option
@wide_option
def sanitize_cmd(targets: tuple[str, ...], tools: tuple[str, ...], variants: str | None, sizes: str | None,
                 log_dir: Path | None, sanitizer: str | None, as_json: bool) -> None:
    """Run each pair's correctness check under compute-sanitizer, once per tool, at a small size:
    out-of-bounds and misaligned accesses, shared-memory races and illegal barriers in the CUDA
    code, which a numeric check can miss. Pairs this GPU cannot run are skipped with the reason.
    Exit 7 when a tool reported an error or the check failed under it.

    \b
    Examples:
      aisp-prof sanitize ch10                                   # every ch10 pair, 3 tools
      aisp-prof sanitize ch10.dsmem_reduction --tool racecheck --sizes n=65536 --log-dir /tmp/san
    """
    from ..api.pairs import SanitizeRequest, sanitize

    request = SanitizeRequest(targets, tools, tuple(variants.split(",")) if variants else (), sizes, log_dir, sanitizer)
    outcome = sanitize(request, lambda m: click.echo(m, err=True))
    if as_json:
        echo_json(outcome.as_dict())
    else:
        click.echo(sanitize_table(outcome.results, outcome.skipped, table_width()))
    bad = outcome.failed
    if bad:
        raise CorrectnessError(f"compute-sanitizer found problems in: {', '.join(bad)}"
                               + ("" if log_dir else "; rerun with --log-dir DIR for the full reports"))


def sanitize_table(results: list, skipped: list, width: int | None) -> str:
    """One line per pair and tool: clean, N errors or check FAILED, the wall time and the first
    reports; then the pairs skipped here with the reason."""
    from ..render.table import render

    rows = [[r.pair, r.tool, "clean" if r.ok else ("check FAILED" if r.errors == 0 else f"{r.errors} errors"),
             f"{r.wall_s:.1f} s", "; ".join(r.first_reports[:2])[:240] or "-"] for r in results]
    rows += [[p.name, "-", f"skipped: {why}", "-", "-"] for p, why in skipped]
    return render(["pair", "tool", "result", "wall", "first reports"], rows, width,
                  wrap=("first reports", "result"), clip=("pair",))
