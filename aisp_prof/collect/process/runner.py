"""`aisp-prof run`'s collection: check, then profile a pair under ncu and nsys, into profiles/<run-id>/.

Two child processes: one under nsys that checks correctness and times with CUDA events while
nsys collects nothing, then runs the timeline's iterations inside a cudaProfilerStart/Stop
capture range (`collect.process.child.capture_for_nsys`); one under ncu. Without nsys the first runs
bare. One process per profiler, so ncu's replays never see nsys's tracing, and start-up, imports
and compilation are paid twice, not three times. The ncu process starts beside the first and
waits, before any CUDA call, until the first says it is done with the GPU (`--release`): its
start-up hides behind the check, and its profiling behind nsys writing and exporting its report;
the two never use the GPU at once. The folder is
written atomically (`run_folder.atomic_folder`): profiles/ never holds half a run. What can run
is decided once, by `pairs.capabilities.runnable`, before anything starts. The children share
Inductor's and Triton's caches inside the run folder; what they generated is kept in
generated/ (`collect.code.generated`).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from ...errors import ArgumentError, CorrectnessError, RequirementError, ToolNotFoundError
from ...naming import (CHECK_JSON, GPU_RELEASED, NCU_CHILD_JSON, NSYS_CHILD_JSON, RUN_JSON,
                      TIMING_JSON, new_run_id, nvtx_path)
from ...pairs import KernelPair
from ...pairs import capabilities
from ...pairs.capabilities import Machine, runnable
from ...pairs.files import pair_file_args
from ...pairs.roles import run_declarations
from ...pairs.source import source_digest
from ...parse.metrics.table import DEFAULT_GROUPS, metric_names
from ... import tools
from ..code.builds import build_lines, pending_line
from ..code.compile_cache import compile_info, remove_fresh_caches
from ..code.generated import cache_env, keep_generated
from ..output.run_folder import atomic_folder, provenance, write_json
from ..timing.samplers import KINDS
from ..commands import python_module
from ..ranks.follow import Board
from ..ranks.launch import Launch
from .steps import (Background, Progress, StepContext, check_nsys_step, check_step, finish_ncu_early, ncu_step,
                    start_ncu_early, timing_step)

log = logging.getLogger(__name__)
CHILD_MODULE = "aisp_prof.collect.process.child"
GPU_FIELDS = ("sm_count", "compute_capability", "l2_cache_bytes", "gpu_memory_bytes")


@dataclass
class TimingOptions:
    """How the variants are timed after the check: interleaved samples in `processes` fresh
    processes (more, up to `max_processes`, while `more(samples, max SM clock)` says so: the bench's
    sequential stop), each sampling for at most `budget_s`, or on to `floor_rounds` rounds where
    the budget ran out first (collect.timing.timer.SamplingPlan; 0: no floor)."""

    min_rounds: int = 20
    budget_s: float = 2.0
    floor_rounds: int = 0
    processes: int = 1
    max_processes: int = 1
    references: bool = False
    more: Callable[..., bool] | None = None      # more(samples, sm_clock_max_mhz): time another process?
    kinds: tuple[str, ...] = KINDS      # collect.timing.samplers; the gate takes its own only
    fresh_compile_cache: bool = False   # each process compiles (and autotunes) anew: a recording's A/A spread
                                        # then holds the compiler's choices too, as fresh machines draw them
    fresh_further_caches: bool = False  # the processes after the first compile anew each (a gate's confirming
                                        # and chasing processes: new draws of the compiler's choices)


@dataclass
class RunOptions:
    """What `aisp-prof run` asks of one pair."""

    pair: KernelPair
    profiles_dir: Path = Path("profiles")
    sizes: dict[str, int] = field(default_factory=dict)
    variants: list[str] = field(default_factory=list)   # empty: every variant this machine can run
    ncu: str | None = None
    nsys: str | None = None
    label: str | None = None
    nsys_iterations: int = 5
    timing: TimingOptions = field(default_factory=TimingOptions)
    with_ncu: bool = True
    with_nsys: bool = True
    metric_groups: tuple[str, ...] = DEFAULT_GROUPS   # add "sol_breakdown" / "stall_sampled" for more
    nproc_per_node: int | None = None     # ranks of a multi-rank pair (default: the pair's world_size)
    ncu_rank: int = 0                     # the rank ncu watches (nsys watches every rank)
    nnodes: int = 1                       # nodes of nproc_per_node ranks each (collect.ranks.launch)
    node_rank: int | None = None          # this host's node; None with nnodes > 1: every node's agent here
    rdzv_endpoint: str | None = None      # HOST:PORT of the c10d rendezvous (default: a free local port)
    launcher: str = "torchrun"            # or "slurm": srun inside the allocation
    overlap_ncu: bool = True              # start ncu beside the check (it waits for the GPU); False: after it


@dataclass
class RunOutcome:
    run_id: str
    run_dir: Path
    run_info: dict[str, Any]


@dataclass(frozen=True)
class _Plan:
    """What one collection will do, fixed before any child starts."""

    pair: KernelPair
    variants: list[str]
    sizes: dict[str, int]
    ncu: Path | None
    nsys: Path | None
    world_size: int = 1
    launch: Launch | None = None          # how the ranks start (None: one process)


def child_command(pair: KernelPair | str, variants: list[str], sizes: dict[str, int], mode: str, out: Path,
                  *extra: str) -> list[str]:
    """The profiled child's command line (python -m aisp_prof.collect.process.child ...). A pair from a
    file outside the kernels folder adds `--pair-file PATH` (the child loads it from there);
    a shipped pair's command line is the same whether given by name or by value."""
    size_text = ",".join(f"{k}={v}" for k, v in sizes.items())
    name, file_args = (pair, []) if isinstance(pair, str) else (pair.name, pair_file_args(pair))
    return python_module(CHILD_MODULE, "--pair", name, *file_args, "--variants", ",".join(variants),
                         "--sizes", size_text, "--mode", mode, "--out", str(out), *extra)


