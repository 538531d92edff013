"""Roofline ceilings of one device, two kinds side by side.

Theoretical: the peak rates Nsight Compute reports in the profile itself (`*.peak_sustained`,
per cycle) times the clock the kernels ran at (`*__cycles_elapsed.avg.per_second`), as ncu's
own roofline charts do. Measured: what `aisp-prof calibrate` timed on a card of the same
hardware key (a device copy, an L2-resident stream, an FP32 FMA loop, GEMMs per precision).

Rules that are easy to get wrong, and what this module does:

* An FMA is two FLOPs; HFMA2 works on a pair of halves, so a half-precision FMA instruction is
  four FLOPs (the same weights `analyze.kernels.flops` counts achieved work with).
* Tensor-core peaks: on Hopper (sm_90), `sm__ops_path_tensor_src_{fp16,bf16,tf32,fp8,int8}
  .sum.peak_sustained` is the 2:4 structured-sparsity rate, twice the dense rate (H200:
  1,081,344 bf16 FLOP/cycle = 2,141 TFLOP/s at 1.98 GHz, while the datasheet's dense bf16 is
  ~990 TFLOP/s and a cuBLAS 8192^3 GEMM measures ~790). Dense kernels are bounded by half of it,
  so those five are halved (`SPARSE_REPORTED`); fp64 (DMMA) has no sparse mode and is taken
  as reported. Checked on the GPU against the `_sparsity_off` peaks (one H200 capture of both,
  tests/fixtures/h200/roofline_sections_raw_base.csv; tests/unit/test_roofline.py) and measured GEMMs
  (profiles/calibration/). A profile that carries dense peaks itself
  (`peak_tensor_<p>_dense_flop_per_cycle`) is used as is.
* 2:4-sparse roofs: each of those five also gets `tensor_<p>_sparse` (`SPARSE_PRECISIONS`), the
  reported peak as is, for kernels that run sparse MMAs (the roofline picks them by kernel name).
  ncu counts a sparse MMA's work dense-equivalent (2mnk; the ch09 structured_sparsity samples
  count exactly the formula), the unit its sparse peak is in. No calibration probe times a sparse
  GEMM, so the measured sparse roof is 2 x the measured dense one, and its note says so.
* Clocks: a device ceiling uses the duration-weighted mean clock of the profiled kernels
  (total cycles over total time); a point is compared with the roof at its own clocks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import pandas as pd

# the precision keys (naming.py, so the CLI lists them without pandas); SPARSE_REPORTED: tensor
# precisions whose ncu peak_sustained is the 2:4-sparse rate (verified on sm_90), each with a
# 2:4-sparse roof "tensor_bf16" -> "tensor_bf16_sparse"
from ...naming import (PRECISIONS, SCALAR_PRECISIONS, SPARSE_PRECISIONS, SPARSE_REPORTED, SPARSE_SUFFIX,
                       TENSOR_PRECISIONS, hardware_key)
from ...values import finite_float

LEVELS = ("dram", "l2", "l1")
SPARSE_FACTOR = 2.0

# clock domain -> tidy column holding the kernel's measured clock (Hz)
CLOCK_COLUMNS = {"sm": "sm_clock_hz", "dram": "dram_clock_hz", "l2": "l2_clock_hz"}

# What each level's theoretical peak means. The byte counters aisp-prof collects (lts__t_bytes,
# l1tex__t_bytes) have tag-stage peaks that loads cannot reach; ncu's own hierarchical charts use
# other counters (an H200 capture with ncu's roofline sections: tests/fixtures/h200/
# roofline_sections_raw_base.csv; the streams: profiles/calibration/h200.json). The measured ceiling
# is the one to believe at L1 and L2.
LEVEL_NOTES = {
    "l2": "lts__t_bytes peak (9,024 B/cycle on an H200); ncu's hierarchical chart uses lts2xbar "
          "(6,016 B/cycle); an L2-resident read stream reaches ~4,950 B/cycle",
    "l1": "l1tex__t_bytes peak (512 B/cycle/SM at the tag stage); global loads return at most 128 "
          "B/cycle/SM (ncu's hierarchical chart: LSU writeback x 128); an L1-resident stream reaches ~87 B/cycle/SM "
          "(22.8 TB/s over 132 SMs at 1.98 GHz: profiles/calibration/h200.json)",
}

# level -> (peak bytes/cycle column, clock domain); L1 runs at the SM clock
BANDWIDTH_PEAKS = {
    "dram": ("peak_dram_bytes_per_cycle", "dram"),
    "l2": ("peak_l2_bytes_per_cycle", "l2"),
    "l1": ("peak_l1_bytes_per_cycle", "sm"),
}

# precision -> (peak column, FLOPs per counted unit); all at the SM clock
COMPUTE_PEAKS = {
    "fp64": ("peak_dfma_per_cycle", 2.0),
    "fp32": ("peak_ffma_per_cycle", 2.0),
    "fp16": ("peak_hfma_per_cycle", 4.0),
    **{f"tensor_{p}": (f"peak_tensor_{p}_flop_per_cycle", 1.0)
       for p in ("fp16", "bf16", "tf32", "fp8", "int8", "fp64")},
}

MEASURED_BANDWIDTH_KEYS = {"dram": "dram_bytes_per_s", "l2": "l2_bytes_per_s", "l1": "l1_bytes_per_s"}


def dense_precision(precision: str) -> str:
    """'tensor_bf16_sparse' -> 'tensor_bf16'; any other key unchanged."""
    return precision.removesuffix(SPARSE_SUFFIX)


def precision_label(precision: str) -> str:
    """The key as reports print it: 'tensor_bf16_sparse' -> 'tensor_bf16 2:4 sparse', so a sparse
    roof is never mistaken for the dense one of the same precision."""
    if precision in SPARSE_PRECISIONS:
        return f"{dense_precision(precision)} 2:4 sparse"
    return precision


@dataclass(frozen=True)
class Ceiling:
    """One roof: a bandwidth (byte/s) at a memory level or a compute rate (FLOP/s) of a precision.

    Rates are per cycle or per second of bytes (bandwidth) or FLOPs (compute): `unit` says which.
    """

    key: str                        # "dram" | "l2" | "l1" | "fp32" | "tensor_bf16" | ...
    kind: str                       # "bandwidth" | "compute"
    per_cycle: float | None         # theoretical peak per cycle (tensor_<p>: dense; tensor_<p>_sparse: 2:4)
    clock: str                      # clock domain: "sm" | "dram" | "l2"
    clock_hz: float | None          # the clock `theoretical_per_s` is computed at
    measured_per_s: float | None = None   # from calibration, at whatever clock the card ran then
    source_column: str = ""
    note: str = ""
    measured_derived: bool = False  # `measured_per_s` computed from another ceiling, not timed (2:4-sparse roofs)

    @property
    def unit(self) -> str:
        return "byte/s" if self.kind == "bandwidth" else "flop/s"

    @property
    def theoretical_per_s(self) -> float | None:
        """The peak per second at `clock_hz`."""
        return self.at(self.clock_hz)

    def at(self, clock_hz: float | None) -> float | None:
        """The theoretical roof at a given clock of this ceiling's domain."""
        if self.per_cycle is None or clock_hz is None or not math.isfinite(clock_hz):
            return None
        return self.per_cycle * clock_hz

    def at_clocks(self, clocks: Mapping[str, float | None]) -> float | None:
        return self.at(clocks.get(self.clock) or self.clock_hz)

    def to_dict(self) -> dict[str, Any]:
        return {"theoretical_per_s": self.theoretical_per_s, "measured_per_s": self.measured_per_s,
                "per_cycle": self.per_cycle,
                "clock": self.clock, "clock_hz": self.clock_hz, "source": self.source_column,
                **({"note": self.note} if self.note else {}),
                **({"measured_derived": True} if self.measured_derived else {})}


