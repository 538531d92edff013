"""Roofline points, the two FLOP counts, and the warnings that say when a roofline misleads.

Everything here is a pure function of stored data (a run's run.json and its tidy ncu kernel
rows); `aisp_prof.api` reads the runs and the calibrations and hands them in.

A point is one kernel launch, or a variant's aggregate (`kernel` None): summed FLOPs over summed
bytes at each level, summed FLOPs over summed ncu duration. Its roof is the roofline bound on
its time, t_min = max(sum_p F_p / P_p, B_dram / BW_dram, B_l2 / BW_l2, B_l1 / BW_l1): the compute
term adds each precision's FLOPs at that precision's peak (a GEMM with an fp32 epilogue is not
bounded by the fp32 roof), `bound` names the largest term, `pct_of_roof` is 100 t_min / t, and
`roof_flops_per_s` = F / t_min is exactly min(P, BW x AI) for a single precision. The same with
measured ceilings (theoretical where a ceiling was not calibrated) gives `pct_of_measured_roof`.

FLOPs: kernels always use hardware-counted FLOPs (ncu). A variant's aggregate uses the pair's
analytic FLOPs when the run records them (`flop_basis="auto"`): every variant of a pair
computes the same function, so the vertical distance between baseline and optimized is then
exactly the speedup, and FLOPs the hardware wasted (an eager division expands to ~8 FFMA-class
FLOPs per element) do not masquerade as useful work. `flop_basis="counted"` is ncu's view.

2:4 structured sparsity: a kernel whose name matches `SPARSE_KERNEL` (cuSPARSELt's
`sm90_xmma_sparse_gemm_..._cusparselt`, CUTLASS's `SparseGemm*` and sm90 `...GmmaWarpSpecializedSparse`
mainloops) has its fp16/bf16/tf32/fp8/int8 tensor FLOPs on `tensor_<p>_sparse`, bounded by the
2:4-sparse roof (twice the dense one on Hopper). Convention: dense-equivalent FLOPs (2mnk) against
the sparse roof. That is how ncu counts them (the 16384^3 sparse GEMM of ch09.structured_sparsity:
8,796,093,022,208 counted = 2mnk exactly) and the unit of the sparse peak, so a sparse GEMM's % of
roof equals ncu's tensor-pipe utilisation, as a dense GEMM's does. Detection is by kernel, not by
variant: a sparse variant's elementwise and copy kernels stay where they are, and imported exports
that never saw a KernelPair are handled too.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

from .ceilings import (LEVELS, PRECISIONS, SPARSE_REPORTED, SPARSE_SUFFIX, Ceilings, hardware_key,
                       theoretical_ceilings, weighted_clocks, with_measured)
from .flops import SCALAR_FLOP_WEIGHTS

FLOP_MISMATCH = 0.10        # |counted / analytic - 1| above this is flagged (issue 3)
ABOVE_ROOF_TOLERANCE = 1.02  # a point more than 2% above its theoretical roof is flagged
CLOCK_DIFF = 0.05           # SM clocks of compared variants differing by more than 5%
LEVEL_BYTES = {"dram": "dram_bytes", "l2": "l2_bytes", "l1": "l1_bytes"}
NCU_DEFAULT_SETTINGS = {"clock_control": "base", "cache_control": "all"}
# kernels that run 2:4-sparse MMAs: cuSPARSELt (sm90_xmma_sparse_gemm_..._cusparselt), CUTLASS 2.x
# SparseGemm / SparseGemmRowBroadcast (torch's CUTLASS backend), CUTLASS 3.x sm90 sparse mainloops
SPARSE_KERNEL = re.compile(r"xmma_sparse|cusparselt|SparseGemm|GmmaWarpSpecializedSparse", re.IGNORECASE)


# ----------------------------------------------------------------------------------- inputs

@dataclass
class RunInput:
    """What the roofline needs of one stored run."""

    run_id: str
    info: dict[str, Any]                  # run.json
    kernels: pd.DataFrame                 # tidy ncu rows (one per launch), with `variant`
    device: dict[str, float] = field(default_factory=dict)   # device__attribute_* of the profile
    gpu_name: str | None = None

    @property
    def label(self) -> str:
        return self.info.get("pair") or self.info.get("label") or self.run_id


def is_sparse_kernel(name: Any) -> bool:
    """True for a kernel that runs 2:4-sparse tensor MMAs (by name, `SPARSE_KERNEL`)."""
    return isinstance(name, str) and SPARSE_KERNEL.search(name) is not None


def flops_by_precision(kernels: pd.DataFrame) -> pd.DataFrame:
    """Counted FLOPs per launch and precision key (fp64/fp32/fp16 scalar, tensor_<p>, and
    tensor_<p>_sparse for the tensor FLOPs of 2:4-sparse kernels)."""
    out = pd.DataFrame(index=kernels.index)
    for prec, weights in SCALAR_FLOP_WEIGHTS.items():
        cols = [(c, w) for c, w in weights if c in kernels]
        out[prec] = sum((kernels[c].astype(float).fillna(0) * w for c, w in cols), 0.0) if cols else 0.0
    for prec in PRECISIONS:
        if prec.startswith("tensor_"):
            col = f"flops_{prec}"
            out[prec] = kernels[col].astype(float).fillna(0) if col in kernels else 0.0
    if "kernel" in kernels:
        sparse = kernels["kernel"].map(is_sparse_kernel).astype(bool)
        for prec in sorted(SPARSE_REPORTED):
            out[prec + SPARSE_SUFFIX] = out[prec].where(sparse, 0.0)
            out[prec] = out[prec].where(~sparse, 0.0)
    return out


def analytic_for(info: Mapping[str, Any], variant: str) -> dict[str, Any] | None:
    """A variant's analytic work per call: per-variant (calibration runs) or the pair's formula."""
    analytic = info.get("analytic") or {}
    per_variant = (analytic.get("variants") or {}).get(variant)
    if per_variant:
        return dict(per_variant)
    if analytic.get("flops") is not None or analytic.get("dram_bytes") is not None:
        return {"flops": analytic.get("flops"), "dram_bytes": analytic.get("dram_bytes"),
                "working_set_bytes": analytic.get("working_set_bytes", analytic.get("dram_bytes"))}
    return None


def _flag_value(cmd: Sequence[str], flag: str) -> str | None:
    for i, part in enumerate(cmd):
        if part == flag and i + 1 < len(cmd):
            return str(cmd[i + 1])
        if str(part).startswith(flag + "="):
            return str(part).split("=", 1)[1]
    return None


def ncu_settings(info: Mapping[str, Any]) -> dict[str, str] | None:
    """--clock-control / --cache-control of the run's ncu command (ncu's defaults if absent)."""
    cmd = (info.get("commands") or {}).get("ncu")
    if not cmd:
        return None
    out = dict(NCU_DEFAULT_SETTINGS)
    for flag, key in (("--clock-control", "clock_control"), ("--cache-control", "cache_control")):
        value = _flag_value(cmd, flag)
        if value is not None:
            out[key] = value
    return out


def ncu_iterations(info: Mapping[str, Any]) -> int:
    """Calls of each variant the ncu child made (aisp-prof uses 1)."""
    cmd = (info.get("commands") or {}).get("ncu") or []
    value = _flag_value(cmd, "--iterations")
    return int(value) if value and value.isdigit() and int(value) > 0 else 1


# ----------------------------------------------------------------------------------- results

@dataclass
class Point:
    """One roofline point: a kernel launch, or a variant's aggregate when `kernel` is None."""

    run_id: str
    nvtx_range: str
    variant: str
    kernel: str | None
    launch_id: int | None
    kernel_count: int
    duration_ns: float
    flops: float
    flop_basis: str                      # "counted" | "analytic"
    flops_counted: float
    flops_analytic: float | None
    flops_by_precision: dict[str, float]
    precision: str | None                # the precision with the most counted FLOPs
    dram_bytes: float | None
    l2_bytes: float | None
    l1_bytes: float | None
    tma_bytes: float
    ai_dram: float | None
    ai_l2: float | None
    ai_l1: float | None
    flops_per_s: float | None
    bound: str | None                    # "compute" | "dram" | "l2" | "l1"
    roof_flops_per_s: float | None
    pct_of_roof: float | None
    bound_measured: str | None
    pct_of_measured_roof: float | None
    pct_of_roof_by_level: dict[str, float | None]
    ridge_dram: float | None
    ridge_l2: float | None
    ridge_l1: float | None
    clocks_hz: dict[str, float | None]
    ai_l1_valid: bool = True

    @property
    def is_aggregate(self) -> bool:
        return self.kernel is None

    def ai(self, level: str) -> float | None:
        return getattr(self, f"ai_{level}")

    def bytes_at(self, level: str) -> float | None:
        return getattr(self, LEVEL_BYTES[level])

    def to_dict(self) -> dict[str, Any]:
        return {k: _clean(v) for k, v in asdict(self).items()}


