"""A launch's thread-block cluster shape as one column, from ncu's launch__cluster_dim_x/y/z.

The kernel tables show grid and block as "(x, y, z)" strings (ncu's own format); the cluster
shape belongs beside them, or a 4-CTA cluster kernel looks the same as a plain one there. ncu
reports 0 for each cluster dimension of a launch without clusters: that reads as no cluster
(None), not "(0, 0, 0)". nsys exports carry no cluster shape, so their rows stay None.
"""
from __future__ import annotations

import pandas as pd

CLUSTER_DIM_COLUMNS = ("cluster_dim_x", "cluster_dim_y", "cluster_dim_z")


def cluster_dim(frame: pd.DataFrame) -> pd.Series:
    """Per row "(x, y, z)" where ncu measured a cluster launch, else None."""
    out = pd.Series([None] * len(frame), index=frame.index, dtype=object)
    if frame.empty or not all(c in frame for c in CLUSTER_DIM_COLUMNS):
        return out
    dims = frame[list(CLUSTER_DIM_COLUMNS)].apply(pd.to_numeric, errors="coerce")
    clustered = dims.notna().all(axis=1) & (dims > 0).any(axis=1)
    if clustered.any():
        d = dims[clustered].astype("int64").astype(str)
        out[clustered] = "(" + d["cluster_dim_x"] + ", " + d["cluster_dim_y"] + ", " + d["cluster_dim_z"] + ")"
    return out
