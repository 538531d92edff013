"""What a report page shows, computed from one run as plain, JSON-ready data.

`page_data(run, roofline)` takes a stored run (RunData) and its roofline analysis and returns
one dict: headline, the verdict rules' findings, per-variant summary, stalls, speed of light, memory traffic, kernels, one
nsys call per variant, launch churn and compile cost, the FLOP check, validity warnings, provenance. A pure function: it opens
nothing and writes nothing; `render.report` draws and writes what it returns.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from ...naming import TIMER_KINDS, chapter_of_pair
from ...pairs.roles import OPTIMIZATION
from ...model.run_data import RunData
from ..roofline.ceilings import precision_label
from ..code.compiled import compile_warnings
from ..code.generated_code import code_rows, link_kernel_rows, match_launches
from ..verdict.headline import claim_rank, headline as answer
from ..verdict.validity import withhold
from ..kernels.flops import add_flops_and_bytes
from ..timing.intervals import paired_groups, ratio_interval, slowest_ranks, with_cycles
from ..kernels.ncu_command import ncu_settings
from ..records import clean_value, frame_records
from .tables import correctness, kernel_rows, memory_op_rows, memory_rows, short_kernel_name, sol_rows, stall_rows
from ..ranks.page import rank_page
from ..timing.speedup import TIMER_LABELS, timer_order
from ..summary import summarize
from ..timeline.variant_ranges import variant_ranges
from ..timeline.call import representative_call, strip_rows
from ..verdict.rules import RuleInput, findings
from ..verdict.text import LEVEL_NAMES, bound_name, bounds_of, verdict_sentences

_SUMMARY_KEYS = ("kernels_per_call", "gpu_time_ns", "gpu_time_source", "cuda_event_median_ns", "correct",
                 "rel_err_vs_reference", "ncu_duration_ns", "dram_bytes", "l2_bytes", "l1_bytes", "flops_total",
                 "flops_fp32", "flops_fp64", "flops_fp16", "flops_tensor", "dram_bytes_per_s", "flops_per_s",
                 "speedup_vs_baseline", "speedup_timer", "mean_kernel_duration_ns", "gap_per_call_ns", "gap_max_ns", "first_call_ns",
                 "steady_call_wall_ns", "compile_overhead_ns", "warm_process_first_call_ns", "frames_compiled",
                 "graphs", "graph_breaks", "recompiles", "timed_phase_compiles", "compile_break_even_calls", "role",
                 "pct_of_reference", "reference_variant", "check_result")


# ------------------------------------------------------------------------------ gathering data


def _provenance(run: dict[str, Any], info: dict[str, Any], kernels: pd.DataFrame) -> dict[str, Any]:
    gpu, env, tools = info.get("gpu") or {}, info.get("env") or {}, info.get("tools") or {}

    def tool(name: str) -> str | None:
        t = tools.get(name)
        return t.get("version") if isinstance(t, dict) else t

    measured: dict[str, float | None] = {}
    for col, key in (("sm_clock_hz", "sm_clock_measured_hz"), ("dram_clock_hz", "dram_clock_measured_hz"),
                     ("l2_clock_hz", "l2_clock_measured_hz")):
        measured[key] = (float(kernels[col].astype(float).mean())
                         if col in kernels and kernels[col].notna().any() else None)
    commands = {name: (shlex.join(str(a) for a in cmd) if isinstance(cmd, list) else str(cmd))
                for name, cmd in (info.get("commands") or {}).items()}
    return {
        "gpu_name": run.get("gpu_name") or gpu.get("gpu_name"),
        "compute_capability": run.get("compute_capability") or gpu.get("compute_capability"),
        "sm_count": run.get("sm_count") or gpu.get("sm_count"),
        "gpu_memory_bytes": gpu.get("gpu_memory_bytes") or env.get("gpu_memory_bytes"),
        "l2_cache_bytes": gpu.get("l2_cache_bytes") or env.get("l2_cache_bytes"),
        "sm_clock_max_mhz": gpu.get("sm_clock_max_mhz"), "mem_clock_max_mhz": gpu.get("mem_clock_max_mhz"),
        "sm_clock_mhz_at_start": gpu.get("sm_clock_mhz_at_start"), "power_limit_w": gpu.get("power_limit_w"),
        **measured,
        "driver_version": run.get("driver_version") or gpu.get("driver_version"),
        "cuda_version": env.get("torch_cuda_version"), "torch_version": env.get("torch_version"),
        "triton_version": env.get("triton_version"),
        "ncu_version": run.get("ncu_version") or tool("ncu"), "nsys_version": run.get("nsys_version") or tool("nsys"),
        "nvcc_version": tool("nvcc"),
        "git_sha": run.get("git_sha") or info.get("git_sha"), "created_at": run.get("created_at"),
        "host": info.get("host"), "sizes": info.get("sizes"), "source": run.get("source"),
        "imported_from": info.get("imported_from"), "run_dir": run.get("run_dir"),
        "ncu_passes_per_kernel": info.get("ncu_passes_per_kernel"), "wall_s": info.get("wall_s"),
        "pair_source": _pair_source(info.get("source")),
        "clock_control": (ncu_settings(info) or {}).get("clock_control"),
        "commands": commands,
    }


def _pair_source(source: Any) -> dict[str, Any] | None:
    """The pair's code the run measured, as its run.json records it: the module's path, the digest of its
    files' text (`source_sha256`) and of their code (`code_sha256`, what `bench record` compares)."""
    if not isinstance(source, dict) or not (source.get("sha256") or source.get("code_sha256")):
        return None
    return {"path": source.get("path"), "sha256": source.get("sha256"), "code_sha256": source.get("code_sha256")}


