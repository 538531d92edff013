"""The library's arguments are checked where they come in (aisp_prof.arguments): one str where a
sequence is asked for is one item, not its letters; a value of the wrong type or out of range is
an ArgumentError (exit 2) naming the argument, never a TypeError from deep inside or an empty answer."""
from __future__ import annotations

import math

import pytest
from repo_paths import PROFILES

import aisp_prof
from aisp_prof.errors import AispError, ArgumentError

CLUSTER = PROFILES / "samples_h100_ch10" / "20261126T122302Z-ch10.cluster_group-eb76"
L2NORM = PROFILES / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"


@pytest.fixture
def db(sample_dbs, tmp_path):
    return aisp_prof.open_db(sample_dbs.copy(tmp_path / "a.db", CLUSTER, L2NORM))


def test_one_path_is_one_import_not_its_characters(db, monkeypatch):
    asked = []
    monkeypatch.setattr(db, "import_path", lambda path, *a, **k: asked.append(path) or "run")
    records = db.import_paths(str(CLUSTER))
    assert asked == [CLUSTER] and [r["path"] for r in records] == [str(CLUSTER)]
    db.import_paths(CLUSTER)                     # a Path is one too
    assert asked == [CLUSTER, CLUSTER]


def test_one_run_name_is_one_run(db):
    removed = db.remove("ch09.fused_l2norm")
    assert [r["run_id"] for r in removed] == [L2NORM.name]
    assert db.select(CLUSTER.name[:16]) == [CLUSTER.name]


def test_one_variant_name_is_one_variant(db):
    frame = db.samples(CLUSTER.name, variants="baseline")
    assert set(frame["variant"]) == {"baseline"} and len(frame) > 0
    assert set(db.open(CLUSTER.name).sample_groups("baseline")["variant"]) == {"baseline"}


@pytest.mark.parametrize("call, name", [
    (lambda db: db.summary(5), "run"),
    (lambda db: db.summary(None), "run"),            # not silently the latest run: 'latest' says that
    (lambda db: db.kernels("latest", variant=3), "variant"),
    (lambda db: db.history(None), "pair"),
    (lambda db: db.select(runs=[CLUSTER.name, 7]), "each of runs"),
    (lambda db: db.range_levels("latest", depth=0), "depth 0"),
    (lambda db: db.range_levels("latest", depth="1"), "depth"),
    (lambda db: db.range_levels("latest", max_depth=1.5), "max_depth"),
    (lambda db: db.iter_kernels("latest", limit=2**70).__next__(), "limit"),
    (lambda db: db.import_paths(3), "paths"),
    (lambda db: aisp_prof.open_db(3), "the database path"),
])
def test_a_wrong_argument_is_an_argument_error_naming_it(db, call, name):
    with pytest.raises(ArgumentError, match=f"^{name}") as raised:
        call(db)
    assert raised.value.exit_code == 2 and isinstance(raised.value, AispError)


def test_the_checks_take_what_is_right():
    from aisp_prof import arguments as arg

    assert arg.texts(("a", "b"), "x") == ("a", "b") and arg.texts(None, "x") == ()
    assert arg.whole(3, "n", 1) == 3 and arg.optional_whole(None, "n") is None
    assert arg.positive(0.5, "s") == 0.5
    for bad in (0, -1, math.nan, math.inf, True, "1"):
        with pytest.raises(ArgumentError, match="finite number above 0"):
            arg.positive(bad, "s")
