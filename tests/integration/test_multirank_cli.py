"""Issue 15's commands on the CPU: `aisp-prof ranks` of the real 2x H100 run against the measured
link (profiles/calibration/2x_h100_80gb_hbm3.json, found from any working folder), the refusals of
`import --job` (one line, exit 6, nothing stored), `list` and `calibrate` for a 2-GPU pair on a
machine without 2 GPUs, and the report of a multi-rank run. Data: see test_multirank_store.py.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from aisp_prof import pairs
from aisp_prof.cli import cli
from aisp_prof.pairs import capabilities
from aisp_prof.pairs.capabilities import Machine
from aisp_prof.store.ingest import sample_run_dirs
from export_copies import edited_copy as _copy
from sample_files import plain_path
from test_multirank_store import FIXTURE, INFO, PAIR, RANK_EXPORTS, ROOT, RUN_DIR, VARIANTS

# the rank exports as plain SQLite (they are kept gzipped): for the faults made by editing or cutting a copy
PLAIN_EXPORTS = [plain_path(p.with_name(p.name.removesuffix(".gz"))) for p in RANK_EXPORTS]

LINK_KEY = "2x_h100_80gb_hbm3"
LINK = json.loads((ROOT / "profiles" / "calibration" / f"{LINK_KEY}.json").read_text())
OPS = ("AllReduce", "AllGather", "ReduceScatter", "AlltoAll")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_error(res, code: int, *needles: str) -> str:
    """The command failed with `code` and said so in exactly one line on stderr, no traceback."""
    assert res.exit_code == code, (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit), res.exception
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aisp-prof: error:"), res.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def gpu_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("multirank_cli") / "a.db"
    assert invoke("import", "--db", str(db), str(RUN_DIR)).exit_code == 0
    return db


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    """A working folder with no profiles/ in it, and no AISP_ROOT: only the shipped files count."""
    monkeypatch.delenv("AISP_ROOT", raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def ranks_json(db: Path, *extra: str) -> dict:
    res = invoke("ranks", INFO["run_id"], "--db", str(db), "--json", *extra)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


# ------------------------------------------------------------------------------ aisp-prof ranks


@pytest.mark.slow
def test_ranks_json_has_every_frame(stored, elsewhere):
    frames = ranks_json(stored)
    assert list(frames) == ["ranks", "per_rank", "bandwidth", "stragglers", "wire", "warnings"]
    assert [r["rank"] for r in frames["ranks"]] == [0, 1]
    assert {(r["variant"], r["rank"]) for r in frames["per_rank"]} == {(v, r) for v in VARIANTS for r in (0, 1)}
    assert all(r["iterations"] == 5 for r in frames["per_rank"])          # --nsys-iterations 5
    assert frames["warnings"] == []


@pytest.mark.slow
def test_baseline_all_reduce_reaches_most_of_the_measured_link_from_any_folder(stored, elsewhere):
    """The calibration comes from the checkout's profiles/calibration whatever the working folder."""
    assert not (elsewhere / "profiles").exists()
    bw = {(r["variant"], r["op"]): r for r in ranks_json(stored)["bandwidth"]}
    allreduce = bw[("baseline", "AllReduce")]
    assert allreduce["message_bytes"] == INFO["analytic"]["collective_bytes"]["baseline/AllReduce"]
    # nccl-tests: all-reduce busbw = S / t x 2(n-1)/n, which is S / t on 2 ranks
    assert allreduce["busbw_gb_per_s"] == pytest.approx(allreduce["message_bytes"] / allreduce["collective_ns"])
    link = LINK["ceilings"]["link_busbw_gb_per_s"]
    assert allreduce["link_busbw_gb_per_s"] == pytest.approx(link["AllReduce"])
    assert 80 <= allreduce["pct_of_link"] <= 100
    for (variant, op), row in bw.items():                                 # every op against its own ceiling
        assert row["pct_of_link"] == pytest.approx(100 * row["busbw_gb_per_s"] / link[op]), (variant, op)


def test_a_calibration_in_the_working_folder_comes_first(stored, elsewhere):
    faster = json.loads(json.dumps(LINK))
    faster["ceilings"]["link_busbw_gb_per_s"]["AllReduce"] *= 2
    (elsewhere / "profiles" / "calibration").mkdir(parents=True)
    (elsewhere / "profiles" / "calibration" / f"{LINK_KEY}.json").write_text(json.dumps(faster))
    shipped = LINK["ceilings"]["link_busbw_gb_per_s"]["AllReduce"]
    row = next(r for r in ranks_json(stored)["bandwidth"] if r["op"] == "AllReduce")
    assert row["link_busbw_gb_per_s"] == pytest.approx(2 * shipped)
    assert row["pct_of_link"] == pytest.approx(100 * row["busbw_gb_per_s"] / (2 * shipped))


def test_without_a_measured_link_busbw_stays_and_the_share_is_blank(stored, elsewhere, monkeypatch):
    from aisp_prof.store import calibrations

    monkeypatch.setattr(calibrations, "calibration_dir", lambda: elsewhere / "none")
    frames = ranks_json(stored)
    assert all(r["busbw_gb_per_s"] > 0 and r["pct_of_link"] is None for r in frames["bandwidth"])


