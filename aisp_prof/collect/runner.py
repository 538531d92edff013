"""`aisp-prof run`: check, then profile a pair under ncu and nsys, into profiles/<run-id>/.

Three child processes, one per job, so a profiler never sees another's work: a bare one that
checks correctness and times with CUDA events, one under ncu, one under nsys. Everything is
written to a hidden temporary folder that is renamed into place only when complete; a failure
removes it, so profiles/ never holds half a run.
"""
from __future__ import annotations

import gzip
import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from .. import pairs as pairs_mod
from ..errors import (CorrectnessError, CounterPermissionError, NoGpuError,
                      ProfilerFailedError, RequirementError, ToolNotFoundError)
from ..parse.metric_table import DEFAULT_GROUPS, metric_names
from . import commands, tools

log = logging.getLogger(__name__)
Progress = Callable[[str], None]

NCU_CSV = "ncu_raw.csv"
NCU_REP = "ncu.ncu-rep"          # gzipped to ncu.ncu-rep.gz once exported (about 10x smaller)
NSYS_SQLITE = "nsys.sqlite"
NSYS_REP = "nsys.nsys-rep"
CHECK_JSON = "check.json"
RUN_JSON = "run.json"


@dataclass
class RunOptions:
    pair: pairs_mod.KernelPair
    profiles_dir: Path
    sizes: dict[str, int] = field(default_factory=dict)
    variants: list[str] = field(default_factory=list)   # empty: every variant this machine can run
    ncu: str | None = None
    nsys: str | None = None
    label: str | None = None
    nsys_iterations: int = 5
    timing_repeats: int = 20
    with_ncu: bool = True
    with_nsys: bool = True
    metric_groups: tuple[str, ...] = DEFAULT_GROUPS   # add "sol_breakdown" / "stall_sampled" for more


@dataclass
class RunOutcome:
    run_id: str
    run_dir: Path
    run_info: dict[str, Any]


def _gpu_capability() -> tuple[int, int]:
    try:
        import torch
    except ImportError as exc:
        raise RequirementError("profiling needs torch in this Python (pip install torch)") from exc
    if not torch.cuda.is_available():
        raise NoGpuError("no CUDA GPU found; `aisp-prof run` profiles on a GPU machine "
                         "(without one, use `aisp-prof import` on saved exports)")
    return torch.cuda.get_device_capability(0)


def choose_variants(pair: pairs_mod.KernelPair, asked: list[str], have: set[str]) -> list[str]:
    """Baseline first, then the optimized variants whose needs (`triton`, `nvcc`) are met.

    A variant asked for by name that cannot run is an error; one not asked for is skipped
    with a log line, so a machine without Triton still profiles the CUDA variant.
    """
    unknown = [v for v in asked if v not in pair.variants]
    if unknown:
        raise RequirementError(f"{pair.name} has no variant {', '.join(unknown)}; "
                               f"it has {', '.join(pair.variants)}")
    names = asked or list(pair.variants)
    chosen = ["baseline"]
    for v in names:
        if v == "baseline":
            continue
        missing = [n for n in pair.variant_needs.get(v, ()) if n not in have]
        if missing and v in asked:
            raise RequirementError(f"variant {v} of {pair.name} needs {', '.join(missing)}")
        if missing:
            log.warning("skipping variant %s of %s: needs %s", v, pair.name, ", ".join(missing))
            continue
        chosen.append(v)
    return chosen


def _capabilities() -> set[str]:
    """The variant needs this machine meets (gpu, triton, nvcc, cutlass): availability decides."""
    from ..availability import machine_capabilities

    caps = machine_capabilities()
    return {name for name in ("gpu", "triton", "nvcc", "cutlass") if caps.get(name)}


def _check_requirements(pair: pairs_mod.KernelPair) -> None:
    cc = _gpu_capability()
    req = pair.requires
    if cc < req.min_cc or (req.max_cc is not None and cc > req.max_cc):
        note = f" ({req.note})" if req.note else ""
        raise RequirementError(f"{pair.name} needs compute capability >= {req.min_cc[0]}.{req.min_cc[1]}"
                               f"{note}; this GPU is {cc[0]}.{cc[1]}: skipped")


def _child_cmd(pair: str, variants: list[str], sizes: dict[str, int], mode: str, out: Path,
               iterations: int = 1, repeats: int = 20) -> list[str]:
    size_text = ",".join(f"{k}={v}" for k, v in sizes.items())
    return [sys.executable, "-m", "aisp_prof.collect.child", "--pair", pair, "--variants",
            ",".join(variants), "--sizes", size_text, "--mode", mode, "--out", str(out),
            "--iterations", str(iterations), "--repeats", str(repeats)]