def timing_args(timing: TimingOptions, process: int = 0) -> list[str]:
    """The child's timing flags: rounds, budget, floor, which process, kinds of time, reference kernels,
    and whether it compiles with empty caches of its own (every process of a recording; the processes
    after the first with `fresh_further_caches`)."""
    fresh = timing.fresh_compile_cache or (timing.fresh_further_caches and process > 0)
    return ["--repeats", str(timing.min_rounds), "--budget-s", str(timing.budget_s),
            "--floor-rounds", str(timing.floor_rounds), "--process", str(process),
            "--kinds", ",".join(timing.kinds), *(["--references"] if timing.references else []),
            *(["--fresh-compile-cache"] if fresh else [])]


def plan(opts: RunOptions, machine: Machine | None = None) -> _Plan:
    """Decide variants, sizes, ranks and profilers; every 'cannot run here' error is raised here,
    sizes off the pair's rules first (SizesError)."""
    sizes = opts.pair.checked_sizes({**opts.pair.sizes, **opts.sizes})
    machine = machine or capabilities.detect_machine()
    variants = runnable(opts.pair, machine, opts.variants).require()
    launch = launch_of(opts, machine.gpu_count)
    ncu = tools.find_ncu(opts.ncu) if opts.with_ncu else None
    nsys = tools.find_nsys(opts.nsys, ncu) if opts.with_nsys else None
    return _Plan(opts.pair, variants, sizes, ncu, nsys, launch.world_size if launch else 1, launch)


def launch_of(opts: RunOptions, gpus: int) -> Launch | None:
    """How the ranks of `opts.pair` start (None: one process); ArgumentError (exit 2) for options at odds
    with each other or the pair, RequirementError (exit 9) when the GPUs here do not fit."""
    if opts.nnodes > 1 or opts.node_rank is not None or opts.launcher != "torchrun":
        if not opts.pair.distributed:
            raise ArgumentError(f"{opts.pair.name} runs as one process; --nnodes, --node-rank and --launcher "
                                "are for pairs that declare world_size > 1")
    if opts.node_rank:
        raise RequirementError(f"--node-rank {opts.node_rank} follows node 0's steps (collect.ranks.follow); "
                               "only node 0 collects")
    per_node = opts.nproc_per_node or (opts.pair.world_size if opts.nnodes == 1 else None)
    if opts.pair.distributed and per_node is None:
        raise ArgumentError("--nnodes needs --nproc-per-node: the ranks each node starts")
    launch = Launch(per_node or 1, opts.nnodes, opts.node_rank, opts.rdzv_endpoint, opts.launcher).check()
    if launch.launcher == "slurm" and shutil.which("srun") is None:
        raise ToolNotFoundError("--launcher slurm: srun is not on PATH; run it inside a Slurm allocation "
                                "(sbatch or salloc), or use --launcher torchrun")
    every_node = gpus if launch.one_host else gpus * launch.nnodes     # other nodes: as many GPUs as this one
    world = world_size(opts.pair, launch.world_size if opts.pair.distributed else opts.nproc_per_node,
                       every_node, opts.ncu_rank)
    return launch if world > 1 else None


