"""The machine-readable contract on the shipped sample runs: a mistaken option is exit 2 with one line
saying what to do (README's exit codes), never an exit 0 with an empty answer a script takes for "nothing
there"; and the shared options (`--db`, `--json`, `--wide`) go after every subcommand that prints a table."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES

from aisp_prof.cli import cli

REGIONAL = PROFILES / "samples_h100_ch14" / "20261126T152032Z-ch14.regional_triton-0031"
QA_H100 = PROFILES / "samples_h100x2_ch14" / "20261126T174545Z-ch14.quantized_allreduce-cbe0"
QA_H200 = PROFILES / "samples_h200x2_ch14" / "20261129T180029Z-ch14.quantized_allreduce-7cd8"


def invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_error(result, code: int, *said: str) -> str:
    assert result.exit_code == code, result.output
    assert not result.stdout and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aisp-prof: error: "), lines
    for text in said:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def db(sample_dbs):
    return sample_dbs.original(REGIONAL, QA_H100, QA_H200)


def test_code_of_a_variant_the_run_lacks_is_exit_2_with_its_variants(db):
    """`code --variant` was the one --variant query that skipped the run's check (store.variants): a typo,
    even the help's old example `--variant compiled` on ch14.regional_triton, printed an empty answer, exit 0."""
    for json_flag in ([], ["--json"]):
        one_error(invoke("code", REGIONAL.name, "--variant", "compiled", "--db", db, *json_flag), 2,
                  "has no variant 'compiled'", "baseline, eager, regional")
    res = invoke("code", REGIONAL.name, "--variant", "regional", "--db", db, "--json")
    assert res.exit_code == 0, res.output
    launches = json.loads(res.stdout)["launches"]
    assert launches and {r["variant"] for r in launches} == {"regional"}


def test_ranges_deeper_than_their_max_depth_is_exit_2_not_an_empty_list(db):
    res = invoke("ranges", REGIONAL.name, "--depth", "2", "--db", db, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout), res.output            # depth 2 exists
    one_error(invoke("ranges", REGIONAL.name, "--depth", "2", "--max-depth", "1", "--db", db, "--json"), 2,
              "depth 2 is deeper than max_depth 1")
    res = invoke("ranges", REGIONAL.name, "--depth", "2", "--max-depth", "2", "--db", db, "--json")
    assert res.exit_code == 0 and {r["depth"] for r in json.loads(res.stdout)} == {2}, res.output


def test_compare_takes_wide_after_the_subcommand_as_before_it(db, monkeypatch):
    """README: `--db`, `--json` and `--wide` go before or after the subcommand; `compare` fits its
    table to the terminal but refused `compare ... --wide` as an unknown option (exit 2)."""
    monkeypatch.setenv("COLUMNS", "60")
    before = invoke("--wide", "compare", "ch14.quantized_allreduce", "--cards", "--db", db)
    after = invoke("compare", "ch14.quantized_allreduce", "--cards", "--db", db, "--wide")
    fitted = invoke("compare", "ch14.quantized_allreduce", "--cards", "--db", db)
    assert after.exit_code == 0, after.output
    assert after.stdout == before.stdout != fitted.stdout
    assert max(map(len, after.stdout.splitlines())) > 60 >= max(map(len, fitted.stdout.splitlines()[1:2]))
    as_json = [invoke(*args, "--db", db, "--json").stdout for args in (
        ["compare", "ch14.quantized_allreduce", "--cards"], ["compare", "ch14.quantized_allreduce", "--cards", "--wide"])]
    assert as_json[0] == as_json[1] and json.loads(as_json[0])["pair"] == "ch14.quantized_allreduce"


def test_bench_agree_on_a_card_with_no_run_names_the_cards_it_has(db):
    """`--card h100` (the expectations key is h100_80gb_hbm3) said only that there was no run: now
    the close names and every card a run is stored on, as a typo'd target gets."""
    line = one_error(invoke("bench", "agree", "--card", "h100", "--db", db, "--json"), 2,
                     "no stored run on card 'h100'", "did you mean h100_80gb_hbm3, 2x_h100_80gb_hbm3?")
    assert line.endswith("--card takes 2x_h100_80gb_hbm3, 2x_h200, h100_80gb_hbm3")
    one_error(invoke("bench", "agree", "--targets", "ch14.regional_triton", "--card", "2x_h200", "--db", db), 2,
              "no stored run of ch14.regional_triton on card '2x_h200'", "--card takes h100_80gb_hbm3")
    res = invoke("bench", "agree", "--card", "2x_h200", "--db", db, "--json")
    assert {r["card"] for r in json.loads(res.stdout)} == {"2x_h200"}, res.output


