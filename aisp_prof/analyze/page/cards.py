"""`aisp-prof compare PAIR --cards`: one pair's latest run on each card, side by side.

From the report pages' data (`contents.page_data`, one per card): the headline speedup beside the
book's B200 ratio, and what differs between the cards that can explain a different ratio: the
ridge point (peak FLOP/s over DRAM bandwidth), the DRAM bandwidth, the peak compute, the SM count
and the SM clock the kernels ran at. A difference is named when it exceeds NOISE, the spread two
back-to-back sessions on one card show (2-3%: the gate's A/A floors).
"""
from __future__ import annotations

from typing import Any

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
            "variant": best.get("variant"), "speedup": best.get("speedup"), "speedup_timer": best.get("speedup_label"),
            "speedup_interval": best.get("speedup_interval"), "book_ratio_b200": best.get("book_ratio_b200"),
            "bound_before": best.get("bound_before"), "bound_after": best.get("bound_after"),
            "sm_count": prov.get("sm_count"), "sm_clock_hz": float(clock) if clock else None,
            "dram_bytes_per_s": dram, "peak_precision": precision, "peak_flops_per_s": peak,
            "ridge_flop_per_byte": peak / dram if peak and dram else None}


def _moved(a: float | None, b: float | None) -> float | None:
    """b / a when both are known and differ by more than NOISE."""
    return b / a if a and b and abs(b / a - 1) > NOISE else None


def explain(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Why card b's ratio may differ from card a's: each machine difference beyond the noise."""
    out = []
    if a["speedup"] and b["speedup"]:
        change = b["speedup"] / a["speedup"]
        out.append(f"{b['card']} vs {a['card']}: speedup {b['speedup']:.2f}x vs {a['speedup']:.2f}x "
                   + (f"({change:.2f}x)" if abs(change - 1) > NOISE else "(the same within the noise)"))
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
    if len(out) == 1:
        out.append("  no machine difference beyond the noise: a ratio that moved is the code's or the run's")
    return out


def compare_cards(pages: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """{card: page data} -> the rows (one per card) and the explanations against the first card."""
    rows = [card_row(card, page) for card, page in pages.items()]
    book = next((r["book_ratio_b200"] for r in rows if r["book_ratio_b200"]), None)
    return {"pair": next(iter(pages.values()))["pair"], "book_ratio_b200": book, "cards": rows,
            "explanations": [line for r in rows[1:] for line in explain(rows[0], r)]}
