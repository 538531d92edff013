"""A stored run taken apart (no GPU needed): `aisp-prof ranks`, rank by rank; `aisp-prof samples`,
every timed call."""
from __future__ import annotations

from pathlib import Path

import click

from .common import database, db_option, echo_json, json_option, table_width, wide_option


@click.command("ranks")
@click.argument("run", default="latest")
@click.option("--variant", help="Only this variant.")
@db_option
@json_option
@wide_option
def ranks_cmd(run: str, variant: str | None, db: Path | None, as_json: bool) -> None:
    """A run of several ranks (a multi-GPU pair, or `import --job`), rank by rank: per call of each
    variant, GPU busy time, collective (NCCL) and compute time, how much of the communication ran
    hidden behind compute, idle time, and how much later each rank finished; per collective, the
    transfer time once every rank had arrived and its bus bandwidth (nccl-tests' convention; the
    message sizes come from the pair, nsys exports carry none); which rank the others waited for;
    per variant, the wire bytes per rank per call its collectives were predicted to move (2(W-1)/W of
    the payload for an all-reduce) against the transfer time measured.

    Exit codes: 0 ok, 2 no such run or variant, or a run of one rank, 13 run database unusable.

    \b
    Examples:
      aisp-prof ranks latest
      aisp-prof ranks latest --variant int8_overlap --json
    """
    from ..analyze.records import frame_records
    from ..errors import UnknownTargetError

    frames = database(db).ranks(run)
    if variant:
        known = sorted({str(v) for f in frames.values() if "variant" in f for v in f["variant"].dropna()})
        if variant not in known:         # a typo is said, as on every --variant, not an empty table
            raise UnknownTargetError(f"run {run} has no variant {variant!r} with collectives; "
                                     f"it has {', '.join(known)}")
        frames = {k: (f[f["variant"] == variant] if "variant" in f else f) for k, f in frames.items()}
    if as_json:
        echo_json({k: frame_records(f) for k, f in frames.items()})
        return
    from ..render.table import render, wrap_lines
    from ..units import duration

    width = table_width()
    ranks = frame_records(frames["ranks"])
    click.echo(render(["rank", "host", "local rank", "clock offset", "residual", "matched"], [
        [r["rank"], r.get("hostname"), r.get("local_rank"), duration(r.get("clock_offset_ns")),
         duration(r.get("clock_residual_ns")), r.get("matched_collectives")] for r in ranks], width))
    click.echo("\nper call (median over iterations)")
    click.echo(render(["variant", "rank", "busy", "collective", "compute", "hidden comm", "idle", "finishes later"], [
        [r["variant"], r["rank"], duration(r["gpu_busy_ns"]), duration(r["collective_ns"]), duration(r["compute_ns"]),
         _pct(r["hidden_comm_pct"]), duration(r["idle_ns"]), duration(r["finish_ns"])]
        for r in frame_records(frames["per_rank"])], width, drop=("idle", "finishes later")))
    click.echo("\ncollectives (transfer after the last rank arrived; bus bandwidth as nccl-tests)")
    click.echo(render(["variant", "op", "calls", "transfer", "message", "busbw GB/s", "of link"], [
        [r["variant"], r["op"], r["collectives"], duration(r["collective_ns"]), _bytes(r.get("message_bytes")),
         _num(r.get("busbw_gb_per_s")), _pct(r.get("pct_of_link"))] for r in frame_records(frames["bandwidth"])],
        width, drop=("of link", "calls")))
    _wire_table(frame_records(frames["wire"]) if "wire" in frames else [], width)
    findings = dict.fromkeys(f"{r['variant']}: {r['finding']}" for r in frame_records(frames["stragglers"])
                             if r.get("variant"))
    if findings:
        click.echo("\nstragglers\n" + "\n".join(wrap_lines([f"  {f}" for f in findings], width, indent="    ")))
    for line in wrap_lines([f"warning: {w['warning']}" for w in frame_records(frames["warnings"])], width):
        click.echo(line, err=True)