@dataclass
class PageTimeline:
    """What a page reads of a run's nsys timeline: `kernels` for the kernels table and the generated-code
    match (the timeline itself, or its rows grouped by launch shape with `_launches`/`_durations`/`_first`),
    `calls` holding every variant's first call (the strip), and whether the run has a timeline. The
    store groups a one-rank run's in SQL (`store.aggregates.page_timeline`): a 1M-kernel page reads
    a few hundred rows, not a million."""

    kernels: pd.DataFrame
    calls: pd.DataFrame
    empty: bool

    @classmethod
    def of(cls, timeline: pd.DataFrame) -> "PageTimeline":
        return cls(timeline, timeline, timeline.empty)


def page_data(run: RunData, roof: Any = None, roof_error: str | None = None,
              generated: dict[str, Any] | None = None,
              calibrations: Sequence[Mapping[str, Any]] = (), timeline: PageTimeline | None = None,
              folder_missing: bool = False) -> dict[str, Any]:
    """Everything a pair's page shows, as JSON-ready plain data, from the run and its roofline
    analysis (a RooflineResult, or None with `roof_error` saying why there is none), and the
    run folder's generated-code index where it has one (`folder_missing`: the folder is not on
    this machine, so what it kept is left out, and the page says so). A multi-rank run adds `ranks`
    (`analyze.ranks.page`, its link judged against `calibrations`) and draws its timeline as lanes per
    rank there instead of the one-call strip, which cannot pick one call out of several ranks."""
    row, info, tl = {k: v for k, v in run.run.items() if k != "info_json"}, run.info, timeline or PageTimeline.of(run.timeline)
    summary = [{**dict.fromkeys(_SUMMARY_KEYS), **{k: clean_value(v) for k, v in s.items()}}
               for s in summarize(info, run.kernels, variant_ranges(run.ranges, run.range_levels, row.get("pair")),
                                  run.checks, run.timings, run.compiles)]
    variants = [s["variant"] for s in summary]
    kernels_f = add_flops_and_bytes(run.kernels) if not run.kernels.empty else run.kernels
    roof_dict = roof.to_dict() if roof is not None else None
    ceilings = _ceiling_rows(roof_dict)
    headline = _headline(summary, _bounds(roof_dict))
    _add_intervals(headline, run)
    stalls, selected = stall_rows(kernels_f, variants)
    found = findings(RuleInput(info, summary, run.timings, run.timeline, run.kernels, run.samples, run.compiles,
                               call_spread=run.call_spread))
    the_answer = withhold(answer(summary, bool(info.get("comparison")), info.get("book")), found, summary)
    matches = match_launches(run.kernels, generated) if generated else None     # ncu launch -> the build that ran
    ranks = rank_page(run, variants, calibrations)
    return {
        **_identity(row, info), "variants": variants, "summary": summary, "headline": headline,
        "timer_labels": dict(TIMER_LABELS), "timed_in_kinds": any(s.get("time_class") for s in summary),
        "timer_order": list(timer_order(info)),     # the order its speedups pick a timer in (timing.speedup)
        # the headline's variant (analyze.verdict.headline): the book's optimization, else the fastest optimization
        # whose output passed (or was not checked); never a reference the book does not name, and none
        # for a comparison pair
        "best": _lead_card(headline, the_answer),
        "answer": the_answer,
        "findings": [f.to_dict() for f in found],
        "verdict": verdict_sentences(summary, bounds_of(roof_dict), bool(info.get("comparison")))
        + (ranks["sentences"] if ranks else []),
        "correctness": correctness(run.checks, variants),
        "stalls": stalls, "stall_selected": selected,
        "stall_reasons": _stall_reasons(stalls),
        "sol": sol_rows(kernels_f, variants),
        "memory": memory_rows(kernels_f, variants),
        "analytic": {"flops": None, "dram_bytes": None, **(info.get("analytic") or {})},
        "kernels": link_kernel_rows(kernel_rows(run.kernels, tl.kernels, variants), matches),
        "memory_ops": memory_op_rows(run.memory_ops, run.ranges, variants),
        "timeline": {} if ranks else _strips(tl, run, variants),
        "compiled_any": any(s.get("compiled") for s in summary),
        "generated_code": code_rows(generated, variants, matches, run.kernels, tl.kernels),
        "generated_left_out": _code_left_out(info, row.get("run_dir")) if folder_missing else None,
        "roofline": roof_dict, "roofline_error": roof_error,
        "roofline_rows": _roofline_rows(roof_dict, variants), "ceilings": ceilings,
        "calibrated": any(c.get("measured") for c in ceilings),
        "flop_check": list((roof_dict or {}).get("flop_check") or []),
        "warnings": _warnings(row, summary, run.kernels, tl.empty, roof_dict, roof_error,
                              (ranks or {}).get("warnings", []), info),
        "provenance": {**_provenance(row, info, run.kernels), "run_dir_missing": folder_missing},
        **({"ranks": ranks} if ranks else {}),
    }