@dataclass
class FlopCheck:
    """Hardware-counted FLOPs of a variant's call beside the pair's analytic FLOPs."""

    run_id: str
    variant: str
    nvtx_range: str
    counted_flops: float
    analytic_flops: float | None
    ratio: float | None
    flagged: bool
    counted_by_precision: dict[str, float]
    iterations: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {k: _clean(v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class RooflineWarning:
    code: str          # above_roof | tma_l1 | fits_in_l2 | settings_differ | clock_differs | flop_mismatch
                       # | no_flops | hfma_moves | other_gpu
    message: str
    run_id: str | None = None
    nvtx_range: str | None = None
    kernel: str | None = None
    severity: str = "warning"    # "warning" | "info"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Comparison:
    """Baseline -> optimized, as the chart's arrow: both aggregates and the speedup (ncu time)."""

    baseline: Point
    optimized: Point
    speedup: float | None
    time_source: str = "ncu gpu__time_duration, summed over the variant's kernels"

    def to_dict(self) -> dict[str, Any]:
        b, o = self.baseline, self.optimized
        return {"baseline": {"run_id": b.run_id, "nvtx_range": b.nvtx_range, "variant": b.variant},
                "optimized": {"run_id": o.run_id, "nvtx_range": o.nvtx_range, "variant": o.variant},
                "speedup": _clean(self.speedup), "time_source": self.time_source,
                **{f"{k}_change": _ratio(getattr(o, k), getattr(b, k))
                   for k in ("ai_dram", "ai_l2", "ai_l1", "flops_per_s", "dram_bytes")}}


@dataclass
class RooflineResult:
    runs: list[dict[str, Any]]
    ceilings: Ceilings
    points: list[Point]
    flop_check: list[FlopCheck]
    warnings: list[RooflineWarning]
    comparisons: list[Comparison]
    flop_basis: str = "auto"

    def aggregates(self, run_id: str | None = None) -> list[Point]:
        return [p for p in self.points if p.is_aggregate and (run_id is None or p.run_id == run_id)]

    def kernels_of(self, run_id: str, variant: str) -> list[Point]:
        return [p for p in self.points if not p.is_aggregate and p.run_id == run_id and p.variant == variant]

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "flop_basis": self.flop_basis, "ceilings": self.ceilings.to_dict(),
                "points": [p.to_dict() for p in self.points],
                "comparisons": [c.to_dict() for c in self.comparisons],
                "flop_check": [f.to_dict() for f in self.flop_check],
                "warnings": [w.to_dict() for w in self.warnings]}


def _clean(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


# ----------------------------------------------------------------------------------- points

def _sum(series: pd.Series) -> float | None:
    s = series.astype(float)
    return float(s.sum()) if s.notna().any() else None


def _roof_terms(flops_by_prec: Mapping[str, float], bytes_at: Mapping[str, float | None],
                compute: Mapping[str, float | None], bandwidth: Mapping[str, float | None]) -> dict[str, float]:
    """Seconds each resource needs at its roof: 'compute' and one per memory level."""
    terms: dict[str, float] = {}
    t_compute, counted = 0.0, False
    for prec, f in flops_by_prec.items():
        rate = compute.get(prec)
        if f > 0 and rate:
            t_compute += f / rate
            counted = True
    if counted:
        terms["compute"] = t_compute
    for level, b in bytes_at.items():
        rate = bandwidth.get(level)
        if b is not None and rate:
            terms[level] = b / rate
    return terms


def _make_point(run_id: str, nvtx_range: str, variant: str, kernel: str | None, launch_id: int | None,
                rows: pd.DataFrame, by_prec: pd.DataFrame, ceilings: Ceilings,
                analytic_flops: float | None, use_analytic: bool) -> Point:
    duration_ns = float(rows["duration_ns"].astype(float).sum())
    prec_sums = {p: float(by_prec.loc[rows.index, p].sum()) for p in by_prec.columns}
    counted = sum(prec_sums.values())
    precision = max(prec_sums, key=prec_sums.get) if counted > 0 else None
    basis = "analytic" if use_analytic and analytic_flops is not None else "counted"
    flops = float(analytic_flops) if basis == "analytic" else counted
    # FLOPs of the chosen basis, split over precisions as the hardware counted them
    if basis == "analytic":
        mix = {p: flops * v / counted for p, v in prec_sums.items() if v > 0} if counted > 0 else {"fp32": flops}
    else:
        mix = {p: v for p, v in prec_sums.items() if v > 0}
    byte_sums = {lv: (_sum(rows[col]) if col in rows else None) for lv, col in LEVEL_BYTES.items()}
    if "dram_bytes" not in rows and {"dram_read_bytes", "dram_write_bytes"} <= set(rows):
        byte_sums["dram"] = _sum(rows["dram_read_bytes"].fillna(0) + rows["dram_write_bytes"].fillna(0))
    tma = sum(float(rows[c].astype(float).fillna(0).sum()) for c in ("tma_load_bytes", "tma_store_bytes") if c in rows)
    clocks = weighted_clocks(rows)
    seconds = duration_ns * 1e-9
    theo_c = {p: c.at_clocks(clocks) for p, c in ceilings.compute.items()}
    theo_b = {lv: c.at_clocks(clocks) for lv, c in ceilings.bandwidth.items()}
    meas_c = {p: c.measured or theo_c.get(p) for p, c in ceilings.compute.items()}
    meas_b = {lv: c.measured or theo_b.get(lv) for lv, c in ceilings.bandwidth.items()}

    def bound_of(compute: Mapping[str, float | None], bandwidth: Mapping[str, float | None]):
        terms = _roof_terms(mix, byte_sums, compute, bandwidth)
        if not terms or seconds <= 0:
            return None, None, None, terms
        bound = max(terms, key=terms.get)
        t_min = terms[bound]
        roof = flops / t_min if flops > 0 and t_min > 0 else None
        return bound, 100.0 * t_min / seconds, roof, terms

    bound, pct, roof, terms = bound_of(theo_c, theo_b)
    bound_m, pct_m, _, _ = bound_of(meas_c, meas_b)
    t_c = terms.get("compute")
    by_level = {lv: (100.0 * max(t_c or 0.0, terms[lv]) / seconds if lv in terms and seconds > 0 else None)
                for lv in LEVELS}
    p_eff = flops / t_c if t_c else None

    def ai(level: str) -> float | None:
        b = byte_sums.get(level)
        return flops / b if b else None

    def ridge(level: str) -> float | None:
        bw = theo_b.get(level)
        return p_eff / bw if p_eff and bw else None

    return Point(
        run_id=run_id, nvtx_range=nvtx_range, variant=variant, kernel=kernel, launch_id=launch_id,
        kernel_count=len(rows), duration_ns=duration_ns, flops=flops, flop_basis=basis,
        flops_counted=counted, flops_analytic=analytic_flops, flops_by_precision=prec_sums,
        precision=precision, dram_bytes=byte_sums["dram"], l2_bytes=byte_sums["l2"], l1_bytes=byte_sums["l1"],
        tma_bytes=tma, ai_dram=ai("dram"), ai_l2=ai("l2"), ai_l1=ai("l1"),
        flops_per_s=flops / seconds if seconds > 0 else None, bound=bound, roof_flops_per_s=roof,
        pct_of_roof=pct, bound_measured=bound_m, pct_of_measured_roof=pct_m, pct_of_roof_by_level=by_level,
        ridge_dram=ridge("dram"), ridge_l2=ridge("l2"), ridge_l1=ridge("l1"), clocks_hz=clocks,
        ai_l1_valid=tma == 0,
    )


def _variant_order(run: RunInput) -> list[str]:
    order = [v for v in run.info.get("variants") or [] if v in set(run.kernels.get("variant", []))]
    if "variant" in run.kernels:
        order += [v for v in run.kernels["variant"].dropna().unique() if v not in order]
    return order


def points_for_run(run: RunInput, ceilings: Ceilings, flop_basis: str = "auto") -> list[Point]:
    """Per variant: its aggregate, then its kernels in launch order."""
    k = run.kernels
    if k.empty:
        return []
    if "variant" not in k:
        k = k.assign(variant=k.get("nvtx_range", pd.Series("", index=k.index)).fillna(""))
    if "dram_bytes" not in k and {"dram_read_bytes", "dram_write_bytes"} & set(k):
        k = k.assign(dram_bytes=k.get("dram_read_bytes", 0).astype(float).fillna(0)
                     + k.get("dram_write_bytes", 0).astype(float).fillna(0))
    by_prec = flops_by_precision(k)
    iterations = ncu_iterations(run.info)
    out: list[Point] = []
    for variant in _variant_order(run):
        rows = k[k["variant"] == variant]
        nvtx = str(rows["nvtx_range"].iloc[0]) if "nvtx_range" in rows else variant
        analytic = analytic_for(run.info, variant)
        a_flops = analytic.get("flops") if analytic else None
        a_flops = float(a_flops) * iterations if a_flops is not None else None
        out.append(_make_point(run.run_id, nvtx, variant, None, None, rows, by_prec, ceilings, a_flops,
                               use_analytic=flop_basis in ("auto", "analytic")))
        for idx in rows.index:
            row = rows.loc[[idx]]
            lid = row["launch_id"].iloc[0] if "launch_id" in row else None
            out.append(_make_point(run.run_id, nvtx, variant, str(row["kernel"].iloc[0]),
                                   int(lid) if lid is not None and lid == lid else None,
                                   row, by_prec, ceilings, None, use_analytic=False))
    return out


def flop_checks(run: RunInput, points: Sequence[Point]) -> list[FlopCheck]:
    """Counted vs analytic FLOPs per variant (per call); flagged above FLOP_MISMATCH."""
    iterations = ncu_iterations(run.info)
    out = []
    for p in points:
        if not p.is_aggregate or p.run_id != run.run_id:
            continue
        analytic = analytic_for(run.info, p.variant)
        a = analytic.get("flops") if analytic else None
        counted = p.flops_counted / iterations
        ratio = counted / a if a else None
        flagged = bool(ratio is not None and abs(ratio - 1.0) > FLOP_MISMATCH) or bool(a == 0 and counted > 0)
        out.append(FlopCheck(run.run_id, p.variant, p.nvtx_range, counted, float(a) if a is not None else None,
                             ratio, flagged, {k: v / iterations for k, v in p.flops_by_precision.items() if v},
                             iterations))
    return out


# ----------------------------------------------------------------------------------- warnings

def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB"


def _where(p: Point) -> str:
    return f"{p.nvtx_range}" + (f" kernel {p.kernel[:60]}" if p.kernel else " (all kernels)")


def point_warnings(points: Sequence[Point]) -> list[RooflineWarning]:
    """A point above its theoretical roof; L1 intensity of TMA kernels; points with no FLOPs."""
    out = []
    for p in points:
        if p.pct_of_roof is not None and p.pct_of_roof > 100.0 * ABOVE_ROOF_TOLERANCE:
            out.append(RooflineWarning(
                "above_roof", f"{_where(p)} runs at {p.pct_of_roof:.0f}% of its theoretical {p.bound} roof: "
                "a roof or a count is wrong (a sparse tensor peak, a clock, a duration, or FLOPs counted twice)",
                p.run_id, p.nvtx_range, p.kernel))
        if p.tma_bytes > 0 and not p.is_aggregate:
            out.append(RooflineWarning(
                "tma_l1", f"{_where(p)} moves {_mb(p.tma_bytes)} by TMA, which bypasses the L1 counters "
                "(l1tex__t_bytes): its L1 intensity is overstated; read the L2 and DRAM points",
                p.run_id, p.nvtx_range, p.kernel))
        if p.is_aggregate and p.flops_counted == 0 and (p.flops_analytic or 0) == 0:
            out.append(RooflineWarning(
                "no_flops", f"{p.nvtx_range} counts no floating-point work: it has no place on a FLOP/s roofline "
                "(its bandwidth is in the table)", p.run_id, p.nvtx_range, None, "info"))
    return out


def hfma_move_warnings(run: RunInput) -> list[RooflineWarning]:
    """Half-precision FMAs in kernels that do no other half-precision work.

    ptxas materializes constants (often zero) with `HFMA2.MMA Rd, -RZ, RZ, imm, imm`, and ncu counts
    those as HFMA instructions, so an fp32 kernel "does" fp16 FLOPs: one per thread in this
    project's FMA probe, ten HFMA2.MMA zero moves in the SASS of ch09's fused L2 norm.
    """
    k = run.kernels
    need = {"inst_hfma", "inst_hadd", "inst_hmul"}
    if k.empty or not need <= set(k):
        return []
    by_prec = flops_by_precision(k)
    out = []
    for idx, row in k.iterrows():
        hfma = float(row["inst_hfma"] or 0)
        other = float(row["inst_hadd"] or 0) + float(row["inst_hmul"] or 0)
        if hfma > 0 and other == 0 and by_prec.loc[idx, "fp32"] > by_prec.loc[idx, "fp16"]:
            out.append(RooflineWarning(
                "hfma_moves", f"{row.get('nvtx_range')} kernel {str(row.get('kernel'))[:60]}: {hfma:.4g} HFMA "
                f"instructions and no other half-precision work: likely HFMA2.MMA register moves, not arithmetic; "
                f"they add {4 * hfma:.4g} 'fp16' FLOPs to the counted total",
                run.run_id, row.get("nvtx_range"), str(row.get("kernel")), "info"))
    return out


def l2_fit_warnings(run: RunInput, points: Sequence[Point]) -> list[RooflineWarning]:
    """Working sets that fit in L2: in a loop their data would come from L2, not DRAM."""
    l2 = (run.info.get("gpu") or {}).get("l2_cache_bytes") or run.device.get("device__attribute_l2_cache_size")
    if not l2:
        return []
    settings = ncu_settings(run.info) or dict(NCU_DEFAULT_SETTINGS)
    flushed = settings.get("cache_control", "all") == "all"
    out = []
    for p in points:
        if not p.is_aggregate or p.run_id != run.run_id:
            continue
        analytic = analytic_for(run.info, p.variant)
        ws = analytic.get("working_set_bytes") if analytic else None
        if ws and ws <= float(l2):
            how = ("ncu flushed the caches before each replay (--cache-control all), so its DRAM bytes are a "
                   "cold start" if flushed else "caches were not flushed, so DRAM bytes depend on what ran before")
            out.append(RooflineWarning(
                "fits_in_l2", f"{p.nvtx_range}: the working set ({_mb(ws)}) fits in the {_mb(float(l2))} L2; "
                f"the DRAM roofline misleads ({how}); the L2 point is the one to read", run.run_id, p.nvtx_range))
    return out


def comparison_warnings(comparisons: Sequence[Comparison], runs: Mapping[str, RunInput]) -> list[RooflineWarning]:
    """Baseline and optimized profiled with different ncu clock/cache settings, or at different SM clocks."""
    out = []
    for c in comparisons:
        b, o = c.baseline, c.optimized
        sb, so = ncu_settings(runs[b.run_id].info), ncu_settings(runs[o.run_id].info)
        if sb and so and sb != so:
            diff = ", ".join(f"{k} {sb[k]} vs {so[k]}" for k in sb if sb[k] != so.get(k))
            out.append(RooflineWarning(
                "settings_differ", f"{b.nvtx_range} and {o.nvtx_range} were profiled with different ncu settings "
                f"({diff}): their points are not comparable", o.run_id, o.nvtx_range))
        cb, co = b.clocks_hz.get("sm"), o.clocks_hz.get("sm")
        if cb and co and abs(cb - co) / max(cb, co) > CLOCK_DIFF:
            out.append(RooflineWarning(
                "clock_differs", f"{b.nvtx_range} ran at {cb / 1e9:.2f} GHz and {o.nvtx_range} at {co / 1e9:.2f} GHz "
                f"(SM clock, duration-weighted): {abs(cb - co) / max(cb, co):.0%} apart, part of the speedup "
                "may be the clock", o.run_id, o.nvtx_range))
    return out


def flop_warnings(checks: Sequence[FlopCheck]) -> list[RooflineWarning]:
    out = []
    for f in checks:
        if not f.flagged:
            continue
        parts = ", ".join(f"{k} {v:.3g}" for k, v in f.counted_by_precision.items()) or "none"
        ratio = f"{f.ratio:.2f}x" if f.ratio is not None else "n/a"
        out.append(RooflineWarning(
            "flop_mismatch", f"{f.nvtx_range}: ncu counted {f.counted_flops:.4g} FLOPs per call ({parts}), the "
            f"pair's formula says {f.analytic_flops:.4g} ({ratio}): hidden recomputation or expanded "
            "operations, a tensor path not taken, or a wrong formula", f.run_id, f.nvtx_range))
    return out


# ----------------------------------------------------------------------------------- assembly

def comparisons_for(runs: Sequence[RunInput], points: Sequence[Point]) -> list[Comparison]:
    """Within a run: baseline -> every other variant. Across runs: run 0's variant -> the same
    variant of each later run (or its only variant -> their only variant)."""
    aggs: dict[str, dict[str, Point]] = {}
    for p in points:
        if p.is_aggregate:
            aggs.setdefault(p.run_id, {})[p.variant] = p
    out = []
    for run in runs:
        va = aggs.get(run.run_id, {})
        if "baseline" in va:
            out += [Comparison(va["baseline"], p, _ratio(va["baseline"].duration_ns, p.duration_ns))
                    for v, p in va.items() if v != "baseline"]
    first = aggs.get(runs[0].run_id, {}) if runs else {}
    for run in runs[1:]:
        later = aggs.get(run.run_id, {})
        common = [v for v in first if v in later]
        if not common and len(first) == 1 and len(later) == 1:
            pairs = [(next(iter(first.values())), next(iter(later.values())))]
        else:
            pairs = [(first[v], later[v]) for v in common]
        out += [Comparison(b, o, _ratio(b.duration_ns, o.duration_ns)) for b, o in pairs]
    return out


def build_roofline(runs: Sequence[RunInput], calibration: tuple[Mapping[str, Any], str] | None = None,
                   flop_basis: str = "auto") -> RooflineResult:
    """Ceilings, points, FLOP check, comparisons and warnings of one or more runs (pure)."""
    if flop_basis not in ("auto", "analytic", "counted"):
        raise ValueError(f"flop_basis must be auto, analytic or counted, not {flop_basis!r}")
    frames = [r.kernels for r in runs if not r.kernels.empty]
    allk = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    gpu = next((r.gpu_name for r in runs if r.gpu_name), None)
    keys = {hardware_key(r.gpu_name) for r in runs if r.gpu_name}
    key = (calibration[0].get("hardware_key") if calibration and not gpu else None) or hardware_key(gpu)
    ceilings = theoretical_ceilings(allk, gpu, key)
    if calibration:
        ceilings = with_measured(ceilings, calibration[0], calibration[1])
    points: list[Point] = []
    checks: list[FlopCheck] = []
    warnings: list[RooflineWarning] = []
    for run in runs:
        pts = points_for_run(run, ceilings, flop_basis)
        points += pts
        checks += flop_checks(run, pts)
        warnings += l2_fit_warnings(run, pts) + hfma_move_warnings(run)
    comparisons = comparisons_for(runs, points)
    warnings = (point_warnings(points) + warnings + comparison_warnings(comparisons, {r.run_id: r for r in runs})
                + flop_warnings(checks))
    if len(keys) > 1:
        warnings.insert(0, RooflineWarning("other_gpu", f"runs from different GPUs ({', '.join(sorted(keys))}): "
                                           f"ceilings are those of {key}"))
    summary = [{"run_id": r.run_id, "pair": r.info.get("pair"), "label": r.info.get("label"),
                "gpu_name": r.gpu_name, "hardware_key": hardware_key(r.gpu_name) if r.gpu_name else key,
                "ncu_settings": ncu_settings(r.info), "variants": _variant_order(r)} for r in runs]
    return RooflineResult(summary, ceilings, points, checks, warnings, comparisons, flop_basis)
