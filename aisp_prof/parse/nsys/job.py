"""The nsys exports of the ranks of ONE multi-rank job, as one set of frames on one clock.

A torchrun (Slurm, mpirun) job whose every rank ran under `nsys profile` leaves one export per
rank, each timed from its own session start. `load_job` reads who each export is
(`rank_identity`), refuses what is not one job before parsing anything, parses every export
(`parse_nsys_sqlite`) and returns their frames together: an int `rank` column first, and every
point in time (TIME_COLUMNS; durations stay as they are) moved onto one clock whose 0 is the
session start of the rank that started first. `refine_offsets` (nsys_job_clock) then corrects
that clock from the NCCL collectives themselves.

Who is who comes from the environment nsys recorded for the process it launched
(TARGET_INFO_SYSTEM_ENV, row DeviceEnvironment): under `torchrun ... nsys profile python ...` each
nsys inherits its rank's RANK, WORLD_SIZE, LOCAL_RANK, TORCHELASTIC_RUN_ID. (`nsys profile torchrun`
is the other way round: one export holding every process, a single import, not a job.) The global
rank names the process; (hostname, local_rank) names the GPU, so exports of several nodes merge on
the rank and two exports claiming one rank are refused whatever their hosts. Exports that name
no rank take their place in the list given; one naming its rank beside one naming none is
refused (not one job launched one way), never numbered silently.
"""
from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from aisp_prof.errors import ExportParseError
from aisp_prof.parse.gunzip import gunzipped
from aisp_prof.parse.nsys.tables import table_names
from aisp_prof.parse.nsys.job_clock import FRAMES, TIME_COLUMNS, Job, refine_offsets, shift_times
from aisp_prof.parse.nsys.sqlite_export import REEXPORT_HINT, check_file, connect, parse_nsys_sqlite

__all__ = ["FRAMES", "RANK_COLUMNS", "TIME_COLUMNS", "Job", "RankIdentity", "load_job", "parse_environment",
           "rank_identity", "refine_offsets"]

# launcher -> the environment names of (rank, world size, local rank); the first launcher whose
# rank is set is used, all three names from it (torchrun under srun sets SLURM_NTASKS = nodes)
LAUNCHERS = (
    ("RANK", "WORLD_SIZE", "LOCAL_RANK"),                                          # torchrun
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),                             # srun
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),  # Open MPI
)
JOB_ID_NAMES = ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID")
# the node name `aisp-prof run --nnodes` gives each agent's ranks (collect.ranks.launch): on one host
# the agents standing in for nodes share a hostname, so a rank's host is this name where it is set
NODE_NAME = "AISP_NODE_NAME"
_NO_JOB_ID = {"", "none"}        # torchrun's default --rdzv-id is "none" for every job: no evidence
ORDER_GIVEN = "order given"
CALLER_GIVEN = "given by the caller"
FAR_APART_NS = 60 * 10**9        # session starts further apart than this: are the hosts' clocks in sync?

RANK_COLUMNS = ("rank", "local_rank", "world_size", "job_id", "hostname", "session_start_utc_ns",
                "rank_source", "path", "clock_offset_ns", "clock_residual_ns", "matched_collectives")


@dataclass(frozen=True)
class RankIdentity:
    """Which process of which job one export is. None where the export does not say."""

    path: Path
    rank: int | None
    local_rank: int | None
    world_size: int | None
    job_id: str | None            # TORCHELASTIC_RUN_ID, else SLURM_JOB_ID
    hostname: str | None
    session_start_utc_ns: int | None   # every timestamp of the export counts from here
    rank_source: str | None       # "environment: RANK", ORDER_GIVEN, CALLER_GIVEN


def parse_environment(text: str | None) -> dict[str, str]:
    """nsys's `KEY=VALUE;KEY=VALUE` list as a dict. A value may hold '=' (split at the first);
    a piece without '=' is the rest of the previous value, which held a ';'."""
    env: dict[str, str] = {}
    last = None
    for piece in (text or "").split(";"):
        key, eq, value = piece.partition("=")
        if eq and key:
            last = key if key not in env else None
            env.setdefault(key, value)
        elif last is not None and piece:
            env[last] += ";" + piece
    return env


