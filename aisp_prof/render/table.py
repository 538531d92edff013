"""Plain-text tables for the terminal: numbers scaled to readable units, columns aligned."""
from __future__ import annotations

from typing import Any, Sequence

from ..units import duration, si

def render(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["-" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def memory_ops_cell(count: float | None, size_bytes: float | None, time_ns: float | None) -> str:
    """Memcpys or memsets of one call: '1 x 537 MB, 254.1 us'; none (or not recorded) -> '-'."""
    if not count:
        return "-"
    return f"{count:g} x {si(size_bytes, 'B')}, {duration(time_ns)}"


def summary_table(rows: list[dict[str, Any]]) -> str:
    """The `aisp-prof run` summary: one line per variant; gpu time and memcpy/memset are per call.

    "gpu time" includes the memcpys and memsets a call issued (nsys); the two memory columns
    show how many, how many bytes and how long, so a copy that costs time is visible.
    """
    headers = ["variant", "kernels", "gpu time", "memcpy", "memset", "speedup", "correct", "DRAM bytes",
               "FLOPs", "DRAM BW", "FLOP/s", "top stalls (cycles/inst)"]
    body = []
    for r in rows:
        correct = {True: "yes", False: "NO"}.get(r.get("correct"), "-")
        stalls = ", ".join(f"{s['reason']} {s['cycles_per_inst']:.1f}" for s in r.get("top_stalls", []))
        kernels = r.get("kernels_per_call")
        body.append([
            r["variant"], f"{kernels:g}" if kernels is not None else "-", duration(r.get("gpu_time_ns")),
            memory_ops_cell(r.get("memcpy_per_call"), r.get("memcpy_bytes_per_call"), r.get("memcpy_time_ns")),
            memory_ops_cell(r.get("memset_per_call"), r.get("memset_bytes_per_call"), r.get("memset_time_ns")),
            f"{r['speedup_vs_baseline']:.2f}x" if r.get("speedup_vs_baseline") else "-", correct,
            si(r.get("dram_bytes"), "B"), si(r.get("flops_total")) + ("*" if r.get("derived_from_rates") else ""),
            si(r.get("dram_bytes_per_s"), "B/s"), si(r.get("flops_per_s"), "FLOP/s"), stalls or "-",
        ])
    table = render(headers, body)
    derived = sorted({c for r in rows for c in r.get("derived_from_rates") or ()})
    if derived:
        table += ("\n* FLOPs (derived from rates): the export holds these counters only as rates (ncu --set full), "
                  f"so they are rate x elapsed cycles, as ncu's roofline computes them: {', '.join(derived)}")
    return table


def launch_compile_table(rows: list[dict[str, Any]]) -> str | None:
    """Launch churn (nsys, per call) and first-call cost per variant, with torch.compile's graphs,
    breaks and recompiles where a variant compiled; None when the run has none of it."""
    churn = any(r.get("mean_kernel_duration_ns") is not None for r in rows)
    first = any(r.get("first_call_ns") is not None for r in rows)
    compiled = any(r.get("compiled") for r in rows)
    if not (churn or first):
        return None
    headers = ["variant", "kernels", "mean kernel", "gaps/call", "first call", "steady call"]
    if compiled:
        headers += ["warm-cache first", "break-even calls", "graphs", "breaks", "recompiles", "compiles while timed"]
    body = []
    for r in rows:
        kernels = r.get("kernels_per_call")
        line = [r["variant"], f"{kernels:g}" if kernels is not None else "-", duration(r.get("mean_kernel_duration_ns")),
                duration(r.get("gap_per_call_ns")), duration(r.get("first_call_ns")), duration(r.get("steady_call_wall_ns"))]
        if compiled:
            even = r.get("compile_break_even_calls")
            line += [duration(r.get("warm_process_first_call_ns")), "-" if even is None else f"{even:.3g}",
                     r.get("graphs"), r.get("graph_breaks"), r.get("recompiles"), r.get("timed_phase_compiles")]
        body.append(line)
    lines = [render(headers, body)]
    for r in rows:
        for b in r.get("graph_break_reasons") or []:
            lines.append(f"{r['variant']}: graph break x{b['count']}: {b['reason']}")
        for c in r.get("recompile_reasons") or []:
            lines.append(f"{r['variant']}: recompile x{c['count']} of {c['frame']}: {c['reason']}")
    return "\n".join(lines)


def _change(m: Any) -> str:
    """'+3.1% [+2.8, +3.4] (margin 2.0%) SLOWER'."""
    if m is None:
        return "-"
    c = m.change
    return (f"{(c.value - 1) * 100:+.1f}% [{(c.low - 1) * 100:+.1f}, {(c.high - 1) * 100:+.1f}] "
            f"(±{m.margin * 100:.1f}%) {m.verdict}")


def bench_table(outcomes: Sequence[Any]) -> str:
    """`aisp-prof bench run`: one line per variant: verdict, each metric's change with its 95%
    interval and margin, and the cause."""
    rows = []
    for o in outcomes:
        if not o.verdicts:
            rows.append([o.pair, "-", o.status.upper(), "-", "-", "-", o.message or "-"])
        for v in o.verdicts:
            rows.append([v.pair, v.variant, v.verdict, _change(v.metric("time")), _change(v.metric("cycles")),
                         _change(v.metric("ratio")), v.cause or (o.message if v is o.verdicts[0] else "") or "-"])
    return render(["pair", "variant", "verdict", "time", "cycles", "time vs baseline", "why"], rows)
