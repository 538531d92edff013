"""Bad input to the CLI: one line on stderr saying what to do and the README's exit code, never a
traceback, an "unexpected <Exception>" line or a half-written output; close names suggested."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES

from aisp_prof.cli import cli

CLUSTER = PROFILES / "samples_h100_ch10" / "20261126T122302Z-ch10.cluster_group-eb76"
L2NORM = PROFILES / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"


def invoke(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_error_line(result, code: int, *said: str) -> str:
    """The error line of a command that must exit `code`, with each of `said` in it."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and "unexpected" not in result.output, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("aisp-prof: error:")] or [result.stderr]
    for text in said:
        assert text in lines[-1], lines
    return lines[-1]


@pytest.fixture
def db(sample_dbs, tmp_path):
    return sample_dbs.copy(tmp_path / "a.db", CLUSTER, L2NORM)


def test_a_plain_folder_is_refused_before_its_files_are_hashed(tmp_path, monkeypatch):
    from aisp_prof.store import identity

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "big.bin").write_bytes(b"x" * 1000)
    hashed = []
    real = identity.content_key
    monkeypatch.setattr(identity, "content_key", lambda paths: hashed.append(paths) or real(paths))
    result = invoke("import", plain, "--db", tmp_path / "a.db")
    one_error_line(result, 6, "not an aisp-prof run folder", "run.json")
    assert hashed == []


