"""`aisp-prof check`: pairs' correctness at their default size, one --sizes, or N fuzzed shapes."""
from __future__ import annotations

from typing import Any

import click

from ..errors import INTERRUPTED_EXIT_CODE
from ..arguments import INT64_MAX
from .common import (echo_json, finite_number, json_option, table_width, terminate_as_interrupt, whole_number,
                     wide_option)


@click.command("check")
@click.argument("targets", nargs=-1, required=True)
@click.option("--variants", help="Comma-separated variants (default: all that can run here).")
@click.option("--sizes", help="Check at this size (over the pair's default), e.g. m=1000,n=8; with --fuzz, first.")
@click.option("--fuzz", type=click.IntRange(0, 10000), default=0, show_default=True, metavar="N",
              help="Also N shapes per pair drawn inside its size rules: the smallest, the largest in the budget, "
                   "then random ones (primes, one past a power-of-two tile, ...).")
@click.option("--seed", type=whole_number(-INT64_MAX), default=0, show_default=True,
              help="The fuzzed shapes' seed (the same seed, the same shapes).")
@click.option("--budget-gb", type=finite_number(0.001, min_open=False), default=2.0, show_default=True,
              help="Largest fuzzed shape: 8x the pair's analytic bytes of one call at most this.")
@click.option("--budget-tflop", type=finite_number(1e-9, min_open=False), default=2.0, show_default=True,
              help="Largest fuzzed shape: its analytic FLOPs (the float64 reference computes them) at most this.")
@click.option("--trials", type=click.IntRange(1, 10), default=1, show_default=True, help="Fresh inputs per shape.")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="cpu: check in this process on CPU tensors, the variants that need no GPU (Triton's under "
                   "TRITON_INTERPRET=1).")
@click.option("--time-limit-s", type=finite_number(0.0), default=None, metavar="S",
              help="Start no new shape once S seconds have passed (the one in progress finishes); the rest "
                   "are reported not checked, and the exit code is an interrupt's (130, or 7 if a shape failed).")
@click.option("--shard", callback=lambda ctx, param, value: parse_shard(value), metavar="K/N",
              help="Check only the K-th of every N shapes of each pair (1-based, after drawing all of them): "
                   "N processes or machines with the same --seed split one fuzz, e.g. --shard 1/2 and 2/2.")
@json_option
@wide_option
def check_cmd(targets: tuple[str, ...], as_json: bool, **options: Any) -> None:
    """Check pairs' variants against their float64 reference, with no profiler: at the default size
    (or --sizes), and with --fuzz N at N more shapes per pair. A variant whose backend has no kernel
    for a shape is skipped at that shape with the reason; a pair that cannot run here is skipped.
    Each shape's result is a line on stderr as it finishes ("[3/20] s=1,h=7,d=64: pass (16.8 s)").

    Stopped part way (Ctrl-C, SIGTERM as `timeout` sends, or --time-limit-s passed), it still
    prints the shapes finished so far (--json: "stopped" says why, "not_checked" how many are left),
    stops its check processes, and exits 130, or 7 if a finished shape failed (a wrong result is
    never hidden behind an interrupt).

    Exit codes: 0 every shape passed or was skipped, 2 unknown target, 3 no GPU (without --device
    cpu), 7 a variant was wrong, raised, or its process died at some shape (the table says which),
    12 --sizes off a pair's size rules (before anything runs), 130 stopped part way with no failed
    shape.

    \b
    Example:
      aisp-prof check ch10.double_buffered_pipeline --sizes m=1000,n=77,k=129
      aisp-prof check ch10 ch14 --fuzz 20 --seed 1 --json
      aisp-prof check ch14.regional_triton --fuzz 20 --time-limit-s 300 --json
      aisp-prof check ch14.regional_triton --fuzz 20 --seed 1 --shard 2/2   # shapes 2, 4, ... 20
      TRITON_INTERPRET=1 aisp-prof check ch09.triton --fuzz 5 --device cpu --budget-gb 0.01
    """
    from ..api.pairs import CheckRequest, check

    variants = options.pop("variants")
    request = CheckRequest(targets, tuple(variants.split(",")) if variants else (), **options)
    with terminate_as_interrupt() as stop:
        outcome = check(request, lambda m: click.echo(m, err=True), stop.check)
        stop.seen = False        # check() stopped at the SIGTERM (or had finished): its shapes are printed below
    if as_json:
        echo_json(outcome.as_dict())
    else:
        click.echo(results_table(outcome.results, table_width())
                   + (f"; {outcome.not_checked} not checked ({outcome.stopped})" if outcome.stopped else ""))
    if outcome.error is not None:
        raise outcome.error
    if outcome.stopped:
        click.echo(f"aisp-prof: {outcome.stop_line()}", err=True)
        raise click.exceptions.Exit(INTERRUPTED_EXIT_CODE)


def parse_shard(value: str | None) -> tuple[int, int] | None:
    """'K/N' -> (K, N) with 1 <= K <= N; a bad value is a usage error (exit 2) saying the form."""
    if value is None:
        return None
    k, _, n = value.partition("/")
    try:
        shard = (int(k), int(n))
    except ValueError:
        shard = (0, 0)
    if not 1 <= shard[0] <= shard[1]:
        raise click.BadParameter(f"{value!r}: give K/N with 1 <= K <= N, e.g. 1/2", param_hint="--shard")
    return shard


def results_table(results: list[Any], width: int | None) -> str:
    """One row per pair and shape: the result, and why where it is not a plain pass."""
    from ..render.table import render

    rows = []
    for r in results:
        detail = r.detail or "; ".join(f"{v} {why}" for v, why in r.skipped.items())
        rows.append([r.pair, r.to_dict()["shape"] or "-", r.status, detail])
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "skip", "fail")}
    table = render(["pair", "shape", "result", "detail"], rows, width, wrap=("detail", "shape"),
                   min_width={"detail": 40})
    return table + f"\n{len(results)} shape(s): {counts['pass']} pass, {counts['skip']} skip, {counts['fail']} fail"
