"""Plain-text tables for the terminal: numbers scaled to readable units, columns aligned."""
from __future__ import annotations

import re
import textwrap
from typing import Any, Mapping, Sequence

from ..naming import TIMER_LABELS
from ..pairs.book import BEYOND_THE_BOOK, IN_THE_BOOK, THE_BOOKS
from ..units import duration, si

def render(headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None, *,
           drop: Sequence[str] = (), wrap: Sequence[str] = (), clip: Sequence[str] = (),
           clip_start: Sequence[str] = (), min_width: Mapping[str, int] | None = None) -> str:
    """Rows under their headers, columns aligned two spaces apart.

    With `width` (a terminal's columns), the table is made to fit: the `wrap` columns wrap onto
    more lines and the `clip` ones are cut with '...', down to MIN_FLEX characters each (or their
    `min_width`); if that
    is not enough, the `drop` columns are hidden, first named first; columns with nothing in
    them ('-') go before anything is narrowed. A last line says which were hidden
    (`--wide` prints everything). Without `width`, every cell is printed whole."""
    cells = [[str(h) for h in headers]] + [["-" if c is None else str(c) for c in r] for r in rows]
    natural = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    if width is None or _line_width(natural) <= width:
        return _lines(cells, list(range(len(headers))), natural, {})
    modes = {**{h: "clip" for h in clip}, **{h: "start" for h in clip_start}, **{h: "wrap" for h in wrap}}
    flex = {i: modes[h] for i, h in enumerate(headers) if h in modes}
    floor = [_min_flex(natural[i], h, (min_width or {}).get(h, MIN_FLEX)) for i, h in enumerate(headers)]
    empty = [i for i in range(len(headers)) if all(row[i] in ("-", "") for row in cells[1:])]
    order = empty + [i for h in drop for i, name in enumerate(headers) if name == h and i not in empty]
    for hidden in range(len(empty), len(order) + 1):    # empty columns go first, unasked
        visible = [i for i in range(len(headers)) if i not in order[:hidden]]
        widths = _fit(natural, visible, flex, floor, width)
        if widths is not None or hidden == len(order):
            break
    if widths is None:                           # nothing left to hide: flexible columns at their minimum
        widths = {i: floor[i] if i in flex else natural[i] for i in visible}
    text = _lines(cells, visible, [widths.get(i, 0) for i in range(len(headers))], flex)
    gone = [headers[i] + " (empty)" * (i in empty) for i in order[:hidden]]
    if gone:
        text += "\n" + _clip(f"({len(gone)} column{'s' * (len(gone) > 1)} hidden to fit {width}: "
                                f"{', '.join(gone)}; --wide shows all)", width)
    return text


MIN_FLEX = 16      # a wrapped or clipped column keeps at least this many characters (or its header's)


def _line_width(widths: Sequence[int]) -> int:
    return sum(widths) + 2 * (len(widths) - 1)


def _min_flex(natural: int, header: str, least: int) -> int:
    return min(natural, max(least, len(header)))


def _fit(natural: list[int], visible: list[int], flex: dict[int, str], floor: list[int],
         width: int) -> dict[int, int] | None:
    """Widths of the visible columns within `width`, narrowing the widest flexible ones first;
    None when even their minimum is too wide."""
    widths = {i: natural[i] for i in visible}
    shrink = [i for i in visible if i in flex]
    lowest = {i: floor[i] for i in shrink}
    excess = _line_width(list(widths.values())) - width
    if excess > sum(widths[i] - lowest[i] for i in shrink):
        return None
    while excess > 0:
        widest = max(shrink, key=lambda i: widths[i] - lowest[i])
        widths[widest] -= 1
        excess -= 1
    return widths


# a number and its unit, a name and its number ("254.1 us", "barrier 4.6") stay on one line
_KEEP_TOGETHER = re.compile(r"(?<=\d) (?=[A-Za-z%])|(?<=[A-Za-z_]) (?=[\d.+-]?\d)")
_NBSP = "\u00a0"