@pytest.mark.parametrize("extra, named", [
    (["--write-json", "{tmp}/cal"], "drop --write-json"),
    (["--link", "2"], "drop --link"),
    (["--probes", "copy_dram", "--profile"], "drop --probes, --profile"),
])
def test_calibrate_show_with_an_option_that_measures_is_exit_2(extra, named, db, tmp_path):
    """`calibrate --show --write-json DIR` printed the stored calibrations, exit 0, and wrote nothing: a
    script took the folder for written. --show measures nothing, so the options are at odds (README: 2)."""
    args = [a.format(tmp=tmp_path) for a in extra]
    one_error(invoke("calibrate", "--show", "--json", *args, "--db", db), 2, named, "or --show to measure")
    assert list(tmp_path.iterdir()) == []
    res = invoke("calibrate", "--show", "--json", "--db", db)
    assert res.exit_code == 0 and {c["hardware_key"] for c in json.loads(res.stdout)} >= {"h100_80gb_hbm3", "h200"}


H200_CH09 = PROFILES / "samples_h200_ch09"
TRITON_H200 = H200_CH09 / "20261130T081209Z-ch09.triton-2b43"
L2NORM_H200 = H200_CH09 / "20261130T081134Z-ch09.fused_l2norm-3868"


@pytest.fixture
def h200_db(sample_dbs):
    return sample_dbs.original(TRITON_H200, L2NORM_H200)


def test_an_unknown_run_unlike_any_is_told_how_to_list_runs_not_a_far_guess(h200_db):
    """`diff nosuchrun latest` on the H200 ch09 runs said "did you mean ch09.triton?" (difflib's 0.4 of a
    word unlike any run); a run's name is suggested only when close (a typo), else `aisp-prof runs`."""
    line = one_error(invoke("diff", "nosuchrun", "latest", "--db", h200_db), 2, "unknown run 'nosuchrun'",
                     "`aisp-prof runs` lists them")
    assert "did you mean" not in line
    one_error(invoke("diff", "ch09.trton", "latest", "--db", h200_db), 2, "did you mean ch09.triton")
    one_error(invoke("summary", TRITON_H200.name.replace("triton", "trito"), "--db", h200_db), 2,
              f"did you mean {TRITON_H200.name}")


def test_kernels_json_and_ndjson_together_are_options_at_odds(h200_db):
    """`kernels RUN --json --ndjson` printed NDJSON without a word (README documents each alone): exit 2,
    whichever side of the subcommand --json goes; each alone still prints its records."""
    for args in (["kernels", TRITON_H200.name, "--json", "--ndjson"], ["--json", "kernels", TRITON_H200.name, "--ndjson"]):
        one_error(invoke(*args, "--db", h200_db), 2, "--json", "--ndjson", "give one of them")
    as_json = invoke("kernels", TRITON_H200.name, "--json", "--db", h200_db)
    as_ndjson = invoke("kernels", TRITON_H200.name, "--ndjson", "--db", h200_db)
    assert as_json.exit_code == as_ndjson.exit_code == 0, as_json.output + as_ndjson.output
    assert json.loads(as_json.stdout) == [json.loads(line) for line in as_ndjson.stdout.splitlines()] != []


def test_calibrate_show_of_a_missing_db_is_exit_13_as_every_read(h200_db, tmp_path, monkeypatch):
    """`calibrate --show --db /does/not/exist.db` printed the shipped files, exit 0, while a folder as --db
    was 13: a typo in --db read as "no calibration of mine stored". Named and missing, it is the line `runs`
    gives (README: 13); not named (no database yet), the shipped files still show."""
    missing = tmp_path / "does" / "not" / "exist.db"
    said = one_error(invoke("runs", "--db", missing), 13, "no run database at")
    for args in (["calibrate", "--show", "--db", missing], ["--db", missing, "calibrate", "--show", "--json"]):
        assert one_error(invoke(*args), 13) == said
    assert not missing.parent.exists()
    res = invoke("calibrate", "--show", "--json", "--db", h200_db)
    assert res.exit_code == 0 and "h200" in {c["hardware_key"] for c in json.loads(res.stdout)}, res.output
    monkeypatch.setenv("AISP_PROF_DB", str(missing))
    res = invoke("calibrate", "--show", "--json")
    assert res.exit_code == 0 and "h200" in {c["hardware_key"] for c in json.loads(res.stdout)}, res.output