@dataclass
class Ceilings:
    """Every roof of one device: `bandwidth` by level, `compute` by precision."""

    hardware_key: str
    gpu_name: str | None
    clocks_hz: dict[str, float | None]
    bandwidth: dict[str, Ceiling]
    compute: dict[str, Ceiling]
    measured_source: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def value(self, key: str, which: str = "theoretical") -> float | None:
        """The theoretical or measured rate per second of a level (byte/s) or precision (FLOP/s)."""
        c = self.bandwidth.get(key) or self.compute.get(key)
        if c is None:
            return None
        return c.theoretical_per_s if which == "theoretical" else c.measured_per_s

    def ridge(self, precision: str, level: str, which: str = "theoretical") -> float | None:
        """FLOP/byte where the compute roof of `precision` meets the bandwidth roof of `level`."""
        flops, bw = self.value(precision, which), self.value(level, which)
        if not flops or not bw:
            return None
        return flops / bw

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"hardware_key": self.hardware_key, "gpu_name": self.gpu_name,
                               "clocks_hz": dict(self.clocks_hz)}
        for level, key in MEASURED_BANDWIDTH_KEYS.items():
            c = self.bandwidth.get(level)
            out[key] = c.to_dict() if c else {"theoretical_per_s": None, "measured_per_s": None}
        out["flops_per_s"] = {p: c.to_dict() for p, c in self.compute.items()}
        out["ridge_flop_per_byte"] = {
            which: {level: {p: self.ridge(p, level, which) for p in self.compute} for level in LEVELS}
            for which in ("theoretical", "measured")}
        out["measured_source"] = self.measured_source
        out["notes"] = list(self.notes)
        return out


def weighted_clocks(kernels: pd.DataFrame) -> dict[str, float | None]:
    """Duration-weighted mean clock per domain: total cycles over total time."""
    out: dict[str, float | None] = {}
    if kernels.empty or "duration_ns" not in kernels:
        return {d: None for d in CLOCK_COLUMNS}
    dur = kernels["duration_ns"].astype(float)
    for domain, col in CLOCK_COLUMNS.items():
        if col not in kernels:
            out[domain] = None
            continue
        clk = kernels[col].astype(float)
        ok = clk.notna() & dur.notna() & (dur > 0)
        out[domain] = float((clk[ok] * dur[ok]).sum() / dur[ok].sum()) if ok.any() else None
    return out