def rank_identity(path: str | Path) -> RankIdentity:
    """Rank, world size, job id, host and session start of one export (checked as
    `parse_nsys_sqlite` checks it, so a bad file fails with the same message)."""
    path = Path(path)
    with gunzipped(path, REEXPORT_HINT) as plain:
        check_file(plain)
        conn = connect(plain)
        try:
            props, start = _read_target(conn)
        except sqlite3.DatabaseError as exc:
            raise ExportParseError(f"{plain}: unreadable SQLite export ({exc}); "
                                   "re-run `nsys export --type sqlite` on the .nsys-rep") from exc
        finally:
            conn.close()
    env = parse_environment(props.get("DeviceEnvironment"))
    names = next((n for n in LAUNCHERS if _int(env.get(n[0])) is not None), None)
    job_id = next((env[n] for n in JOB_ID_NAMES if env.get(n, "").strip().lower() not in _NO_JOB_ID), None)
    return RankIdentity(
        path=path, rank=_int(env.get(names[0])) if names else None,
        world_size=_int(env.get(names[1])) if names else None, local_rank=_int(env.get(names[2])) if names else None,
        job_id=job_id, hostname=env.get(NODE_NAME) or props.get("Hostname") or None, session_start_utc_ns=start,
        rank_source=f"environment: {names[0]}" if names else None)


def _read_target(conn: sqlite3.Connection) -> tuple[dict[str, str], int | None]:
    tables = table_names(conn)
    props: dict[str, str] = {}
    if "TARGET_INFO_SYSTEM_ENV" in tables:
        for name, value in conn.execute("SELECT name, value FROM TARGET_INFO_SYSTEM_ENV "
                                        "WHERE name IN ('DeviceEnvironment', 'Hostname') ORDER BY rowid"):
            if value and name not in props:
                props[name] = value
    row = None
    if "TARGET_INFO_SESSION_START_TIME" in tables:
        row = conn.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
    return props, (int(row[0]) if row and row[0] is not None else None)


