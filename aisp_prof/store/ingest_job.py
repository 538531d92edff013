"""The ranks of one multi-rank job into one run: each rank's nsys export, one clock, a `rank` column.

A run of a pair with world_size > 1 (`aisp-prof run`, torchrun) holds one nsys export per rank
(`nsys.sqlite` for rank 0, `nsys.rank<r>.sqlite` for the others: `naming.rank_path`) and ncu's of
the one rank it watched; `aisp-prof import --job NAME` takes the exports anyone made of a job's
ranks. Both become one RunData whose timeline, ranges, range_levels, memory_ops and
graph_launches carry the rank of each row, on one clock (`parse.nsys.job`: session start
times, refined on NCCL kernel ends), and whose `ranks` table says which export was which rank,
on which host, with what clock correction. Mixed jobs, missing or repeated ranks are refused
by the parser before anything is stored.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from ..naming import NSYS_SQLITE, new_run_id, rank_path, stored, utc_now
from ..model.run_data import RunData

Tagger = Callable[[pd.DataFrame, "str | None"], pd.DataFrame]     # ingest._with_variant


def run_dir_exports(run_dir: Path, world_size: int) -> list[Path]:
    """The nsys exports of a multi-rank run folder, rank order, each plain or gzipped (`.sqlite.gz`)."""
    plain = [rank_path(run_dir / NSYS_SQLITE, r) for r in range(world_size)]
    return [stored(p) or p for p in plain]


def fill_from_job(paths: Sequence[Path], pair: str | None, data: RunData, with_variant: Tagger) -> dict[str, Any]:
    """Fill data's nsys frames and `ranks` from the exports of one job's ranks; return what
    run.json should add: rank 0's GPU, the hosts, the parser's warnings."""
    from ..parse.nsys.job import load_job, refine_offsets

    job = refine_offsets(load_job(paths))
    data.timeline = with_variant(job.kernels, pair)
    data.memory_ops = with_variant(job.memory_ops, pair)
    data.ranges = with_variant(job.ranges, pair)
    data.range_levels = with_variant(job.range_levels, pair)
    data.graph_launches = job.graph_launches
    data.ranks = job.ranks.assign(path=job.ranks["path"].astype(str))
    return {"gpu": dict(job.gpus.get(0) or next(iter(job.gpus.values()), {})), "hosts": job.hosts,
            "warnings": list(job.warnings), "world_size": len(job.ranks)}


def declared_collectives(paths: Sequence[Path], world_size: int) -> dict[str, Any]:
    """The message sizes of a job's collectives where its exports lie in the node folders of one `aisp-prof
    run --nnodes` (RUN/node<i>/...): RUN/run.json declares them (analytic.collective_bytes, for the same rank
    count), and the job's `ranks` then reads bus bandwidth and wire bytes as the run's does. {} for anyone
    else's exports: nsys exports no NCCL payload, so their sizes are unknown."""
    runs = {p.resolve().parent.parent for p in paths}
    if len(runs) != 1 or not all(p.resolve().parent.name.startswith("node") for p in paths):
        return {}
    path = next(iter(runs)) / "run.json"
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    sizes = (info.get("analytic") or {}).get("collective_bytes") if isinstance(info, dict) else None
    if not isinstance(sizes, dict) or not sizes or str(info.get("world_size")) != str(world_size):
        return {}
    return {"analytic": {"collective_bytes": sizes}, "collective_bytes_from": str(path)}


def check_job_exports(paths: Sequence[Path]) -> None:
    """ExportParseError unless every path is named as an nsys SQLite export (plain or gzipped): asked before
    the content is looked up, so an ncu CSV stored before is refused too, not "already in" the database."""
    from ..errors import ExportParseError

    bad = [p for p in paths if not p.name.lower().endswith((".sqlite", ".db", ".sqlite.gz", ".db.gz"))]
    if bad:
        raise ExportParseError(f"{bad[0]}: --job takes nsys SQLite exports (one per rank); export a .nsys-rep "
                               "with `nsys export --type sqlite` first")


def load_job_exports(paths: Sequence[Path], job: str, label: str | None,
                     with_variant: Tagger, run_row: Callable[..., dict[str, Any]]) -> RunData:
    """`aisp-prof import --job NAME PATHS...`: the nsys SQLite exports of one job's ranks as one run."""
    check_job_exports(paths)
    data = RunData(run={})
    extra = fill_from_job(paths, None, data, with_variant)
    info: dict[str, Any] = {
        "run_id": new_run_id(f"job-{job}"), "pair": None, "label": label or job, "job": job,
        "status": "imported", "created_at": utc_now(),
        "imported_from": [str(p.resolve()) for p in paths], **extra, **declared_collectives(paths, extra["world_size"]),
    }
    data.run = run_row(info, "import", None)
    return data
