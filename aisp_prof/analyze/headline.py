"""The one-line answer of a run: the best optimization over the baseline, and how close it comes
to the references (a vendor library, a roof), from summary rows that carry their `role`.

A reference never wins the headline: "pipelined 1.99x over baseline, reaches 93% of cublas", not
"cublas 2.15x". A comparison pair claims nothing: its line says so and names the fastest variant.
The speedup is the summary's primary `speedup_vs_baseline` (`analyze.speedup`: nsys GPU time per
call where the run has it), named with its timer; the pct of a reference is by `gpu_time_ns`.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..pairs.roles import BASELINE, OPTIMIZATION, REFERENCE
from .speedup import TIMER_LABELS


def add_role_fields(rows: list[dict[str, Any]], roles: Mapping[str, str]) -> None:
    """Each row's `role`; each baseline and optimization row's `pct_of_reference`: its speed as a
    percentage of the fastest reference's (reference time / its time), with `reference_variant`."""
    for r in rows:
        r["role"] = roles.get(r["variant"]) or (BASELINE if r["variant"] == "baseline" else OPTIMIZATION)
    refs = [r for r in rows if r["role"] == REFERENCE and r.get("gpu_time_ns")]
    ref = min(refs, key=lambda r: r["gpu_time_ns"], default=None)
    for r in rows:
        if r["role"] != REFERENCE:
            r["reference_variant"] = ref["variant"] if ref else None
            r["pct_of_reference"] = (100.0 * ref["gpu_time_ns"] / r["gpu_time_ns"]
                                     if ref and r.get("gpu_time_ns") else None)


def best_optimization(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The fastest optimization whose output passed (or was not checked); a wrong one only if all are."""
    opts = [r for r in rows if r.get("role") == OPTIMIZATION and r.get("speedup_vs_baseline")]
    return max(opts, key=lambda r: (r.get("correct") is not False, r["speedup_vs_baseline"]), default=None)


def headline(rows: Sequence[Mapping[str, Any]], comparison: bool = False) -> dict[str, Any]:
    """{best, speedup, speedup_timer, correct, reference, pct_of_reference, comparison, text}: JSON-ready."""
    best = None if comparison else best_optimization(rows)
    base = next((r for r in rows if r.get("role") == BASELINE), None)
    subject = best or base
    out = {"comparison": comparison, "best": best["variant"] if best else None,
           "speedup": best.get("speedup_vs_baseline") if best else None,
           "speedup_timer": best.get("speedup_timer") if best else None,
           "correct": best.get("correct") if best else None,
           "reference": subject.get("reference_variant") if subject else None,
           "pct_of_reference": subject.get("pct_of_reference") if subject else None}
    out["text"] = _text(out, rows, subject)
    return out


def _text(h: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], subject: Mapping[str, Any] | None) -> str:
    ref = (f", reaches {h['pct_of_reference']:.0f}% of {h['reference']}'s speed"
           if h["pct_of_reference"] is not None and subject else "")
    if h["comparison"]:
        timed = [r for r in rows if r.get("gpu_time_ns")]
        fastest = min(timed, key=lambda r: r["gpu_time_ns"], default=None)
        return ("comparison pair, no speed claim" +
                (f": fastest is {fastest['variant']}" if fastest else ": no timing"))
    if h["best"] is None:
        if subject is None:
            return "no baseline and no optimization to compare"
        return f"no optimization variant: {subject['variant']}{ref}" if ref else "no optimization variant timed"
    wrong = " (its output FAILED the correctness check)" if h["correct"] is False else ""
    timer = TIMER_LABELS.get(h.get("speedup_timer") or "nsys_gpu_time", "nsys GPU time")
    return f"{h['best']}: {h['speedup']:.2f}x over baseline ({timer}){ref}{wrong}"