def _peak(kernels: pd.DataFrame, column: str) -> tuple[float | None, str]:
    if column not in kernels:
        return None, ""
    values = kernels[column].dropna().astype(float)
    if values.empty:
        return None, ""
    if values.nunique() > 1:
        return float(values.median()), f"{column} varies between kernels; median used"
    return float(values.iloc[0]), ""


def theoretical_ceilings(kernels: pd.DataFrame, gpu_name: str | None = None,
                         key: str | None = None) -> Ceilings:
    """Ceilings from the peak columns of profiled kernels (one device) at their weighted clocks."""
    clocks = weighted_clocks(kernels)
    notes: list[str] = []
    bandwidth = {}
    for level, (col, domain) in BANDWIDTH_PEAKS.items():
        per_cycle, note = _peak(kernels, col)
        notes += [note] if note else []
        bandwidth[level] = Ceiling(level, "bandwidth", per_cycle, domain, clocks.get(domain), source_column=col,
                                   note=LEVEL_NOTES.get(level, ""))
    compute = {}
    sparse_halved = []
    for prec, (col, flops_per_unit) in COMPUTE_PEAKS.items():
        dense_col = col.replace("_flop_per_cycle", "_dense_flop_per_cycle")
        per_cycle, note = _peak(kernels, dense_col)
        used, cnote = dense_col, ""
        if per_cycle is None:
            per_cycle, note = _peak(kernels, col)
            used = col
            if per_cycle is not None and prec in SPARSE_REPORTED:
                per_cycle /= SPARSE_FACTOR
                sparse_halved.append(prec)
                cnote = "ncu's peak_sustained is the 2:4-sparse rate; dense = half"
        notes += [note] if note else []
        if per_cycle is None:
            continue
        compute[prec] = Ceiling(prec, "compute", per_cycle * flops_per_unit, "sm", clocks.get("sm"),
                                source_column=used, note=cnote)
        if prec in SPARSE_REPORTED:
            sparse = prec + SPARSE_SUFFIX
            snote = ("2:4-sparse rate: ncu's peak_sustained as reported, for dense-equivalent FLOPs (2mnk)"
                     if used == col else "2:4-sparse rate: 2 x the profile's dense peak (derived)")
            compute[sparse] = Ceiling(sparse, "compute", per_cycle * SPARSE_FACTOR * flops_per_unit, "sm",
                                      clocks.get("sm"), source_column=used, note=snote)
    if sparse_halved:
        notes.append("tensor peaks " + ", ".join(sparse_halved) + ": ncu reports the 2:4-sparse rate "
                     "(sm__ops_path_tensor_src_*.sum.peak_sustained); dense ceilings use half of it, "
                     "2:4-sparse kernels the full rate (tensor_<p>_sparse)")
    return Ceilings(key or hardware_key(gpu_name), gpu_name, clocks, bandwidth, compute, None, notes)


def with_measured(ceilings: Ceilings, calibration: Mapping[str, Any] | None, source: str) -> Ceilings:
    """The same ceilings with `measured_per_s` filled in from a calibration record (see aisp_prof.calibrate)."""
    if not calibration:
        return ceilings
    measured = calibration.get("ceilings", {})
    bandwidth = {lv: replace(c, measured_per_s=_num(measured.get(MEASURED_BANDWIDTH_KEYS[lv])))
                 for lv, c in ceilings.bandwidth.items()}
    flops = measured.get("flops_per_s", {}) or {}
    compute = {p: replace(c, measured_per_s=_num(flops.get(p))) for p, c in ceilings.compute.items()}
    for p, v in flops.items():   # measured precisions the profile has no peak for
        if p not in compute and _num(v) is not None:
            compute[p] = Ceiling(p, "compute", None, "sm", None, measured_per_s=_num(v))
    for p in SPARSE_PRECISIONS:  # no sparse GEMM is timed: 2 x the dense one, labelled as derived
        sparse, dense = compute.get(p), compute.get(dense_precision(p))
        if sparse is not None and sparse.measured_per_s is None and dense is not None and dense.measured_per_s:
            compute[p] = replace(sparse, measured_per_s=SPARSE_FACTOR * dense.measured_per_s, measured_derived=True,
                                 note=f"{sparse.note}; measured = 2 x the calibrated dense {dense.key} GEMM "
                                      "(derived, not timed)")
    src = {"source": source, "hardware_key": calibration.get("hardware_key"),
           "gpu_name": calibration.get("gpu_name"), "created_at": calibration.get("created_at")}
    return replace(ceilings, bandwidth=bandwidth, compute=compute, measured_source=src)


def _num(v: Any) -> float | None:
    """A measured rate: a number, or a {"value": ...} record of one."""
    return finite_float(v.get("value") if isinstance(v, Mapping) else v)