def _stall_reasons(stalls: Mapping[str, Mapping[str, float]]) -> list[str]:
    """Every stall reason of the page, biggest first; equal ones by name (a set's order changes from one
    process to the next)."""
    return sorted({r for per in stalls.values() for r in per},
                  key=lambda r: (-sum(per.get(r, 0.0) for per in stalls.values()), r))


def _code_left_out(info: dict[str, Any], run_dir: str | None) -> str | None:
    """The page's note where the run kept generated code (its run.json says how much) in a folder
    that is not on this machine: the section is left out, not silently missing."""
    kept = info.get("generated")
    if not kept:
        return None
    count = kept.get("triton_kernels") if isinstance(kept, dict) else None
    what = f"the code of {count} Triton kernels" if count is not None else "generated code"
    return (f"Left out: this run kept {what} in its folder, {run_dir}, which is not on this machine (nor found "
            "under the database's folder). Copy the folder here and store where it is (aisp-prof import FOLDER "
            "--replace), then write the report again.")


def _lead_card(cards: list[dict[str, Any]], ans: dict[str, Any]) -> dict[str, Any] | None:
    """The headline card of the answer's variant; where the answer has none and the pair names no
    book (no timing in the run), the fastest optimization card as before."""
    if ans.get("comparison"):
        return None
    lead = next((h for h in cards if h["variant"] == ans.get("best")), None)
    if lead is not None or ans.get("book_variant"):
        return lead
    return max((h for h in cards if h["role"] == OPTIMIZATION),
               key=lambda h: (*claim_rank(h), h["speedup"] or 0.0), default=None)


