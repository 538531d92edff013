"""Profiler command lines, built by pure functions so they are tested without a GPU.

ncu gets a curated metric list (aisp_prof.parse.metrics.table) instead of `--set full`, so a
profile costs about half the replay passes; it never touches the clocks (`--clock-control
none`) and profiles only the pair's NVTX ranges. nsys traces CUDA and NVTX with per-node
records for CUDA graphs, only between the child's cudaProfilerStart and cudaProfilerStop, so the
check and the timing run in the same process before the capture (`collect.process.child`).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence


# NCCL's kernels (ncclDevKernel_*, older ncclKernel_*): ncu never replays them, see ncu_command
COLLECTIVE_KERNELS = "nccl"


def ncu_command(ncu: Path, child: Sequence[str], ranges: Sequence[str], metrics: Sequence[str],
                report: Path, exclude_kernels: str | None = None) -> list[str]:
    """`ncu ... -o report child...`; each range is an NVTX path such as aisp/ch09.x/baseline.

    ncu matches nested push/pop ranges as "a/b/c/" (the trailing slash means push/pop), which is
    why the variants run inside nested ranges rather than one range with slashes in its name.
    `exclude_kernels` leaves out kernels whose name starts with it (`-k regex:^(?!...)`): on one
    rank of a multi-rank job the NCCL kernels, because ncu replays a kernel several times to read
    its counters and a collective replayed on one rank waits forever for peers that moved on;
    their times come from nsys, which watches every rank.
    """
    cmd = [str(ncu), "--clock-control", "none", "--target-processes", "all", "--nvtx"]
    for r in ranges:
        cmd += ["--nvtx-include", f"{r}/"]
    if exclude_kernels:
        cmd += ["--kernel-name", f"regex:^(?!{exclude_kernels})"]
    cmd += ["--metrics", ",".join(metrics), "-o", str(report.with_suffix("")), "-f"]
    return cmd + list(child)


def ncu_export_command(ncu: Path, report: Path) -> list[str]:
    """Raw page as CSV in base units (byte, ns, hz): its stdout is the file to parse."""
    return [str(ncu), "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


def nsys_command(nsys: Path, child: Sequence[str], report: Path) -> list[str]:
    """`nsys profile ... child...`: CUDA and NVTX, graph nodes one by one, no CPU sampling.

    `--capture-range=cudaProfilerApi` collects nothing until the child calls cudaProfilerStart;
    `--capture-range-end=stop` ends the collection at its cudaProfilerStop and lets the child run
    on to its end (it still writes its report). So the check child runs under nsys: it checks
    and times with the collection off, then opens the capture for the timeline's iterations
    (Nsight Systems User Guide, "CLI Profile Command Switch Options": --capture-range,
    --capture-range-end; https://docs.nvidia.com/nsight-systems/UserGuide/index.html).
    """
    return [str(nsys), "profile", "--trace=cuda,nvtx", "--cuda-graph-trace=node", "--sample=none",
            "--cpuctxsw=none", "--capture-range=cudaProfilerApi", "--capture-range-end=stop",
            "--force-overwrite=true", "-o", str(report.with_suffix("")), *child]


def nsys_export_command(nsys: Path, report: Path, sqlite: Path) -> list[str]:
    return [str(nsys), "export", "--type", "sqlite", "--force-overwrite=true", "-o", str(sqlite),
            str(report)]


def python_module(module: str, *args: str) -> list[str]:
    """`python -m module args...` with this interpreter."""
    return [sys.executable, "-m", module, *args]