def _int(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isascii() and text.isdigit() else None


def load_job(paths: Sequence[str | Path], ranks: Sequence[int] | None = None) -> Job:
    """The exports of every rank of one job, as one Job. `ranks` forces the rank of each path
    (same order); otherwise it comes from each export's environment, or failing that from its
    place in `paths`. Raises ExportParseError, before parsing, for what is not one whole job."""
    paths = [Path(p) for p in paths]
    if len(paths) < 2:
        raise ExportParseError(f"a job needs the exports of 2 or more ranks, got {len(paths)}; "
                               "import a single export without --job")
    identities = _numbered([rank_identity(p) for p in paths], ranks)
    _check_one_job(identities)
    identities.sort(key=lambda i: i.rank)
    earliest = min(i.session_start_utc_ns for i in identities)
    offsets = {i.rank: i.session_start_utc_ns - earliest for i in identities}
    parsed = {i.rank: parse_nsys_sqlite(i.path) for i in identities}
    frames = {name: shift_times(pd.concat([_ranked(getattr(p, name), r) for r, p in parsed.items()],
                                          ignore_index=True), offsets) for name in FRAMES}
    table = pd.DataFrame([dataclasses.asdict(i) for i in identities]).assign(
        path=lambda t: t["path"].astype(str), clock_offset_ns=[offsets[i.rank] for i in identities],
        clock_residual_ns=np.nan, matched_collectives=pd.NA)
    table = table.astype({"local_rank": "Int64", "world_size": "Int64", "matched_collectives": "Int64"})
    return Job(ranks=table.loc[:, list(RANK_COLUMNS)], **frames,
               hosts=sorted({i.hostname for i in identities if i.hostname}),
               gpus={r: p.gpu for r, p in parsed.items()}, warnings=_clock_warnings(identities))


def _numbered(identities: list[RankIdentity], ranks: Sequence[int] | None) -> list[RankIdentity]:
    """Every identity with a rank: forced by `ranks`, else its own, else its place in the list."""
    if ranks is not None:
        if len(ranks) != len(identities) or any(int(r) < 0 for r in ranks):
            raise ExportParseError(f"ranks {list(ranks)} for {len(identities)} exports: give one rank number "
                                   "(0 or more) per export, in the order of the exports")
        return [dataclasses.replace(i, rank=int(r), rank_source=CALLER_GIVEN) for i, r in zip(identities, ranks)]
    ranked = [i for i in identities if i.rank is not None]
    if ranked and len(ranked) < len(identities):      # some launched by torchrun (or Slurm, MPI), some not
        bare = next(i for i in identities if i.rank is None)
        raise ExportParseError(f"{ranked[0].path.name} has rank {ranked[0].rank} from its environment "
                               f"({ranked[0].rank_source.split(': ')[-1]}) but {bare.path.name} names no rank: "
                               "not the exports of one job's ranks; import the exports of one job together")
    return [i if i.rank is not None else dataclasses.replace(i, rank=n, rank_source=ORDER_GIVEN)
            for n, i in enumerate(identities)]


def _check_one_job(identities: list[RankIdentity]) -> None:
    """One line that says what is wrong and what to do, for exports that are not one whole job."""
    def named(i: RankIdentity) -> str:
        notes = ([f"host {i.hostname}"] if i.hostname else []) + (
            [f"rank from the {i.rank_source}"] if i.rank_source == ORDER_GIVEN else [])
        return f"{i.path.name} ({', '.join(notes)})" if notes else i.path.name

    for attr, what in (("job_id", "job"), ("world_size", "WORLD_SIZE")):
        known = [i for i in identities if getattr(i, attr) is not None]
        other = next((i for i in known if getattr(i, attr) != getattr(known[0], attr)), None)
        if other is not None:
            a, b = known[0], other
            raise ExportParseError(
                f"{a.path.name} ({what} {getattr(a, attr)}) and {b.path.name} ({what} {getattr(b, attr)}) are "
                "exports of different jobs; import the exports of one job's ranks together")
    seen: dict[int, RankIdentity] = {}
    for i in identities:
        if i.rank in seen:
            raise ExportParseError(f"rank {i.rank} twice: {named(seen[i.rank])} and {named(i)}; "
                                   "give each rank's export once")
        seen[i.rank] = i
    world = next((i.world_size for i in identities if i.world_size is not None), None)
    if world is not None and set(seen) != set(range(world)):
        missing, extra = sorted(set(range(world)) - set(seen)), sorted(set(seen) - set(range(world)))
        parts = ([f"{_listed(missing)} missing"] if missing else []) + (
            [f"{_listed(extra)} not in 0..{world - 1}"] if extra else [])
        raise ExportParseError(f"the job has WORLD_SIZE {world} but the exports are {_listed(sorted(seen))} "
                               f"({'; '.join(parts)}); "
                               "give the export of every rank of the job, once")
    for i in identities:
        if i.session_start_utc_ns is None:
            raise ExportParseError(f"{i.path}: no session start time (TARGET_INFO_SESSION_START_TIME), so its "
                                   "timeline cannot be put on the job's clock; export it again with a recent nsys")


def _listed(ranks: list[int]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def _clock_warnings(identities: list[RankIdentity]) -> list[str]:
    first = min(identities, key=lambda i: i.session_start_utc_ns)
    return [f"rank {i.rank} started its profile {(i.session_start_utc_ns - first.session_start_utc_ns) / 1e9:.1f} s "
            f"after rank {first.rank}; the timelines are aligned on session start times, which is only right "
            "if the hosts' clocks agree (NTP)"
            for i in identities if i.session_start_utc_ns - first.session_start_utc_ns > FAR_APART_NS]


def _ranked(frame: pd.DataFrame, rank: int) -> pd.DataFrame:
    return frame.copy().assign(rank=np.int64(rank)).loc[:, ["rank", *frame.columns]]