def world_size(pair: KernelPair, asked: int | None, gpus: int, ncu_rank: int = 0) -> int:
    """How many ranks run `pair`: `asked` (--nproc-per-node x --nnodes) or the pair's own, at least
    its minimum, at most one per GPU (`gpus`: those of every node); 1 for a one-process pair."""
    if not pair.distributed:
        if asked not in (None, 1):
            raise ArgumentError(f"{pair.name} runs as one process; --nproc-per-node is for "
                                "pairs that declare world_size > 1")
        return 1
    world = asked or pair.world_size
    if world < pair.min_world_size:
        raise ArgumentError(f"{pair.name} needs at least {pair.min_world_size} ranks, asked for {world}")
    if world > gpus:
        raise RequirementError(f"{pair.name}: {world} ranks need {world} GPUs (one each), this machine "
                               f"has {gpus}; pass --nproc-per-node {max(gpus, pair.min_world_size)}")
    if not 0 <= ncu_rank < world:
        raise ArgumentError(f"--ncu-rank {ncu_rank} is not a rank of this job (0..{world - 1})")
    return world


def collect(opts: RunOptions, progress: Progress = lambda msg: None, machine: Machine | None = None) -> RunOutcome:
    """Check and profile one pair; return the finished run folder (not yet stored)."""
    the_plan = plan(opts, machine)
    run_id = new_run_id(opts.pair.name)
    with atomic_folder(opts.profiles_dir, run_id) as folder:
        info = _new_info(run_id, the_plan, opts)
        ctx = StepContext(folder.path, info, progress=progress, world_size=the_plan.world_size,
                          ncu_rank=opts.ncu_rank, launch_plan=the_plan.launch)
        lead = the_plan.launch is not None and the_plan.launch.node_rank == 0
        ctx.board = Board.open(opts.profiles_dir, str(the_plan.launch.rdzv_endpoint)) if lead else None
        try:
            collect_into(ctx, the_plan, opts)
        finally:
            if ctx.board is not None:     # the other nodes stop following, with this run's outcome
                ctx.board.done(str(info.get("status")) if info.get("status") != "running" else "error")
    return RunOutcome(run_id, folder.final, info)


def _new_info(run_id: str, the_plan: _Plan, opts: RunOptions) -> dict[str, Any]:
    pair, sizes = the_plan.pair, the_plan.sizes
    info: dict[str, Any] = {
        "run_id": run_id, "pair": pair.name, "chapter": pair.chapter, "label": opts.label,
        "variants": the_plan.variants, "sizes": sizes, "default_sizes": dict(pair.sizes), "status": "running",
        **provenance(),
        "analytic": {"flops": pair.flops(sizes), "dram_bytes": pair.bytes(sizes),
                     **({"collective_bytes": dict(pair.collective_bytes(sizes, the_plan.world_size))}
                        if pair.collective_bytes else {})},
        "source": source_digest(Path(pair.source)) if pair.source else {},
        **run_declarations(the_plan.variants, {v: r for v, r in pair.roles.items() if v in the_plan.variants},
                           pair.comparison, pair.expect, pair.timer, pair.book),
        "tools": {}, "commands": {}, "wall_s": {}, "world_size": the_plan.world_size,
        **({"launch": launch_record(the_plan.launch)} if the_plan.launch else {}),
    }
    nvcc = tools.nvcc_if_found()
    if nvcc is not None:
        info["tools"]["nvcc"] = {"path": str(nvcc), "version": tools.tool_version(nvcc)}
    return info


def launch_record(launch: Launch) -> dict[str, Any]:
    """run.json's `launch`: nodes, ranks per node, the launcher, and whether the nodes' agents all
    ran on this host (each into its own node<i>/ folder)."""
    return {"launcher": launch.launcher, "nnodes": launch.nnodes, "nproc_per_node": launch.nproc_per_node,
            "node_rank": launch.node_rank, "rdzv_endpoint": launch.rdzv_endpoint,
            "agents_on_one_host": launch.one_host and launch.nnodes > 1}


