"""Does building the CUTLASS libraries in parts pay, on one machine? (aisp_kernels.build, parts=N)

Builds the CUTLASS libraries declared in parts (ch09.cutlass_gemm, ch10.warp_specialization_cutlass)
both at once, as the gate's prebuild starts them, into an empty build cache: first in their declared
parts (on any machine: the PARTS_MIN_CPUS rule is set aside), then whole (parts=1: the same source),
alternating ROUNDS times, each round in fresh caches. The same source, flags and nvcc on the same
machine, so the difference is the split alone; the whole builds run second in a round, with the
headers already in the page cache. Prints a line a build as it ends (--json: a JSON object a line). From
the repository root:

    python benchmarks/build_parts.py [--rounds 1] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PAIRS = ("ch09.cutlass_gemm", "ch10.warp_specialization_cutlass")


def libraries() -> list:
    from aisp_prof.collect.code.builds import pair_libraries
    from aisp_prof.pairs import select

    return [lib for pair in select(list(PAIRS)) for lib in pair_libraries(pair) if getattr(lib, "include_dirs", ())]


def build_all(libs: list, whole: bool) -> dict:
    """Every library built at once into a fresh cache; seconds per library and for all."""
    from dataclasses import replace

    from aisp_kernels import build, compiles

    build.PARTS_MIN_CPUS = 1                  # the declared parts, whatever the cores
    with tempfile.TemporaryDirectory(prefix="build_parts_") as cache:
        os.environ["AISP_BUILD_DIR"] = cache
        chosen = [replace(lib, parts=1) if whole else lib for lib in libs]

        def one(lib) -> tuple[str, float, int]:
            began = time.monotonic()
            lib.build()
            return Path(lib.source).name, round(time.monotonic() - began, 1), lib.parts

        began = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(chosen)) as pool:
            done = list(pool.map(one, chosen))
        wall = round(time.monotonic() - began, 1)
    return {"mode": "whole" if whole else "parts", "wall_s": wall, "slots": compiles.nvcc_slots(),
            "libraries": [{"source": s, "seconds": t, "parts": p} for s, t, p in done]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="one JSON line a build, printed as it ends (a cut-off run "
                                                        "keeps the builds it finished)")
    args = ap.parse_args(argv)
    libs = libraries()
    for r in range(args.rounds):
        for whole in (False, True):
            done = {"round": r, "cpus": os.cpu_count(), **build_all(libs, whole)}
            if args.json:
                print(json.dumps(done), flush=True)
                continue
            per = ", ".join(f"{x['source']} {x['seconds']} s ({x['parts']})" for x in done["libraries"])
            print(f"round {r} {done['mode']:<5} all {done['wall_s']:>6} s: {per}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
