"""Expected timings per GPU, and the regression gate that compares a run with them.

`kernels/chNN/expectations_<hardware_key>.json` holds, per pair and variant, the median time
and its robust spread from a passing run, with provenance. A new run fails a pair when a time
or a speedup moved further than the noise both runs showed allows: the threshold is derived
from the recorded spreads (k x combined sigma, with a small floor), not a fixed percentage.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

SIGMAS = 4.0          # how many combined robust sigmas a change must exceed to count
MIN_TOLERANCE = 0.02  # never flag changes under 2%: clocks and co-tenants move that much


def expectations_path(kernels_root: Path, chapter_key: str, hw_key: str) -> Path:
    return kernels_root / chapter_key / f"expectations_{hw_key}.json"


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"pairs": {}}
    return json.loads(path.read_text())


def save(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def pair_entry(pair_name: str, sizes: Mapping[str, int], timings: Mapping[str, Mapping[str, float]],
               analytic_flops: int, analytic_bytes: int, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """One pair's expectation from a passing run's per-variant timing stats."""
    base = timings["baseline"]["median_ns"]
    variants = {}
    for name, t in timings.items():
        seconds = t["median_ns"] * 1e-9
        variants[name] = {
            "median_ns": t["median_ns"], "rel_spread": t["rel_spread"], "p10_ns": t.get("p10_ns"),
            "p90_ns": t.get("p90_ns"), "repeats": t.get("repeats"),
            "speedup_vs_baseline": base / t["median_ns"],
            "analytic_dram_bytes_per_s": analytic_bytes / seconds,
            "analytic_flops_per_s": analytic_flops / seconds,
        }
    return {"pair": pair_name, "sizes": dict(sizes), "variants": variants, "provenance": dict(provenance)}


@dataclass
class Verdict:
    pair: str
    variant: str
    what: str                    # "time" or "speedup"
    expected: float | None
    observed: float | None
    change: float | None         # observed/expected - 1 for time; expected/observed - 1 for speedup
    tolerance: float | None
    status: str                  # ok, regressed, improved, new, missing, failed_check, error

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tolerance(*rel_spreads: float) -> float:
    return max(MIN_TOLERANCE, SIGMAS * math.sqrt(sum(s * s for s in rel_spreads)))


def _status(change: float, tol: float) -> str:
    if change > tol:
        return "regressed"
    if change < -tol:
        return "improved"
    return "ok"


def compare(expected: Mapping[str, Any] | None, observed: Mapping[str, Any], correct: bool = True) -> list[Verdict]:
    """Verdicts for one pair: each variant's time, and each optimized variant's speedup."""
    pair = observed["pair"]
    if not correct:
        return [Verdict(pair, "*", "check", None, None, None, None, "failed_check")]
    exp_v = (expected or {}).get("variants", {})
    obs_v = observed["variants"]
    out: list[Verdict] = []
    for name in list(dict.fromkeys([*exp_v, *obs_v])):
        e, o = exp_v.get(name), obs_v.get(name)
        if e is None or o is None:
            out.append(Verdict(pair, name, "time", e and e["median_ns"], o and o["median_ns"], None, None,
                               "new" if e is None else "missing"))
            continue
        tol = tolerance(e["rel_spread"], o["rel_spread"])
        change = o["median_ns"] / e["median_ns"] - 1
        out.append(Verdict(pair, name, "time", e["median_ns"], o["median_ns"], change, tol, _status(change, tol)))
        if name != "baseline" and "baseline" in exp_v and "baseline" in obs_v:
            spreads = (e["rel_spread"], o["rel_spread"], exp_v["baseline"]["rel_spread"], obs_v["baseline"]["rel_spread"])
            tol_s = tolerance(*spreads)
            es, os_ = e["speedup_vs_baseline"], o["speedup_vs_baseline"]
            change_s = es / os_ - 1
            out.append(Verdict(pair, name, "speedup", es, os_, change_s, tol_s, _status(change_s, tol_s)))
    return out


def gate_failed(verdicts: list[Verdict]) -> bool:
    """A CI job fails on a regression, a failed check or a variant that disappeared."""
    return any(v.status in ("regressed", "failed_check", "missing", "error") for v in verdicts)