def _wire_table(wire: list[dict], width: int | None) -> None:
    """Predicted wire bytes per rank per call beside the measured transfer (analyze.ranks.wire)."""
    from ..render.table import render, wrap_lines
    from ..units import duration

    if not wire:
        return
    click.echo("\n" + "\n".join(wrap_lines(["wire bytes per rank per call (predicted: S x nccl-tests' factor at this "
                                            "rank count) vs the measured transfer"], width)))
    click.echo(render(["variant", "ranks", "wire bytes", "vs baseline", "transfer", "vs baseline", "at link's busbw"], [
        [r["variant"], r["world_size"], _bytes(r.get("wire_bytes_per_call")), _ratio(r.get("bytes_vs_baseline")),
         duration(r.get("transfer_ns_per_call")), _ratio(r.get("time_vs_baseline")),
         _bytes(r.get("implied_bytes_per_call"))] for r in wire], width, drop=("at link's busbw",)))


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}%"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _bytes(v: float | None) -> str:
    return "-" if v is None else f"{v / 2**20:.1f} MiB"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


@click.command("samples")
@click.argument("run")
@click.option("--variant", "variants", multiple=True, help="Only this variant (repeatable).")
@click.option("--kind", type=click.Choice(["gpu", "latency", "steady", "legacy"]),
              help="Only this kind of time: gpu (CUDA events, calls queued ahead), latency (one call on an idle "
                   "GPU), steady (back to back), legacy (the one CUDA-event timer of runs before the kinds).")
@click.option("--rounds", is_flag=True, help="Every sample instead, in the order taken: process, round, variant, "
                                             "kind, time (--json: time_ns, exact).")
@db_option
@json_option
@wide_option
def samples_cmd(run: str, variants: tuple[str, ...], kind: str | None, rounds: bool, db: Path | None,
                as_json: bool) -> None:
    """Every timed call of RUN (an id, a unique prefix, 'latest', or a pair name: its latest run), so a
    headline can be checked against your own statistics: per variant and kind of time, the samples,
    processes, median, p10, p90, min and max; the kind the headline's speedup is the median of is
    marked *. Reference kernels (ref:) come last. --json: one record per group (times in ns,
    `headline` true on the marked kind), or with --rounds one per sample.

    Exit codes: 0 ok (a run that stored no samples says so), 2 no such run, or a variant or kind
    the run has no samples of (the line names those it has), 13 run database unusable.

    \b
    Examples:
      aisp-prof samples latest
      aisp-prof samples latest --kind steady --variant baseline --variant tensor_branch
      aisp-prof samples latest --variant baseline --kind steady --rounds --json | jq '[.[].time_ns] | max'
    """
    from ..analyze.records import frame_records

    runs = database(db)
    if rounds:
        frame = runs.samples(run, variants, kind)
    else:
        opened = runs.open(run)
        frame = opened.sample_groups(variants, kind)
    records = frame_records(frame)
    if as_json:
        echo_json(records)
    if frame.empty:
        click.echo(f"run {runs.resolve(run)} has no timed samples stored (an import of bare ncu or nsys "
                   "exports has none): nothing to show", err=as_json)
    elif not as_json:
        click.echo(_rounds_table(records) if rounds else _groups_table(records, opened.headline_timer))


def _rounds_table(records: list[dict]) -> str:
    from ..render.table import render
    from ..units import duration

    return render(["process", "round", "variant", "kind", "time"],
                  [[r["process"], r["round"], r["variant"], r["kind"], duration(r["time_ns"])] for r in records],
                  table_width(), clip=("variant",))


def _groups_table(records: list[dict], timer: str | None) -> str:
    """The per-group table, and a line saying which kind the headline is the median of (if any)."""
    from ..analyze.timing.rounds import KIND_LABELS, timer_kind
    from ..naming import TIMER_LABELS
    from ..render.table import render, wrap_lines
    from ..units import duration

    times = ("median_ns", "p10_ns", "p90_ns", "min_ns", "max_ns")
    table = render(["variant", "kind", "samples", "processes", "median", "p10", "p90", "min", "max"],
                   [[r["variant"], r["kind"] + " *" * r["headline"], r["samples"], r["processes"],
                     *(duration(r[t]) for t in times)] for r in records], table_width(),
                   drop=("processes", "min", "max"), clip=("variant",))
    if timer is None:
        return table
    kind = timer_kind(timer)
    if kind is None or not any(r["headline"] for r in records):
        note = f"the headline's speedup is by {TIMER_LABELS.get(timer, timer)}: none of these samples"
    else:
        note = f"* the headline's kind of time ({KIND_LABELS[kind]}): its speedup is the baseline's median over the variant's"
    return "\n".join([table, *wrap_lines([note], table_width())])
