"""Run by tests under torchrun on the CPU: join a gloo group as this rank, check a pair (Triton
under TRITON_INTERPRET=1), write this rank's check to OUT.rank<r>.json. Not a test module.

    python -m torch.distributed.run --standalone --nproc-per-node 2 tests/multirank_check.py PAIR SIZES OUT [VARIANT_MODULE]
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

from aisp_prof import pairs
from aisp_prof.collect.ranks import group as ranks
from aisp_prof.collect.correctness.check import check_pair
from aisp_prof.naming import rank_path


def main() -> None:
    name, sizes, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    env = ranks.from_env()
    ranks.join(env, device="cpu")
    pair = pairs.find(name)
    if len(sys.argv) > 4:          # a module whose VARIANTS are added to the pair (a wrong one)
        spec = importlib.util.spec_from_file_location("extra_variants", sys.argv[4])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        pair = dataclasses.replace(pair, variants={**pair.variants, **module.VARIANTS})
    result = check_pair(pair, pairs.parse_sizes(sizes, pair.sizes), device="cpu")
    rank_path(out, env.rank).write_text(json.dumps(result.to_dict()))
    ranks.leave()


if __name__ == "__main__":
    main()
