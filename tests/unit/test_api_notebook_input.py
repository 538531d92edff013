"""What a notebook hands the library beyond the run arguments `test_api_arguments` covers: a
choice spelled wrong, a chart's file name, a GPU count, a table's name, a variant of code. Each is
an AispError with a one-line message naming what it takes (never a ValueError or TypeError from
inside), raised before anything is read, written or started; checked on the shipped sample runs."""
from __future__ import annotations

import pytest
from repo_paths import PROFILES

import aisp_prof
from aisp_prof.errors import AispError, ArgumentError, OutputError, UnknownTargetError

L2NORM = PROFILES / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"


@pytest.fixture
def db(sample_dbs, tmp_path):
    return aisp_prof.open_db(sample_dbs.copy(tmp_path / "a.db", L2NORM))


@pytest.mark.parametrize("flop_basis", ["nope", None, 3])
def test_a_flop_basis_not_offered_is_an_argument_error(db, flop_basis):
    with pytest.raises(ArgumentError, match="^flop_basis must be auto, analytic or counted"):
        db.roofline(L2NORM.name, flop_basis=flop_basis)
    with pytest.raises(ArgumentError, match="^flop_basis"):
        db.roofline_points(L2NORM.name, flop_basis=flop_basis)


def test_a_chart_the_readme_draws_takes_its_arguments_as_errors(db, tmp_path):
    from aisp_prof.render.roofline_plot import draw

    result = db.roofline(L2NORM.name)
    with pytest.raises(OutputError, match=r"\.png or \.svg"):
        draw(result, tmp_path / "chart.jpg")
    with pytest.raises(ArgumentError, match="^level must be dram, l2, l1 or all"):
        draw(result, tmp_path / "chart.png", level="L2")
    with pytest.raises(ArgumentError, match="^path takes a path"):
        draw(result, None)
    assert not list(tmp_path.glob("chart.*"))


@pytest.mark.parametrize("gpus, said", [(0, "gpus 0 is out of range"), (1, "gpus 1 is out of range"),
                                        (-1, "gpus -1"), ("2", "gpus takes a whole number")])
def test_a_link_of_fewer_than_two_gpus_starts_nothing(db, monkeypatch, gpus, said):
    import subprocess

    started = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: started.append(a) or pytest.fail("started a process"))
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a) or pytest.fail("started a process"))
    with pytest.raises(ArgumentError, match=f"^{said}"):
        db.calibrate_link(gpus)
    assert started == []


def test_one_table_name_is_that_table_and_a_typo_is_said(db):
    asked = db.run(L2NORM.name, tables="kernels").kernels         # was read as k, e, r, ...: empty
    assert len(asked) == len(db.run(L2NORM.name, tables=["kernels"]).kernels) > 0
    for call in (lambda: db.run(L2NORM.name, tables=["kernel"]), lambda: db.open(L2NORM.name, tables=["kernel"])):
        with pytest.raises(ArgumentError, match="^tables: a run has no table 'kernel'; its tables are kernels,"):
            call()
    with pytest.raises(ArgumentError, match="^tables takes"):
        db.open(L2NORM.name, tables=5)


def test_code_of_a_variant_the_run_lacks_is_said_as_kernels_says_it(sample_dbs, tmp_path):
    triton = PROFILES / "samples_h100_ch14" / "20261126T150937Z-ch14.triton_persistent-f89b"
    db = aisp_prof.open_db(sample_dbs.copy(tmp_path / "t.db", triton))
    assert len(db.generated_code(triton.name, variant="persistent")["launches"]) > 0
    with pytest.raises(UnknownTargetError, match="has no variant 'persistant'; did you mean persistent"):
        db.generated_code(triton.name, variant="persistant")      # was 0 launches, 0 kernels: exit 0
    with pytest.raises(UnknownTargetError, match="has no variant 'persistant'"):
        db.kernels(triton.name, variant="persistant")
    with pytest.raises(ArgumentError, match="^kernel takes text"):
        db.generated_code(triton.name, kernel=5)


@pytest.mark.parametrize("call, said", [
    (lambda db: db.bench(["ch09.fused_l2norm"], {"repeat": 3}), "options: BenchOptions has no field 'repeat'; its "
                                                                "fields are profile, repeats,"),
    (lambda db: db.bench(["ch09.fused_l2norm"], ["repeats"]), "options takes a dict of BenchOptions fields"),
    (lambda db: db.bench("ch09.fused_l2nrm", {}), "unknown target 'ch09.fused_l2nrm'"),     # was 'c': its letters
    (lambda db: db.calibrate({"repeat": 3}), "options: CalibrateOptions has no field 'repeat'"),
    (lambda db: db.calibrate({"db": "other.db"}), "options: CalibrateOptions has no field 'db'"),
    (lambda db: db.bench_record(5), "runs takes"),
])
def test_the_gpu_calls_options_are_checked_before_anything_runs(db, call, said):
    with pytest.raises(AispError, match=f"^{said}") as raised:
        call(db)
    assert raised.value.exit_code == 2          # ArgumentError, UnknownTargetError: not a TypeError, not NoGpuError


def test_one_run_id_to_record_is_one_run(db):
    outcomes = db.bench_record(L2NORM.name)          # was its letters, each a run prefix ('2' ...)
    assert [(o.run_id, o.status) for o in outcomes] == [(L2NORM.name, "refused")]   # no samples: nothing written


def test_where_a_report_or_cards_go_is_a_path_or_an_argument_error(sample_dbs, tmp_path, monkeypatch):
    h100 = PROFILES / "samples_h100" / "20261126T045251Z-ch09.fused_l2norm-ba93"
    db = aisp_prof.open_db(sample_dbs.copy(tmp_path / "c.db", L2NORM, h100))
    monkeypatch.chdir(tmp_path)
    for call, said in [(lambda: db.report(reports_dir=None), "reports_dir takes a path"),
                       (lambda: db.report(out=5), "out takes a path"),
                       (lambda: db.compare_cards("ch09.fused_l2norm", plot_dir=5), "plot_dir takes a path")]:
        with pytest.raises(ArgumentError, match=f"^{said}"):
            call()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.db"]          # nothing written
    assert set(db.compare_cards("ch09.fused_l2norm", plot_dir="cards")["charts"]) == {"H100", "H200"}


def test_an_empty_variant_name_is_no_variant_not_every_one(db):
    every = db.kernels(L2NORM.name)
    assert len(db.kernels(L2NORM.name, variant="cuda")) < len(every)
    with pytest.raises(UnknownTargetError, match="has no variant ''; it has baseline, cuda, triton"):
        db.kernels(L2NORM.name, variant="")        # `--variant "$UNSET"`: was all 7 launches, as if not asked


def test_a_home_relative_database_path_is_the_home_s(tmp_path, monkeypatch):
    """aisp_prof.open_db("~/runs.db") in a notebook: '~' is the user's home, as a shell would read it, not a folder named '~'."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert aisp_prof.open_db("~/runs.db").path == tmp_path / "runs.db"


@pytest.mark.parametrize("opts", [None, "ch09.fused_l2norm", 5])
def test_profile_takes_run_options_or_says_what_it_takes(tmp_path, opts):
    with pytest.raises(ArgumentError, match="profile takes a RunOptions"):
        aisp_prof.open_db(tmp_path / "a.db").profile(opts)
