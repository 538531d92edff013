"""Choosing NVTX ranges to show: by depth and by name, over every level of every thread.

`levels_of` gives any stored run's ranges as level rows: a run stored with `range_levels`
(every level per thread, children's work included; `parse.nsys.ranges.level_table`) as they
are; a run stored before it has only innermost ranges, shown with the depth their path implies
(its number of '/'-separated parts) and without a thread.
"""
from __future__ import annotations

import fnmatch

import numpy as np
import pandas as pd

GLOB_CHARS = set("*?[")
GRAPH_NODE_HINT = ("CUDA graphs were traced as whole graphs (nsys's default): each launch is counted with its GPU "
                   "time in the range of its cudaGraphLaunch; per-node kernel detail needs "
                   "`nsys profile --cuda-graph-trace=node`")


def levels_of(range_levels: pd.DataFrame, ranges: pd.DataFrame) -> pd.DataFrame:
    """A run's every-level rows, or its innermost ranges as such rows where it has none."""
    if not range_levels.empty:
        return range_levels
    if ranges.empty or "nvtx_range" not in ranges:
        return ranges
    out = ranges.copy()
    out.insert(0, "depth", out["nvtx_range"].astype(str).str.count("/") + 1)
    return out


def filter_levels(levels: pd.DataFrame, depth: int | None = None, max_depth: int | None = None,
                  name: str | None = None) -> pd.DataFrame:
    """Rows at `depth` (1: outermost), at most `max_depth` deep, and whose path matches `name`:
    a glob (`*`, `?`, `[...]`) matched against the whole path or the range's own name, else a
    substring of the path (case-sensitive, as NVTX names are)."""
    if levels.empty:
        return levels
    keep = pd.Series(True, index=levels.index)
    if depth is not None:
        keep &= levels["depth"] == depth
    if max_depth is not None:
        keep &= levels["depth"] <= max_depth
    if name:
        paths = levels["nvtx_range"].astype(str)
        own = levels["name"].astype(str) if "name" in levels else paths.str.rsplit("/", n=1).str[-1]
        if GLOB_CHARS & set(name):
            keep &= np.array([fnmatch.fnmatchcase(p, name) or fnmatch.fnmatchcase(o, name) for p, o in zip(paths, own)],
                          dtype=bool)
        else:
            keep &= paths.str.contains(name, regex=False)
    return levels.loc[keep].reset_index(drop=True)


def has_whole_graphs(levels: pd.DataFrame) -> bool:
    """Whether any range counted whole-graph launches (the per-node hint applies)."""
    return "graph_launch_count" in levels and bool((levels["graph_launch_count"].fillna(0) > 0).any())
