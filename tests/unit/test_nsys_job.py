"""Issue 15: the per-rank nsys exports of one torchrun job as one set of frames on one clock
(`aisp_prof.parse.nsys.job`), and the refusal of what is not one job.

Fixtures: tests/fixtures/multigpu_h100x2 (2x H100, ch14.quantized_allreduce, 5 iterations of 4
variants; its README has the command). Facts read off them with sqlite3 and stated here: both ranks
ran on host `vm` under TORCHELASTIC_RUN_ID e00126e3-...; rank 1's session started 15,994,359 ns after
rank 0's; each rank ran 104 NCCL kernels, the same names in the same order; rank 0's first
all-reduce started 13.9 ms before rank 1's (it waited for rank 1 to open its capture).
Bad inputs are COPIES of these real exports with one field changed or removed with sqlite3.
"""
from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from repo_paths import FIXTURES

from aisp_prof.errors import ExportParseError
from aisp_prof.parse.nsys.job import (FRAMES, RANK_COLUMNS, TIME_COLUMNS, load_job, parse_environment, rank_identity,
                                      refine_offsets)
from aisp_prof.parse.nsys.job_clock import MIN_MATCHED, collective_end_gaps
from aisp_prof.parse.nsys.sqlite_export import parse_nsys_sqlite
from export_copies import edited_copy
from sample_files import plain_path

FIXTURE = FIXTURES / "multigpu_h100x2"
# kept gzipped (nsys.rank<r>.sqlite.gz): these tests read plain copies, side by side, under their own names
RANK0, RANK1 = plain_path(FIXTURE / "nsys.rank0.sqlite"), plain_path(FIXTURE / "nsys.rank1.sqlite")
RUN_ID = "e00126e3-ae97-4d46-809b-b51af20aef3e"
START_GAP_NS = 1795714210355634040 - 1795714210339639681      # utcEpochNs of rank 1 - rank 0
NCCL_KERNELS = 104
US = 1000


@pytest.fixture(scope="module")
def job():
    return load_job([RANK1, RANK0])          # given out of order on purpose


@pytest.fixture(scope="module")
def parsed():
    return {0: parse_nsys_sqlite(RANK0), 1: parse_nsys_sqlite(RANK1)}


def _copy(src: Path, tmp_path: Path, name: str, *sql: str) -> Path:
    """A copy of a real export with `sql` applied (one field changed or removed)."""
    return edited_copy(src, tmp_path / name, *sql)


def _edit_env(old: str, new: str) -> str:
    return (f"UPDATE TARGET_INFO_SYSTEM_ENV SET value = replace(value, '{old}', '{new}') "
            f"WHERE name = 'DeviceEnvironment' AND instr(value, '{old}') > 0")


# ------------------------------------------------------------------------------------ identity


def test_identity_of_each_rank():
    ids = rank_identity(RANK0), rank_identity(RANK1)
    assert [(i.rank, i.local_rank, i.world_size) for i in ids] == [(0, 0, 2), (1, 1, 2)]
    assert {i.job_id for i in ids} == {RUN_ID}
    assert {i.hostname for i in ids} == {"vm"}
    assert {i.rank_source for i in ids} == {"environment: RANK"}
    assert 15 * 10**6 < ids[1].session_start_utc_ns - ids[0].session_start_utc_ns < 17 * 10**6


def test_environment_values_keep_their_equals_signs():
    """NVIDIA_REQUIRE_CUDA in the real DeviceEnvironment is `cuda>=13.0 brand=unknown,driver>=535,...`."""
    with sqlite3.connect(f"file:{RANK0}?mode=ro", uri=True) as conn:
        (text,), = conn.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'")
    env = parse_environment(text)
    assert env["NVIDIA_REQUIRE_CUDA"].startswith("cuda>=13.0 brand=unknown,driver>=535,driver<536 ")
    assert env["MASTER_ADDR"] == "localhost" and env["RANK"] == "0" and env["GROUP_RANK"] == "0"
    assert parse_environment("A=1;B=x;y;C=k=v") == {"A": "1", "B": "x;y", "C": "k=v"}
    assert parse_environment(None) == {} and parse_environment("") == {}


