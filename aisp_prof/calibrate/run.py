"""`aisp-prof calibrate`: time the probes on this GPU, turn them into ceilings, store them.

The probes run in a child process (`calibrate.child`), like the pairs do, so this process
needs no CUDA context. With `profile=True` the same probes are also profiled under ncu with
the project's metric list, into an ordinary run folder (pair `calibrate`, one variant per
probe, each variant's analytic FLOPs and bytes in run.json), stored like any run: that is how
the known-answer fixtures the roofline is tested against were captured.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ..analyze.ceilings import hardware_key
from ..collect import commands, runner, tools
from ..errors import AispError, NoGpuError, ProfilerFailedError
from ..parse.metric_table import DEFAULT_GROUPS, metric_names
from .probes import BY_NAME, SPECS
from .store import save_calibration, write_calibration_file

log = logging.getLogger(__name__)
Progress = Callable[[str], None]
PAIR_NAME = "calibrate"


@dataclass
class CalibrateOptions:
    db: Path
    probes: list[str] = field(default_factory=list)      # empty: all of probes.SPECS
    repeats: int = 30
    warmup: int = 3
    write_json: Path | None = None                        # folder for <hardware_key>.json
    profile: bool = False
    profiles_dir: Path = Path("profiles")
    ncu: str | None = None
    label: str | None = None


@dataclass
class CalibrateOutcome:
    calibration: dict[str, Any]
    json_path: Path | None = None
    profiled_run_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"calibration": self.calibration, "json_path": str(self.json_path) if self.json_path else None,
                "profiled_run_id": self.profiled_run_id}


def _project_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def _child(mode: str, probes: list[str], out: Path, warmup: int, repeats: int) -> list[str]:
    return [sys.executable, "-m", "aisp_prof.calibrate.child", "--mode", mode, "--out", str(out),
            "--probes", ",".join(probes), "--warmup", str(warmup), "--repeats", str(repeats)]


def _read_report(path: Path, what: str) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ProfilerFailedError(f"the calibration child ({what}) left no report ({exc})") from exc
    if not report.get("ok"):
        err = report.get("error", "unknown error")
        if "no CUDA GPU" in err:
            raise NoGpuError("no CUDA GPU found; `aisp-prof calibrate` measures a GPU "
                             "(without one, `aisp-prof calibrate --show` prints stored ceilings)")
        raise ProfilerFailedError(f"the calibration child ({what}) failed: {err}")
    return report


def calibration_from_report(report: dict[str, Any], smi: dict[str, Any] | None = None,
                            git_sha: str = "") -> dict[str, Any]:
    """The stored record: provenance, every probe's work, times and rate, and the ceilings."""
    env = report.get("env", {})
    smi = smi or {}
    gpu_name = smi.get("gpu_name") or env.get("gpu_name")
    probes: dict[str, Any] = {}
    ceilings: dict[str, Any] = {"flops_per_s": {}}
    for name, entry in report.get("probes", {}).items():
        spec = BY_NAME.get(name)
        if spec is None or not entry.get("ok"):
            probes[name] = {"ok": False, "error": entry.get("error", "unknown probe")}
            continue
        t = entry["timing"]
        work = entry["flops"] if spec.ceiling == "flops_per_s" else entry["bytes"]
        rate = work / (t["median_ns"] * 1e-9)
        probes[name] = {
            **{k: v for k, v in entry.items() if k != "timing"}, **t,
            "what": spec.what, "ceiling": spec.ceiling, "rate": rate,
            "unit": "flop/s" if spec.ceiling == "flops_per_s" else "byte/s",
            "rate_at_p10_ns": work / (t["p10_ns"] * 1e-9), "rate_at_p90_ns": work / (t["p90_ns"] * 1e-9),
            "spread_pct": 100.0 * (t["p90_ns"] - t["p10_ns"]) / t["median_ns"],
        }
        if spec.note:
            probes[name]["note"] = spec.note
        if not spec.is_ceiling:
            probes[name]["ceiling"] = None
        elif spec.ceiling == "flops_per_s":
            ceilings["flops_per_s"][spec.precision] = max(rate, ceilings["flops_per_s"].get(spec.precision, 0.0))
        else:   # the fastest probe of a level is its ceiling (kernel copy vs cudaMemcpy)
            ceilings[spec.ceiling] = max(rate, ceilings.get(spec.ceiling, 0.0))
    return {
        "hardware_key": hardware_key(gpu_name), "gpu_name": gpu_name,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "driver_version": smi.get("driver_version"), "torch_version": env.get("torch_version"),
        "torch_cuda_version": env.get("torch_cuda_version"), "sm_count": env.get("sm_count"),
        "gpu_memory_bytes": env.get("gpu_memory_bytes"), "l2_cache_bytes": env.get("l2_cache_bytes"),
        "compute_capability": env.get("compute_capability"), "nvidia_smi": smi, "git_sha": git_sha,
        "method": "CUDA events around each call, calls queued back to back; rate = work / median time",
        "ceilings": ceilings, "probes": probes,
    }