def collect_into(ctx: StepContext, the_plan: _Plan, opts: RunOptions) -> None:
    """The steps into the partial folder; run.json last, with the status."""
    folder, started = ctx.folder, time.time()
    ctx.env.update(cache_env(folder))     # compile caches in the run folder: cold for the check, then kept
    early = _start_ncu_early(ctx, the_plan, opts)
    try:
        check, nsys_export = _check(ctx, the_plan, opts, release=early is not None)
        for line in build_lines(check.get("builds", [])):
            ctx.progress(line)
        ctx.info["env"] = check.get("env", {})
        ctx.info["gpu"].update({k: v for k, v in ctx.info["env"].items() if k in GPU_FIELDS})
        ctx.info["timing_cuda_events"] = check.get("timing", {})
        ctx.info["sensor"] = check.get("sensor", {})
        the_plan = _without_skipped(ctx, the_plan, check["check"].get("skipped_variants") or {})
        if not check["check"]["passed"]:
            if early is not None:         # it never touched the GPU: nothing of it is kept
                early.cancel()
                (folder / "ncu.log").unlink(missing_ok=True)
                ctx.info.get("tools", {}).pop("ncu", None)
            ctx.info["status"] = "failed_check"
            remove_fresh_caches(folder)
            ctx.info["generated"] = keep_generated(folder, ctx.env)
            write_json(folder / RUN_JSON, ctx.info)
            return
        try:                              # the nsys export runs on the CPU beside the GPU's work
            _profile(ctx, the_plan, opts, list(check.get("samples", [])), early)
            if nsys_export is not None:
                nsys_export.finish(ctx)
        finally:
            if nsys_export is not None:
                nsys_export.cancel()
    finally:
        if early is not None:
            early.cancel()
    remove_fresh_caches(folder)           # every process has ended: a killed one's empty cache goes too
    ctx.info["generated"] = keep_generated(folder, ctx.env)
    ctx.info["status"] = "ok"
    ctx.info["wall_s"]["total"] = round(time.time() - started, 2)
    write_json(folder / RUN_JSON, ctx.info)


def _without_skipped(ctx: StepContext, the_plan: _Plan, skipped: dict[str, str]) -> _Plan:
    """The plan without the variants whose backend has no kernel at these sizes (the check
    skipped them: collect.correctness.check.no_kernel_reason), recorded in run.json's `skipped_variants`;
    RequirementError (exit 9) when that is the baseline: nothing can be compared with it here."""
    if not skipped:
        return the_plan
    if "baseline" in skipped:
        raise RequirementError(f"{the_plan.pair.name}: the baseline cannot run at these sizes: {skipped['baseline']}")
    for v, why in skipped.items():
        ctx.progress(f"      {v} {why}")
    kept = [v for v in the_plan.variants if v not in skipped]
    ctx.info["skipped_variants"] = dict(skipped)
    ctx.info["variants"] = kept
    if isinstance(ctx.info.get("roles"), dict):
        ctx.info["roles"] = {v: r for v, r in ctx.info["roles"].items() if v in kept}
    return replace(the_plan, variants=kept)


def _ncu_child(the_plan: _Plan, folder: Path, *extra: str) -> list[str]:
    return child_command(the_plan.pair, the_plan.variants, the_plan.sizes, "profile", folder / NCU_CHILD_JSON, *extra)


def _ncu_ranges(the_plan: _Plan) -> list[str]:
    return [nvtx_path(the_plan.pair.name, v) for v in the_plan.variants]


def _start_ncu_early(ctx: StepContext, the_plan: _Plan, opts: RunOptions) -> Background | None:
    """The ncu step started beside the check (`steps.start_ncu_early`), so that ncu's and the
    child's start-up, imports and pair loading overlap the check, and its profiling the nsys
    report's finalisation and export; None where that cannot be done without the two processes
    sharing the GPU: no ncu, several ranks, or further timing processes after the check."""
    if (the_plan.ncu is None or the_plan.world_size != 1 or not opts.overlap_ncu
            or max(opts.timing.processes, opts.timing.max_processes) > 1):
        return None
    release = ctx.folder / GPU_RELEASED
    child = _ncu_child(the_plan, ctx.folder, "--wait-for", str(release), "--wait-parent", str(os.getpid()))
    ctx.info["ncu_started"] = "beside the check; its child waits for the check's --release before any CUDA call"
    return start_ncu_early(ctx, the_plan.ncu, child, _ncu_ranges(the_plan), metric_names(opts.metric_groups))


