"""The process that runs the calibration probes, timed or under a profiler.

    python -m aisp_prof.calibrate.child --mode time --out /tmp/cal.json [--probes a,b] [--repeats 30]
    python -m aisp_prof.calibrate.child --mode profile --out /tmp/cal.json   # under ncu

`time`: each probe is warmed up, then timed with CUDA events around every call (calls queued
back to back, one synchronize at the end), median and spread reported. `profile`: each probe
runs once inside nested NVTX ranges aisp > calibrate > <probe>, so the project's ncu command
line (`--nvtx-include aisp/calibrate/<probe>/`) profiles exactly the probes. Like the pairs'
child, it reports through a JSON file, never stdout. A probe that fails (e.g. an fp8 GEMM this
torch cannot run) is reported with its error; the others still run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..collect.process.child import software_env, nvtx_markers
from ..collect.timing.timer import time_calls
from ..errors import NoGpuError
from ..naming import nvtx_path
from .probes import SPECS

PAIR_NAME = "calibrate"


def _spin_up(seconds: float = 0.5) -> None:
    """Busy the GPU for a moment so the first timed probe does not start from idle clocks."""
    import torch

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()


def run(mode: str, names: list[str], warmup: int, repeats: int) -> dict[str, Any]:
    import torch

    from .probes import build

    report: dict[str, Any] = {"mode": mode, "env": software_env(), "probes": {}}
    if mode == "time":
        _spin_up()
    push, pop = nvtx_markers()
    for name in names:
        entry: dict[str, Any] = {}
        probe = None
        try:
            probe = build(name)
            entry.update(probe.analytic())
            if mode == "time":
                entry["timing"] = time_calls([probe.launch], repeats, warmup)
            else:
                for _ in range(max(1, warmup)):
                    probe.launch()
                torch.cuda.synchronize()
                for part in nvtx_path(PAIR_NAME, name).split("/"):
                    push(part)
                probe.launch()
                for _ in range(3):
                    pop()
                torch.cuda.synchronize()
            entry["ok"] = True
        except Exception as exc:   # noqa: BLE001 - one probe's failure is reported, not fatal
            entry.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        report["probes"][name] = entry
        probe = None                # free this probe's buffers before the next one allocates
        torch.cuda.empty_cache()
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m aisp_prof.calibrate.child")
    ap.add_argument("--mode", choices=("time", "profile"), required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--probes", default=",".join(s.name for s in SPECS))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args(argv)
    started = time.time()
    try:
        import torch

        if not torch.cuda.is_available():
            raise NoGpuError("no CUDA GPU visible to torch")
        report = run(args.mode, [p for p in args.probes.split(",") if p], args.warmup, args.repeats)
        report.update(ok=True, wall_s=time.time() - started)
        code = 0
    except Exception as exc:   # noqa: BLE001 - reported through the JSON file
        report = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "error_type": type(exc).__name__}
        code = NoGpuError.exit_code if isinstance(exc, NoGpuError) else 1
    args.out.write_text(json.dumps(report, indent=2, default=str))
    return code


if __name__ == "__main__":
    sys.exit(main())