def calibrate(opts: CalibrateOptions, progress: Progress = lambda m: None) -> CalibrateOutcome:
    """Time the probes, store the ceilings (and the JSON file); optionally profile them too."""
    names = opts.probes or [s.name for s in SPECS]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise AispError(f"unknown probe(s) {', '.join(unknown)}; probes: {', '.join(BY_NAME)}")
    env = _project_env()
    with tempfile.TemporaryDirectory(prefix="aisp-calibrate-") as tmp:
        out = Path(tmp) / "time.json"
        progress(f"timing {len(names)} probes ({opts.repeats} calls each, CUDA events)")
        proc = subprocess.run(_child("time", names, out, opts.warmup, opts.repeats), env=env,
                              capture_output=True, text=True)
        if not out.exists():
            raise ProfilerFailedError(f"the calibration child exited {proc.returncode}: "
                                      f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        report = _read_report(out, "timing")
    root = Path(__file__).resolve().parents[2]
    calibration = calibration_from_report(report, runner._nvidia_smi(), runner._git_sha(root))
    save_calibration(opts.db, calibration)
    outcome = CalibrateOutcome(calibration)
    if opts.write_json is not None:
        outcome.json_path = write_calibration_file(calibration, opts.write_json)
    if opts.profile:
        outcome.profiled_run_id = profile_probes(opts, names, progress)
    return outcome


def profile_probes(opts: CalibrateOptions, names: list[str], progress: Progress = lambda m: None) -> str:
    """Profile the probes under ncu (project metric list) into a run folder; store it; its run id."""
    from ..ingest import store_path

    ncu = tools.find_ncu(opts.ncu)
    run_id = runner.new_run_id(PAIR_NAME)
    opts.profiles_dir.mkdir(parents=True, exist_ok=True)
    tmp = opts.profiles_dir / f".partial-{run_id}"
    final = opts.profiles_dir / run_id
    tmp.mkdir()
    try:
        _profile_into(tmp, run_id, ncu, names, opts, progress)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return store_path(opts.db, final)


def _profile_into(tmp: Path, run_id: str, ncu: Path, names: list[str], opts: CalibrateOptions,
                  progress: Progress) -> None:
    root = Path(__file__).resolve().parents[2]
    env = _project_env()
    info: dict[str, Any] = {
        "run_id": run_id, "pair": PAIR_NAME, "chapter": None, "label": opts.label, "variants": names,
        "sizes": {}, "status": "running", "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_sha": runner._git_sha(root), "host": os.uname().nodename, "gpu": runner._nvidia_smi(),
        "tools": {"ncu": {"path": str(ncu), "version": tools.tool_version(ncu)}}, "commands": {}, "wall_s": {},
    }
    started = time.time()
    metrics = metric_names(DEFAULT_GROUPS)
    progress(f"ncu: {len(metrics)} metrics for each kernel in aisp/{PAIR_NAME}/*")
    child = _child("profile", names, tmp / "ncu_child.json", 1, 1)
    cmd = commands.ncu_command(ncu, child, [commands.nvtx_path(PAIR_NAME, n) for n in names], metrics,
                               tmp / runner.NCU_REP)
    rc, text, wall = runner._run_logged(cmd, tmp / "ncu.log", env)
    info["commands"]["ncu"] = cmd
    info["wall_s"]["ncu"] = round(wall, 2)
    runner._raise_for_profiler("ncu", rc, text, tmp / "ncu.log")
    report = _read_report(tmp / "ncu_child.json", "ncu")
    passes = [int(p) for p in runner._PASSES.findall(text)]
    info["ncu_passes_per_kernel"] = max(passes) if passes else None
    info["ncu_kernels_profiled"] = len(passes)
    export = commands.ncu_export_command(ncu, tmp / runner.NCU_REP)
    with open(tmp / runner.NCU_CSV, "w") as fh:
        proc = subprocess.run(export, stdout=fh, stderr=subprocess.PIPE, text=True)
    info["commands"]["ncu_export"] = export
    if proc.returncode != 0:
        raise ProfilerFailedError(f"ncu --import failed: {proc.stderr.strip()[:300]}")
    runner._gzip(tmp / runner.NCU_REP)
    probes = report.get("probes", {})
    info["env"] = report.get("env", {})
    info["gpu"].update({k: v for k, v in info["env"].items()
                        if k in ("sm_count", "compute_capability", "l2_cache_bytes", "gpu_memory_bytes")})
    # per-variant analytic work: each probe is a different computation, unlike a pair's variants
    info["analytic"] = {"flops": None, "dram_bytes": None,
                        "variants": {n: {k: v for k, v in p.items() if k not in ("ok",)}
                                     for n, p in probes.items() if p.get("ok")}}
    info["probe_errors"] = {n: p.get("error") for n, p in probes.items() if not p.get("ok")}
    info["status"] = "ok"
    info["wall_s"]["total"] = round(time.time() - started, 2)
    (tmp / runner.RUN_JSON).write_text(json.dumps(info, indent=2, default=str) + "\n")
