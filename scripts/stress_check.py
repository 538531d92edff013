"""Races show up in some calls, not all: run each variant of a pair many times on one input and
count the calls whose output differs from the float64 reference beyond the pair's tolerance.

    python3 scripts/stress_check.py ch09.warp_specialization_producer_consumer [calls] [k=v ...]

Prints, per variant, how many calls were wrong and where the first wrong elements were. The
pair's own check (aisp_prof.collect.check) runs a variant a few times only; this is its stress form,
used on the GPU machine (notes/2026-11-26-hopper-probes/).
"""
from __future__ import annotations

import sys

import torch

from aisp_prof import pairs


def main(argv: list[str]) -> int:
    pair = pairs.find(argv[0])
    calls = int(argv[1]) if len(argv) > 1 else 200
    sizes = dict(pair.sizes)
    sizes.update({k: int(v) for k, v in (a.split("=", 1) for a in argv[2:])})
    inputs = pair.make_inputs(sizes, "cuda", 123)
    ref = pair.reference(inputs).double()
    norm = float(ref.norm())
    print(f"{pair.name} {sizes}: {calls} calls per variant, tolerance {pair.tolerance}", flush=True)
    failed = 0
    for name, factory in pair.variants.items():
        fn = factory(inputs)
        bad, worst = 0, 0.0
        for i in range(calls):
            out = fn().double()
            err = float((out - ref).norm()) / norm
            worst = max(worst, err)
            if err > pair.tolerance:
                bad += 1
                if bad <= 3:
                    diff = (out - ref).abs().flatten()
                    idx = torch.nonzero(diff > 10 * pair.tolerance * float(ref.abs().max())).flatten()
                    print(f"   {name} call {i}: rel err {err:.3g}, {idx.numel()} wrong elements, "
                          f"first {idx[:4].tolist()}", flush=True)
        torch.cuda.synchronize()
        failed += bad > 0
        print(f"{name:22s} {bad}/{calls} calls wrong, worst rel err {worst:.3g}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
