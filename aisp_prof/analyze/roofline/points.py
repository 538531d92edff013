"""Roofline points: one kernel launch, or a variant's aggregate, placed against the ceilings.

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

Everything here is a pure function of a run's run.json and its tidy ncu kernel rows. It is apart
from the roofline's assembly (`roofline.build_roofline`) and its warnings so that the arithmetic
of a point reads in one sitting.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Mapping

import pandas as pd

from ...values import column_sum, json_ready, series_sum  # noqa: F401 (json_ready: compare's)
from .ceilings import CLOCK_COLUMNS, LEVELS, PRECISIONS, SPARSE_REPORTED, SPARSE_SUFFIX, Ceilings, weighted_clocks
from ..kernels.flops import SCALAR_FLOP_WEIGHTS
from ..kernels.ncu_command import ncu_iterations

if TYPE_CHECKING:
    from .run_input import RunInput

LEVEL_BYTES = {"dram": "dram_bytes", "l2": "l2_bytes", "l1": "l1_bytes"}
# kernels that run 2:4-sparse MMAs: cuSPARSELt (sm90_xmma_sparse_gemm_..._cusparselt), CUTLASS 2.x
# SparseGemm / SparseGemmRowBroadcast (torch's CUTLASS backend), CUTLASS 3.x sm90 sparse mainloops
SPARSE_KERNEL = re.compile(r"xmma_sparse|cusparselt|SparseGemm|GmmaWarpSpecializedSparse", re.IGNORECASE)


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
    ai_dram_flop_per_byte: float | None
    ai_l2_flop_per_byte: float | None
    ai_l1_flop_per_byte: float | None
    flops_per_s: float | None
    bound: str | None                    # "compute" | "dram" | "l2" | "l1"
    roof_flops_per_s: float | None
    pct_of_roof: float | None
    bound_measured: str | None
    pct_of_measured_roof: float | None
    pct_of_roof_by_level: dict[str, float | None]
    ridge_dram_flop_per_byte: float | None   # where this point's compute roof meets each bandwidth roof
    ridge_l2_flop_per_byte: float | None
    ridge_l1_flop_per_byte: float | None
    clocks_hz: dict[str, float | None]
    ai_l1_valid: bool = True
    hardware_key: str | None = None      # the card whose ceilings judge it: set where a roofline spans cards

    @property
    def is_aggregate(self) -> bool:
        return self.kernel is None

    def ai(self, level: str) -> float | None:
        """Arithmetic intensity at `level` ('dram', 'l2', 'l1'), FLOP/byte."""
        return getattr(self, f"ai_{level}_flop_per_byte")

    def bytes_at(self, level: str) -> float | None:
        return getattr(self, LEVEL_BYTES[level])

    def to_dict(self) -> dict[str, Any]:
        """Every field; `hardware_key` only where it is set (a roofline of one card has no card column)."""
        return {name: json_ready(getattr(self, name)) for name in _POINT_FIELDS
                if name != "hardware_key" or self.hardware_key is not None}


_POINT_FIELDS = tuple(f.name for f in fields(Point))    # asdict() without its deep copies: 0.9 s at 10k points


@dataclass(frozen=True, eq=False)
class PointSource:
    """Which launches one point stands for and how their work is counted: a variant's calls (the
    aggregate, `kernel` None) or a single kernel launch."""

    run_id: str
    nvtx_range: str
    variant: str
    kernel: str | None = None            # None: the variant's aggregate
    launch_id: int | None = None
    analytic_flops: float | None = None  # the pair's FLOPs for those calls, where the run records them
    use_analytic: bool = False           # place the point at `analytic_flops` when known


@dataclass(frozen=True)
class Totals:
    """What a point's launches add up to: count, time, counted FLOPs per precision, bytes per
    level, TMA bytes and the duration-weighted clocks."""

    count: int
    duration_ns: float
    flops_by_precision: dict[str, float]
    bytes_at: dict[str, float | None]
    tma_bytes: float
    clocks_hz: dict[str, float | None]


@dataclass(frozen=True)
class _Work:
    """The FLOPs of a point: on its basis, as counted, and the basis split over precisions."""

    flops: float                          # on `basis`
    basis: str                            # "counted" | "analytic"
    flops_counted: float
    flops_by_precision: dict[str, float]  # counted
    precision: str | None                 # the precision with the most counted FLOPs
    flops_mix: dict[str, float]           # `flops` split over precisions as the hardware counted them


_TMA_COLUMNS = ("tma_load_bytes", "tma_store_bytes")


def totals_of(rows: pd.DataFrame, by_prec: pd.DataFrame) -> Totals:
    """The totals of several launches (a variant's aggregate)."""
    byte_sums = {lv: column_sum(rows, col) for lv, col in LEVEL_BYTES.items()}
    if "dram_bytes" not in rows and {"dram_read_bytes", "dram_write_bytes"} <= set(rows):
        byte_sums["dram"] = series_sum(rows["dram_read_bytes"].fillna(0) + rows["dram_write_bytes"].fillna(0))
    tma = sum(float(rows[c].astype(float).fillna(0).sum()) for c in _TMA_COLUMNS if c in rows)
    return Totals(len(rows), float(rows["duration_ns"].astype(float).sum()),
                  {p: float(by_prec.loc[rows.index, p].sum()) for p in by_prec.columns}, byte_sums, tma,
                  weighted_clocks(rows))


def launch_totals(rows: pd.DataFrame, by_prec: pd.DataFrame) -> list[Totals]:
    """The totals of each launch on its own, column by column: the same arithmetic as
    `totals_of` on one row (so the same numbers), without building a one-row frame per launch."""
    n = len(rows)
    dur = rows["duration_ns"].astype(float).to_numpy()
    prec = {p: by_prec.loc[rows.index, p].astype(float).to_numpy() for p in by_prec.columns}
    level = {lv: rows[col].astype(float).to_numpy() if col in rows else None for lv, col in LEVEL_BYTES.items()}
    tma = [rows[c].astype(float).fillna(0).to_numpy() for c in _TMA_COLUMNS if c in rows]
    clocks = {d: _one_clock(rows, col, dur) for d, col in CLOCK_COLUMNS.items()}
    out = []
    for i in range(n):
        bytes_at = {lv: (None if v is None or v[i] != v[i] else float(v[i])) for lv, v in level.items()}
        out.append(Totals(1, float(dur[i]), {p: float(v[i]) for p, v in prec.items()}, bytes_at,
                          sum(float(t[i]) for t in tma), {d: c[i] for d, c in clocks.items()}))
    return out


def _one_clock(rows: pd.DataFrame, col: str, dur: Any) -> list[float | None]:
    """Each launch's clock as `weighted_clocks` gives it for one row: (clock x time) / time."""
    if col not in rows:
        return [None] * len(rows)
    clk = rows[col].astype(float).to_numpy()
    return [float(c * d / d) if c == c and d == d and d > 0 else None for c, d in zip(clk, dur)]


def _work(src: PointSource, totals: Totals) -> _Work:
    prec_sums = totals.flops_by_precision
    counted = sum(prec_sums.values())
    precision = max(prec_sums, key=prec_sums.get) if counted > 0 else None
    basis = "analytic" if src.use_analytic and src.analytic_flops is not None else "counted"
    flops = float(src.analytic_flops) if basis == "analytic" else counted
    if basis == "analytic":
        mix = {p: flops * v / counted for p, v in prec_sums.items() if v > 0} if counted > 0 else {"fp32": flops}
    else:
        mix = {p: v for p, v in prec_sums.items() if v > 0}
    return _Work(flops, basis, counted, prec_sums, precision, mix)


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


def _bound(work: _Work, bytes_at: Mapping[str, float | None], compute: Mapping[str, float | None],
           bandwidth: Mapping[str, float | None], seconds: float) -> tuple[Any, Any, Any, dict[str, float]]:
    """(bound resource, % of roof, roof FLOP/s, seconds per resource) against the given rates."""
    terms = _roof_terms(work.flops_mix, bytes_at, compute, bandwidth)
    if not terms or seconds <= 0:
        return None, None, None, terms
    bound = max(terms, key=terms.get)
    t_min = terms[bound]
    roof = work.flops / t_min if work.flops > 0 and t_min > 0 else None
    return bound, 100.0 * t_min / seconds, roof, terms


def make_point(src: PointSource, totals: Totals, ceilings: Ceilings) -> Point:
    """The roofline point of `src`'s launches (their `totals`) against `ceilings`, at the clocks
    they ran at."""
    duration_ns, work, byte_sums, tma, clocks = (totals.duration_ns, _work(src, totals), totals.bytes_at,
                                                 totals.tma_bytes, totals.clocks_hz)
    seconds = duration_ns * 1e-9
    theo_c = {p: c.at_clocks(clocks) for p, c in ceilings.compute.items()}
    theo_b = {lv: c.at_clocks(clocks) for lv, c in ceilings.bandwidth.items()}
    meas_c = {p: c.measured_per_s or theo_c.get(p) for p, c in ceilings.compute.items()}
    meas_b = {lv: c.measured_per_s or theo_b.get(lv) for lv, c in ceilings.bandwidth.items()}
    bound, pct, roof, terms = _bound(work, byte_sums, theo_c, theo_b, seconds)
    bound_m, pct_m, _, _ = _bound(work, byte_sums, meas_c, meas_b, seconds)
    t_c = terms.get("compute")
    by_level = {lv: (100.0 * max(t_c or 0.0, terms[lv]) / seconds if lv in terms and seconds > 0 else None)
                for lv in LEVELS}
    p_eff = work.flops / t_c if t_c else None
    ai = {lv: work.flops / b if (b := byte_sums.get(lv)) else None for lv in LEVELS}
    ridge = {lv: p_eff / bw if p_eff and (bw := theo_b.get(lv)) else None for lv in LEVELS}
    return Point(
        run_id=src.run_id, nvtx_range=src.nvtx_range, variant=src.variant, kernel=src.kernel,
        launch_id=src.launch_id, kernel_count=totals.count, duration_ns=duration_ns, flops=work.flops,
        flop_basis=work.basis, flops_counted=work.flops_counted, flops_analytic=src.analytic_flops,
        flops_by_precision=work.flops_by_precision, precision=work.precision, dram_bytes=byte_sums["dram"],
        l2_bytes=byte_sums["l2"], l1_bytes=byte_sums["l1"], tma_bytes=tma,
        ai_dram_flop_per_byte=ai["dram"], ai_l2_flop_per_byte=ai["l2"], ai_l1_flop_per_byte=ai["l1"],
        flops_per_s=work.flops / seconds if seconds > 0 else None, bound=bound, roof_flops_per_s=roof,
        pct_of_roof=pct, bound_measured=bound_m, pct_of_measured_roof=pct_m, pct_of_roof_by_level=by_level,
        ridge_dram_flop_per_byte=ridge["dram"], ridge_l2_flop_per_byte=ridge["l2"],
        ridge_l1_flop_per_byte=ridge["l1"], clocks_hz=clocks,
        ai_l1_valid=tma == 0,
    )


def variant_order(run: RunInput) -> list[str]:
    """The run's variants: run.json's order first, then any others its kernel rows name."""
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
    for variant in variant_order(run):
        rows = k[k["variant"] == variant]
        nvtx = str(rows["nvtx_range"].iloc[0]) if "nvtx_range" in rows else variant
        analytic = analytic_for(run.info, variant)
        a_flops = analytic.get("flops") if analytic else None
        a_flops = float(a_flops) * iterations if a_flops is not None else None
        out.append(make_point(PointSource(run.run_id, nvtx, variant, analytic_flops=a_flops,
                                          use_analytic=flop_basis in ("auto", "analytic")),
                              totals_of(rows, by_prec), ceilings))
        ids = rows["launch_id"].tolist() if "launch_id" in rows else [None] * len(rows)
        for name, lid, totals in zip(rows["kernel"].astype(str), ids, launch_totals(rows, by_prec)):
            out.append(make_point(PointSource(run.run_id, nvtx, variant, name,
                                              int(lid) if lid is not None and lid == lid else None), totals, ceilings))
    return out