def test_slurm_names_stand_in_for_torchruns_and_torchruns_default_run_id_is_no_job_id(tmp_path):
    """A real export whose launcher environment names the rank the Slurm way only."""
    path = _copy(RANK1, tmp_path, "slurm.sqlite",
                 _edit_env(";RANK=1;", ";SLURM_PROCID=1;SLURM_JOB_ID=4242;"),
                 _edit_env(";WORLD_SIZE=2;", ";SLURM_NTASKS=2;"), _edit_env(";LOCAL_RANK=1;", ";SLURM_LOCALID=1;"),
                 _edit_env(f"TORCHELASTIC_RUN_ID={RUN_ID}", "TORCHELASTIC_RUN_ID=none"))
    ident = rank_identity(path)
    assert (ident.rank, ident.world_size, ident.local_rank) == (1, 2, 1)
    assert ident.rank_source == "environment: SLURM_PROCID"
    assert ident.job_id == "4242"


# ------------------------------------------------------------------------------------ load_job


@pytest.mark.slow
def test_load_job_orders_ranks_and_puts_rank_first(job, parsed):
    assert job.ranks.columns.tolist() == list(RANK_COLUMNS)
    assert job.ranks["rank"].tolist() == [0, 1]
    assert job.ranks["path"].tolist() == [str(RANK0), str(RANK1)]
    assert job.ranks["clock_offset_ns"].tolist() == [0, START_GAP_NS]
    for name in FRAMES:
        frame = getattr(job, name)
        assert frame.columns.tolist() == ["rank", *getattr(parsed[0], name).columns], name
        assert frame["rank"].dtype == np.int64
        for rank in (0, 1):
            assert (frame["rank"] == rank).sum() == len(getattr(parsed[rank], name)), (name, rank)
    assert job.kernels["rank"].is_monotonic_increasing
    assert job.hosts == ["vm"] and job.warnings == []
    assert {r: g["bus_location"] for r, g in job.gpus.items()} == {0: "0000:00:06.0", 1: "0000:00:07.0"}


def test_points_in_time_move_by_the_ranks_offset_and_durations_do_not(job, parsed):
    for name in ("kernels", "ranges", "range_levels", "memory_ops"):
        mine, own = getattr(job, name).query("rank == 1").reset_index(drop=True), getattr(parsed[1], name)
        moved = [c for c in TIME_COLUMNS if c in own]
        assert moved, name
        for column in moved:
            assert (mine[column] - own[column] == START_GAP_NS).all(), (name, column)
        for column in (c for c in own if c.endswith("_ns") and c not in TIME_COLUMNS):
            assert mine[column].equals(own[column]), (name, column)
        assert getattr(job, name).query("rank == 0").drop(columns="rank").reset_index(drop=True).equals(
            getattr(parsed[0], name)), name


def test_the_ends_of_each_collective_agree_across_ranks_on_the_job_clock(job):
    """NCCL kernels of one collective end together; on each rank's own clock they are 16 ms apart."""
    gaps = collective_end_gaps(job.kernels, 1, 0)
    assert len(gaps) == NCCL_KERNELS
    assert gaps.abs().max() < 50 * US                       # every collective (largest: 34 us, an all-to-all)
    assert gaps.abs().median() < 30 * US                    # typical: 7 us
    raw = collective_end_gaps(job.kernels.assign(
        end_ns=job.kernels["end_ns"] - job.kernels["rank"].map(dict(enumerate([0, START_GAP_NS])))), 1, 0)
    assert (raw.abs() > 15 * 10**6).all()                   # without the offsets: ~16 ms off
    # starts do not align: rank 0's first all-reduce waited for rank 1 to open its capture
    nccl = job.kernels.loc[job.kernels["short_name"].str.startswith("nccl")].sort_values("start_ns")
    first = nccl.groupby("rank").first()
    assert first["start_ns"][1] - first["start_ns"][0] > 10 * 10**6
    assert abs(first["end_ns"][1] - first["end_ns"][0]) < 50 * US