def _run_logged(cmd: list[str], log_path: Path, env: dict[str, str]) -> tuple[int, str, float]:
    started = time.time()
    with open(log_path, "w") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    return proc.returncode, log_path.read_text(errors="replace"), time.time() - started


_PASSES = re.compile(r"- (\d+) passes?")


def _raise_for_profiler(tool: str, rc: int, text: str, log_path: Path) -> None:
    if "ERR_NVGPUCTRPERM" in text:
        raise CounterPermissionError(
            "ncu may not read GPU performance counters (ERR_NVGPUCTRPERM); run as root or set "
            "NVreg_RestrictProfilingToAdminUsers=0, see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    if rc != 0:
        tail = " | ".join(line for line in text.strip().splitlines()[-3:])
        raise ProfilerFailedError(f"{tool} exited {rc}: {tail[:300]} (full log: {log_path})")


def _read_child(path: Path, tool: str) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ProfilerFailedError(f"the profiled process under {tool} left no report ({exc})")
    if not report.get("ok"):
        err = report.get("error", "unknown error")
        if report.get("error_type") == "NoGpuError":
            raise NoGpuError(err)
        raise ProfilerFailedError(f"the profiled process under {tool} failed: {err}")
    return report


def _nvidia_smi() -> dict[str, str]:
    fields = ["name", "driver_version", "clocks.max.sm", "clocks.max.mem", "clocks.sm",
              "clocks.mem", "power.limit", "pci.bus_id"]
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}",
                              "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values = [v.strip() for v in out.split(",")]
    keys = ["gpu_name", "driver_version", "sm_clock_max_mhz", "mem_clock_max_mhz",
            "sm_clock_mhz_at_start", "mem_clock_mhz_at_start", "power_limit_w", "pci_bus_id"]
    return dict(zip(keys, values)) if len(values) == len(keys) else {}


def _git_sha(root: Path) -> str:
    """The commit that was profiled: $AISP_GIT_SHA (for copies without history), else git's."""
    env = os.environ.get("AISP_GIT_SHA", "")
    if re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", env):
        return env
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "-q", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        return ""
    return sha + ("-dirty" if dirty else "")


