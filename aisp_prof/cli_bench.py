"""`aisp-prof bench ...` and `aisp-prof history`: whole chapters, expectations, the CI gate."""
from __future__ import annotations

import json
from pathlib import Path

import click

from .errors import CorrectnessError, RegressionError


def _db(db: Path | None) -> Path:
    from .store import db_path

    return db_path(db)


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
@click.option("--chapter", help="Only this chapter, e.g. ch09.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_targets(chapter: str | None, as_json: bool) -> None:
    """Pairs `bench run --targets` accepts (a chapter name selects all of its pairs).

    \b
    Example:
      aisp-prof bench list-targets --chapter ch09
    """
    from .availability import pair_listing

    rows = [r for r in pair_listing() if not chapter or r["chapter_key"] == chapter]
    if as_json:
        click.echo(json.dumps([{k: r[k] for k in ("name", "chapter_key", "can_run", "reason")} for r in rows], indent=2))
        return
    for r in rows:
        click.echo(f"{r['name']}\t{'runs here' if r['can_run'] else 'skipped here: ' + r['reason']}")


@bench_group.command("run")
@click.option("--targets", multiple=True, required=True, help="Chapters (ch09) or pairs; repeatable.")
@click.option("--profile", type=click.Choice(["none", "minimal", "roofline", "full"]), default="none",
              show_default=True, help="none: timing only; minimal: + nsys; roofline: + ncu; full: + both, more metrics.")
@click.option("--repeats", default=100, show_default=True, help="Timed calls per variant.")
@click.option("--update-expectations", is_flag=True, help="Write expectations_<gpu>.json from this run (passing pairs only).")
@click.option("--profiles-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("profiles"), show_default=True)
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Run database.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def bench_run(targets: tuple[str, ...], profile: str, repeats: int, update_expectations: bool,
              profiles_dir: Path, db: Path | None, as_json: bool) -> None:
    """Check and time every pair of TARGETS, compare with kernels/chNN/expectations_<gpu>.json.

    A time or speedup counts as regressed when it moved more than 4 combined robust sigmas of
    the recorded and the new spread (at least 2%). Exit 11 on a regression, 7 on a failed check.

    \b
    Example:
      aisp-prof bench run --targets ch09 --profile minimal --json
    """
    from . import pairs as pairs_mod
    from .bench.expectations import gate_failed
    from .bench.runner import bench_one, current_hardware_key
    from .render.table import duration, render

    selected = pairs_mod.select(list(targets))
    key = current_hardware_key()
    stderr = click.get_text_stream("stderr")
    with click.progressbar(selected, label="bench", file=stderr,
                           item_show_func=lambda p: p.name if p else "") as bar:
        outcomes = [bench_one(p, key=key, db=_db(db), profiles_dir=profiles_dir, profile=profile,
                              update_expectations=update_expectations, repeats=repeats) for p in bar]
    verdicts = [v for o in outcomes for v in o.verdicts]
    if as_json:
        click.echo(json.dumps({"hardware_key": key, "pairs": [o.to_dict() for o in outcomes]}, indent=2, default=str))
    else:
        click.echo(f"hardware key: {key}")
        rows = []
        for o in outcomes:
            if not o.verdicts:
                rows.append([o.pair, "-", "-", "-", "-", "-", "-", o.status + (f": {o.message}" if o.message else "")])
            for v in o.verdicts:
                fmt = duration if v.what == "time" else (lambda x: "-" if x is None else f"{x:.2f}x")
                status = v.status + (f": {o.message}" if v.status in ("failed_check", "error") and o.message else "")
                rows.append([v.pair, v.variant, v.what, fmt(v.expected), fmt(v.observed),
                             "-" if v.change is None else f"{v.change:+.1%}",
                             "-" if v.tolerance is None else f"{v.tolerance:.1%}", status])
        click.echo(render(["pair", "variant", "what", "expected", "observed", "change", "tolerance", "status"], rows))
    failed_checks = [o for o in outcomes if o.status == "failed_check"]
    if failed_checks:    # no speed verdict stands on a failed check: exit 7, naming what failed
        raise CorrectnessError("failed the correctness check: "
                               + "; ".join(f"{o.pair} ({o.message or 'see its stored run'})" for o in failed_checks))
    if gate_failed(verdicts):
        moved = sorted({f"{v.pair}:{v.variant}" for v in verdicts if v.status in ("regressed", "missing", "failed_check")})
        raise RegressionError(f"regressed or failed: {', '.join(moved)}")


@click.command("history")
@click.argument("target")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Run database.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def history_cmd(target: str, db: Path | None, as_json: bool) -> None:
    """A pair's stored runs over time, per variant: median time, spread, speedup.

    \b
    Example:
      aisp-prof history ch09.fused_l2norm
    """
    from . import pairs as pairs_mod
    from .queries_history import pair_history
    from .render.table import duration, render

    pair = pairs_mod.find(target)
    rows = pair_history(_db(db), pair.name)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    click.echo(render(["created", "run", "gpu", "status", "variant", "median", "spread", "speedup"],
                      [[r["created_at"], r["run_id"], r["gpu_name"], r["status"], r["variant"],
                        duration(r["median_ns"]),
                        "-" if r["rel_spread"] is None else f"{r['rel_spread']:.1%}",
                        "-" if r["speedup_vs_baseline"] is None else f"{r['speedup_vs_baseline']:.2f}x"]
                       for r in rows]))
