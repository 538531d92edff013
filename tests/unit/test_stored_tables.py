"""What the store holds for the shipped samples, value for value, is what the code before issue
17's rewrite of the write path stored (tests/fixtures/stored_tables_digest.json, made by
`python tests/stored_digest.py` at commit 945910d). The raw ncu metrics are no longer the long
`metrics` table but metric_columns/metric_rows: `metrics` is digested from the long form read
back from them and still matches the digest made of the old table; the digests of the two new
tables were added to the golden (branch scale-ncu), every other entry unchanged."""
from __future__ import annotations

import json

import pytest
from stored_digest import digest, shipped_folders
from repo_paths import FIXTURES

GOLDEN = FIXTURES / "stored_tables_digest.json"


@pytest.mark.slow
def test_shipped_samples_store_the_same_values(sample_dbs):
    """The samples imported once per session in the golden's order (sample_dbs stores them one by
    one with store_path, as stored_digest.shipped_digest does); the roofline test reads the same."""
    golden = json.loads(GOLDEN.read_text())
    folders = shipped_folders()
    now = digest(sample_dbs.original(*folders), [f.name for f in folders])
    assert sorted(now) == sorted(golden)
    differ = {(run, table): (golden[run][table], now[run][table]) for run in golden for table in golden[run]
              if golden[run][table] != now[run][table]}
    assert not differ, differ


ROOFLINE_GOLDEN = FIXTURES / "roofline_digest.json"


def roofline_digest(result: dict) -> str:
    """sha256 of a roofline's JSON, less where its measured ceilings were read from (a path).

    Issue 16 ("one speedup per comparison") gave each arrow the run's one primary speedup
    (analyze.timing.speedup, the summary's number, nsys GPU time where the run has it) with its timer and
    the secondary figures; before, the arrow was ncu's summed duration. The digest is taken of the
    arrow as it was: its ncu-duration secondary figure in `speedup`, the old `time_source`, the new
    keys left out. So the golden made at 945910d still holds, number for number, and proves the ncu
    figure now shown as secondary is exactly the old arrow; tests/integration/test_one_speedup.py holds the
    arrow's primary speedup to the summary's."""
    import hashlib

    data = json.loads(json.dumps(result, default=str))
    data.get("ceilings", {}).pop("measured_source", None)
    for c in data.get("comparisons", []):
        c["speedup"] = (c.pop("speedup_by_timer", None) or {}).get("ncu_duration")
        c["time_source"] = "ncu gpu__time_duration, summed over the variant's kernels"
        c.pop("speedup_timer", None)
        c.pop("speedup_time_ns", None)            # the two times the speedup is the ratio of (issue 31 item 7)
        c.pop("speedup_baseline_time_ns", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


@pytest.mark.slow
def test_shipped_samples_give_the_same_rooflines(tmp_path, sample_dbs):
    """Every sample's roofline (points, ceilings, checks, warnings), number for number, as
    before issue 17 took the per-launch points off one-row frames (golden made at 945910d). The
    golden was made again at 8027d6e for one change of text alone: the L1 ceiling's note gained
    its unit and source ('~87' -> '~87 B/cycle/SM (22.8 TB/s ...)', issue 31 item 9); all 24
    rooflines were compared key by key with those of 93884f7 and differed in nothing else."""
    from aisp_prof.api import open_db

    golden = json.loads(ROOFLINE_GOLDEN.read_text())
    db = open_db(sample_dbs.copy(tmp_path / "a.db", *shipped_folders()))
    now = {rid: roofline_digest(db.roofline(rid).to_dict()) for rid in db.runs()["run_id"]}
    assert now == golden
