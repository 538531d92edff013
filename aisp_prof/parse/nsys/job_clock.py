"""The common clock of a multi-rank job's exports (`job`): shifting, and refining from NCCL.

`load_job` puts every rank on one clock with the session start times nsys recorded
(TARGET_INFO_SESSION_START_TIME.utcEpochNs: wall-clock ns since the epoch; every timestamp of an
export counts from it). That is right to the extent that (a) the hosts' clocks agree, which on
several nodes is NTP's or PTP's job and can be off by milliseconds, and (b) each nsys read its
clock at the moment its timeline starts; two processes read it at different moments, through
different code paths. On the 2x H100 fixture the session starts are 16 ms apart and alone already
align the ends of matching NCCL kernels within ~20 us, but nothing promises that elsewhere.

`refine_offsets` measures what is left from the data itself: the kernels of one NCCL collective
end at nearly the same moment on every rank (none can finish before the last byte from the
others arrived, and the ring's last step is short), whereas their starts differ by how late each
rank launched (up to the 13.9 ms rank 0 waited for rank 1 in the fixture). Per rank r, the k-th
NCCL kernel (short_name "nccl...") of each name, by start, is paired with the reference rank's
(the lowest) k-th of the same name; the median of (end on r - end on the reference) over the
pairs is r's residual clock offset, subtracted from all its times. Pairing per name rather than
by position keeps one extra or missing kernel of another collective from shifting every pair
after it. It assumes every rank runs the same collectives in one communicator (data parallel);
point-to-point pipelines pair the wrong kernels. Fewer than MIN_MATCHED pairs: skipped, residual NaN.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

# points in time on a rank's session clock (KERNEL_COLUMNS ... LEVEL_COLUMNS of nsys_sqlite and
# nsys_ranges): shifted onto the job's clock; durations (duration_ns, span_ns, gap_*_ns,
# range_wall_ns, *_time_ns) are not
TIME_COLUMNS = ("start_ns", "end_ns", "launch_start_ns", "first_start_ns", "last_end_ns")
FRAMES = ("kernels", "ranges", "memory_ops", "range_levels", "graph_launches")
NCCL_PREFIX = "nccl"
MIN_MATCHED = 3


@dataclass(frozen=True, eq=False)
class Job:
    """The frames of every rank, `rank` first and times on one clock. eq=False: DataFrames."""

    ranks: pd.DataFrame            # one row per rank, RANK_COLUMNS
    kernels: pd.DataFrame
    ranges: pd.DataFrame
    memory_ops: pd.DataFrame
    range_levels: pd.DataFrame
    graph_launches: pd.DataFrame
    hosts: list[str]               # distinct hostnames, sorted
    gpus: dict[int, dict[str, object]]   # rank -> NsysParse.gpu
    warnings: list[str] = field(default_factory=list)


def shift_times(frame: pd.DataFrame, offsets: dict[int, int]) -> pd.DataFrame:
    """Add its rank's offset (ns) to every TIME_COLUMNS column of a frame with a `rank` column."""
    out = frame.copy()
    by_rank = out["rank"].map(offsets).fillna(0).astype(np.int64)
    for column in TIME_COLUMNS:
        if column in out:
            out[column] = out[column] + by_rank
    return out


def nccl_ends(kernels: pd.DataFrame) -> pd.Series:
    """End (ns) of each NCCL kernel of one rank, indexed by (short_name, k: its place among the
    rank's kernels of that name, by start)."""
    nccl = kernels.loc[kernels["short_name"].str.startswith(NCCL_PREFIX).fillna(False).astype(bool)]
    nccl = nccl.sort_values(["start_ns", "end_ns"], kind="stable")
    k = nccl.groupby("short_name", sort=False).cumcount()
    return pd.Series(nccl["end_ns"].to_numpy(dtype=np.int64),
                     index=pd.MultiIndex.from_arrays([nccl["short_name"].astype(str).to_numpy(), k.to_numpy()]))


def collective_end_gaps(kernels: pd.DataFrame, rank: int, reference: int) -> pd.Series:
    """(end on `rank` - end on `reference`) in ns of every NCCL kernel pair, by (short_name, k)."""
    mine = nccl_ends(kernels.loc[kernels["rank"] == rank])
    theirs = nccl_ends(kernels.loc[kernels["rank"] == reference])
    mine, theirs = mine.align(theirs, join="inner")
    return mine - theirs


def refine_offsets(job: Job) -> Job:
    """A Job whose ranks' clocks are corrected by the median gap between the ends of their NCCL
    kernels and the reference rank's (see the module's doc). `ranks` gets clock_residual_ns (that
    median; 0 for the reference, by construction; NaN where fewer than MIN_MATCHED kernels pair) and
    matched_collectives (pairs used); clock_offset_ns becomes the total shift applied."""
    table = job.ranks.copy()
    reference = int(table["rank"].min())
    residuals, matched, shifts = {}, {}, {}
    for rank in table["rank"].astype(int):
        gaps = collective_end_gaps(job.kernels, rank, reference)
        matched[rank] = len(gaps)
        residuals[rank] = float(np.median(gaps)) if len(gaps) >= MIN_MATCHED else np.nan
        shifts[rank] = 0 if np.isnan(residuals[rank]) else -round(residuals[rank])
    table["clock_residual_ns"] = table["rank"].map(residuals).astype(float)
    table["matched_collectives"] = table["rank"].map(matched).astype("Int64")
    table["clock_offset_ns"] = table["clock_offset_ns"] + table["rank"].map(shifts).astype(np.int64)
    frames = {name: shift_times(getattr(job, name), shifts) for name in FRAMES}
    return dataclasses.replace(job, ranks=table, **frames)