def test_refine_offsets_centres_the_residual_and_keeps_the_spread(job):
    refined = refine_offsets(job)
    ranks = refined.ranks.set_index("rank")
    assert ranks["matched_collectives"].tolist() == [NCCL_KERNELS, NCCL_KERNELS]
    assert ranks["clock_residual_ns"][0] == 0
    assert 0 < abs(ranks["clock_residual_ns"][1]) < 20 * US   # the session starts were already right to ~20 us
    assert ranks["clock_offset_ns"][1] == START_GAP_NS - round(ranks["clock_residual_ns"][1])
    gaps = collective_end_gaps(refined.kernels, 1, 0)
    assert abs(gaps.median()) <= 1                          # by construction
    assert gaps.abs().median() < 30 * US and gaps.abs().max() < 50 * US
    assert refined.kernels.query("rank == 0").equals(job.kernels.query("rank == 0"))
    assert job.ranks["clock_residual_ns"].isna().all()      # the input Job is left as it was


def test_refine_offsets_skips_a_rank_with_too_few_matching_collectives(job):
    kernels = job.kernels
    nccl_of_rank1 = kernels.index[(kernels["rank"] == 1) & kernels["short_name"].str.startswith("nccl")]
    few = dataclasses.replace(job, kernels=kernels.drop(nccl_of_rank1[MIN_MATCHED - 1:]))
    refined = refine_offsets(few)
    row = refined.ranks.set_index("rank").loc[1]
    assert np.isnan(row["clock_residual_ns"]) and row["matched_collectives"] == MIN_MATCHED - 1
    assert row["clock_offset_ns"] == START_GAP_NS
    assert refined.kernels.query("rank == 1")["end_ns"].equals(few.kernels.query("rank == 1")["end_ns"])


@pytest.mark.slow
def test_ranks_come_from_the_order_given_when_the_environment_is_missing(tmp_path, parsed):
    """Real exports with one field missing: the DeviceEnvironment row deleted, so each says
    neither its rank nor its job; its place in the list makes its rank. An export that names its
    rank beside one that names none is not one job launched one way: refused (issue 31), not
    numbered by its place ("local rank 0.0")."""
    drop = "DELETE FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'"
    bare0, bare1 = _copy(RANK0, tmp_path, "bare0.sqlite", drop), _copy(RANK1, tmp_path, "bare1.sqlite", drop)
    ident = rank_identity(bare1)
    assert (ident.rank, ident.world_size, ident.job_id, ident.rank_source) == (None, None, None, None)
    assert ident.hostname == "vm"
    job = load_job([bare0, bare1])
    assert job.ranks["rank_source"].tolist() == ["order given", "order given"]
    assert job.ranks["world_size"].isna().all()
    assert (job.kernels.query("rank == 1")["duration_ns"].to_numpy() == parsed[1].kernels["duration_ns"]).all()
    job = load_job([bare1, bare0])                 # the order given decides
    assert job.ranks["path"].tolist() == [str(bare1), str(bare0)]
    for mixed in ([RANK0, bare1], [bare1, RANK0]):
        with pytest.raises(ExportParseError, match=r"nsys.rank0.sqlite has rank 0 from its environment \(RANK\) "
                                                   r"but bare1.sqlite names no rank"):
            load_job(mixed)


@pytest.mark.slow
def test_the_caller_can_force_the_ranks():
    job = load_job([RANK0, RANK1], ranks=[1, 0])
    assert job.ranks["path"].tolist() == [str(RANK1), str(RANK0)]
    assert set(job.ranks["rank_source"]) == {"given by the caller"}
    assert job.gpus[1]["bus_location"] == "0000:00:06.0"
    with pytest.raises(ExportParseError, match="one rank number"):
        load_job([RANK0, RANK1], ranks=[0])