def test_only_the_overlapping_variant_hides_communication(stored):
    rows = {(r["variant"], r["rank"]): r for r in ranks_json(stored)["per_rank"]}
    for rank in (0, 1):
        assert rows[("int8_overlap", rank)]["hidden_comm_pct"] > 0          # NCCL on a second stream
        assert rows[("int8", rank)]["hidden_comm_pct"] == 0                 # one stream: one thing at a time
        assert rows[("baseline", rank)]["hidden_comm_pct"] == 0
        assert rows[("baseline", rank)]["compute_ns"] == 0                  # nothing but the all-reduce


def test_ranks_table(stored, elsewhere):
    res = invoke("ranks", "latest", "--db", str(stored))
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    lines = res.stdout.splitlines()
    assert "per call (median over iterations)" in lines and "of link" in res.stdout
    allreduce = next(line.split() for line in lines if line.startswith("baseline ") and "AllReduce" in line)
    assert allreduce[5:7] == ["256.0", "MiB"] and allreduce[-1].endswith("%")
    assert 80 <= float(allreduce[-1].rstrip("%")) <= 100


def test_variant_filters_every_frame_but_the_ranks(stored):
    frames = ranks_json(stored, "--variant", "int8")
    assert len(frames["ranks"]) == 2
    assert {r["variant"] for r in frames["per_rank"]} == {"int8"} and len(frames["per_rank"]) == 2
    assert {r["op"] for r in frames["bandwidth"]} == {"AlltoAll", "AllGather"}
    assert {r["variant"] for r in frames["stragglers"]} <= {"int8"}


def test_a_misspelt_variant_is_exit_2_not_an_empty_table(stored):
    one_error(invoke("ranks", "latest", "--db", str(stored), "--variant", "int8_overlpa"), 2,
              "no variant 'int8_overlpa'", "int8_overlap")


def test_ranks_of_a_one_rank_run_is_exit_2_naming_import_job(tmp_path):
    """A wrong argument (README: 2), not a corrupt export (6, as it was)."""
    db = tmp_path / "a.db"
    one = sample_run_dirs()[0]
    assert invoke("import", "--db", str(db), str(one)).exit_code == 0
    one_error(invoke("ranks", one.name, "--db", str(db)), 2, "one rank", "import --job")


# ------------------------------------------------------------------------------ import --job refusals


def _other_job(tmp_path: Path) -> list[Path]:
    env = sqlite3.connect(PLAIN_EXPORTS[1]).execute(
        "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'").fetchone()[0]
    run_id = next(p for p in env.split(";") if p.startswith("TORCHELASTIC_RUN_ID="))
    other = _copy(PLAIN_EXPORTS[1], tmp_path / "other.sqlite",
                  f"UPDATE TARGET_INFO_SYSTEM_ENV SET value = replace(value, '{run_id}', "
                  "'TORCHELASTIC_RUN_ID=another-job') WHERE name = 'DeviceEnvironment'")
    return [RANK_EXPORTS[0], other]


