"""The `kernels` table of a run: ncu kernel rows (or nsys timeline rows) as one set of columns
with FLOPs, bytes and cluster shape added, and the records `aisp-prof kernels --json` writes.
Split from the API so that module stays a thin facade."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd

KERNEL_FIELDS = ("launch_id", "nvtx_range", "variant", "kernel", "duration_ns", "dram_bytes", "l2_bytes",
                 "l1_bytes", "grid_dim", "block_dim", "cluster_dim", "registers_per_thread",
                 "derived_from_rates")     # counts ncu gave only as rates or sectors (`parse.metrics.rate_counts`), else null
KERNEL_FLOPS = ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor", "flops_total")


def kernel_columns(rows: pd.DataFrame) -> pd.DataFrame:
    """ncu kernel rows or nsys timeline rows as `kernels()` columns, FLOPs and bytes added."""
    from .flops import add_flops_and_bytes
    from .launch_shape import cluster_dim

    if rows.empty:
        return pd.DataFrame(columns=[*KERNEL_FIELDS, *KERNEL_FLOPS])
    rows = add_flops_and_bytes(rows.rename(columns={"correlation_id": "launch_id", "grid": "grid_dim",
                                                     "block": "block_dim"}) if "launch_id" not in rows else rows)
    rows["cluster_dim"] = cluster_dim(rows)
    return rows.reindex(columns=[*KERNEL_FIELDS, *KERNEL_FLOPS]).reset_index(drop=True)


# the fields of a `kernel_records` record, in order: (key, column) or (key, [(key, column), ...])
KERNEL_RECORD_LAYOUT = ([(f, f) for f in KERNEL_FIELDS]
                        + [("flops", [(p, f"flops_{p}") for p in ("fp64", "fp32", "fp16", "tensor")]),
                           ("flops_total", "flops_total")])


def kernel_sources(stored: list[str]) -> list[str]:
    """The stored columns `kernel_columns` reads, in table order: the fields (or the timeline's
    names for them) and the counters FLOPs and DRAM bytes are made of. The others (a timeline
    row has 24) would only be read to be dropped: two thirds of a 1M-kernel `kernels --json`."""
    from .flops import SCALAR_FLOP_WEIGHTS, TENSOR_PREFIX
    from .launch_shape import CLUSTER_DIM_COLUMNS

    wanted = {*KERNEL_FIELDS, *KERNEL_FLOPS, *CLUSTER_DIM_COLUMNS, "correlation_id", "grid", "block", "dram_read_bytes",
              "dram_write_bytes", *(c for weights in SCALAR_FLOP_WEIGHTS.values() for c, _ in weights)}
    return [c for c in stored if c in wanted or c.startswith(TENSOR_PREFIX)]


def kernel_records(frame: pd.DataFrame) -> Iterator[dict[str, Any]]:
    """`aisp-prof kernels --json` records: the fields, `flops` {fp64, fp32, fp16, tensor}, `flops_total`."""
    from ..records import frame_records

    for rec in frame_records(frame):
        out = {f: rec.get(f) for f in KERNEL_FIELDS}
        out["flops"] = {p: rec.get(f"flops_{p}") for p in ("fp64", "fp32", "fp16", "tensor")}
        out["flops_total"] = rec.get("flops_total")
        yield out
