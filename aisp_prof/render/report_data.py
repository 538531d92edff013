"""What a report page shows, gathered from the run database as plain, JSON-ready data.

`select_runs` picks the runs (ids, prefixes, 'latest', chapters or pairs); `report_data` reads
one run back (runs, kernels, timeline, memory_ops, ranges, checks, timings, run.json) and the roofline
analysis, and returns one dict: headline, per-variant summary, stalls, speed of light, memory
traffic, kernels, one nsys call per variant, the FLOP check, validity warnings, provenance.
Nothing here writes files or HTML; `report.build_report` renders it.
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from ..analyze.ceilings import precision_label
from ..analyze.flops import add_flops_and_bytes
from ..analyze.summary import summarize, top_stalls
from ..errors import AispError, UnknownTargetError
from ..parse.metric_table import STALL_REASONS
from ..queries import clean_value
from ..store import get_run, list_runs, read_table, resolve_run

_SOL_COLS = ("sol_sm_issue_pct", "sol_dram_pct", "sol_l2_pct", "sol_l1_pct", "tensor_pipe_active_pct",
             "achieved_occupancy_pct", "theoretical_occupancy_pct")
_BYTE_COLS = ("dram_read_bytes", "dram_write_bytes", "dram_bytes", "l2_bytes", "l1_bytes",
              "tma_load_bytes", "tma_store_bytes", "shared_wavefronts")
# every per-variant summary row carries these (None where not measured)
_SUMMARY_KEYS = ("kernels_per_call", "gpu_time_ns", "gpu_time_source", "cuda_event_median_ns", "correct",
                 "rel_err_vs_reference", "ncu_duration_ns", "dram_bytes", "l2_bytes", "l1_bytes", "flops_total",
                 "flops_fp32", "flops_fp64", "flops_fp16", "flops_tensor", "dram_bytes_per_s", "flops_per_s",
                 "speedup_vs_baseline")


# ------------------------------------------------------------------------------ selecting runs


def _chapter_key(text: str) -> str | None:
    m = re.fullmatch(r"ch0*(\d+)", text.strip().lower())
    return f"ch{int(m.group(1)):02d}" if m else None


def select_runs(db: Path, runs: Sequence[str] = (), targets: Sequence[str] = ()) -> list[str]:
    """Run ids to report on, oldest first, without duplicates.

    `runs`: ids, unique prefixes or 'latest'. `targets`: chapters (ch09) or pair names (also
    comma-separated), each giving the latest stored run of every matching pair. Neither: the
    latest run of every stored pair (runs without a pair, i.e. single imports, count by label).
    """
    targets = [t.strip() for item in targets for t in item.split(",") if t.strip()]
    stored = list_runs(db)
    if not stored:
        raise UnknownTargetError(f"no runs in {db}; `aisp-prof run` or `aisp-prof import` first")
    chosen = [resolve_run(db, r) for r in runs]
    latest: dict[str, str] = {}
    for r in stored:                                     # oldest first: the last one wins
        latest[r["pair"] or f"label:{r['label'] or r['run_id']}"] = r["run_id"]
    for t in targets:
        chapter = _chapter_key(t)
        hits = [rid for key, rid in latest.items() if not key.startswith("label:") and
                (key == t or (chapter is not None and _chapter_of_pair(key) == chapter))]
        if not hits:
            import difflib

            pairs = sorted(k for k in latest if not k.startswith("label:"))
            close = difflib.get_close_matches(t, pairs, n=3, cutoff=0.4)
            hint = (f"; did you mean {', '.join(close)}?" if close else
                    f"; stored pairs: {', '.join(pairs)}" if pairs else "; no stored run names a pair")
            raise UnknownTargetError(f"no stored run of target {t!r}{hint}")
        chosen += hits
    if not runs and not targets:
        chosen = list(latest.values())
    order = {r["run_id"]: i for i, r in enumerate(stored)}
    return sorted(dict.fromkeys(chosen), key=order.__getitem__)


def _chapter_of_pair(pair: str) -> str | None:
    return _chapter_key(pair.split(".", 1)[0]) if pair else None


# ------------------------------------------------------------------------------ gathering data


def _num(row: Any, col: str) -> float | None:
    v = clean_value(row.get(col)) if hasattr(row, "get") else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _sum_col(df: pd.DataFrame, col: str) -> float | None:
    if col not in df or df[col].isna().all():
        return None
    return float(df[col].astype(float).sum())


def _weighted(df: pd.DataFrame, col: str, weight: str) -> float | None:
    if col not in df or df[col].isna().all():
        return None
    w = df[weight].astype(float) if weight in df else pd.Series(1.0, index=df.index)
    values = df[col].astype(float)
    mask = values.notna()
    total = float(w[mask].sum())
    return float((values[mask] * w[mask]).sum() / total) if total else None


def _stalls(kernels: pd.DataFrame, variants: list[str]) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per variant: {reason: warp cycles stalled per issued instruction} (instruction-weighted
    over the variant's kernels, 'selected' apart), and the 'selected' value on its own."""
    stalls, selected = {}, {}
    if kernels.empty or "variant" not in kernels:
        return stalls, selected
    for v in variants:
        k = kernels[kernels["variant"] == v]
        if k.empty:
            continue
        rows = top_stalls(k, n=len(STALL_REASONS))
        if rows:
            stalls[v] = {r["reason"]: r["cycles_per_inst"] for r in rows}
            sel = _weighted(k, "stall_selected", "inst_executed")
            if sel is not None:
                selected[v] = sel
    return stalls, selected