def _truncated(tmp_path: Path) -> list[Path]:
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(PLAIN_EXPORTS[1].read_bytes()[: PLAIN_EXPORTS[1].stat().st_size // 2])
    return [RANK_EXPORTS[0], cut]


def _report(tmp_path: Path) -> list[Path]:
    rep = tmp_path / "rank1.nsys-rep"
    rep.write_bytes(b"not looked at")
    return [RANK_EXPORTS[0], rep]


FAULTS = {
    "one file": (lambda t: [RANK_EXPORTS[0]], ["2 or more ranks", "without --job"]),
    "rank 0 twice": (lambda t: [RANK_EXPORTS[0], _copy(PLAIN_EXPORTS[0], t / "again.sqlite")], ["rank 0 twice"]),
    "different jobs": (_other_job, ["different jobs", "another-job"]),
    "truncated": (_truncated, ["cut.sqlite", "truncated SQLite export"]),
    "nsys-rep": (_report, ["rank1.nsys-rep", "nsys export --type sqlite"]),
    "missing file": (lambda t: [RANK_EXPORTS[0], t / "nowhere.sqlite"], ["no such file"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(FAULTS))
def test_import_job_refusals_are_one_line_exit_6_and_store_nothing(tmp_path, fault):
    db = tmp_path / "a.db"
    assert invoke("import", "--db", str(db), str(sample_run_dirs()[0])).exit_code == 0
    before = db.read_bytes()
    make, needles = FAULTS[fault]
    one_error(invoke("import", "--job", "j", "--db", str(db), *map(str, make(tmp_path))), 6, *needles)
    assert db.read_bytes() == before
    assert len(json.loads(invoke("runs", "--db", str(db), "--json").stdout)) == 1


def test_a_refused_job_into_no_database_creates_none(tmp_path):
    db = tmp_path / "a.db"
    one_error(invoke("import", "--job", "j", "--db", str(db), str(RANK_EXPORTS[0])), 6)
    assert not db.exists()


# ------------------------------------------------------------------------------ list, calibrate


def _listed() -> dict:
    res = invoke("list", "--json")
    assert res.exit_code == 0, res.output
    return next(r for r in json.loads(res.stdout) if r["name"] == PAIR)


@pytest.mark.skipif(gpu_count() > 0, reason="checks a machine without a CUDA GPU")
def test_list_says_the_pair_needs_two_ranks_and_cannot_run_here():
    row = _listed()
    assert row["world_size"] == 2 and row["min_world_size"] == 2
    assert row["can_run"] is False and "no CUDA GPU" in row["reason"]


@pytest.mark.slow
def test_list_on_one_gpu_says_it_needs_two(monkeypatch):
    one, two = Machine.of("gpu", "triton", gpu_count=1), Machine.of("gpu", "triton", gpu_count=2)
    answer = capabilities.runnable(pairs.find(PAIR), one)
    assert not answer.ok and "needs 2 GPUs" in answer.reason
    monkeypatch.setattr(capabilities, "detect_machine", lambda: one)
    row = _listed()
    assert row["can_run"] is False and row["reason"] == answer.reason and "has 1" in row["reason"]
    monkeypatch.setattr(capabilities, "detect_machine", lambda: two)
    assert _listed()["can_run"] is True


def test_calibrate_show_lists_the_link_record(tmp_path, elsewhere, monkeypatch):
    # no database yet (the default path, not an explicit --db, which must exist): the shipped files alone
    monkeypatch.setenv("AISP_PROF_DB", str(tmp_path / "a.db"))
    res = invoke("calibrate", "--show", "--json")
    assert res.exit_code == 0, res.output
    record = next(c for c in json.loads(res.stdout) if c["hardware_key"] == LINK_KEY)
    assert record["gpu_count"] == 2
    assert record["ceilings"]["link_busbw_gb_per_s"] == pytest.approx(LINK["ceilings"]["link_busbw_gb_per_s"])
    assert set(record["ceilings"]["link_busbw_gb_per_s"]) == set(OPS)
    table = invoke("calibrate", "--show")
    assert table.exit_code == 0, table.output
    assert f"{LINK_KEY}: NVIDIA H100 80GB HBM3" in table.stdout and "link_allreduce" in table.stdout


@pytest.mark.skipif(gpu_count() >= 2, reason="checks a machine with fewer than 2 GPUs")
def test_calibrate_link_without_two_gpus_is_exit_3(tmp_path):
    one_error(invoke("calibrate", "--link", "2", "--db", str(tmp_path / "a.db")), 3, "--link 2 needs 2 CUDA GPUs")
    assert not (tmp_path / "a.db").exists()


# ------------------------------------------------------------------------------ report


@pytest.mark.slow
def test_report_of_the_multi_rank_run(stored, tmp_path):
    out = tmp_path / "report"
    res = invoke("report", INFO["run_id"], "--db", str(stored), "--out", str(out))
    assert res.exit_code == 0, res.output
    assert (out / "index.html").is_file() and len(list(out.glob("*.html"))) >= 2


@pytest.mark.slow
def test_report_of_an_imported_job(tmp_path):
    db, out = tmp_path / "a.db", tmp_path / "report"
    assert invoke("import", "--job", "step1", "--db", str(db), str(FIXTURE)).exit_code == 0
    res = invoke("report", "latest", "--db", str(db), "--out", str(out))
    assert res.exit_code == 0, res.output
    assert (out / "index.html").is_file()


@pytest.mark.slow
def test_an_imported_job_s_variants_are_the_program_s_not_nccl_s(tmp_path):
    """NCCL's own ranges around the warm-up's collectives (domain NCCL, outside every aisp/ range)
    are no variants: before, the headline of this import read 'ncclAlltoAll: 15.62x over baseline'."""
    db = tmp_path / "j.db"
    runner = CliRunner()
    assert runner.invoke(cli, ["import", "--job", "probe", *map(str, RANK_EXPORTS), "--db", str(db)]).exit_code == 0
    result = runner.invoke(cli, ["summary", "latest", "--db", str(db), "--json"])
    data = json.loads(result.output)
    assert [s["variant"] for s in data["summary"]] == list(VARIANTS)
    assert [s["kernels_per_call"] for s in data["summary"]] == [1, 2, 5, 20]
    assert data["headline"]["best"] == "int8" and not data["headline"]["text"].startswith("nccl")


@pytest.mark.slow
def test_summary_json_of_a_multi_rank_run_says_its_rows_are_rank_0_s_and_has_every_rank(stored):
    result = CliRunner().invoke(cli, ["summary", "latest", "--db", str(stored), "--json"])
    data = json.loads(result.output)
    assert {s["rank"] for s in data["summary"]} == {0}
    assert sorted({(r["variant"], r["rank"]) for r in data["per_rank"]}) == sorted(
        (v, r) for v in VARIANTS for r in (0, 1))
    assert any("collective transfer" in s for s in data["verdict"])