def _clip(text: str, width: int, start: bool = False) -> str:
    if len(text) <= width:
        return text
    return "..." + text[len(text) - max(width - 3, 1):] if start else text[: max(width - 3, 1)] + "..."


def _lines(cells: list[list[str]], visible: list[int], widths: list[int], flex: dict[int, str]) -> str:
    out = []
    for n, row in enumerate(cells):
        parts = []
        for i in visible:
            cell, w = row[i], widths[i]
            if n and len(cell) > w and flex.get(i) == "wrap":
                parts.append([line.replace(_NBSP, " ") for line in
                              textwrap.wrap(_KEEP_TOGETHER.sub(_NBSP, cell), w, break_on_hyphens=False)] or [""])
            else:
                parts.append([_clip(cell, w, flex.get(i) == "start")])
        for k in range(max(len(p) for p in parts)):
            out.append("  ".join((p[k] if k < len(p) else "").ljust(widths[i])
                                 for p, i in zip(parts, visible)).rstrip())
        if n == 0:
            out.append("  ".join("-" * widths[i] for i in visible))
    return "\n".join(out)


def wrap_lines(lines: Sequence[str], width: int | None, indent: str = "  ") -> list[str]:
    """Long message lines (warnings) wrapped to `width`, continuation lines indented."""
    if width is None:
        return list(lines)
    return [w for line in lines for w in (textwrap.wrap(line, width, subsequent_indent=indent,
                                                         break_on_hyphens=False) or [""])]


def memory_ops_cell(count: float | None, size_bytes: float | None, time_ns: float | None) -> str:
    """Memcpys or memsets of one call: '1 x 537 MB, 254.1 us'; none (or not recorded) -> '-'."""
    if not count:
        return "-"
    return f"{count:g} x {si(size_bytes, 'B')}, {duration(time_ns)}"


# What a narrow terminal loses first (`render`'s drop order) and what wraps, per table; a column
# named here that a table does not have is ignored.
SUMMARY_FIT = dict(drop=("DRAM BW", "FLOPs", "kernels", "FLOP/s", "memset", "memcpy", "DRAM bytes", "book",
                        "speedup time"),
                   wrap=("top stalls (cycles/inst)", "memcpy", "memset"))
LAUNCH_FIT = dict(drop=("break-even calls", "warm-cache first", "steady call", "recompiles", "graphs", "mean kernel",
                        "gaps/call"))
AB_FIT = dict(drop=("base", "cand"), wrap=("why", "cand vs base"), clip=("pair", "variant"))
BENCH_FIT = dict(drop=("cycles", "time"), wrap=("why", "time vs baseline", "time", "cycles"), clip=("pair", "variant"))


BOOK_CELLS = {THE_BOOKS: "book", IN_THE_BOOK: "in book", BEYOND_THE_BOOK: "beyond"}


def book_cell(r: Mapping[str, Any]) -> str:
    """A summary row's `book` mark, short: book (the book's optimization), in book, beyond (the book)."""
    return BOOK_CELLS.get(r.get("book") or "", "-")


