"""`aisp-prof calibrate`: time the probes on this GPU, turn them into ceilings, store them.

The probes run in a child process (`calibrate.child`), like the pairs do, so this process
needs no CUDA context. With `profile=True` the same probes are also profiled under ncu with
the project's metric list, into an ordinary run folder (pair `calibrate`, one variant per
probe, each variant's analytic FLOPs and bytes in run.json), stored like any run: that is how
the known-answer fixtures the roofline is tested against were captured. The folder and the ncu
step are the pair runner's own (`collect.output.run_folder`, `collect.process.steps`).
"""
from __future__ import annotations

import logging
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import tools
from ..collect.output.run_folder import atomic_folder, git_sha, nvidia_smi, provenance, write_json
from ..collect.commands import python_module
from ..collect.process.steps import Progress, StepContext, child_env, ncu_step, read_child
from ..errors import NoGpuError, ProfilerFailedError, UnknownTargetError
from ..naming import NCU_CHILD_JSON, RUN_JSON, hardware_key, new_run_id, nvtx_path, utc_now
from ..parse.metrics.table import DEFAULT_GROUPS, metric_names
from ..store.calibrations import save_calibration, write_calibration_file
from .probes import BY_NAME, SPECS

log = logging.getLogger(__name__)
PAIR_NAME = "calibrate"
CHILD_MODULE = "aisp_prof.calibrate.child"


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


def _child(mode: str, probes: list[str], out: Path, warmup: int, repeats: int) -> list[str]:
    return python_module(CHILD_MODULE, "--mode", mode, "--out", str(out), "--probes", ",".join(probes),
                         "--warmup", str(warmup), "--repeats", str(repeats))


def _read_report(path: Path, what: str) -> dict[str, Any]:
    try:
        return read_child(path, f"the calibration child ({what})")
    except NoGpuError as exc:
        raise NoGpuError("no CUDA GPU found; `aisp-prof calibrate` measures a GPU "
                         "(without one, `aisp-prof calibrate --show` prints stored ceilings)") from exc


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
        "created_at": utc_now(),
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
        raise UnknownTargetError(f"unknown probe(s) {', '.join(unknown)}; probes: {', '.join(BY_NAME)}")
    with tempfile.TemporaryDirectory(prefix="aisp-calibrate-") as tmp:
        out = Path(tmp) / "time.json"
        progress(f"timing {len(names)} probes ({opts.repeats} calls each, CUDA events)")
        proc = subprocess.run(_child("time", names, out, opts.warmup, opts.repeats), env=child_env(),
                              capture_output=True, text=True)
        if not out.exists():
            raise ProfilerFailedError(f"the calibration child exited {proc.returncode}: "
                                      f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        report = _read_report(out, "timing")
    calibration = calibration_from_report(report, nvidia_smi(), git_sha())
    save_calibration(opts.db, calibration)
    outcome = CalibrateOutcome(calibration)
    if opts.write_json is not None:
        outcome.json_path = write_calibration_file(calibration, opts.write_json)
    if opts.profile:
        outcome.profiled_run_id = profile_probes(opts, names, progress)
    return outcome


def calibrate_link(db: Path, gpus: int, write_json: Path | None = None) -> tuple[dict[str, Any], Path | None]:
    """Measure `gpus` GPUs' link (`calibrate.link`), store it (and its JSON file); (record, file).
    `gpus` is checked first (2 to 64, as `calibrate --link`): 0 or 1 would start torchrun on no link."""
    from ..arguments import whole
    from .link import calibration_of, run_link

    gpus = whole(gpus, "gpus", 2, 64)

    try:
        import torch

        have = torch.cuda.device_count()
    except ImportError:
        have = 0
    if have < gpus:
        raise NoGpuError(f"--link {gpus} needs {gpus} CUDA GPUs, this machine has {have}")
    calibration = calibration_of(run_link(gpus), nvidia_smi(), git_sha())
    save_calibration(db, calibration)
    return calibration, write_calibration_file(calibration, write_json) if write_json else None


def profile_probes(opts: CalibrateOptions, names: list[str], progress: Progress = lambda m: None) -> str:
    """Profile the probes under ncu (project metric list) into a run folder; store it; its run id."""
    from ..store.ingest import store_path

    ncu = tools.find_ncu(opts.ncu)
    with atomic_folder(opts.profiles_dir, new_run_id(PAIR_NAME)) as folder:
        info: dict[str, Any] = {
            "run_id": folder.run_id, "pair": PAIR_NAME, "chapter": None, "label": opts.label, "variants": names,
            "sizes": {}, "status": "running", **provenance(), "tools": {}, "commands": {}, "wall_s": {}}
        ctx = StepContext(folder.path, info, progress=progress)
        _profile_into(ctx, ncu, names)
    return store_path(opts.db, folder.final)


def _profile_into(ctx: StepContext, ncu: Path, names: list[str]) -> None:
    started = time.time()
    metrics = metric_names(DEFAULT_GROUPS)
    ctx.progress(f"ncu: {len(metrics)} metrics for each kernel in aisp/{PAIR_NAME}/*")
    child_json = ctx.folder / NCU_CHILD_JSON
    report = ncu_step(ctx, ncu, _child("profile", names, child_json, 1, 1), child_json,
                      [nvtx_path(PAIR_NAME, n) for n in names], metrics)
    probes, info = report.get("probes", {}), ctx.info
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
    write_json(ctx.folder / RUN_JSON, info)
