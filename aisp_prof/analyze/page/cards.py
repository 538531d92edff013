"""`aisp-prof compare PAIR --cards`: one pair's latest run on each card, side by side.

From the report pages' data (`contents.page_data`, one per card): the headline speedup beside the
book's B200 ratio, and what differs between the cards that can explain a different ratio: the
ridge point (peak FLOP/s over DRAM bandwidth), the DRAM bandwidth, the peak compute, the SM count
and the SM clock the kernels ran at. A difference is named when it exceeds NOISE, the spread two
back-to-back sessions on one card show (2-3%: the gate's A/A floors).

Two cards' speedups compare only by one timer (`analyze.timing.speedup`): each run's headline uses
the first timer of its own order that it has, and a run recorded before the timer's three kinds has
none of them, so an H100 headline by CUDA events beside an H200 one by steady time is a ratio of
two different quantities. The cards are compared by `common_timer`: the first timer of the first
card's order (the pair's declared quantity first) that every card's run has, named; where there
is none, the comparison says so instead of a ratio.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...naming import SPEEDUP_TIMERS, TIMER_LABELS

NOISE = 0.03


def _compute(ceilings: list[dict[str, Any]]) -> tuple[str | None, float | None]:
    """The highest theoretical compute roof of the run: (its name, FLOP/s)."""
    rows = [c for c in ceilings if c.get("unit") == "FLOP/s" and c.get("theoretical")]
    top = max(rows, key=lambda c: c["theoretical"], default=None)
    return (top["name"].replace(" compute", ""), top["theoretical"]) if top else (None, None)


def card_row(card: str, page: dict[str, Any]) -> dict[str, Any]:
    """One card's line: the run, its speedup, the book's ratio, and the machine's numbers."""
    best, prov = page.get("best") or {}, page.get("provenance") or {}
    dram = next((c.get("theoretical") for c in page.get("ceilings") or [] if c.get("name") == "DRAM bandwidth"), None)
    precision, peak = _compute(page.get("ceilings") or [])
    clock = prov.get("sm_clock_measured_hz")
    return {"card": card, "gpu_name": prov.get("gpu_name"), "run_id": page["run_id"],
            "variant": best.get("variant"), "speedup": best.get("speedup"), "speedup_timer": best.get("speedup_timer"),
            "speedup_label": best.get("speedup_label"),
            "speedup_by_timer": dict(best.get("speedup_by_timer") or {}),
            "timer_order": list(page.get("timer_order") or SPEEDUP_TIMERS),
            "speedup_interval": best.get("speedup_interval"), "speedup_interval_timer": best.get("speedup_interval_timer"),
            "book_ratio_b200": best.get("book_ratio_b200"),
            "bound_before": best.get("bound_before"), "bound_after": best.get("bound_after"),
            "sm_count": prov.get("sm_count"), "sm_clock_hz": float(clock) if clock else None,
            "dram_bytes_per_s": dram, "peak_precision": precision, "peak_flops_per_s": peak,
            "ridge_flop_per_byte": peak / dram if peak and dram else None}


def _moved(a: float | None, b: float | None) -> float | None:
    """b / a when both are known and differ by more than NOISE."""
    return b / a if a and b and abs(b / a - 1) > NOISE else None


def common_timer(rows: Sequence[dict[str, Any]]) -> str | None:
    """The timer every card's headline variant has a speedup by: the first of the first card's
    order (then of the others') that all have; None where they share none."""
    order = dict.fromkeys(t for r in rows for t in r["timer_order"])
    return next((t for t in order if all(r["speedup_by_timer"].get(t) for r in rows)), None)


def _speedups(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """'H200 vs H100 by nsys GPU time: speedup 1.94x vs 1.92x (...)', on the timer both have."""
    if not (a["speedup"] and b["speedup"]):
        return None
    timer = common_timer([a, b])
    if timer is None:
        return (f"{b['card']} vs {a['card']}: no timer both runs have ({a['card']} by {a['speedup_label']}, "
                f"{b['card']} by {b['speedup_label']}): their speedups do not compare")
    sa, sb = a["speedup_by_timer"][timer], b["speedup_by_timer"][timer]
    change = sb / sa
    return (f"{b['card']} vs {a['card']} by {TIMER_LABELS[timer]}: speedup {sb:.2f}x vs {sa:.2f}x "
            + (f"({change:.2f}x)" if abs(change - 1) > NOISE else "(the same within the noise)"))


def explain(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Why card b's ratio may differ from card a's (compared by a timer both runs have, or said to
    have none): each machine difference beyond the noise."""
    ratios, out = _speedups(a, b), []
    facts = (("DRAM bandwidth", "dram_bytes_per_s", 1e12, "TB/s",
              "a DRAM-bound variant (bound after: {bound}) gains with it"),
             ("peak " + str(b["peak_precision"] or "compute"), "peak_flops_per_s", 1e12, "TFLOP/s",
              "a compute-bound variant gains with it"),
             ("ridge point", "ridge_flop_per_byte", 1, "FLOP/B",
              "kernels between the two ridges change from memory- to compute-bound"),
             ("SM count", "sm_count", 1, "SMs", "grids sized to the SMs fill another number of waves"),
             ("SM clock", "sm_clock_hz", 1e9, "GHz", "compute-bound time follows the clock"))
    for name, key, scale, unit, why in facts:
        ratio = _moved(a[key], b[key])
        if ratio is not None:
            out.append(f"  {name}: {a[key] / scale:.3g} -> {b[key] / scale:.3g} {unit} ({ratio:.2f}x): "
                       + why.format(bound=b.get("bound_after") or "?"))
    if ratios and not out and common_timer([a, b]) is not None:     # speedups that compare: none moved by the card
        out.append("  no machine difference beyond the noise: a ratio that moved is the code's or the run's")
    return [ratios, *out] if ratios else out


def compare_cards(pages: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """{card: page data} -> the rows (one per card: its headline `speedup` by its own timer, and
    `common_timer_speedup` by `common_timer`, the one the cards compare by) and the explanations
    against the first card."""
    rows = [card_row(card, page) for card, page in pages.items()]
    book = next((r["book_ratio_b200"] for r in rows if r["book_ratio_b200"]), None)
    timer = common_timer(rows)
    for r in rows:
        r["common_timer_speedup"] = r["speedup_by_timer"].get(timer) if timer else None
    return {"pair": next(iter(pages.values()))["pair"], "book_ratio_b200": book, "cards": rows,
            "common_timer": timer, "timer_note": _timer_note(rows, timer),
            "explanations": [line for r in rows[1:] for line in explain(rows[0], r)]}


def _timer_note(rows: Sequence[dict[str, Any]], timer: str | None) -> str | None:
    """Which timer the cards' speedups are compared by, or that none is common (None: no card has one)."""
    if timer:
        first = TIMER_LABELS.get(rows[0]["timer_order"][0], "?")
        return (f"speedups by {TIMER_LABELS[timer]}: the first of the pair's timers ({first} first) "
                "that every card's run has")
    if any(r["speedup"] for r in rows):
        return "no timer every card's run has: their speedups do not compare (each run's own headline below)"
    return None
