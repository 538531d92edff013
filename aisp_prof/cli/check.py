"""`aisp-prof check`: pairs' correctness at their default size, one --sizes, or N fuzzed shapes."""
from __future__ import annotations

from typing import Any

import click

from ..errors import CorrectnessError
from .common import echo_json, json_option, table_width, wide_option

GPU_ONLY = frozenset({"gpu", "nvcc", "cutlass"})


@click.command("check")
@click.argument("targets", nargs=-1, required=True)
@click.option("--variants", help="Comma-separated variants (default: all that can run here).")
@click.option("--sizes", help="Check at this size (over the pair's default), e.g. m=1000,n=8; with --fuzz, first.")
@click.option("--fuzz", type=click.IntRange(0, 10000), default=0, show_default=True, metavar="N",
              help="Also N shapes per pair drawn inside its size rules: the smallest, the largest in the budget, "
                   "then random ones (primes, one past a power-of-two tile, ...).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="The fuzzed shapes' seed (the same seed, the same shapes).")
@click.option("--budget-gb", type=click.FloatRange(0.001), default=2.0, show_default=True,
              help="Largest fuzzed shape: 8x the pair's analytic bytes of one call at most this.")
@click.option("--budget-tflop", type=click.FloatRange(1e-9), default=2.0, show_default=True,
              help="Largest fuzzed shape: its analytic FLOPs (the float64 reference computes them) at most this.")
@click.option("--trials", type=click.IntRange(1, 10), default=1, show_default=True, help="Fresh inputs per shape.")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="cpu: check in this process on CPU tensors, the variants that need no GPU (Triton's under "
                   "TRITON_INTERPRET=1).")
@json_option
@wide_option
def check_cmd(targets: tuple[str, ...], as_json: bool, **options: Any) -> None:
    """Check pairs' variants against their float64 reference, with no profiler: at the default size
    (or --sizes), and with --fuzz N at N more shapes per pair. A variant whose backend has no kernel
    for a shape is skipped at that shape with the reason; a pair that cannot run here is skipped.

    Exit codes: 0 every shape passed or was skipped, 2 unknown target, 3 no GPU (without --device
    cpu), 7 a variant was wrong, raised, or its process died at some shape (the table says which),
    12 --sizes off a pair's size rules (before anything runs).

    \b
    Example:
      aisp-prof check ch10.double_buffered_pipeline --sizes m=1000,n=77,k=129
      aisp-prof check ch10 ch14 --fuzz 20 --seed 1 --json
      TRITON_INTERPRET=1 aisp-prof check ch09.triton --fuzz 5 --device cpu --budget-gb 0.01
    """
    from ..collect.shape_check import FAIL

    results = check_targets(list(targets), options, lambda m: click.echo(m, err=True))
    if as_json:
        echo_json([r.to_dict() for r in results])
    else:
        click.echo(results_table(results, table_width()))
    failed = [r for r in results if r.status == FAIL]
    if failed:
        raise CorrectnessError(f"{len(failed)} of {len(results)} shapes failed the check: "
                               + "; ".join(f"{r.pair} at {r.to_dict()['shape']}" for r in failed[:5])
                               + (" ..." if len(failed) > 5 else ""))


def check_targets(targets: list[str], options: dict[str, Any], progress: Any) -> list[Any]:
    """Every selected pair's shapes, checked (collect.shape_check); sizes validated for all first."""
    from ..collect.builds import pending_line
    from ..collect.shape_check import ShapeResult, check_here, check_in_children
    from ..pairs import pair_sizes, select
    from ..pairs.capabilities import detect_machine

    pairs, machine = select(targets), detect_machine()
    given = {p.name: pair_sizes(p, options["sizes"]) for p in pairs} if options["sizes"] else {}
    results: list[ShapeResult] = []
    for i, pair in enumerate(pairs, 1):
        variants, why = _variants(pair, machine, options["variants"], options["device"])
        if why:
            progress(f"== {pair.name} ({i}/{len(pairs)}): skipped: {why}")
            results.append(ShapeResult(pair.name, {}, "skip", why))
            continue
        shapes = _shapes(pair, given.get(pair.name), options)
        progress(f"== {pair.name} ({i}/{len(pairs)}): {len(shapes)} shape(s), {', '.join(variants)}")
        building = pending_line(pair) if options["device"] == "cuda" else None
        if building:
            progress(building)
        if options["device"] == "cpu":
            results += check_here(pair, shapes, variants, "cpu", options["trials"])
        else:
            results += check_in_children(pair, shapes, variants, options["trials"], progress)
    return results


def _shapes(pair: Any, given: dict[str, int] | None, options: dict[str, Any]) -> list[dict[str, int]]:
    """--sizes (or the defaults, without --fuzz), then the fuzzed shapes not already there."""
    from ..collect.fuzz import Budget, draw_shapes

    shapes = [given] if given else ([] if options["fuzz"] else [dict(pair.sizes)])
    budget = Budget(int(options["budget_gb"] * 2**30), options["budget_tflop"] * 1e12)
    shapes += [s for s in draw_shapes(pair, options["fuzz"], options["seed"], budget) if s not in shapes]
    return shapes


def _variants(pair: Any, machine: Any, asked: str | None, device: str) -> tuple[list[str], str]:
    """The variants to check here, or ([], why the pair is skipped)."""
    from ..pairs.capabilities import runnable

    wanted = tuple(asked.split(",")) if asked else ()
    if pair.distributed:
        return [], f"runs as {pair.world_size} ranks (torchrun): `aisp-prof run` checks it"
    if device == "cpu":
        runnable(pair, machine, wanted)          # an unknown variant is an error, as on the GPU
        names = ["baseline"] + [v for v in (wanted or pair.variants) if v != "baseline"]
        here = [v for v in names if not (set(pair.needs(v)) & GPU_ONLY) and set(pair.needs(v)) <= machine.have]
        return (here, "") if "baseline" in here else ([], "the baseline needs a GPU")
    answer = runnable(pair, machine, wanted)
    if not answer.ok and not machine.gpu:
        answer.require()                         # no GPU at all: exit 3, as `run` does
    return (list(answer.variants), "") if answer.ok else ([], answer.reason)


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