_ANON = re.compile(r"<unnamed>|\(anonymous namespace\)")


def short_kernel_name(name: str) -> str:
    """'void at::native::f<float, 4>(float*, int)' -> 'at::native::f': no return type, template
    arguments or parameters (the exact name stays in the kernel table)."""
    text = str(name).strip()
    if text.startswith("void "):
        text = text[5:]
    anon = _ANON.findall(text)
    text = _ANON.sub("\x00", text)
    cut = min((i for i in (text.find("<"), text.find("(")) if i > 0), default=len(text))
    text = text[:cut]
    for a in anon:
        text = text.replace("\x00", a, 1)
    return text.replace("\x00", "") or str(name)


def _sol_rows(kernels: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    """Speed of light per kernel, then a duration-weighted row per variant."""
    out = []
    if kernels.empty:
        return out
    for v in variants:
        k = kernels[kernels["variant"] == v]
        for i, (_, row) in enumerate(k.iterrows(), 1):
            out.append({"variant": v, "kernel": str(row.get("kernel")), "total": False, "index": i,
                        "short_name": short_kernel_name(str(row.get("kernel"))),
                        "duration_ns": _num(row, "duration_ns"), **{c: _num(row, c) for c in _SOL_COLS}})
        if len(k) > 1:
            out.append({"variant": v, "kernel": f"all {len(k)} kernels (weighted by duration)", "total": True,
                        "index": None, "short_name": f"all {len(k)} kernels (weighted by duration)",
                        "duration_ns": _sum_col(k, "duration_ns"),
                        **{c: _weighted(k, c, "duration_ns") for c in _SOL_COLS}})
    return out


def _memory_rows(kernels: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    out = []
    if kernels.empty:
        return out
    for v in variants:
        k = kernels[kernels["variant"] == v]
        if not k.empty:
            out.append({"variant": v, **{c: _sum_col(k, c) for c in _BYTE_COLS}})
    return out


def _kernel_rows(kernels: pd.DataFrame, timeline: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    """Distinct kernels per variant with their launch configuration; ncu when measured, else nsys."""
    if not kernels.empty:
        df, source = kernels.copy(), "ncu"
    elif not timeline.empty:
        df, source = timeline.rename(columns={"grid": "grid_dim", "block": "block_dim"}), "nsys"
    else:
        return []
    keys = ["variant", "kernel", "grid_dim", "block_dim", "registers_per_thread", "static_shared_bytes",
            "dynamic_shared_bytes"]
    for c in keys:
        if c not in df:
            df[c] = None
    df = df[df["variant"].isin(variants)].copy()        # kernels outside the pair's ranges: inputs, warm-up
    df["variant"] = df["variant"].astype(str)
    df["_order"] = range(len(df))
    grouped = df.fillna({c: "" for c in keys}).groupby(keys, sort=False, dropna=False).agg(
        launches=("_order", "size"), first=("_order", "min"), duration_total_ns=("duration_ns", "sum"),
        duration_mean_ns=("duration_ns", "mean")).reset_index().sort_values("first")
    rank = {v: i for i, v in enumerate(variants)}
    rows = []
    for _, r in grouped.iterrows():
        shared = [x for x in (r["static_shared_bytes"], r["dynamic_shared_bytes"]) if x not in ("", None)]
        rows.append({
            "variant": r["variant"], "kernel": str(r["kernel"]), "grid_dim": r["grid_dim"] or None,
            "block_dim": r["block_dim"] or None, "registers_per_thread": clean_value(r["registers_per_thread"]) or None,
            "static_shared_bytes": clean_value(r["static_shared_bytes"]) if r["static_shared_bytes"] != "" else None,
            "dynamic_shared_bytes": clean_value(r["dynamic_shared_bytes"]) if r["dynamic_shared_bytes"] != "" else None,
            "shared_bytes": float(sum(float(x) for x in shared)) if shared else None,
            "launches": int(r["launches"]), "duration_mean_ns": clean_value(r["duration_mean_ns"]),
            "duration_total_ns": clean_value(r["duration_total_ns"]), "source": source,
        })
    rows.sort(key=lambda r: rank.get(r["variant"], len(rank)))
    return rows


def _memory_op_rows(memory_ops: pd.DataFrame, ranges: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    """GPU memcpys and memsets per variant, grouped by operation, copy kind and size (nsys; not
    kernels, so ncu has nothing on them): how many per call, mean duration and throughput."""
    if memory_ops.empty or "variant" not in memory_ops:
        return []
    df = memory_ops[memory_ops["variant"].isin(variants)].copy()
    if df.empty:
        return []
    from .timeline import memory_op_name

    df["copy_kind"] = df["copy_kind"].where(df["copy_kind"].notna(), "") if "copy_kind" in df else ""
    df["_order"] = range(len(df))
    grouped = df.groupby(["variant", "operation", "copy_kind", "size_bytes"], sort=False, dropna=False).agg(
        count=("_order", "size"), first=("_order", "min"), duration_mean_ns=("duration_ns", "mean"),
        duration_total_ns=("duration_ns", "sum")).reset_index().sort_values("first")
    calls = {}
    if "variant" in ranges and "occurrences" in ranges:
        calls = {v: float(r["occurrences"].sum()) for v, r in ranges.groupby("variant")}
    rank = {v: i for i, v in enumerate(variants)}
    rows = []
    for _, r in grouped.iterrows():
        size = clean_value(r["size_bytes"])
        mean = clean_value(r["duration_mean_ns"])
        n_calls = calls.get(r["variant"]) or None
        rows.append({
            "variant": r["variant"], "operation": r["operation"], "copy_kind": r["copy_kind"] or None,
            "name": memory_op_name(r["operation"], r["copy_kind"] or None, size), "size_bytes": size,
            "count": int(r["count"]), "per_call": int(r["count"]) / n_calls if n_calls else None,
            "duration_mean_ns": mean, "duration_total_ns": clean_value(r["duration_total_ns"]),
            "bytes_per_s": size / mean * 1e9 if size and mean else None,
        })
    rows.sort(key=lambda r: rank.get(r["variant"], len(rank)))
    return rows


def _correctness(checks: pd.DataFrame, variants: list[str]) -> list[dict[str, Any]]:
    out = []
    if checks.empty or "variant" not in checks:
        return out
    for v in variants:
        c = checks[checks["variant"] == v]
        if c.empty:
            continue

        def worst(col: str) -> float | None:
            return float(c[col].astype(float).max()) if col in c and c[col].notna().any() else None

        failed = c[~c["passed"].astype(bool)] if "passed" in c else c.iloc[0:0]
        out.append({"variant": v, "trials": int(len(c)), "passed": bool(failed.empty),
                    "rel_err_vs_reference": worst("rel_err_vs_reference"),
                    "rel_err_vs_baseline": worst("rel_err_vs_baseline"),
                    "max_abs_diff_vs_baseline": worst("max_abs_diff_vs_baseline"),
                    "unwritten_elements": worst("unwritten_elements"),
                    "message": str((failed if not failed.empty else c)["message"].iloc[0]) if "message" in c else ""})
    return out


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
        "clock_control": _clock_control(info.get("commands") or {}),
        "commands": commands,
    }


def _clock_control(commands: dict[str, Any]) -> str | None:
    ncu = commands.get("ncu")
    if isinstance(ncu, list) and "--clock-control" in ncu:
        i = ncu.index("--clock-control")
        return str(ncu[i + 1]) if i + 1 < len(ncu) else None
    return None


def _roofline(db: Path, run_id: str) -> tuple[Any, str | None]:
    """The roofline analysis of the run, or (None, why not)."""
    try:
        from ..analyze.roofline import roofline_for_run
    except ImportError as exc:                     # the analysis module is not installed here
        return None, f"roofline analysis unavailable ({exc})"
    try:
        result = roofline_for_run(db, run_id)
    except AispError as exc:
        return None, f"no roofline: {exc}"
    if not any(p.kernel is None for p in result.points):
        return None, "no roofline: the run has no Nsight Compute counters (FLOPs and bytes)"
    return result, None


def gather(db: Path, run_id: str) -> tuple[dict[str, Any], Any]:
    """`report_data` of a resolved run id, and the RooflineResult the roofline chart is drawn from
    (None without ncu counters)."""
    row = get_run(db, run_id)
    info = json.loads(row.pop("info_json", None) or "{}")
    kernels = read_table(db, "kernels", run_id)
    timeline = read_table(db, "timeline", run_id)
    memory_ops = read_table(db, "memory_ops", run_id)      # empty for runs stored before it existed
    ranges = read_table(db, "ranges", run_id)
    checks = read_table(db, "checks", run_id)
    timings = read_table(db, "timings", run_id)
    summary = [{**dict.fromkeys(_SUMMARY_KEYS), **{k: clean_value(v) for k, v in s.items()}}
               for s in summarize(info, kernels, ranges, checks, timings)]
    variants = [s["variant"] for s in summary]
    kernels_f = add_flops_and_bytes(kernels) if not kernels.empty else kernels
    pair = row.get("pair")
    chapter = (f"ch{int(info['chapter']):02d}" if isinstance(info.get("chapter"), int)
               else _chapter_of_pair(pair or "") or "other")

    roof, roof_error = _roofline(db, run_id)
    roof_dict = roof.to_dict() if roof is not None else None
    bounds = _bounds(roof_dict)
    ceilings = _ceiling_rows(roof_dict)

    base = next((s for s in summary if s["variant"] == "baseline"), None)
    for s in summary:
        s["bound"], s["bound_pct_of_roof"] = bounds.get(s["variant"], (None, None))
        ev, bev = s.get("cuda_event_median_ns"), (base or {}).get("cuda_event_median_ns")
        s["speedup_cuda_events"] = bev / ev if ev and bev else None
    headline = [{
        "variant": s["variant"], "speedup": s.get("speedup_vs_baseline"),
        "speedup_cuda_events": s.get("speedup_cuda_events"), "gpu_time_ns": s.get("gpu_time_ns"),
        "baseline_gpu_time_ns": (base or {}).get("gpu_time_ns"), "correct": s.get("correct"),
        "rel_err_vs_reference": s.get("rel_err_vs_reference"),
        "bound_before": (base or {}).get("bound"), "bound_after": s.get("bound"),
        "bound_before_pct_of_roof": (base or {}).get("bound_pct_of_roof"),
        "bound_after_pct_of_roof": s.get("bound_pct_of_roof"),
    } for s in summary if s["variant"] != "baseline"]

    stalls, selected = _stalls(kernels_f, variants)
    strips = {}
    if not timeline.empty or not memory_ops.empty:
        from .timeline import representative_call, strip_rows   # pandas only; no drawing

        for v in variants:
            strip = strip_rows(representative_call(timeline, ranges, v, memory_ops))
            if strip["kernels"] or strip["memory_ops"]:
                strips[v] = strip
    data = {
        "run_id": run_id, "pair": pair, "title": pair or row.get("label") or run_id, "chapter": chapter,
        "label": row.get("label"), "status": row.get("status"), "created_at": row.get("created_at"),
        "source": row.get("source"), "lesson": info.get("lesson"), "sizes": info.get("sizes"),
        "variants": variants, "summary": summary, "headline": headline,
        # the fastest variant whose output passed (or was not checked); a wrong one only if all are
        "best": max(headline, key=lambda h: (h["correct"] is not False, h["speedup"] or 0.0), default=None),
        "correctness": _correctness(checks, variants),
        "stalls": stalls, "stall_selected": selected,
        "stall_reasons": sorted({r for per in stalls.values() for r in per},
                                key=lambda r: -sum(per.get(r, 0.0) for per in stalls.values())),
        "sol": _sol_rows(kernels_f, variants),
        "memory": _memory_rows(kernels_f, variants),
        "analytic": {"flops": None, "dram_bytes": None, **(info.get("analytic") or {})},
        "kernels": _kernel_rows(kernels, timeline, variants),
        "memory_ops": _memory_op_rows(memory_ops, ranges, variants),
        "timeline": strips,
        "roofline": roof_dict, "roofline_error": roof_error,
        "roofline_rows": _roofline_rows(roof_dict, variants), "ceilings": ceilings,
        "calibrated": any(c.get("measured") for c in ceilings),
        "flop_check": list((roof_dict or {}).get("flop_check") or []),
        "warnings": _warnings(row, summary, kernels, timeline, roof_dict, roof_error),
        "provenance": _provenance(row, info, kernels),
    }
    return data, roof


def report_data(db: Path, run: str) -> dict[str, Any]:
    """Everything a pair's page shows, as JSON-ready plain data (no HTML, no files)."""
    return gather(db, resolve_run(db, run))[0]


LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1", "compute": "compute"}


def _bound_name(point: dict[str, Any]) -> str | None:
    """'DRAM', 'L2', 'compute (fp32)': the resource whose roof allows the least time."""
    bound = point.get("bound")
    if not bound:
        return None
    if bound == "compute" and point.get("precision"):
        return f"compute ({precision_label(point['precision'])})"
    return LEVEL_NAMES.get(bound, bound)


def _bounds(roof: dict[str, Any] | None) -> dict[str, tuple[str, float | None]]:
    """variant -> (what bound its call, % of that roof reached), from its aggregate roofline point."""
    if not roof:
        return {}
    return {p["variant"]: (name, p.get("pct_of_roof")) for p in roof.get("points") or []
            if p.get("kernel") is None and (name := _bound_name(p))}


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
                    "bound_name": _bound_name(p)})
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
              timeline: pd.DataFrame, roof: dict[str, Any] | None, roof_error: str | None) -> list[dict[str, str]]:
    """What could make this page's numbers mislead: the report's own checks, then the roofline's."""
    out: list[str] = []
    if run.get("status") not in (None, "ok", "imported"):
        out.append(f"run status is {run.get('status')!r}: read its numbers with care")
    for s in summary:
        if s.get("correct") is False:
            out.append(f"{s['variant']}: FAILED its correctness check; its speedup claims nothing")
    if kernels.empty:
        out.append("no Nsight Compute counters in this run: stalls, speed of light, bytes and FLOPs are missing")
    if timeline.empty:
        out.append("no Nsight Systems timeline in this run: GPU time is ncu's replayed kernel duration")
    if not kernels.empty and "variant" in kernels:
        for s in summary:
            n_ncu = int((kernels["variant"] == s["variant"]).sum())
            per_call = s.get("kernels_per_call")
            if s.get("gpu_time_source") == "nsys" and per_call and n_ncu and abs(n_ncu - per_call) > 1e-9:
                out.append(f"{s['variant']}: ncu profiled {n_ncu} kernel(s) but nsys saw {per_call:g} per call")
    for s in summary:
        a, b = s.get("speedup_vs_baseline"), s.get("speedup_cuda_events")
        if s["variant"] != "baseline" and a and b and abs(a - b) / max(a, b) > 0.10:
            out.append(f"{s['variant']}: speedup by nsys GPU time ({a:.2f}x) and by CUDA events ({b:.2f}x) "
                       "differ by more than 10%")
    if roof_error:
        out.append(roof_error)
    found = [{"severity": "warning", "code": "report", "message": m} for m in out]
    for w in (roof or {}).get("warnings") or []:
        found.append({"severity": str(w.get("severity") or "warning"), "code": str(w.get("code") or "roofline"),
                      "message": str(w.get("message"))})
    return sorted(found, key=lambda w: w["severity"] != "warning")      # warnings first, then notes
