"""The diff of two runs (`analyze.run_diff.compare`) in words: the lines above its table and
the table's rows, shared by the terminal and the HTML page. Nothing is computed here."""
from __future__ import annotations

from typing import Any, Mapping

from ..naming import TIMER_LABELS
from ..units import si


def table_rows(diff: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The diff as a terminal table: header and rows (one per variant)."""
    header = ["variant", "time A", "time B", "B/A", "speedup A", "speedup B", "DRAM A", "DRAM B", "FLOPs B/A",
              "roof A", "roof B", "stalls A", "stalls B", "verdict"]
    rows = []
    one = one_timer(diff)
    for r in diff["variants"]:
        a, b = r["a"] or {}, r["b"] or {}
        rows.append([r["variant"], _time(a, one), _time(b, one), _x(r["time_ratio_b_over_a"]), _x(a.get("speedup")),
                     _x(b.get("speedup")), _bytes(a.get("dram_bytes")),
                     _bytes(b.get("dram_bytes")), _x(r["flops_ratio_b_over_a"]), _roof(a.get("roofline")),
                     _roof(b.get("roofline")), ", ".join(a.get("top_stalls") or []) or "-",
                     ", ".join(b.get("top_stalls") or []) or "-",
                     f"{r['verdict']}: {r['reason']}" if r["verdict"] and r["reason"] else r["verdict"] or r["reason"]])
    return header, rows


def one_timer(diff: Mapping[str, Any]) -> str | None:
    """The timer every time of the diff is by, or None when they differ (then each cell names its
    own): said once above the table, a time column fits 80 columns."""
    timers = {side.get("time_source") for r in diff["variants"] for side in (r["a"] or {}, r["b"] or {})
              if side.get("time_ns") is not None}
    return timers.pop() if len(timers) == 1 else None


def _time(side: Mapping[str, Any], one: str | None) -> str:
    t = side.get("time_ns")
    if t is None:
        return "-"
    return f"{t / 1e3:.1f} us" + ("" if one else f" ({side.get('time_source')})")


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _bytes(v: float | None) -> str:
    return "-" if v is None else si(v, "B")


def _roof(pos: Mapping[str, Any] | None) -> str:
    if not pos or not pos.get("bound"):
        return "-"
    pct = pos.get("pct_of_roof")
    return f"{pos['bound']} {pct:.0f}%" if pct is not None else str(pos["bound"])


def headline(diff: Mapping[str, Any]) -> list[str]:
    """Lines above the table: what is compared, and whether a verdict was possible."""
    a, b = diff["a"], diff["b"]
    lines = [f"{diff['pair']}: A {a['run_id']} ({a.get('gpu_name') or '?'}) vs B {b['run_id']} ({b.get('gpu_name') or '?'})"]
    if a.get("gpu_name") != b.get("gpu_name"):
        lines.append("A and B ran on different GPUs: their times compare the machines as much as the code")
    lines += diff["timer_notes"]
    lines += [n for n in ((diff.get("code") or {}).get("note"), (diff.get("clock") or {}).get("note")) if n]
    if diff["judged"]:
        lines.append(f"verdict: B judged against A's samples ({TIMER_LABELS[diff['judged_timer']]}) by the gate's rule "
                     "(FASTER/SLOWER: B moved, beyond the A/A margin of A's processes)")
    elif not (diff["a"].get("sample_kinds") and diff["b"].get("sample_kinds")):
        lines.append(f"verdict: {diff['not_judged']} (a run without the timed samples of interleaved CUDA-event timing)")
    else:                    # samples of different kinds (the legacy timer's against the three kinds of issue 28)
        kinds = {side: ", ".join(diff[side]["sample_kinds"]) for side in ("a", "b")}
        lines.append(f"verdict: {diff['not_judged']} (A's samples: {kinds['a']}; B's: {kinds['b']})")
    return lines
