"""One `ranges` row per variant's call, also where the variant's work sits in nested ranges.

The summary and the speedup read a variant's GPU time per call from `ranges` (one row per
innermost NVTX range): its rows' work summed, divided by their occurrences. That holds while a
variant's kernels launch straight inside aisp/<pair>/<variant>. When a library opens ranges of
its own inside it (NCCL's ncclAllReduce, ncclAlltoAll around each collective), the variant has
several rows: their occurrences add up to more than its calls (an all-to-all in 4 pieces occurs
4 times a call), and summing their busy times counts twice the time a collective overlaps a
kernel of the variant's own. The variant-level row of `range_levels` (children included, busy
time a union of intervals) has neither fault; for such variants it replaces their rows here.
Of a multi-rank run only rank 0's rows count (the rank whose CUDA events time the variants).
Ranges outside the pair's (NCCL's around the warm-up's collectives, which run before the timed
iterations open their ranges) are no variant: a pair's run drops them, and so does an imported job
(NCCL's domain, at the top of the range tree).
"""
from __future__ import annotations

import pandas as pd

from ...naming import NVTX_ROOT

LIBRARY_DOMAIN = "NCCL"           # a collective library's domain: its ranges are no variant of their own


def variant_ranges(ranges: pd.DataFrame, range_levels: pd.DataFrame, pair: str | None) -> pd.DataFrame:
    """`ranges`, with the rows of each variant that has nested ranges replaced by its own level row.
    Without `pair` (an imported export or job) every aisp/<pair>/<variant> range counts as one."""
    ranges, range_levels = _rank_zero(ranges), _rank_zero(range_levels)
    if ranges.empty or "variant" not in ranges:
        return ranges
    if pair:
        mine = ranges["nvtx_range"].astype(str).str.startswith(f"{NVTX_ROOT}/{pair}/")
        if mine.any():
            ranges = ranges[mine]
    elif "nvtx_domain" in ranges:        # NCCL's own ranges around collectives outside any range of the program
        library = (ranges["nvtx_domain"].astype(str) == LIBRARY_DOMAIN) & ~ranges["nvtx_range"].astype(str).str.contains("/")
        ranges = ranges[~library]
    if range_levels.empty:
        return ranges
    own = ranges["nvtx_range"].astype(str).map(_variant_path)       # None outside aisp/: not grouped
    distinct = ranges["nvtx_range"].groupby(own).nunique()
    nested = list(distinct[distinct > 1].index)
    if not nested:
        return ranges
    levels = range_levels[range_levels["nvtx_range"].isin(nested)]
    keep = ranges[~own.isin(list(levels["nvtx_range"]))]
    columns = [c for c in ranges.columns if c in levels.columns]
    order = {v: i for i, v in enumerate(ranges["variant"].drop_duplicates())}      # the variants' own order
    return (pd.concat([keep, levels[columns]], ignore_index=True)
            .sort_values("variant", key=lambda v: v.map(order), kind="stable", ignore_index=True))


def _variant_path(nvtx_range: str) -> str | None:
    """'aisp/<pair>/<variant>' of a range of the tool's or one nested in it; None for others."""
    parts = nvtx_range.split("/")
    return "/".join(parts[:3]) if len(parts) >= 3 and parts[0] == NVTX_ROOT else None


def _rank_zero(frame: pd.DataFrame) -> pd.DataFrame:
    """Rank 0's rows; a one-process run's rows have no rank (NULL where a database's table gained
    the column from another run)."""
    if "rank" not in frame or frame.empty:
        return frame
    return frame[frame["rank"].isna() | (frame["rank"] == 0)]
