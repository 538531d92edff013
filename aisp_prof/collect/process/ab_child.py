"""The process `aisp-prof bench ab` times in: two versions of one pair, side by side.

It loads the pair's module twice, from two files (the candidate's and the base's, `pairs.files`:
each under a module name of its own), checks both against their float64 reference (the first
process only), then times `base:X` and `cand:X` of every variant interleaved in the same rounds
with the gate's timer (`child.run_timing`: the same samplers, L2 flush, rotated inputs, clocks,
compile watch) and the one kind of time the gate judges the pair by. The two versions are one
pair to the timer (`side_by_side`): each variant's closure calls its own version's factory on its
own version's inputs. No reference kernels ride along: both sides share every process, so what
the machine does cancels in their ratio (analyze.gate.ab), which is what the gate's references
are there to tell apart. It reports through a JSON file, as the profiled child does.

    python -m aisp_prof.collect.process.ab_child --pair ch14.attention_eager_sdpa \
        --cand-file kernels/ch14/attention_eager_sdpa.py --base-file /tmp/x/kernels/ch14/attention_eager_sdpa.py \
        --variants baseline,sdpa_flash --kind steady --process 0 --check --out /tmp/ab_p0.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from ...errors import AispError, NoGpuError, UnknownTargetError
from ...naming import AB_BASE, AB_CAND
from ...pairs import KernelPair, pair_sizes
from ...pairs.files import load_file
from ..code.compile_cache import fresh_compile_cache

SIDES = (("base", AB_BASE), ("cand", AB_CAND))


def side_by_side(base: KernelPair, cand: KernelPair, variants: Sequence[str]) -> KernelPair:
    """One pair whose variants are base:X and cand:X (base first, as the timer's ABBA order
    starts), whose inputs are both versions' inputs made with the same seed, and whose bytes are
    both working sets (so the timer rotates enough input sets that neither side's fits in L2)."""
    versions = {"base": base, "cand": cand}

    def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> dict[str, Any]:
        return {key: p.make_inputs(sizes, device, seed) for key, p in versions.items()}

    def factory(key: str, variant: str) -> Any:
        return lambda inputs: versions[key].variants[variant](inputs[key])

    named = {f"{prefix}{v}": factory(key, v) for v in variants for key, prefix in SIDES}
    return replace(cand, variants=named, make_inputs=make_inputs, roles={}, book=None, expect=(),
                   bytes=lambda sizes: int(base.bytes(sizes)) + int(cand.bytes(sizes)))


def load_versions(name: str, base_file: Path, cand_file: Path) -> tuple[KernelPair, KernelPair]:
    """Both versions of pair `name`; UnknownTargetError if a file defines another pair."""
    out = []
    for path in (base_file, cand_file):
        pair = load_file(path)
        if pair.name != name:
            raise UnknownTargetError(f"{path} defines pair {pair.name!r}, not {name!r}")
        out.append(pair)
    return out[0], out[1]


def check_both(base: KernelPair, cand: KernelPair, sizes: dict[str, int], variants: Sequence[str],
               device: str = "cuda") -> dict[str, Any]:
    """Each version's correctness check (`check_pair`, float64 reference) of `variants`."""
    from ..correctness.check import check_pair

    return {key: check_pair(p, sizes, device=device, variants=list(variants)).to_dict()
            for key, p in (("base", base), ("cand", cand))}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m aisp_prof.collect.process.ab_child")
    ap.add_argument("--pair", required=True)
    ap.add_argument("--base-file", required=True, type=Path)
    ap.add_argument("--cand-file", required=True, type=Path)
    ap.add_argument("--variants", required=True, help="comma-separated, baseline first")
    ap.add_argument("--sizes", default="")
    ap.add_argument("--kind", default="gpu", help="the kind of time (collect.timing.samplers): gpu, latency, steady")
    ap.add_argument("--repeats", type=int, default=10, help="rounds at least")
    ap.add_argument("--budget-s", type=float, default=2.0, help="wall seconds of sampling")
    ap.add_argument("--process", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="check both versions first (the first process)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--fresh-compile-cache", action="store_true",
                    help="compile with empty Inductor and Triton caches of this process's own, beside --out")
    return ap


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Load, maybe check, and time; the report (ok, checks, samples, sensor, env, compiles)."""
    import torch

    if not torch.cuda.is_available():
        raise NoGpuError("no CUDA GPU visible to torch in the timing process")
    from ..timing.timer import SamplingPlan, l2_flush_bytes
    from .child import run_timing

    base, cand = load_versions(args.pair, args.base_file, args.cand_file)
    sizes = base.checked_sizes(pair_sizes(cand, args.sizes))
    variants = args.variants.split(",")
    report: dict[str, Any] = {"sizes": sizes}
    if args.check:
        report["checks"] = check_both(base, cand, sizes, variants)
        if not all(c["passed"] for c in report["checks"].values()):
            return report
        skipped = {v for c in report["checks"].values() for v in c.get("skipped_variants") or {}}
        variants = [v for v in variants if v not in skipped]      # no kernel at these sizes: not timed
    plan = SamplingPlan(min_rounds=args.repeats, budget_s=args.budget_s, flush_bytes=l2_flush_bytes(),
                        kinds=(args.kind,))
    pair = side_by_side(base, cand, variants)
    report.update(run_timing(pair, sizes, list(pair.variants), plan, references=False, process=args.process))
    return report


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.time()
    if args.fresh_compile_cache:
        fresh_compile_cache(args.out.parent)     # in bench ab's temporary folder, removed with it
    try:
        report, code = run(args), 0
        report.update(ok=True, wall_s=time.time() - started)
    except AispError as exc:
        report, code = {"ok": False, "error": str(exc), "error_type": type(exc).__name__}, exc.exit_code
    args.out.write_text(json.dumps(report, indent=1, default=str))
    return code


if __name__ == "__main__":
    sys.exit(main())