@pytest.mark.parametrize("args, option", [
    (["kernels", "latest", "--limit", "99999999999999999999999"], "--limit"),
    (["ranges", "latest", "--depth", "99999999999999999999999"], "--depth"),
    (["check", "ch09.fused_l2norm", "--device", "cpu", "--fuzz", "1", "--budget-gb", "nan"], "--budget-gb"),
    (["check", "ch09.fused_l2norm", "--device", "cpu", "--fuzz", "1", "--budget-gb", "inf"], "--budget-gb"),
    (["check", "ch09.fused_l2norm", "--device", "cpu", "--fuzz", "1", "--budget-tflop", "nan"], "--budget-tflop"),
    (["check", "ch09.fused_l2norm", "--device", "cpu", "--time-limit-s", "nan"], "--time-limit-s"),
    (["check", "ch09.fused_l2norm", "--device", "cpu", "--seed", "99999999999999999999999"], "--seed"),
    (["calibrate", "--repeats", "0"], "--repeats"),
    (["calibrate", "--repeats", "-5"], "--repeats"),
    (["run", "ch09.fused_l2norm", "--nsys-iterations", "0"], "--nsys-iterations"),
    (["new", "mine.y", "--chapter", "-5"], "--chapter"),
    (["new", "mine.z", "--chapter", "99999999999999999999999"], "--chapter"),
    (["bench", "run", "--targets", "ch09.fused_l2norm", "--budget-s", "nan"], "--budget-s"),
    (["bench", "run", "--targets", "ch09.fused_l2norm", "--processes", "0"], "--processes"),
    (["bench", "ab", "--targets", "ch09.fused_l2norm", "--base", "HEAD", "--budget-s", "inf"], "--budget-s"),
])
def test_a_bad_number_is_a_usage_error_before_anything_runs(args, option, db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke(*args, *(["--db", db] if args[0] in ("kernels", "ranges", "calibrate", "run") else []))
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output and "unexpected" not in result.output
    assert not list(tmp_path.glob("*.py"))                      # `new` wrote nothing


@pytest.mark.slow
def test_a_size_past_a_long_long_is_a_bad_sizes_value_not_a_failed_check():
    result = invoke("check", "ch09.fused_l2norm", "--device", "cpu", "--json",
                    "--sizes", "rows=99999999999999999999,cols=128")
    one_error_line(result, 12, "rows=99999999999999999999", "at most")
    assert "Exception raised from" not in result.output and not result.stdout


def test_the_library_check_refuses_what_the_cli_does():
    from aisp_prof.api.pairs import CheckRequest
    from aisp_prof.errors import ArgumentError

    for bad in (dict(budget_gb=float("nan")), dict(budget_tflop=float("inf")), dict(time_limit_s=float("nan")),
                dict(fuzz=-1), dict(sizes={"rows": 1})):
        with pytest.raises(ArgumentError):
            CheckRequest(("ch09.fused_l2norm",), **bad)
    assert CheckRequest("ch09.fused_l2norm").targets == ("ch09.fused_l2norm",)


@pytest.mark.parametrize("args, said", [
    (["list", "--chapter", "ch99"], ["no pair in chapter 'ch99'", "did you mean ch09?", "ch10"]),
    (["list", "--chapter", "ch1O"], ["did you mean ch10?"]),
    (["bench", "list-targets", "--chapter", "ch99"], ["no pair in chapter 'ch99'", "ch09"]),
    (["list", "ch09"], ["no pair file ch09", "aisp-prof list --chapter ch09"]),
    (["list", "ch09.fused_l2norm"], ["aisp-prof list --chapter ch09"]),
    (["run", "ch1O"], ["unknown target 'ch1O'", "did you mean ch10"]),
])
def test_a_typo_of_a_chapter_is_exit_2_with_the_chapters(args, said):
    result = invoke(*args)
    one_error_line(result, 2, *said)
    assert not result.stdout


@pytest.mark.parametrize("args, said", [
    (["compare", "ch10.clustr_group", "--cards"], ["no stored run of pair 'ch10.clustr_group'",
                                                   "did you mean ch10.cluster_group"]),
    (["bench", "agree", "--targets", "ch1O"], ["no stored run of target 'ch1O'", "did you mean ch10"]),
    (["bench", "agree", "--targets", "ch10.cluster_grup"], ["did you mean ch10.cluster_group"]),
    (["report", "--targets", "ch1O"], ["did you mean ch10"]),
])
def test_a_typo_of_a_stored_name_is_exit_2_with_close_names(args, said, db):
    one_error_line(invoke(*args, "--db", db), 2, *said)


@pytest.mark.parametrize("args, kind", [
    (["report", "latest", "--out", "{file}"], "is a file, not a folder"),
    (["compare", "ch10.cluster_group", "--cards", "--plot", "{file}"], "is a file, not a folder"),
    (["new", "mine.fused_relu", "--dir", "{file}"], "is a file, not a folder"),
    (["sanitize", "ch09.fused_l2norm", "--log-dir", "{file}"], "is a file, not a folder"),
    (["bench", "run", "--targets", "ch09", "--junit", "{folder}"], "is a folder, not a file"),
    (["run", "ch09.fused_l2norm", "--profiles-dir", "{file}"], "is a file, not a folder"),
    (["roofline", "latest", "--out", "{folder}"], "is a folder, not a file"),
])
def test_an_output_of_the_wrong_kind_is_exit_14_and_left_alone(args, kind, db, tmp_path):
    file, folder = tmp_path / "taken.txt", tmp_path / "taken"
    file.write_text("mine")
    folder.mkdir()
    args = [a.format(file=file, folder=folder) for a in args]
    extra = ["--db", db] if args[0] in ("report", "compare", "bench", "run", "roofline") else []
    one_error_line(invoke(*args, *extra), 14, kind, "choose another place")
    assert file.read_text() == "mine" and list(folder.iterdir()) == []


def test_a_folder_as_the_database_is_exit_13(tmp_path):
    for args in (["--db", tmp_path, "runs"], ["runs", "--db", tmp_path], ["import", L2NORM, "--db", tmp_path]):
        one_error_line(invoke(*args), 13, "is a folder")
    assert list(tmp_path.iterdir()) == []


def test_ranks_of_a_one_rank_run_is_a_wrong_argument(db):
    one_error_line(invoke("ranks", L2NORM.name, "--db", db), 2, "has one rank")


@pytest.mark.parametrize("flags, said", [
    (["--node-rank", "3", "--nnodes", "2"], "--node-rank 3 is not a node of --nnodes 2"),
    (["--node-rank", "3", "--nnodes", "2", "--nproc-per-node", "2"], "--node-rank 3 is not a node of --nnodes 2"),
    (["--node-rank", "1", "--nnodes", "2", "--nproc-per-node", "2"], "needs --rdzv-endpoint"),
    (["--node-rank", "1", "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", "head"], "not HOST:PORT"),
])
def test_run_options_at_odds_are_exit_2_not_cannot_run_here(flags, said, db):
    one_error_line(invoke("run", "ch14.quantized_allreduce", *flags, "--db", db), 2, said)


@pytest.mark.slow
def test_report_json_is_the_same_before_and_after_the_command_and_says_no_label(db, tmp_path):
    import json

    before = invoke("--json", "report", CLUSTER.name, "--out", tmp_path / "a", "--db", db)
    after = invoke("report", CLUSTER.name, "--out", tmp_path / "b", "--json", "--db", db)
    assert before.exit_code == after.exit_code == 0, (before.output, after.output)
    first, second = json.loads(before.stdout), json.loads(after.stdout)
    assert first["index"] == str(tmp_path / "a" / "index.html") and second["out_dir"] == str(tmp_path / "b")
    assert [p.rsplit("/", 1)[1] for p in first["pages"]] == [p.rsplit("/", 1)[1] for p in second["pages"]]
    plain = invoke("report", CLUSTER.name, "--out", tmp_path / "c", "--db", db)
    assert plain.stdout == f"{tmp_path / 'c' / 'index.html'}\n" and plain.stderr == ""     # no progress label


def test_json_before_a_command_without_json_output_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                          # without the check, quickstart ran (and wrote here)
    result = invoke("--json", "quickstart", "--db", tmp_path / "a.db")
    assert result.exit_code == 2 and "`aisp-prof quickstart` has no JSON output" in result.output
    assert list(tmp_path.iterdir()) == []


def test_import_job_refuses_an_ncu_csv_even_when_it_is_stored_already(tmp_path):
    csv, db = L2NORM / "ncu_raw.csv.gz", tmp_path / "a.db"
    assert invoke("import", csv, "--db", db).exit_code == 0
    for _ in range(2):                 # the same answer on a database that holds it as on a fresh one
        one_error_line(invoke("import", "--job", "job42", csv, "--db", db), 6, "--job takes nsys SQLite exports")
        db = tmp_path / "fresh.db"


def test_run_help_keeps_its_multi_node_example_on_two_lines():
    lines = invoke("run", "--help").output.splitlines()
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    assert any(line.rstrip().endswith("--node-rank 0 \\") for line in lines)


def test_rm_on_an_empty_file_leaves_it_empty(tmp_path):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    one_error_line(invoke("rm", "latest", "--db", empty), 2, "no runs in")
    assert empty.read_bytes() == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


def test_an_ambiguous_prefix_says_how_many_more_it_matches():
    from aisp_prof.errors import UnknownTargetError
    from aisp_prof.store.select import resolve_run

    listing = [{"run_id": f"20261126T0{i}0000Z-ch09.x-{i}", "pair": None, "job": None} for i in range(8)]
    with pytest.raises(UnknownTargetError, match=r"is ambiguous: .* and 3 more; give more of the id$"):
        resolve_run(listing, "2026")


def test_check_without_a_gpu_says_device_cpu(monkeypatch):
    import dataclasses

    from aisp_prof.pairs import capabilities

    here = capabilities.detect_machine()
    none = dataclasses.replace(here, cc=None, gpu_name=None, gpu_count=0, have=here.have - {"gpu"})
    monkeypatch.setattr(capabilities, "detect_machine", lambda *a, **k: none)
    one_error_line(invoke("check", "ch09.fused_l2norm"), 3, "no CUDA GPU", "--device cpu")


def test_close_names_offer_chapters_only_where_a_chapter_is_a_target():
    from aisp_prof.naming import close_names

    names = ["ch10.batch", "ch10.cluster_group", "ch09.triton"]
    assert close_names("ch1O", names)[0] == "ch10" and close_names("ch99", names)[0] == "ch09"
    assert "ch10" not in close_names("ch1O", names, chapters=False)     # `history` takes a pair, not a chapter
    assert "ch10" not in close_names("ch10", names)                      # never the name itself



def test_roofline_help_fits_120_columns():
    """--precision's fourteen choices are listed in its help text, wrapped, not as one 195-column metavar."""
    result = CliRunner().invoke(cli, ["roofline", "--help"], terminal_width=120)
    assert result.exit_code == 0 and "tensor_int8_sparse" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 120


def test_a_negative_fuzz_seed_is_still_a_seed():
    """--seed took any int before the shared number types; random.Random takes a negative one too: the
    range check must not turn `--seed -1` into a usage error (exit 2)."""
    result = invoke("check", "ch09.fused_l2norm", "--device", "cpu", "--variants", "baseline", "--fuzz", "1",
                    "--seed", "-1", "--json")
    assert result.exit_code == 0, result.output
