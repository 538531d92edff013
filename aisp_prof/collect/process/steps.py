"""The steps of a collection, each one child process: check, ncu, nsys.

A step runs a child command (the pairs' `collect.process.child` or the calibration probes' child),
logs its output into the run folder, records the command line, the tool version and the wall
time in run.json, and turns a profiler's failure into the error a user can act on. The pair
runner and `aisp-prof calibrate --profile` share these steps; only the child differs.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ... import tools
from ...errors import CounterPermissionError, NoGpuError, ProfilerFailedError
from ...naming import NCU_CSV, NCU_REP, NSYS_REP, NSYS_SQLITE, rank_path
from ...paths import checkout_root, kernels_root
from .. import commands
from ..output.run_folder import gzip_file
from ..ranks.follow import Board
from ..ranks.launch import Agent, Launch, node_folder
from . import preload
from .agents import assemble, command_header, run_agents

Progress = Callable[[str], None]
_PASSES = re.compile(r"- (\d+) passes?")


@dataclass
class StepContext:
    """What every step of one collection shares: the partial run folder, the children's
    environment, the run.json being built, and where progress messages go."""

    folder: Path
    info: dict[str, Any]
    env: dict[str, str] = field(default_factory=lambda: child_env())
    progress: Progress = lambda message: None
    world_size: int = 1          # ranks of a torchrun job, one GPU each (pairs with world_size > 1)
    ncu_rank: int = 0            # the one rank ncu watches
    launch_plan: Launch | None = None   # how the ranks start (collect.ranks.launch); None: one torchrun agent
    node_folders: list[str] = field(default_factory=list)   # the agents' own folders ("node1"), if several nodes
    board: Board | None = None   # node 0 of a real multi-node job posts each step here (collect.ranks.follow)

    def record(self, name: str, cmd: list[str], wall_s: float) -> None:
        self.info.setdefault("commands", {})[name] = cmd
        self.info.setdefault("wall_s", {})[name] = round(wall_s, 2)

    def agents(self, name: str, command_of: Callable[[int], list[str]]) -> list[Agent]:
        """The processes that start a step: one process's own command, or the launcher's agents
        (`collect.ranks.launch`) starting each rank's line (`rank_exec`; each rank's line kept in
        <name>.ranks.json and in run.json)."""
        if self.world_size == 1:
            return [Agent(0, command_of(0))]
        from ..ranks.launch import Launch, agents
        from ..ranks.rank_exec import write_rank_commands

        path = self.folder / f"{name}.ranks.json"
        per_rank = write_rank_commands(path, self.world_size, command_of)
        self.info.setdefault("rank_commands", {})[name] = {str(r): c for r, c in per_rank.items()}
        visible, job = os.environ.get("CUDA_VISIBLE_DEVICES"), str(self.info.get("run_id", ""))
        if self.board is not None:           # the other nodes start their agents for this step too
            self.board.step(name, path, self.folder, job)
        return agents(self.launch_plan or Launch(self.world_size), path, self.folder, job,
                      visible.split(",") if visible else None)

    def launch(self, name: str, command_of: Callable[[int], list[str]]) -> list[str]:
        """The command line of a step started by one process (the first agent's)."""
        return self.agents(name, command_of)[0].argv

    def run(self, name: str, command_of: Callable[[int], list[str]], log_name: str) -> tuple[int, str, list[str]]:
        """Run a step's agents to their end (`run_agents`), record each command line, and bring
        what agents of several nodes wrote into their own folders into the run folder
        (`assemble`). Returns (exit code, log text, the first agent's command line)."""
        started = self.agents(name, command_of)
        server, env = preload.current(), {**self.env, **started[0].env}
        forked = None
        if server is not None and len(started) == 1 and server.serves(started[0].argv, env):
            forked = server.run_logged(started[0].argv, self.folder / log_name, env)
        if forked is not None:
            rc, text, wall = forked
            self.info.setdefault("forked_from_preload", []).append(name)   # see collect.process.preload
        else:
            rc, text, wall = run_agents(started, self.folder / log_name, self.env)
        for agent in started:
            self.record(name if agent is started[0] else f"{name}_node{agent.node}", agent.argv, wall)
        nodes = self.launch_plan.nnodes if self.launch_plan is not None else 1
        self.node_folders = sorted({*self.node_folders, *(a.folder for a in started if a.folder),
                                    *(node_folder(n) for n in range(nodes) if nodes > 1)})
        assemble(self.folder, self.node_folders)
        return rc, text, started[0].argv

    def read(self, report: Path, what: str) -> dict[str, Any]:
        """The child's report; of a multi-rank step, rank 0's with every rank's check merged in
        (`merge_rank_checks`) and written back, so what reads check.json sees every rank."""
        if self.world_size == 1:
            return read_child(report, what)
        reports = [read_child(rank_path(report, r), f"{what}, rank {r}") for r in range(self.world_size)]
        merged = merge_rank_checks(reports)
        if "check" in merged or "samples" in merged:
            report.unlink(missing_ok=True)    # a link to a node folder's file (`assemble`) keeps rank 0's own
            report.write_text(json.dumps(merged, indent=2, default=str))
        return merged


def child_env() -> dict[str, str]:
    """The environment of a profiled child: unbuffered, the same kernels folder, NVLink multicast
    off (the GPU machines ask it of every NCCL job), and this checkout first on the path when
    running from one."""
    from ..ranks.launch import MULTICAST_OFF

    env = dict(os.environ, PYTHONUNBUFFERED="1", AISP_KERNELS=str(kernels_root()), **MULTICAST_OFF)
    root = checkout_root()
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    return env


def raise_for_profiler(tool: str, rc: int, text: str, log_path: Path) -> None:
    """Counter permission (ERR_NVGPUCTRPERM) and other profiler failures, as one-line errors."""
    if "ERR_NVGPUCTRPERM" in text:
        raise CounterPermissionError(
            "ncu may not read GPU performance counters (ERR_NVGPUCTRPERM); run as root or set "
            "NVreg_RestrictProfilingToAdminUsers=0, see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    if rc != 0:
        tail = " | ".join(line for line in text.strip().splitlines()[-3:])
        raise ProfilerFailedError(f"{tool} exited {rc}: {tail[:300]} (full log: {log_path})")


def read_child(path: Path, what: str) -> dict[str, Any]:
    """The child's JSON report; its failure becomes NoGpuError or ProfilerFailedError."""
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ProfilerFailedError(f"the profiled process under {what} left no report ({exc})") from exc
    if not report.get("ok"):
        err = report.get("error", "unknown error")
        if report.get("error_type") == "NoGpuError":
            raise NoGpuError(err)
        raise ProfilerFailedError(f"the profiled process under {what} failed: {err}")
    return report


def merge_rank_checks(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Rank 0's report, its check failed when any rank's failed, and every rank's check rows
    (each with its `rank`): a collective is right only if it is right on every rank. The timed
    samples are every rank's, each with its `rank` (the gate judges a call by its slowest rank,
    stats.slowest_rank), and `sensor_per_rank` each rank's GPU limits; the CUDA-event timing
    summary stays rank 0's."""
    merged = dict(reports[0])
    if any("samples" in rep for rep in reports):
        merged["samples"] = [{**s, "rank": r} for r, rep in enumerate(reports) for s in rep.get("samples") or []]
        merged["sensor_per_rank"] = {str(r): rep.get("sensor") or {} for r, rep in enumerate(reports)}
    if "check" not in merged:
        return merged
    check = dict(merged["check"])
    check["checks"] = [{**c, "rank": r} for r, rep in enumerate(reports) for c in rep["check"]["checks"]]
    check["passed"] = all(rep["check"]["passed"] for rep in reports)
    check["failed_variants"] = list(dict.fromkeys(v for rep in reports for v in rep["check"].get("failed_variants", [])))
    check["skipped_variants"] = {v: why for rep in reports
                                 for v, why in rep["check"].get("skipped_variants", {}).items()}
    merged["check"] = check
    return merged


def check_step(ctx: StepContext, child: list[str], report: Path) -> dict[str, Any]:
    """Run the bare (unprofiled) child; its report holds the check and the CUDA-event timings."""
    ctx.run("check", lambda rank: child, "check.log")
    return ctx.read(report, "the check")


def timing_step(ctx: StepContext, child: list[str], report: Path, process: int) -> dict[str, Any]:
    """One more timing process (the bench's repeats): interleaved samples, no profiler."""
    ctx.run(f"timing_p{process}", lambda rank: child, f"timing_p{process}.log")
    return ctx.read(report, f"timing process {process}")


def ncu_command_of(ctx: StepContext, ncu: Path, child: list[str], ranges: Sequence[str],
                   metrics: Sequence[str]) -> Callable[[int], list[str]]:
    """Each rank's line of the ncu step (ncu on one rank only for a multi-rank run), with ncu's
    path and version in run.json."""
    ctx.info.setdefault("tools", {})["ncu"] = {"path": str(ncu), "version": tools.tool_version(ncu)}
    skip = commands.COLLECTIVE_KERNELS if ctx.world_size > 1 else None
    profiled = commands.ncu_command(ncu, child, ranges, metrics, ctx.folder / NCU_REP, exclude_kernels=skip)
    if ctx.world_size > 1:
        ctx.info["ncu_rank"] = ctx.ncu_rank
    return lambda rank: profiled if rank == ctx.ncu_rank else child


def ncu_profiled_command(ctx: StepContext, ncu: Path, child: list[str], ranges: Sequence[str],
                         metrics: Sequence[str]) -> list[str]:
    """The ncu step's command line (torchrun's for a multi-rank run: ncu on one rank)."""
    return ctx.launch("ncu", ncu_command_of(ctx, ncu, child, ranges, metrics))


def ncu_step(ctx: StepContext, ncu: Path, child: list[str], report: Path, ranges: Sequence[str],
             metrics: Sequence[str]) -> dict[str, Any]:
    """Profile `child` under ncu (only `ranges`, only `metrics`), export the raw page as CSV,
    gzip the report. Returns the child's report."""
    rc, text, _ = ctx.run("ncu", ncu_command_of(ctx, ncu, child, ranges, metrics), "ncu.log")
    return _after_ncu(ctx, ncu, rc, text, report, ranges)


def start_ncu_early(ctx: StepContext, ncu: Path, child: list[str], ranges: Sequence[str],
                    metrics: Sequence[str]) -> "Background":
    """Start the ncu step now, beside the check: `child` must carry `--wait-for`, so that ncu and
    the child start up, import and load the pair while the check runs, and touch the GPU only
    when the check process says it is done with it (`collect.process.child --release`). What ncu then
    profiles is what `ncu_step` profiles; only start-up overlaps. One process only."""
    return Background.start("ncu", "ncu", ncu_profiled_command(ctx, ncu, child, ranges, metrics),
                            ctx.folder / "ncu.log", ctx.env)


def finish_ncu_early(ctx: StepContext, ncu: Path, early: "Background", report: Path, ranges: Sequence[str],
                     released_at: float) -> dict[str, Any]:
    """Wait for the ncu step `start_ncu_early` began; as `ncu_step` from there. run.json's
    `wall_s.ncu` is counted from `released_at` (the check's end), the start-up hidden behind the
    check as `wall_s.ncu_startup_overlapped`."""
    rc = early.procs[0].wait()
    ctx.record("ncu", early.cmds[0], time.time() - max(released_at, early.started))
    ctx.info["wall_s"]["ncu_startup_overlapped"] = round(max(released_at - early.started, 0.0), 2)
    return _after_ncu(ctx, ncu, rc, early.log_path.read_text(errors="replace"), report, ranges)


def _after_ncu(ctx: StepContext, ncu: Path, rc: int, text: str, report: Path, ranges: Sequence[str]) -> dict[str, Any]:
    """A finished ncu step: its failure as a one-line error, the passes per kernel, the raw page
    exported as CSV, the report gzipped. Returns the child's report."""
    raise_for_profiler("ncu", rc, text, ctx.folder / "ncu.log")
    child_report = read_child(rank_path(report, ctx.ncu_rank), "ncu")
    if "No kernels were profiled" in text:
        raise ProfilerFailedError(f"ncu profiled no kernels in {', '.join(ranges)}; see {ctx.folder / 'ncu.log'}")
    passes = [int(p) for p in _PASSES.findall(text)]
    ctx.info["ncu_passes_per_kernel"] = max(passes) if passes else None
    ctx.info["ncu_kernels_profiled"] = len(passes)
    export = commands.ncu_export_command(ncu, ctx.folder / NCU_REP)
    with open(ctx.folder / NCU_CSV, "w") as fh:
        proc = subprocess.run(export, stdout=fh, stderr=subprocess.PIPE, text=True)
    ctx.info["commands"]["ncu_export"] = export
    if proc.returncode != 0:
        raise ProfilerFailedError(f"ncu --import failed: {proc.stderr.strip()[:300]}")
    gzip_file(ctx.folder / NCU_REP)
    return child_report


@dataclass
class Background:
    """Logged commands running beside the next step (the nsys export beside the ncu profile:
    one reads a file on the CPU, the other replays kernels on the GPU); one per rank of a
    multi-rank run, all at once (each reads its own report)."""

    tool: str
    name: str
    cmds: list[list[str]]
    log_path: Path
    procs: list[subprocess.Popen]
    started: float

    @classmethod
    def start(cls, tool: str, name: str, cmd: list[str], log_path: Path, env: dict[str, str]) -> "Background":
        return cls.start_all(tool, name, [cmd], log_path, env)

    @classmethod
    def start_all(cls, tool: str, name: str, cmds: list[list[str]], log_path: Path,
                  env: dict[str, str]) -> "Background":
        procs = []
        with open(log_path, "w") as fh:
            for cmd in cmds:
                fh.write(command_header(cmd))
                fh.flush()
                # its own process group, so that cancel() also stops what it started
                procs.append(subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                              start_new_session=True))
        return cls(tool, name, cmds, log_path, procs, time.time())

    def finish(self, ctx: StepContext) -> None:
        """Wait for them; record each command and the wall time; a failure as a one-line error."""
        codes = [proc.wait() for proc in self.procs]
        for i, cmd in enumerate(self.cmds):
            ctx.record(self.name if i == 0 else f"{self.name}_rank{i}", cmd, time.time() - self.started)
        for rc in codes:
            raise_for_profiler(self.tool, rc, self.log_path.read_text(errors="replace"), self.log_path)
        assemble(ctx.folder, ctx.node_folders)      # the node folders get their nodes' exports

    def cancel(self) -> None:
        """Stop them (and their children) if they still run: the run is failing, its folder goes."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def check_nsys_step(ctx: StepContext, nsys: Path, child: list[str], report: Path,
                    capture_report: Path) -> tuple[dict[str, Any], Background | None]:
    """The check child under nsys (`commands.nsys_command`, capture range = the child's
    cudaProfilerStart/Stop): the check and the timing, then the timeline's iterations, in one
    process. Returns the check's report and the export of the timeline to SQLite, started in
    the background (`Background.finish` waits for it).

    run.json's wall_s splits the process at the capture's start: `check` (start-up, check,
    timing), `nsys_capture` (the captured iterations and nsys writing its report), and
    `nsys_export`. A failed check opens no capture: its report is returned, nothing exported."""
    ctx.info.setdefault("tools", {})["nsys"] = {"path": str(nsys), "version": tools.tool_version(nsys)}
    log_path = ctx.folder / "check.log"
    began = time.time()
    rc, text, _ = ctx.run("check", lambda rank: commands.nsys_command(nsys, child, rank_path(ctx.folder / NSYS_REP, rank)),
                          "check.log")
    wall = ctx.info["wall_s"]["check"]
    if rc != 0 and not report.exists():
        raise_for_profiler("nsys", rc, text, log_path)
    check = ctx.read(report, "the check (under nsys)")
    if not check["check"]["passed"]:
        return check, None
    raise_for_profiler("nsys", rc, text, log_path)
    capture = read_child(capture_report, "the nsys capture")
    split = min(max(float(capture.get("capture_started_at", began)) - began, 0.0), wall)
    ctx.info["wall_s"].update(check=round(split, 2), nsys_capture=round(wall - split, 2))
    exports = [commands.nsys_export_command(nsys, rank_path(ctx.folder / NSYS_REP, r), rank_path(ctx.folder / NSYS_SQLITE, r))
               for r in range(ctx.world_size)]
    return check, Background.start_all("nsys export", "nsys_export", exports, ctx.folder / "nsys_export.log", ctx.env)
