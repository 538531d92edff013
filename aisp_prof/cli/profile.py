"""Commands that need a GPU (or fall back without one): run, quickstart, calibrate."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import ArgumentError
from .common import (database, db_option, echo_json, json_option, output_path, profiles_dir_option, table_width,
                     whole_number, wide_option)
from .runs import print_summary


@click.command("run")
@click.argument("targets", nargs=-1, required=True)
@click.option("--variants", help="Comma-separated variants (default: all that can run here).")
@click.option("--sizes", help="Problem size over the pair's default, e.g. rows=4096,cols=8192.")
@click.option("--label", help="A label stored with the run.")
@profiles_dir_option
@click.option("--ncu", help="Path to ncu (default: $AISP_NCU, PATH, standard installs).")
@click.option("--nsys", help="Path to nsys (default: $AISP_NSYS, PATH, /opt/nvidia, beside ncu).")
@click.option("--no-ncu", is_flag=True, help="Skip Nsight Compute (timeline only).")
@click.option("--no-nsys", is_flag=True, help="Skip Nsight Systems (counters only).")
@click.option("--nsys-iterations", default=5, show_default=True, type=whole_number(1),
              help="Calls per variant under nsys.")
@click.option("--timing-processes", default=1, show_default=True, type=click.IntRange(1, 20),
              help="Fresh processes timing the variants (pooled). From the second on, each also times every "
                   "variant's first call with the compile caches warm (torch.compile, Triton).")
@click.option("--extra-metrics", multiple=True, type=click.Choice(["sol_breakdown", "stall_sampled"]),
              help="More ncu metric groups: sol_breakdown (ncu's headline SM/memory throughput, "
                   "+8 replay passes), stall_sampled (PC-sampled stall reasons, +2).")
@click.option("--nproc-per-node", type=click.IntRange(1, 64), default=None,
              help="Ranks of a multi-GPU pair (default: the pair's world_size), one GPU each, "
                   "started through torchrun; nsys records every rank.")
@click.option("--ncu-rank", type=click.IntRange(0, 63), default=0, show_default=True,
              help="The one rank of a multi-GPU pair that ncu profiles (its NCCL kernels left out).")
@click.option("--nnodes", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Nodes of --nproc-per-node ranks each. Without --node-rank every node's torchrun agent "
                   "starts on this host (c10d rendezvous, the GPUs split between them, each writing into "
                   "the run's node<i>/ folder): a multi-node job on one host.")
@click.option("--node-rank", type=click.IntRange(0, 63), default=None,
              help="This host's node of a real multi-node torchrun job: every node runs the same command with "
                   "its own --node-rank, the same --rdzv-endpoint and a --profiles-dir all nodes see; node 0 "
                   "collects and stores the run, the others start their agent for each of its steps.")
@click.option("--rdzv-endpoint", metavar="HOST:PORT",
              help="The c10d rendezvous of a multi-node job (default: 127.0.0.1 on a free port); "
                   "with --launcher slurm, MASTER_ADDR:MASTER_PORT.")
@click.option("--launcher", type=click.Choice(["torchrun", "slurm"]), default="torchrun", show_default=True,
              help="slurm: inside an allocation, one srun task per rank (ranks from SLURM_PROCID/SLURM_LOCALID).")
@db_option
@json_option
@wide_option
def run_cmd(targets: tuple[str, ...], db: Path | None, as_json: bool, **options: Any) -> None:
    """Check, profile (ncu + nsys), store and summarize pairs. TARGETS are pair names, chapters,
    or pair files (and folders of them) outside the repository: your own pairs.

    Exit codes: 0 ok, 2 unknown target (or a pair file that is missing, does not parse, fails
    on import or has no PAIR) or options at odds (--node-rank 3 --nnodes 2), 3 no GPU, 4 profiler
    or nvcc missing, 5 counter permission denied, 6 bad export, 7 correctness check failed (run stored as failed),
    8 profiler failed, 9 pair cannot run on this GPU, 10 build failed, 12 bad --sizes,
    13 run database unusable (read-only, disk full, locked), 14 run folder not writable,
    130 interrupted (Ctrl-C; the partial run folder is removed).

    \b
    Example:
      aisp-prof run ch09.fused_l2norm
      aisp-prof run ch09.fused_l2norm --variants cuda --sizes rows=4096,cols=4096 --json
      aisp-prof run my_pairs/fused_relu.py      # a pair of your own (aisp-prof new)
      aisp-prof run ch14.quantized_allreduce --nproc-per-node 2   # torchrun, nsys on every rank
      aisp-prof run ch14.quantized_allreduce --nnodes 2 --nproc-per-node 2   # 2 agents ("nodes"), one host
      aisp-prof run ch14.quantized_allreduce --nnodes 2 --nproc-per-node 8 --node-rank 0 \\
          --rdzv-endpoint head:29500 --profiles-dir /shared/profiles    # on head; node 1 the same with 1
      aisp-prof run ch14.quantized_allreduce --launcher slurm --nnodes 2 --nproc-per-node 4   # in sbatch
    """
    from ..api.profiling import RunRequest

    results = profile_targets(targets, RunRequest(**options), db, as_json)
    if as_json:
        data = [r.as_dict() for r in results]
        echo_json(data if len(data) != 1 else data[0])
    failed = next((r.error for r in results if r.error is not None), None)
    if failed is not None:
        raise failed


def profile_targets(targets: tuple[str, ...], request: Any, db: Path | None, as_json: bool) -> list[Any]:
    """`api.profiling.profile_targets`, its progress on stderr and, without --json, each summary."""
    each = (lambda r: None) if as_json else (lambda r: print_summary(r.summary_dict()))
    from ..api.profiling import profile_targets as profile

    return profile(database(db), targets, request, lambda m: click.echo(m, err=True), each)


@click.command("quickstart")
@profiles_dir_option
@db_option
@wide_option
def quickstart_cmd(profiles_dir: Path, db: Path | None) -> None:
    """The README's first command. On a GPU: profile ch09.fused_l2norm. Without one: store
    every real sample run shipped in profiles/samples*/ (chapters 9, 10 and 14 on an H100 and
    an H200, and the 2-GPU runs) and summarize ch09.fused_l2norm's. Either way, write the HTML
    report to reports/quickstart/ (its index grouped by chapter and card) and print the path of
    its index.html.

    \b
    Example:
      aisp-prof quickstart
    """
    def show(result: dict[str, Any]) -> None:
        print_summary(result)
        click.echo("")

    from ..api.profiling import quickstart

    report = quickstart(database(db), profiles_dir, lambda m: click.echo(m, err=True), show)
    click.echo(f"report: {report.index}")


@click.command("calibrate")
@click.option("--probes", help="Comma-separated probes (default: all): copy_dram, stream_l2, stream_l1, fma_fp32, "
              "gemm_bf16, gemm_fp16, gemm_tf32, gemm_fp8, gemm_int8, gemm_fp64.")
@click.option("--repeats", default=30, show_default=True, type=whole_number(1),
              help="Timed calls per probe (median reported).")
@click.option("--write-json", type=output_path(folder=True),
              help="Also write DIR/<hardware_key>.json (commit it under profiles/calibration/).")
@click.option("--profile", is_flag=True, help="Also profile the probes under ncu into a run folder, stored as a run.")
@profiles_dir_option
@click.option("--ncu", help="Path to ncu (default: $AISP_NCU, PATH, standard installs).")
@click.option("--show", is_flag=True, help="Print the stored calibrations (database, then profiles/calibration/); no GPU. "
              "A --db that does not exist: exit 13; no --db and no database yet: the shipped files.")
@click.option("--link", "link_gpus", type=click.IntRange(2, 64), metavar="N",
              help="Instead: the bus bandwidth of N GPUs' link per collective (torchrun, NCCL, nccl-tests' "
                   "convention), stored under '<N>x_<gpu>' for `aisp-prof ranks`.")
@db_option
@json_option
@wide_option
def calibrate_cmd(show: bool, link_gpus: int | None, db: Path | None, as_json: bool, **options: Any) -> None:
    """Measure this GPU's ceilings (device copy, L2- and L1-resident streams, FP32 FMA loop, GEMMs
    per precision), timed with CUDA events, and store them per hardware key so `roofline` draws
    them beside the theoretical ones. Exit code 3 without a GPU.

    \b
    Example:
      aisp-prof calibrate --write-json profiles/calibration
      aisp-prof calibrate --link 2 --write-json profiles/calibration   # 2 GPUs' NVLink, per collective
      aisp-prof calibrate --show --json
    """
    from ..render.roofline_plot import calibration_table

    measuring = [f"--{name.replace('_', '-')}" for name in ("write_json", "probes", "profile") if options.get(name)]
    if show and (measuring or link_gpus):      # each was dropped without a word: options at odds, exit 2
        raise ArgumentError(f"--show prints the stored calibrations and measures nothing: drop "
                            f"{', '.join(measuring + ['--link'] * bool(link_gpus))}, or --show to measure")
    runs = database(db)
    if show:
        rows = runs.calibrations(database_required=db is not None)   # --db missing: exit 13, as `runs`
        echo_json(rows) if as_json else click.echo(calibration_table(rows, table_width()))
        return
    if link_gpus:
        cal, path = runs.calibrate_link(link_gpus, options.get("write_json"))
        echo_json(cal) if as_json else click.echo(calibration_table([cal], table_width()))
        if path and not as_json:
            click.echo(f"written: {path}")
        return
    probes = [p for p in (options.pop("probes") or "").split(",") if p]
    outcome = runs.calibrate({"probes": probes, **options}, progress=lambda m: click.echo(f"   {m}", err=True))
    if as_json:
        echo_json(outcome.as_dict())
        return
    click.echo(calibration_table([outcome.calibration], table_width()))
    if outcome.json_path:
        click.echo(f"written: {outcome.json_path}")
    if outcome.profiled_run_id:
        click.echo(f"profiled run: {outcome.profiled_run_id}")