def _identity(row: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    """Which run the page is about: ids, title, chapter, status, lesson, sizes."""
    pair, run_id = row.get("pair"), row["run_id"]
    chapter = (f"ch{int(info['chapter']):02d}" if isinstance(info.get("chapter"), int)
               else chapter_of_pair(pair) or "other")
    return {"run_id": run_id, "pair": pair, "title": pair or row.get("label") or run_id, "chapter": chapter,
            "label": row.get("label"), "status": row.get("status"), "created_at": row.get("created_at"),
            "source": row.get("source"), "lesson": info.get("lesson"), "sizes": info.get("sizes")}


def _headline(summary: list[dict[str, Any]], bounds: dict[str, tuple[str, float | None]]) -> list[dict[str, Any]]:
    """Per optimized variant: the summary's primary speedup with its timer (`analyze.timing.speedup`), the
    secondary figures by CUDA events and ncu duration, correctness, what bound it before/after.
    Fills each summary row's `bound`, `bound_pct_of_roof` and `speedup_cuda_events` on the way."""
    base = next((s for s in summary if s["variant"] == "baseline"), None)
    for s in summary:
        s["bound"], s["bound_pct_of_roof"] = bounds.get(s["variant"], (None, None))
        s["speedup_cuda_events"] = (s.get("speedup_by_timer") or {}).get("cuda_events")
    return [{
        "variant": s["variant"], "speedup": s.get("speedup_vs_baseline"),
        "speedup_timer": s.get("speedup_timer"), "speedup_label": TIMER_LABELS.get(s.get("speedup_timer") or ""),
        "speedup_by_timer": s.get("speedup_by_timer") or {},
        "speedup_cuda_events": s.get("speedup_cuda_events"),
        "speedup_ncu_duration": (s.get("speedup_by_timer") or {}).get("ncu_duration"),
        "gpu_time_ns": s.get("gpu_time_ns"),
        "baseline_gpu_time_ns": (base or {}).get("gpu_time_ns"), "correct": s.get("correct"),
        "check_result": s.get("check_result"),
        "speedup_time_ns": s.get("speedup_time_ns"), "speedup_baseline_time_ns": s.get("speedup_baseline_time_ns"),
        "rel_err_vs_reference": s.get("rel_err_vs_reference"),
        "bound_before": (base or {}).get("bound"), "bound_after": s.get("bound"),
        "bound_before_pct_of_roof": (base or {}).get("bound_pct_of_roof"),
        "bound_after_pct_of_roof": s.get("bound_pct_of_roof"), "role": s.get("role") or OPTIMIZATION,
        "pct_of_reference": s.get("pct_of_reference"), "reference_variant": s.get("reference_variant"),
        "book": s.get("book"), "book_ratio_b200": s.get("book_ratio_b200"),
    } for s in summary if s["variant"] != "baseline"]


def _add_intervals(headline: list[dict[str, Any]], run: RunData) -> None:
    """Each optimized variant's speedup as an interval (95%, hierarchical bootstrap over processes and
    samples, measured side by side with the baseline) and `speedup_interval_timer`, the timer it is of:
    the headline's where the run sampled it (GPU events, latency or steady: that kind's samples alone),
    else, in a run timed before the kinds, its one CUDA-event timer. Never several kinds pooled: the
    page once put [0.91x, 0.93x] (GPU, latency and steady samples in one median) beside the 3.74x of
    ch10.stream_concurrency's streams32 on an H200. And the gate verdict when `bench run` judged it."""
    samples = with_cycles(slowest_ranks(run.samples)) if not run.samples.empty and "variant" in run.samples else None
    verdicts = ({r["variant"]: r for r in frame_records(run.verdicts)} if not run.verdicts.empty else {})
    for h in headline:
        h["speedup_interval"], h["speedup_interval_timer"], h["timing_processes"] = None, None, None
        timer, rows = _interval_samples(samples, h.get("speedup_timer"))
        if rows is not None:
            base, var = paired_groups(rows, "baseline", h["variant"])
            if base:
                h["speedup_interval"] = ratio_interval(base, var).to_dict()
                h["speedup_interval_timer"], h["timing_processes"] = timer, len(base)
        v = verdicts.get(h["variant"])
        h["verdict"] = {"verdict": v["verdict"], "cause": v.get("cause") or ""} if v else None


def _interval_samples(samples: pd.DataFrame | None, timer: str | None) -> tuple[str | None, pd.DataFrame | None]:
    """(the timer, its samples) an interval is drawn from: the samples of `timer`'s kind in a run timed in
    kinds (none where the timer is not sampled: nsys, ncu), a legacy run's every sample as CUDA events."""
    if samples is None:
        return None, None
    kinds = samples["kind"].fillna("").astype(str) if "kind" in samples else pd.Series("", index=samples.index)
    if not (kinds != "").any():
        return "cuda_events", samples
    kind = TIMER_KINDS.get(timer or "")
    return (timer, samples[kinds == kind]) if kind else (None, None)


def _strips(tl: PageTimeline, run: RunData, variants: list[str]) -> dict[str, dict[str, Any]]:
    """One representative nsys call per variant: its kernels, memory ops and gaps."""
    strips: dict[str, dict[str, Any]] = {}
    if tl.empty and run.memory_ops.empty:
        return strips
    for v in variants:
        strip = strip_rows(representative_call(tl.calls, run.ranges, v, run.memory_ops))
        if strip["kernels"] or strip["memory_ops"]:
            strips[v] = strip
    return strips


def _bounds(roof: dict[str, Any] | None) -> dict[str, tuple[str, float | None]]:
    """variant -> (what bound its call, % of that roof reached), from its aggregate roofline point."""
    return {v: (b["bound"], b["pct"]) for v, b in bounds_of(roof).items()}


def _roofline_rows(roof: dict[str, Any] | None, variants: list[str]) -> list[dict[str, Any]]:
    """Aggregate point of each variant, then its kernels (short names), for the table under the chart."""
    if not roof:
        return []
    points = roof.get("points") or []
    rank = {v: i for i, v in enumerate(variants)}
    out = []
    for p in sorted(points, key=lambda p: (rank.get(p["variant"], len(rank)), p.get("kernel") is not None)):
        out.append({**{k: p.get(k) for k in ("variant", "kernel", "kernel_count", "duration_ns", "flops", "flop_basis",
                                               "precision", "ai_dram_flop_per_byte", "ai_l2_flop_per_byte",
                                               "ai_l1_flop_per_byte", "ai_l1_valid", "flops_per_s",
                                               "bound", "pct_of_roof", "pct_of_measured_roof")},
                    "total": p.get("kernel") is None,
                    "precision_name": precision_label(p["precision"]) if p.get("precision") else None,
                    "short_name": short_kernel_name(p["kernel"]) if p.get("kernel") else "all kernels of the call",
                    "bound_name": bound_name(p)})
    return out


def _ceiling_rows(roof: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The ceilings the points were judged against: bandwidth per level and the precisions used."""
    if not roof:
        return []
    c = roof.get("ceilings") or {}
    rows = []
    for level in ("dram", "l2", "l1"):
        ce = c.get(f"{level}_bytes_per_s")
        if ce:
            rows.append({"name": f"{LEVEL_NAMES[level]} bandwidth", "unit": "B/s",
                         "theoretical": ce.get("theoretical_per_s"), "measured": ce.get("measured_per_s"),
                         "note": ce.get("note")})
    used = {p.get("precision") for p in roof.get("points") or [] if p.get("precision")} or {"fp32"}
    for prec, ce in (c.get("flops_per_s") or {}).items():
        if prec in used:
            rows.append({"name": f"{precision_label(prec)} compute", "unit": "FLOP/s",
                         "theoretical": ce.get("theoretical_per_s"), "measured": ce.get("measured_per_s"),
                         "note": ce.get("note")})
    return rows


def _warnings(run: dict[str, Any], summary: list[dict[str, Any]], kernels: pd.DataFrame,
              no_timeline: bool, roof: dict[str, Any] | None, roof_error: str | None,
              rank_warnings: Sequence[str] = (), info: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """What could make this page's numbers mislead: the report's own checks, a multi-rank run's
    (collectives left unmatched), then the roofline's."""
    out: list[str] = []
    if run.get("status") not in (None, "ok", "imported"):
        out.append(f"run status is {run.get('status')!r}: read its numbers with care")
    for s in summary:
        if s.get("correct") is False:
            out.append(f"{s['variant']}: FAILED its correctness check; its speedup claims nothing")
        elif s.get("check_result") == "skipped":
            out.append(f"{s['variant']}: its correctness check was skipped (not run at these sizes); "
                       "its speedup claims nothing")
    if kernels.empty:
        out.append("no Nsight Compute counters in this run: stalls, speed of light, bytes and FLOPs are missing")
    if no_timeline:
        out.append("no Nsight Systems timeline in this run: GPU time is ncu's replayed kernel duration")
    if not kernels.empty and "variant" in kernels:
        for s in summary:
            n_ncu = int((kernels["variant"] == s["variant"]).sum())
            per_call = s.get("kernels_per_call")
            if s.get("gpu_time_source") == "nsys" and per_call and n_ncu and abs(n_ncu - per_call) > 1e-9:
                out.append(f"{s['variant']}: ncu profiled {n_ncu} kernel(s) but nsys saw {per_call:g} per call")
    if roof_error:
        out.append(roof_error)
    found = ([{"severity": "warning", "code": "report", "message": m} for m in out]
             + [{"severity": "warning", "code": "ranks", "message": m} for m in rank_warnings] + compile_warnings(summary, info))
    for w in (roof or {}).get("warnings") or []:
        found.append({"severity": str(w.get("severity") or "warning"), "code": str(w.get("code") or "roofline"),
                      "message": str(w.get("message"))})
    return sorted(found, key=lambda w: w["severity"] != "warning")      # warnings first, then notes