# ------------------------------------------------------------------------------------ refusals


def test_exports_of_different_jobs_are_refused(tmp_path):
    other = _copy(RANK1, tmp_path, "other.sqlite",
                  _edit_env(f"TORCHELASTIC_RUN_ID={RUN_ID}", "TORCHELASTIC_RUN_ID=another-job"))
    with pytest.raises(ExportParseError) as err:
        load_job([RANK0, other])
    message = str(err.value)
    assert "\n" not in message and "different jobs" in message
    assert RUN_ID in message and "another-job" in message
    assert "nsys.rank0.sqlite" in message and "other.sqlite" in message


def test_exports_that_disagree_on_the_world_size_are_different_jobs(tmp_path):
    other = _copy(RANK1, tmp_path, "four.sqlite", _edit_env(";WORLD_SIZE=2;", ";WORLD_SIZE=4;"))
    with pytest.raises(ExportParseError, match="WORLD_SIZE 2.*WORLD_SIZE 4.*different jobs"):
        load_job([RANK0, other])


def test_the_same_rank_twice_is_refused(tmp_path):
    again = _copy(RANK0, tmp_path, "again.sqlite",
                  "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + 1")
    with pytest.raises(ExportParseError, match=r"rank 0 twice: nsys.rank0.sqlite \(host vm\) and again.sqlite"):
        load_job([RANK0, again])


def test_a_missing_rank_is_refused_and_named(tmp_path):
    three = _copy(RANK1, tmp_path, "three.sqlite", _edit_env(";RANK=1;", ";RANK=3;"))
    with pytest.raises(ExportParseError) as err:
        load_job([RANK1, three])
    message = str(err.value)
    assert "WORLD_SIZE 2" in message and "rank 0 missing" in message and "rank 3 not in 0..1" in message


@pytest.mark.parametrize("paths", [[RANK0], []])
def test_fewer_than_two_exports_are_not_a_job(paths):
    with pytest.raises(ExportParseError, match="without --job"):
        load_job(paths)


@pytest.mark.parametrize("damage, expected", [("truncate", "truncated SQLite export"),
                                              ("text", "not an SQLite file")])
def test_a_bad_file_gives_the_parsers_own_error(tmp_path, damage, expected):
    bad = tmp_path / "bad.sqlite"
    if damage == "truncate":
        bad.write_bytes(RANK0.read_bytes()[: RANK0.stat().st_size // 2])
    else:
        bad.write_text("rank 0, honest\n" * 20)
    with pytest.raises(ExportParseError, match=expected) as from_parser:
        parse_nsys_sqlite(bad)
    with pytest.raises(ExportParseError) as from_job:
        load_job([bad, RANK1])
    assert str(from_job.value) == str(from_parser.value)


# ------------------------------------------------------------------------------------ clocks


@pytest.mark.slow
def test_sessions_far_apart_warn_and_shift_that_rank(tmp_path, job):
    late = _copy(RANK1, tmp_path, "late.sqlite",
                 "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + 90000000000")
    far = load_job([RANK0, late])
    assert len(far.warnings) == 1
    assert far.warnings[0] == ("rank 1 started its profile 90.0 s after rank 0; the timelines are aligned on "
                               "session start times, which is only right if the hosts' clocks agree (NTP)")
    for column in ("start_ns", "end_ns", "launch_start_ns"):
        shift = far.kernels.query("rank == 1")[column].to_numpy() - job.kernels.query("rank == 1")[column].to_numpy()
        assert (shift == 90 * 10**9).all(), column
    # the NCCL kernels put the clock back where the session starts of the real exports had it
    refined = refine_offsets(far).ranks.set_index("rank")
    assert abs(refined["clock_residual_ns"][1] - 90e9) < 20 * US
    assert abs(refined["clock_offset_ns"][1] - START_GAP_NS) < 20 * US
