"""A verdict in a few sentences per run, generated from its numbers: what bound the baseline and the
best optimization (which roof, % of its theoretical and measured peak), what changed between them
(DRAM bytes, launches, the tensor pipe, the stall that moved most), and how much headroom the
roof leaves. Every clause comes from a measured field; a field the run lacks is "not measured".
Pure: it takes the summary rows (with roles) and the roofline's aggregate points as plain dicts.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...pairs.roles import BASELINE
from ...units import si
from ..roofline.caveats import ABOVE_ROOF_TOLERANCE
from ..roofline.ceilings import precision_label
from .headline import best_optimization

LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1", "compute": "compute"}
STALL_MOVED = 0.5        # a stall reason is named when it changed by at least 0.5 cycles per instruction
SAME_SHARE = 0.02        # counts within 2% of each other are "unchanged"
# Under a quarter of the nearest roof's peak the roof is not the limit (ch10.stream_concurrency: 128
# small launches per call at 8% of the measured L2 peak); the verdict says so instead of "L2-bound".
FAR_BELOW_PCT = 25.0


def bound_name(point: Mapping[str, Any]) -> str | None:
    """'DRAM', 'L2', 'compute (fp32)': the resource whose roof allows the least time."""
    bound = point.get("bound")
    if not bound:
        return None
    if bound == "compute" and point.get("precision"):
        return f"compute ({precision_label(point['precision'])})"
    return LEVEL_NAMES.get(bound, bound)


def bounds_of(roof: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """variant -> {bound, pct, pct_measured} from its aggregate roofline point ({} without a roofline)."""
    return {p["variant"]: {"bound": name, "pct": p.get("pct_of_roof"), "pct_measured": p.get("pct_of_measured_roof")}
            for p in (roof or {}).get("points") or [] if p.get("kernel") is None and (name := bound_name(p))}


def _reached(b: Mapping[str, Any]) -> tuple[float | None, str]:
    """% of the roof reached, measured peak where calibrated, and which peak that is."""
    if b.get("pct_measured") is not None:
        return b["pct_measured"], "measured"
    return b.get("pct"), "theoretical"


def _above(b: Mapping[str, Any]) -> bool:
    """A point above its theoretical roof (as the roofline's above_roof warning): the roof or the
    count is wrong, so what it says is a warning, never a finding (issue 31)."""
    return b.get("pct") is not None and b["pct"] > 100.0 * ABOVE_ROOF_TOLERANCE


def _bound_clause(variant: str, b: Mapping[str, Any] | None) -> str:
    if not b:
        return f"{variant}: bound not measured (no roofline)"
    if _above(b):
        return (f"{variant}: no bound stated, its point lies above its theoretical {b['bound']} roof "
                f"({b['pct']:.0f}%; see the warning)")
    reached, _ = _reached(b)
    if reached is not None and reached < FAR_BELOW_PCT:
        return (f"{variant}: below every roof ({b['bound']}, the nearest, at {reached:.0f}%): latency, "
                "launches or too little parallel work bound it, not a roof")
    pct = f" at {b['pct']:.0f}% of its theoretical roof" if b.get("pct") is not None else ""
    measured = f" ({b['pct_measured']:.0f}% of the measured peak)" if b.get("pct_measured") is not None else ""
    return f"{variant}: {b['bound']}-bound{pct}{measured}"


def _change(name: str, before: float | None, after: float | None, unit: str = "") -> str | None:
    """'DRAM bytes 6.37 GB -> 2.12 GB (3.00x fewer)'; a count that went to or came from zero has no
    ratio, it says so: '(to none)', '(from none)'."""
    if before is None or after is None:
        return None
    if before == after or abs(after - before) <= SAME_SHARE * max(abs(before), abs(after)):
        return f"{name} unchanged ({si(after, unit)})"
    if not after or not before:
        ratio = "to none" if not after else "from none"
    else:
        ratio = f"{before / after:.2f}x fewer" if before > after else f"{after / before:.2f}x more"
    return f"{name} {si(before, unit)} -> {si(after, unit)} ({ratio})"


def _stall_clause(base: Mapping[str, Any], opt: Mapping[str, Any]) -> str | None:
    """The stall reason (top three of either) whose cycles per instruction moved most."""
    b = {s["reason"]: s["cycles_per_inst"] for s in base.get("top_stalls") or []}
    o = {s["reason"]: s["cycles_per_inst"] for s in opt.get("top_stalls") or []}
    if not b and not o:
        return None
    moved = max(set(b) | set(o), key=lambda r: abs(b.get(r, 0.0) - o.get(r, 0.0)))
    before, after = b.get(moved), o.get(moved)
    if before is not None and after is not None and abs(before - after) < STALL_MOVED:
        return None
    show = (lambda x: "out of the top 3" if x is None else f"{x:.1f} cycles/inst")
    return f"stall {moved} {show(before)} -> {show(after)}"


def _headroom(variant: str, b: Mapping[str, Any] | None, opt: Mapping[str, Any]) -> str:
    if not b or b.get("pct") is None:
        return f"Headroom of {variant}: not measured (no roofline)"
    if _above(b):
        return (f"Headroom of {variant}: not stated, its point lies above its theoretical {b['bound']} roof "
                "(a roof or a count is wrong; see the warning)")
    pct, which = _reached(b)
    limit = (opt.get("top_stalls") or [{}])[0].get("reason")
    now = f"; its top stall now is {limit}" if limit else ""
    if pct < FAR_BELOW_PCT:
        return (f"Headroom of {variant}: the roofline does not say; at {pct:.0f}% of the nearest roof what limits "
                f"it is not bandwidth or math{now}")
    if pct >= 100:
        return f"Headroom of {variant}: none, it is at its {which} {b['bound']} roof{now}"
    return (f"Headroom of {variant}: at {pct:.0f}% of the {which} {b['bound']} roof, at most "
            f"{100 / pct:.2f}x is left on it{now}")


def verdict_sentences(rows: Sequence[Mapping[str, Any]], bounds: Mapping[str, Mapping[str, Any]],
                      comparison: bool = False) -> list[str]:
    """A few sentences on the baseline and the best optimization (or every variant of a comparison)."""
    base = next((r for r in rows if r.get("role") == BASELINE), None)
    if comparison:
        return ["Bound: " + "; ".join(_bound_clause(r["variant"], bounds.get(r["variant"])) for r in rows) + "."]
    best = best_optimization(rows)
    if base is None or best is None:
        return []
    b, o = base["variant"], best["variant"]
    out = [f"Bound: {_bound_clause(b, bounds.get(b))}; {_bound_clause(o, bounds.get(o))}."]
    changes = [c for c in (_change("DRAM bytes", base.get("dram_bytes"), best.get("dram_bytes"), "B"),
                           _change("launches per call", base.get("kernels_per_call"), best.get("kernels_per_call")),
                           _stall_clause(base, best)) if c]
    out.append(f"What changed from {b} to {o}: " + ("; ".join(changes) if changes else "not measured") + ".")
    out.append(_headroom(o, bounds.get(o), best) + ".")
    return out
