"""Why ch14.quantized_allreduce's int8_overlap times bimodally: is its back-to-back time the host's pace?

Run on a multi-GPU host, one rank per GPU (NVLink multicast off, as the machines ask):

    NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc-per-node 2 benchmarks/overlap_host_pace.py --out DIR

For each int8 variant, TRIALS samples of CALLS calls each, in three ways:
  held     the stream held by a spin while the host queues the calls: GPU time per call alone
  steady   back to back on a free stream (the gate's steady kind): events per call, and the host's
           own time to issue them (perf_counter around the loop, before any synchronize)
  pinned   steady again with each rank's process pinned to its own cores (sched_setaffinity)
and then `graphed`: the variant captured once in a CUDA graph and replayed (NCCL collectives are
capturable), steady, where capture works. Each rank writes host_pace.rank<r>.json as each part
finishes (a cut-off run keeps what it did); rank 0 prints a table: median and p10/p90 per part.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

ROOT = Path(__file__).resolve().parents[1]
SPIN_CYCLES = 60_000_000          # ~30 ms at 1.98 GHz: longer than the host needs to queue CALLS calls


def _pair():
    spec = importlib.util.spec_from_file_location("qar", ROOT / "kernels" / "ch14" / "quantized_allreduce.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def sample(fn, calls: int, held: bool) -> tuple[float, float]:
    """(events per call, host ns per call to issue them)."""
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()
    if held:
        torch.cuda._sleep(SPIN_CYCLES)
    else:
        fn()                                  # fills the queue, as the gate's steady sample does
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    host = time.perf_counter_ns() - t0
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e6 / calls, host / calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--variants", default="int8,int8_overlap")
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    pair = _pair()
    inputs = pair.make_inputs(pair.DEFAULT_SIZES, "cuda", seed=0)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"rank": rank, "world": world, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cpus": sorted(os.sched_getaffinity(0)), "calls": args.calls, "trials": args.trials, "parts": {}}
    path = args.out / f"host_pace.rank{rank}.json"

    def keep(name: str, rows: list[tuple[float, float]] | str) -> None:
        result["parts"][name] = rows if isinstance(rows, str) else \
            {"gpu_ns": [r[0] for r in rows], "host_ns": [r[1] for r in rows]}
        path.write_text(json.dumps(result))

    fns = {v: pair.PAIR.variants[v](inputs) for v in args.variants.split(",")}
    for fn in fns.values():
        for _ in range(3):
            fn()
    for v, fn in fns.items():
        keep(f"{v}/held", [sample(fn, args.calls, True) for _ in range(args.trials)])
        keep(f"{v}/steady", [sample(fn, args.calls, False) for _ in range(args.trials)])
    # this host's ranks split the cores this process may use (a cpuset or another node's numbering would make
    # a global split name cores that are not there)
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    cpus = sorted(os.sched_getaffinity(0))
    share = max(1, len(cpus) // local_world)
    os.sched_setaffinity(0, set(cpus[local * share:(local + 1) * share]) or set(cpus))
    for v, fn in fns.items():
        keep(f"{v}/pinned", [sample(fn, args.calls, False) for _ in range(args.trials)])
    for v, fn in fns.items():
        try:
            graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                fn()
            torch.cuda.current_stream().wait_stream(stream)
            torch.cuda.synchronize()
            with torch.cuda.graph(graph):
                fn()
            torch.cuda.synchronize()
            failed = None
        except Exception as exc:               # noqa: BLE001 - a finding to record, not a failure
            graph, failed = None, f"capture failed: {type(exc).__name__}: {str(exc)[:200]}"
        # every rank samples the graph only if every rank captured it: one rank's replay alone would wait forever
        everyone = torch.tensor([0 if failed else 1], device="cuda")
        dist.all_reduce(everyone, op=dist.ReduceOp.MIN)
        if everyone.item():
            keep(f"{v}/graphed", [sample(graph.replay, args.calls, False) for _ in range(args.trials)])
        else:
            keep(f"{v}/graphed", failed or "capture failed on another rank")
    # no barrier or destroy_process_group after the captures: on the 2x H200 (torch 2.11, NCCL 2.28.9) the barrier
    # after two captured collectives never returned; every part is written above, so each rank just exits
    if rank == 0:
        print(f"{'part':24} {'gpu/call median (p10-p90)':>30} {'host/call median (p10-p90)':>30}")
        for name, rows in result["parts"].items():
            if isinstance(rows, str):
                print(f"{name:24} {rows}")
                continue
            cols = [f"{statistics.median(x) / 1e3:8.1f} us ({_pct(x, .1) / 1e3:6.1f}-{_pct(x, .9) / 1e3:6.1f})"
                    for x in (rows["gpu_ns"], rows["host_ns"])]
            print(f"{name:24} {cols[0]:>30} {cols[1]:>30}")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
