"""The exact-scaling check: what aisp-prof reports for an export of k copies (`scale_exports`)
must be exactly k times what it reports for the original.

A timing of an export the tool misreads would be a timing of the wrong work (ranges lost, kernels
attributed twice, launches merged), so the harness refuses to time an export whose check fails.
Pure functions of the tool's own JSON output (`ranges --json`, `kernels --json`); each returns
the list of problems, empty when the scaling is exact.

Exact means exact: counts, bytes and nanoseconds compared as integers, and the floats of ncu
(bytes, FLOPs, durations in base units) summed as `fractions.Fraction`, so a sum over k copies
is compared with k x the original's sum without any rounding.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

# per-range columns that add up over the calls of a range: k copies give k times the original
ADDITIVE_RANGE_COLUMNS = (
    "kernel_count", "kernel_time_ns", "memcpy_count", "memcpy_bytes", "memcpy_time_ns", "memset_count",
    "memset_bytes", "memset_time_ns", "gpu_time_ns", "gap_total_ns", "range_wall_ns", "occurrences",
)
# per-launch ncu values summed per variant (dram_bytes is dram_read_bytes + dram_write_bytes)
SUMMED_LAUNCH_FIELDS = ("duration_ns", "dram_bytes", "l2_bytes", "l1_bytes", "flops_total")

Records = list[dict[str, Any]]


def _by_range(rows: Records) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["nvtx_range"], r.get("nvtx_domain") or ""): r for r in rows}


def check_ranges(original: Records, scaled: Records, copies: int, shift_ns: int) -> list[str]:
    """`ranges --json` of the scaled export against the original's: same ranges; additive columns
    exactly `copies` x; the largest gap unchanged; the first start unchanged (copy 0 is the
    original) and the last end moved by (copies - 1) x shift_ns."""
    want, got = _by_range(original), _by_range(scaled)
    problems = [f"range {k[0]!r} missing after scaling" for k in want.keys() - got.keys()]
    problems += [f"range {k[0]!r} appeared after scaling" for k in got.keys() - want.keys()]
    if not want:
        problems.append("the original export has no NVTX range with GPU work: nothing to check")
    for key in sorted(want.keys() & got.keys()):
        w, g = want[key], got[key]
        for col in ADDITIVE_RANGE_COLUMNS:
            if col in w and g.get(col) != copies * w[col]:
                problems.append(f"{key[0]}: {col} {g.get(col)} != {copies} x {w[col]}")
        expected = {"gap_max_ns": w.get("gap_max_ns"), "first_start_ns": w.get("first_start_ns"),
                    "last_end_ns": None if w.get("last_end_ns") is None else w["last_end_ns"] + (copies - 1) * shift_ns}
        for col, value in expected.items():
            if col in w and g.get(col) != value:
                problems.append(f"{key[0]}: {col} {g.get(col)} != {value}")
    return problems


def _launch_sums(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per variant: launch count and, per summed field, (exact sum, count of nulls)."""
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"launches": 0, **{f: Fraction(0) for f in SUMMED_LAUNCH_FIELDS},
                                                          **{f"{f}_null": 0 for f in SUMMED_LAUNCH_FIELDS}})
    for r in rows:
        s = out[r.get("variant") or ""]
        s["launches"] += 1
        for f in SUMMED_LAUNCH_FIELDS:
            if r.get(f) is None:
                s[f"{f}_null"] += 1
            else:
                s[f] += Fraction(r[f])
    return dict(out)


def check_launches(original: Records, scaled: Records, copies: int) -> list[str]:
    """`kernels --json` of the scaled ncu CSV against the original's: `copies` x the launches,
    launch ids unique, and per variant the launch count and the exact sums of durations, bytes
    and FLOPs `copies` x the original's."""
    problems = []
    if len(scaled) != copies * len(original):
        problems.append(f"{len(scaled)} launches, expected {copies} x {len(original)}")
    ids = [r.get("launch_id") for r in scaled]
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} repeated launch ids")
    want, got = _launch_sums(original), _launch_sums(scaled)
    if want.keys() != got.keys():
        problems.append(f"variants {sorted(got)} != {sorted(want)}")
    for variant in sorted(want.keys() & got.keys()):
        for col, value in want[variant].items():
            if got[variant][col] != copies * value:
                problems.append(f"variant {variant!r}: {col} {float(got[variant][col])!r} != {copies} x {float(value)!r}")
    return problems