def summary_table(rows: list[dict[str, Any]], width: int | None = None) -> str:
    """The `aisp-prof run` summary: one line per variant; gpu time and memcpy/memset are per call.

    "gpu time" includes the memcpys and memsets a call issued (nsys); the two memory columns
    show how many, how many bytes and how long, so a copy that costs time is visible. A
    reference variant (cuBLAS, ...) is marked: its speedup is the library's, not the lesson's; where
    the pair names its book (pairs.book), the "book" column says which variant is the book's
    optimization and which go beyond the book.
    """
    # numpy (through parse): imported only where a summary is drawn
    from ..parse.metrics.rate_counts import derivation_note, derives_flops

    headers = ["variant", "kernels", "gpu time", "memcpy", "memset", "speedup", "book", "correct", "DRAM bytes",
               "FLOPs", "DRAM BW", "FLOP/s", "top stalls (cycles/inst)"]
    body = []
    for r in rows:
        skipped = r.get("check_result") == "skipped"        # not run at these sizes: neither right nor wrong
        correct = "skipped" if skipped else {True: "yes", False: "NO"}.get(r.get("correct"), "-")
        stalls = ", ".join(f"{s['reason']} {s['cycles_per_inst']:.1f}" for s in r.get("top_stalls", []))
        kernels = r.get("kernels_per_call")
        body.append([
            f"{r['variant']} ({r['role']})" if r.get("role") in ("reference", "control") else r["variant"],
            f"{kernels:g}" if kernels is not None else "-", duration(r.get("gpu_time_ns")),
            memory_ops_cell(r.get("memcpy_per_call"), r.get("memcpy_bytes_per_call"), r.get("memcpy_time_ns")),
            memory_ops_cell(r.get("memset_per_call"), r.get("memset_bytes_per_call"), r.get("memset_time_ns")),
            f"{r['speedup_vs_baseline']:.2f}x" if r.get("speedup_vs_baseline") else "-", book_cell(r), correct,
            si(r.get("dram_bytes"), "B"), si(r.get("flops_total")) + ("*" if derives_flops(r.get("derived_from_rates")) else ""),
            si(r.get("dram_bytes_per_s"), "B/s"), si(r.get("flops_per_s"), "FLOP/s"), stalls or "-",
        ])
    if not any("book" in r for r in rows):        # a pair with no book counterpart: no column for it
        headers.pop(6)
        body = [b[:6] + b[7:] for b in body]
    if any(r.get("speedup_timer") not in (None, "nsys_gpu_time") for r in rows):
        # the speedup is not by the gpu time column's timer: the times it is the ratio of, beside it (issue 31)
        headers.insert(6, "speedup time")
        body = [b[:6] + [duration(r.get("speedup_time_ns"))] + b[6:] for b, r in zip(body, rows)]
    table = render(headers, body, width, **SUMMARY_FIT)
    timers = speedup_note(rows)
    if timers:
        table += "\n" + "\n".join(wrap_lines([timers], width))
    derived = sorted({c for r in rows for c in r.get("derived_from_rates") or ()})
    if derived:
        note = ("* FLOPs (derived from rates): " if derives_flops(derived) else "") + derivation_note(derived)
        table += "\n" + "\n".join(wrap_lines([note], width))
    return table


def speedup_note(rows: list[dict[str, Any]]) -> str | None:
    """'speedup: by nsys GPU time; by other timers: cuda CUDA events 3.03x, ncu duration 3.16x; ...':
    which timer the speedup column used (analyze.timing.speedup) and the secondary figures, each named."""
    timed = [r for r in rows if r.get("speedup_timer") and r["variant"] != "baseline"]
    if not timed:
        return None
    used = ", ".join(dict.fromkeys(TIMER_LABELS[r["speedup_timer"]] for r in timed))
    others = []
    for r in timed:
        figs = [f"{TIMER_LABELS[t]} {x:.2f}x" for t, x in (r.get("speedup_by_timer") or {}).items()
                if x is not None and t != r["speedup_timer"]]
        if figs:
            others.append(f"{r['variant']} {', '.join(figs)}")
    return f"speedup: by {used}" + (f"; by other timers: {'; '.join(others)}" if others else "")


def launch_compile_table(rows: list[dict[str, Any]], width: int | None = None) -> str | None:
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
    reasons = []
    for r in rows:
        for b in r.get("graph_break_reasons") or []:
            reasons.append(f"{r['variant']}: graph break x{b['count']}: {b['reason']}")
        for c in r.get("recompile_reasons") or []:
            reasons.append(f"{r['variant']}: recompile x{c['count']} of {c['frame']}: {c['reason']}")
    return "\n".join([render(headers, body, width, **LAUNCH_FIT)] + wrap_lines(reasons, width))


