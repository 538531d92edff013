"""Hardware-counted FLOPs and bytes per kernel launch, from the tidy ncu columns.

An FMA is two FLOPs; a half-precision instruction works on a pair of values (HFMA2), so HFMA
counts four and HADD/HMUL two, as Nsight Compute's own roofline does. Tensor-core counters
(`sm__ops_path_tensor_*`) are already FLOP counts and include wgmma on Hopper.
"""
from __future__ import annotations

import pandas as pd

# (column, FLOPs per counted instruction) for each scalar precision
SCALAR_FLOP_WEIGHTS: dict[str, tuple[tuple[str, int], ...]] = {
    "fp64": (("inst_dadd", 1), ("inst_dmul", 1), ("inst_dfma", 2)),
    "fp32": (("inst_fadd", 1), ("inst_fmul", 1), ("inst_ffma", 2)),
    "fp16": (("inst_hadd", 2), ("inst_hmul", 2), ("inst_hfma", 4)),
}
TENSOR_PREFIX = "flops_tensor_"


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name].astype(float) if name in df else pd.Series(float("nan"), index=df.index)


def add_flops_and_bytes(kernels: pd.DataFrame) -> pd.DataFrame:
    """Add flops_fp64/fp32/fp16/tensor, flops_total, dram_bytes (read + write)."""
    df = kernels.copy()
    for prec, weights in SCALAR_FLOP_WEIGHTS.items():
        present = [c for c, _ in weights if c in df]
        df[f"flops_{prec}"] = (sum(_col(df, c).fillna(0) * w for c, w in weights)
                               if present else float("nan"))
    tensor_cols = [c for c in df if c.startswith(TENSOR_PREFIX)]
    df["flops_tensor"] = df[tensor_cols].astype(float).fillna(0).sum(axis=1) if tensor_cols else float("nan")
    parts = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor"]
    df["flops_total"] = df[parts].fillna(0).sum(axis=1).where(df[parts].notna().any(axis=1))
    if "dram_read_bytes" in df or "dram_write_bytes" in df:
        df["dram_bytes"] = _col(df, "dram_read_bytes").fillna(0) + _col(df, "dram_write_bytes").fillna(0)
    return df