def _profile(ctx: StepContext, the_plan: _Plan, opts: RunOptions, samples: list[dict[str, Any]],
             early: Background | None = None) -> None:
    """After a passed check: the further timing processes, then ncu (or the end of the ncu step
    started beside the check)."""
    pair, folder = the_plan.pair, ctx.folder
    ctx.info["timing_processes"] = 1 + more_timing(ctx, the_plan, opts.timing, samples)
    ctx.info.update(compile_info(opts.timing.fresh_compile_cache, opts.timing.fresh_further_caches))
    if the_plan.ncu is None:
        return
    names = metric_names(opts.metric_groups)
    ctx.progress(f"[2/2] ncu: {len(names)} metrics for each kernel in aisp/{pair.name}/*")
    if early is not None:                 # the marker stays until ncu's child is done: it may not have seen it yet
        release = folder / GPU_RELEASED
        try:
            finish_ncu_early(ctx, the_plan.ncu, early, folder / NCU_CHILD_JSON, _ncu_ranges(the_plan),
                             release.stat().st_mtime)
        finally:
            release.unlink(missing_ok=True)
        return
    ncu_step(ctx, the_plan.ncu, _ncu_child(the_plan, folder), folder / NCU_CHILD_JSON, _ncu_ranges(the_plan), names)


def _check(ctx: StepContext, the_plan: _Plan, opts: RunOptions,
           release: bool = False) -> tuple[dict[str, Any], Background | None]:
    """The first child: check and time; under nsys (then the timeline's capture) when nsys is
    used. Returns the check's report and the nsys export running in the background (or None).
    `release`: the child touches GPU_RELEASED when done with the GPU (an ncu step waits for it)."""
    pair, variants, sizes, folder = the_plan.pair, the_plan.variants, the_plan.sizes, ctx.folder
    what = f"checking {', '.join(variants)} against a float64 reference, then timing them interleaved"
    building = pending_line(pair)
    if building:
        ctx.progress(building)
    args = [*timing_args(opts.timing), *(["--release", str(folder / GPU_RELEASED)] if release else [])]
    if the_plan.nsys is None:
        ctx.progress(f"[1/2] {what}")
        return check_step(ctx, child_command(pair, variants, sizes, "check", folder / CHECK_JSON, *args),
                          folder / CHECK_JSON), None
    ctx.progress(f"[1/2] {what}; then nsys: timeline of {opts.nsys_iterations} iterations per variant")
    ctx.info["nsys_capture"] = "cudaProfilerApi, in the check process after the timing"
    child = child_command(pair, variants, sizes, "check", folder / CHECK_JSON, *args,
                          "--nsys-iterations", str(opts.nsys_iterations), "--nsys-out", str(folder / NSYS_CHILD_JSON))
    return check_nsys_step(ctx, the_plan.nsys, child, folder / CHECK_JSON, folder / NSYS_CHILD_JSON)


def more_timing(ctx: StepContext, the_plan: _Plan, timing: TimingOptions, samples: list[dict[str, Any]]) -> int:
    """Timing processes after the check's own: until `timing.processes` in all, then while
    `timing.more(samples, the check's maximum SM clock)` asks for more, up to `timing.max_processes`.
    Returns how many ran."""
    pair, extra = the_plan.pair, 0
    clock_mhz = (ctx.info.get("sensor") or {}).get("sm_clock_max_mhz")
    for p in range(1, max(timing.processes, timing.max_processes)):
        if p >= timing.processes and (timing.more is None or not timing.more(samples, clock_mhz)):
            break
        ctx.progress(f"      timing process {p + 1}")
        out = ctx.folder / TIMING_JSON.format(process=p)
        cmd = child_command(pair, the_plan.variants, the_plan.sizes, "bench", out, *timing_args(timing, p))
        samples += timing_step(ctx, cmd, out, p).get("samples", [])
        extra += 1
    return extra


def failed_check_error(info: dict[str, Any], run_dir: Path) -> CorrectnessError | None:
    """For a stored run whose check failed: the error (exit 7) naming what failed and why."""
    if info.get("status") != "failed_check":
        return None
    check = json.loads((run_dir / CHECK_JSON).read_text())["check"]
    bad = sorted({c["variant"] for c in check["checks"] if not c["passed"]})
    msgs = [c["message"] for c in check["checks"] if not c["passed"]][:1]
    return CorrectnessError(f"{info['pair']}: variant(s) {', '.join(bad)} failed the correctness check"
                            f" ({'; '.join(msgs)}); run {info['run_id']} stored as failed")
