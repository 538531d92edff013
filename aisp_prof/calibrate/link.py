"""`aisp-prof calibrate --link`: the bus bandwidth the GPUs' link reaches, measured as nccl-tests does.

One process per GPU (torchrun, NCCL); per collective (all-reduce, all-gather, reduce-scatter,
all-to-all) a message of `size_bytes` is warmed up, the ranks meet at a barrier, then `repeats`
calls are timed back to back with CUDA events; the time is the slowest rank's mean. algbw = S / t
and busbw = algbw x nccl-tests' factor (`analyze.ranks.collectives.BUSBW_FACTORS`, S as nccl-tests
defines it per operation), so a multi-rank run's collectives (`aisp-prof ranks`) can be read as
a share of what this link gave. Stored like the other calibrations, under the key of the GPUs
and their count (`naming.hardware_key`: '2x_h100_80gb_hbm3'), which single-GPU runs never match.

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m aisp_prof.calibrate.link --out link.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..naming import hardware_key, utc_now

OPS = ("AllReduce", "AllGather", "ReduceScatter", "AlltoAll")
MODULE = "aisp_prof.calibrate.link"
DEFAULT_BYTES = 1 << 30


def _calls(op: str, size_bytes: int, world: int) -> Any:
    """A zero-argument call of `op` on fp32 buffers whose S (nccl-tests' size) is size_bytes."""
    import torch
    import torch.distributed as dist

    n = size_bytes // 4 // world * world
    full, part = torch.ones(n, device="cuda"), torch.ones(n // world, device="cuda")
    out = torch.empty_like(full)
    return {"AllReduce": lambda: dist.all_reduce(full),
            "AllGather": lambda: dist.all_gather_into_tensor(out, part),
            "ReduceScatter": lambda: dist.reduce_scatter_tensor(part, full),
            "AlltoAll": lambda: dist.all_to_all_single(out, full)}[op], n * 4


def measure(size_bytes: int, repeats: int, warmup: int) -> dict[str, Any]:
    """Every rank times every op; the slowest rank's mean time per call, and the bandwidths."""
    import torch
    import torch.distributed as dist

    from ..analyze.ranks.collectives import BUSBW_FACTORS

    world, ops = dist.get_world_size(), {}
    for op in OPS:
        call, s_bytes = _calls(op, size_bytes, world)
        for _ in range(warmup):
            call()
        torch.cuda.synchronize()
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            call()
        end.record()
        torch.cuda.synchronize()
        t = torch.tensor([start.elapsed_time(end) * 1e6 / repeats], device="cuda", dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        time_ns = float(t.item())
        algbw = s_bytes / time_ns
        ops[op] = {"message_bytes": s_bytes, "time_ns": time_ns, "algbw_gb_per_s": algbw,
                   "busbw_gb_per_s": algbw * BUSBW_FACTORS[op](world)}
        del call
        torch.cuda.empty_cache()
    return {"world_size": world, "repeats": repeats, "warmup": warmup, "ops": ops,
            "gpu_name": torch.cuda.get_device_name(), "torch_version": torch.__version__,
            "nccl_version": ".".join(map(str, torch.cuda.nccl.version()))}


def calibration_of(report: dict[str, Any], smi: dict[str, Any] | None = None, git_sha: str = "") -> dict[str, Any]:
    """The stored record: the link's busbw per op under ceilings.link_busbw_gb_per_s, and the probes."""
    world, gpu = int(report["world_size"]), report.get("gpu_name")
    probes = {f"link_{op.lower()}": {"ok": True, "rate": v["busbw_gb_per_s"] * 1e9, "unit": "byte/s",
                                     "median_ns": v["time_ns"], "spread_pct": 0.0,
                                     "what": f"{op} of {v['message_bytes'] / 2**20:.0f} MiB over {world} GPUs: "
                                             f"bus bandwidth (nccl-tests), mean of {report['repeats']} calls",
                                     **v} for op, v in report["ops"].items()}
    return {"hardware_key": hardware_key(gpu, world), "gpu_name": gpu, "gpu_count": world,
            "created_at": utc_now(), "torch_version": report.get("torch_version"),
            "nccl_version": report.get("nccl_version"), "driver_version": (smi or {}).get("driver_version"),
            "nvidia_smi": smi or {}, "git_sha": git_sha,
            "method": "torchrun, NCCL; warm-up, barrier, CUDA events around back-to-back calls; the slowest "
                      "rank's mean; busbw = S / t x nccl-tests' factor",
            "ceilings": {"link_busbw_gb_per_s": {op: v["busbw_gb_per_s"] for op, v in report["ops"].items()}},
            "probes": probes}


def run_link(world: int, size_bytes: int = DEFAULT_BYTES, repeats: int = 20, warmup: int = 5) -> dict[str, Any]:
    """torchrun `world` ranks of this module; rank 0's report."""
    from ..collect.commands import python_module
    from ..collect.process.steps import child_env
    from ..errors import ProfilerFailedError

    with tempfile.TemporaryDirectory(prefix="aisp-link-") as tmp:
        out = Path(tmp) / "link.json"
        cmd = python_module("torch.distributed.run", "--standalone", "--nproc-per-node", str(world), "-m", MODULE,
                            "--out", str(out), "--bytes", str(size_bytes), "--repeats", str(repeats),
                            "--warmup", str(warmup))
        proc = subprocess.run(cmd, env=child_env(), capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            raise ProfilerFailedError(f"the link calibration (torchrun, {world} ranks) exited {proc.returncode}: "
                                      f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--bytes", type=int, default=DEFAULT_BYTES)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args(argv)
    from ..collect.ranks import group as ranks

    env = ranks.from_env()
    if env is None:
        raise SystemExit(f"start it through torchrun: python -m torch.distributed.run --nproc-per-node N -m {MODULE}")
    ranks.join(env)
    report = measure(args.bytes, args.repeats, args.warmup)
    if env.rank == 0:
        args.out.write_text(json.dumps(report, indent=1))
    ranks.leave()


if __name__ == "__main__":
    main()
