"""`aisp-prof bench ...`: whole chapters timed against recorded per-GPU expectations (the CI gate)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..errors import CorrectnessError, RegressionError
from .common import chapter_option, database, db_option, echo_json, json_option, pair_rows, profiles_dir_option


@click.group("bench")
def bench_group() -> None:
    """Time whole chapters against recorded per-GPU expectations (a regression gate for CI).

    \b
    Examples:
      aisp-prof bench list-targets --chapter ch09
      aisp-prof bench run --targets ch09                       # fails (exit 11) on a regression
      aisp-prof bench run --targets ch09.fused_l2norm --update-expectations
    """


@bench_group.command("list-targets")
@chapter_option
@json_option
def list_targets(chapter: str | None, as_json: bool) -> None:
    """Pairs `bench run --targets` accepts (a chapter name selects all of its pairs).

    \b
    Example:
      aisp-prof bench list-targets --chapter ch09
    """
    rows = pair_rows(chapter)
    if as_json:
        echo_json([{k: r[k] for k in ("name", "chapter_key", "can_run", "reason")} for r in rows])
        return
    for r in rows:
        click.echo(f"{r['name']}\t{'runs here' if r['can_run'] else 'skipped here: ' + r['reason']}")


@bench_group.command("run")
@click.option("--targets", multiple=True, required=True, help="Chapters (ch09) or pairs; repeatable.")
@click.option("--profile", type=click.Choice(["none", "minimal", "roofline", "full"]), default="none",
              show_default=True, help="none: timing only; minimal: + nsys; roofline: + ncu; full: + both, more metrics.")
@click.option("--repeats", default=100, show_default=True, help="Timed calls per variant.")
@click.option("--update-expectations", is_flag=True, help="Write expectations_<gpu>.json from this run (passing pairs only).")
@profiles_dir_option
@db_option
@json_option
def bench_run(targets: tuple[str, ...], db: Path | None, as_json: bool, **options: Any) -> None:
    """Check and time every pair of TARGETS, compare with kernels/chNN/expectations_<gpu>.json.

    A time or speedup counts as regressed when it moved more than 4 combined robust sigmas of
    the recorded and the new spread (at least 2%). Exit 11 on a regression, 7 on a failed check.

    \b
    Example:
      aisp-prof bench run --targets ch09 --profile minimal --json
    """
    from ..bench.expectations import gate_failed
    from ..bench.runner import BenchOptions, bench_one, current_hardware_key
    from ..pairs import select

    selected, key = select(list(targets)), current_hardware_key()
    opts = BenchOptions(**options)
    with click.progressbar(selected, label="bench", file=sys.stderr, item_show_func=lambda p: p.name if p else "") as bar:
        outcomes = [bench_one(p, database(db), key, opts) for p in bar]
    if as_json:
        echo_json({"hardware_key": key, "pairs": [o.to_dict() for o in outcomes]})
    else:
        from ..render.table import bench_table

        click.echo(f"hardware key: {key}")
        click.echo(bench_table(outcomes))
    failed_checks = [o for o in outcomes if o.status == "failed_check"]
    if failed_checks:    # no speed verdict stands on a failed check: exit 7, naming what failed
        raise CorrectnessError("failed the correctness check: "
                               + "; ".join(f"{o.pair} ({o.message or 'see its stored run'})" for o in failed_checks))
    verdicts = [v for o in outcomes for v in o.verdicts]
    if gate_failed(verdicts):
        moved = sorted({f"{v.pair}:{v.variant}" for v in verdicts if v.status in ("regressed", "missing", "failed_check")})
        raise RegressionError(f"regressed or failed: {', '.join(moved)}")
