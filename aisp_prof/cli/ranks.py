"""`aisp-prof ranks`: a multi-rank run, rank by rank (no GPU needed)."""
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

    Exit codes: 0 ok, 2 no such run or variant, 6 the run has one rank, 13 run database unusable.

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
