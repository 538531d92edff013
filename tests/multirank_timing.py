"""Run by tests under torchrun on the CPU: the timing child's multi-rank path without a GPU. Each
rank joins a gloo group and times two variants with `time_rounds` on a simulated device
(tests/sim_device.py), each call a real gloo all-reduce plus simulated GPU work: rank 1's `int8`
is 10% slower than rank 0's (a straggler). Rank 0 asks for a tight interval (it samples on), rank 1
would stop at the minimum: `ranks.agree` must keep them in step. Writes OUT.rank<r>.json as the
child writes its report. Not a test module.

    python -m torch.distributed.run --standalone --nproc-per-node 2 tests/multirank_timing.py OUT
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from sim_device import SimDevice  # noqa: E402

from aisp_prof.collect.ranks import group as ranks  # noqa: E402
from aisp_prof.collect.timing.timer import SamplingPlan, time_rounds  # noqa: E402
from aisp_prof.naming import rank_path  # noqa: E402

GPU_NS = {"baseline": 100_000.0, "int8": 50_000.0, "edge": 480_000.0}
# rank 1's factor: int8 a straggler; `edge` 0.48 ms on rank 0 and 0.52 ms on rank 1, so that each
# rank's own count of calls per steady sample differs (ceil(1 ms / t): 3 and 2)
STRAGGLER = {"int8": 1.10, "edge": 520_000.0 / 480_000.0}


def main() -> None:
    out = Path(sys.argv[1])
    env = ranks.from_env()
    ranks.join(env, device="cpu")
    import torch
    import torch.distributed as dist

    dev, jitter = SimDevice(), random.Random(env.rank)
    token = torch.ones(1)

    def variant(name: str):
        def call() -> None:
            dist.all_reduce(token)                      # the ranks meet on every call, as a collective does
            factor = STRAGGLER.get(name, 1.0) if env.rank == 1 else 1.0
            dev.host(2_000.0)
            dev.gpu(GPU_NS[name] * factor * (1 + (jitter.gauss(0, 0.01) if name != "edge" else 0)))
        return call

    plan = SamplingPlan(min_rounds=10, max_rounds=400, budget_s=600.0 if env.rank == 0 else 0.0,
                        target_rel_ci=0.002 if env.rank == 0 else 1.0, warmup=2, kinds=("gpu", "steady"))
    rows = time_rounds({v: [variant(v)] for v in GPU_NS}, plan, device=dev)
    rank_path(out, env.rank).write_text(json.dumps({"ok": True, "samples": rows, "sensor": {}}))
    ranks.leave()


if __name__ == "__main__":
    main()