def new_run_id(pair_name: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{pair_name}-{secrets.token_hex(2)}"


def collect(opts: RunOptions, progress: Progress = lambda msg: None) -> RunOutcome:
    """Check and profile one pair; return the finished run folder (not yet stored)."""
    pair = opts.pair
    _check_requirements(pair)
    variants = choose_variants(pair, opts.variants, _capabilities())
    ncu = tools.find_ncu(opts.ncu) if opts.with_ncu else None
    nsys = tools.find_nsys(opts.nsys, ncu) if opts.with_nsys else None
    sizes = pairs_mod.parse_sizes(None, {**pair.sizes, **opts.sizes})

    run_id = new_run_id(pair.name)
    opts.profiles_dir.mkdir(parents=True, exist_ok=True)
    tmp = opts.profiles_dir / f".partial-{run_id}"
    final = opts.profiles_dir / run_id
    tmp.mkdir()
    try:
        info = _collect_into(tmp, run_id, pair, variants, sizes, ncu, nsys, opts, progress)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return RunOutcome(run_id, final, info)


def _collect_into(tmp: Path, run_id: str, pair: pairs_mod.KernelPair, variants: list[str],
                  sizes: dict[str, int], ncu: Path | None, nsys: Path | None, opts: RunOptions,
                  progress: Progress) -> dict[str, Any]:
    env = dict(os.environ, AISP_KERNELS=str(pairs_mod.kernels_root()), PYTHONUNBUFFERED="1")
    project_root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(project_root), env.get("PYTHONPATH", "")) if p)
    info: dict[str, Any] = {
        "run_id": run_id, "pair": pair.name, "chapter": pair.chapter, "label": opts.label,
        "variants": variants, "sizes": sizes, "status": "running",
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_sha": _git_sha(project_root), "host": os.uname().nodename,
        "analytic": {"flops": pair.flops(sizes), "dram_bytes": pair.bytes(sizes)},
        "gpu": _nvidia_smi(), "tools": {}, "commands": {}, "wall_s": {},
    }
    try:
        nvcc = tools.find_nvcc()
        info["tools"]["nvcc"] = {"path": str(nvcc), "version": tools.tool_version(nvcc)}
    except ToolNotFoundError:
        pass
    started = time.time()

    progress(f"[1/3] checking {', '.join(variants)} against a float64 reference")
    cmd = _child_cmd(pair.name, variants, sizes, "check", tmp / CHECK_JSON, repeats=opts.timing_repeats)
    rc, text, wall = _run_logged(cmd, tmp / "check.log", env)
    info["commands"]["check"] = cmd
    info["wall_s"]["check"] = round(wall, 2)
    check = _read_child(tmp / CHECK_JSON, "the check")
    info["env"] = check.get("env", {})
    info["gpu"].update({k: v for k, v in info["env"].items() if k in ("sm_count", "compute_capability", "l2_cache_bytes", "gpu_memory_bytes")})
    info["timing_cuda_events"] = check.get("timing", {})
    if not check["check"]["passed"]:
        info["status"] = "failed_check"
        _write_json(tmp / RUN_JSON, info)
        return info

    if ncu is not None:
        names = metric_names(opts.metric_groups)
        progress(f"[2/3] ncu: {len(names)} metrics for each kernel in aisp/{pair.name}/*")
        info["tools"]["ncu"] = {"path": str(ncu), "version": tools.tool_version(ncu)}
        child = _child_cmd(pair.name, variants, sizes, "profile", tmp / "ncu_child.json")
        ranges = [commands.nvtx_path(pair.name, v) for v in variants]
        cmd = commands.ncu_command(ncu, child, ranges, names, tmp / NCU_REP)
        rc, text, wall = _run_logged(cmd, tmp / "ncu.log", env)
        info["commands"]["ncu"] = cmd
        info["wall_s"]["ncu"] = round(wall, 2)
        _raise_for_profiler("ncu", rc, text, tmp / "ncu.log")
        _read_child(tmp / "ncu_child.json", "ncu")
        if "No kernels were profiled" in text:
            raise ProfilerFailedError(f"ncu profiled no kernels in aisp/{pair.name}/*; see {tmp / 'ncu.log'}")
        passes = [int(p) for p in _PASSES.findall(text)]
        info["ncu_passes_per_kernel"] = max(passes) if passes else None
        info["ncu_kernels_profiled"] = len(passes)
        export = commands.ncu_export_command(ncu, tmp / NCU_REP)
        with open(tmp / NCU_CSV, "w") as fh:
            proc = subprocess.run(export, stdout=fh, stderr=subprocess.PIPE, text=True)
        info["commands"]["ncu_export"] = export
        if proc.returncode != 0:
            raise ProfilerFailedError(f"ncu --import failed: {proc.stderr.strip()[:300]}")
        _gzip(tmp / NCU_REP)

    if nsys is not None:
        progress(f"[3/3] nsys: timeline of {opts.nsys_iterations} iterations per variant")
        info["tools"]["nsys"] = {"path": str(nsys), "version": tools.tool_version(nsys)}
        child = _child_cmd(pair.name, variants, sizes, "profile", tmp / "nsys_child.json",
                           iterations=opts.nsys_iterations)
        cmd = commands.nsys_command(nsys, child, tmp / NSYS_REP)
        rc, text, wall = _run_logged(cmd, tmp / "nsys.log", env)
        info["commands"]["nsys"] = cmd
        info["wall_s"]["nsys"] = round(wall, 2)
        _raise_for_profiler("nsys", rc, text, tmp / "nsys.log")
        _read_child(tmp / "nsys_child.json", "nsys")
        export = commands.nsys_export_command(nsys, tmp / NSYS_REP, tmp / NSYS_SQLITE)
        rc, text, _ = _run_logged(export, tmp / "nsys_export.log", env)
        info["commands"]["nsys_export"] = export
        _raise_for_profiler("nsys export", rc, text, tmp / "nsys_export.log")

    info["status"] = "ok"
    info["wall_s"]["total"] = round(time.time() - started, 2)
    _write_json(tmp / RUN_JSON, info)
    return info


def _gzip(path: Path) -> None:
    """path -> path.gz (a .ncu-rep shrinks about 10x; ncu_report reads it back through aisp_prof)."""
    with open(path, "rb") as src, gzip.open(f"{path}.gz", "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


def raise_if_failed_check(info: dict[str, Any], run_dir: Path) -> None:
    """After storing a failed run: the CLI's non-zero exit with what failed."""
    if info.get("status") == "failed_check":
        check = json.loads((run_dir / CHECK_JSON).read_text())["check"]
        bad = sorted({c["variant"] for c in check["checks"] if not c["passed"]})
        msgs = [c["message"] for c in check["checks"] if not c["passed"]][:1]
        raise CorrectnessError(f"{info['pair']}: variant(s) {', '.join(bad)} failed the correctness check"
                               f" ({'; '.join(msgs)}); run {info['run_id']} stored as failed")


