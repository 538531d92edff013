"""Ranks of two agents ("nodes") on one clock (issue 34, item 4), from the real exports of the 2x H200
run of ch14.quantized_allreduce (profiles/samples_h200x2_ch14, nsys.sqlite.gz and nsys.rank1.sqlite.gz:
105 NCCL kernels per rank, the ends of matching ones 32 us apart at most, 5 us typically, once aligned).

Each export is given the node name `run --nnodes` gives its agent's ranks (AISP_NODE_NAME, in the
environment nsys records) and the second "node" a clock 3.7 ms ahead (its session start moved, as a
host whose clock NTP left off would record it): copies of real exports with one field changed each.
Bound stated and held: after alignment the ends of every matched collective agree within 50 us on the
job's clock (the largest seen on these exports is 32 us, an all-to-all) and the skew is recovered to
within 20 us; the report's collectives all have a transfer time (a misaligned clock would leave some
ranks ending before the last one started)."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from repo_paths import ROOT

from aisp_prof.api import open_db
from aisp_prof.parse.nsys.job import load_job, refine_offsets
from aisp_prof.parse.nsys.job_clock import collective_end_gaps
from export_copies import edited_copy

RUN = next(p for p in sorted((ROOT / "profiles" / "samples_h200x2_ch14").glob("*")) if (p / "run.json").exists())
SKEW_NS = 3_700_000
BOUND_NS = 50_000
US = 1000


def _node_export(src: Path, dst: Path, node: str, skew_ns: int) -> Path:
    plain = dst.with_suffix(".plain")
    with gzip.open(src) as fin, open(plain, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    return edited_copy(plain, dst,
                       "UPDATE TARGET_INFO_SYSTEM_ENV SET value = replace(value, 'PYTHONUNBUFFERED=1', "
                       f"'PYTHONUNBUFFERED=1;AISP_NODE_NAME={node}') WHERE name = 'DeviceEnvironment'",
                       f"UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + {skew_ns}")


@pytest.fixture(scope="module")
def nodes(tmp_path_factory) -> list[Path]:
    """node0/ holding rank 0's export, node1/ rank 1's, as two agents write them."""
    root = tmp_path_factory.mktemp("nodes")
    (root / "node0").mkdir()
    (root / "node1").mkdir()
    _node_export(RUN / "nsys.sqlite.gz", root / "node0" / "nsys.sqlite", "vm-node0", 0)
    _node_export(RUN / "nsys.rank1.sqlite.gz", root / "node1" / "nsys.rank1.sqlite", "vm-node1", SKEW_NS)
    return [root / "node0", root / "node1"]


def test_each_rank_keeps_its_agents_node_name(nodes):
    job = load_job([nodes[0] / "nsys.sqlite", nodes[1] / "nsys.rank1.sqlite"])
    assert job.hosts == ["vm-node0", "vm-node1"]
    assert job.ranks.set_index("rank")["hostname"].to_dict() == {0: "vm-node0", 1: "vm-node1"}


def test_collective_ends_agree_within_the_bound_once_aligned(nodes):
    job = load_job([nodes[0] / "nsys.sqlite", nodes[1] / "nsys.rank1.sqlite"])
    assert (collective_end_gaps(job.kernels, 1, 0).abs() > SKEW_NS - BOUND_NS).all()   # the skewed clock shows
    refined = refine_offsets(job)
    gaps = collective_end_gaps(refined.kernels, 1, 0)
    assert len(gaps) == 105 and gaps.abs().max() < BOUND_NS and gaps.abs().median() < 10 * US
    assert abs(refined.ranks.set_index("rank")["clock_residual_ns"][1] - SKEW_NS) < 20 * US


def test_import_job_of_the_two_node_folders_is_one_run_on_one_clock(nodes, tmp_path):
    db = open_db(tmp_path / "a.db")
    run_id = db.import_job([str(n) for n in nodes], "two-agents")
    frames = db.ranks(run_id)
    ranks = frames["ranks"].set_index("rank")
    assert ranks["hostname"].to_dict() == {0: "vm-node0", 1: "vm-node1"}
    assert (ranks["clock_residual_ns"].abs() < SKEW_NS + BOUND_NS).all() and ranks["matched_collectives"].min() > 100
    bandwidth = frames["bandwidth"]
    assert (bandwidth["collective_ns"] > 0).all() and not bandwidth["note"].str.contains("aligned").any()