def _change(m: Any) -> str:
    """'+3.1% [+2.8, +3.4] (margin 2.0%) SLOWER'."""
    if m is None:
        return "-"
    c = m.change
    return (f"{(c.value - 1) * 100:+.1f}% [{(c.low - 1) * 100:+.1f}, {(c.high - 1) * 100:+.1f}] "
            f"(±{m.margin * 100:.1f}%) {m.verdict}")


def bench_table(outcomes: Sequence[Any], width: int | None = None) -> str:
    """`aisp-prof bench run`: one line per variant: verdict, each metric's change with its 95%
    interval and margin, and the cause."""
    rows = []
    for o in outcomes:
        if not o.verdicts:
            rows.append([o.pair, "-", o.status.upper(), "-", "-", "-", o.message or "-"])
        for v in o.verdicts:
            rows.append([v.pair, v.variant, v.verdict, _change(v.metric("time")), _change(v.metric("cycles")),
                         _change(v.metric("ratio")), v.cause or (o.message if v is o.verdicts[0] else "") or "-"])
    return render(["pair", "variant", "verdict", "time", "cycles", "time vs baseline", "why"], rows, width, **BENCH_FIT)


def ab_table(outcomes: Sequence[Any], width: int | None = None) -> str:
    """`aisp-prof bench ab`: one line per variant: verdict, the candidate's time relative to the
    base's with its 95% interval and margin, both median times, and why."""
    rows = []
    for o in outcomes:
        if not o.verdicts:
            rows.append([o.pair, "-", o.status.upper(), "-", "-", "-", o.message or "-"])
        for v in o.verdicts:
            t = o.times.get(v.variant, {})
            rows.append([v.pair, v.variant, v.verdict, _change(v.metric("cand_vs_base")), duration(t.get("base_ns")),
                         duration(t.get("cand_ns")), v.cause or "-"])
    return render(["pair", "variant", "verdict", "cand vs base", "base", "cand", "why"], rows, width, **AB_FIT)


AGREE_TIMERS = {"gpu_events": "gpu", "nsys_gpu_time": "nsys", "cuda_events": "ev", "ncu_duration": "ncu",
                "steady": "steady", "latency": "lat"}
# the gate's cell wraps its timer under the ratio where a wide margin (2x H200 int8_overlap: "0.956x ±81% steady")
# would push the table past 120 columns
AGREE_FIT = dict(drop=("gate dates", "run date"), wrap=("why", "gate"), clip=("pair", "variant"), min_width={"gate": 12})


def agree_table(found: Sequence[Any], width: int | None = None) -> str:
    """`aisp-prof bench agree`: per variant the run's headline speedup (timer, 95% interval where
    sampled), the gate's recorded one with its A/A margin, the verdict and why (tags:
    analyze.gate.agree.TAGS). Timers: gpu (CUDA events, GPU time), nsys (nsys GPU time), ev (the
    legacy one CUDA-event timer), ncu, steady, lat (latency)."""
    rows = []
    for a in found:
        iv = a.run_interval
        run = f"{a.run_speedup:.3g}x {AGREE_TIMERS.get(a.run_timer, '-')}" if a.run_speedup else "-"
        gate = (f"{a.gate_speedup:.3g}x ±{a.gate_margin:.0%} {AGREE_TIMERS.get(a.gate_timer, '-')}"
                if a.gate_speedup else "-")
        why = ", ".join(a.tags) + (" (same timer: differs too)" if a.notes else "")
        rows.append([_card(a.card), a.pair, a.variant, run, f"{iv.low:.3g}-{iv.high:.3g}" if iv else "-", a.run_date,
                     gate, ",".join(sorted(set(a.gate_dates))) or "-", a.verdict, why])
    return render(["card", "pair", "variant", "run", "run 95%", "run date", "gate", "gate dates", "verdict", "why"],
                  rows, width, **AGREE_FIT)


def _card(key: str) -> str:
    """A hardware key's card: 'h100_80gb_hbm3' -> 'H100', '2x_h200' -> '2x H200'."""
    count, _, rest = key.partition("x_")
    return f"{count}x {_card(rest)}" if count.isdigit() and rest else key.split("_")[0].upper()
