"""benchmarks/results/gate_vs_run.md (issue 28 item 3: gate = run) is printed, never typed: its counts
per card and its DIFFER lists are what dev/agree_lists.py makes of `aisp-prof bench agree --json` over
every shipped run, its table is `COLUMNS=120 aisp-prof bench agree`'s output, and the numbers README.md
and benchmarks/results/README.md quote from it are the same command's. When runs or evidence change,
regenerate the document with the commands in its header."""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from pair_testing import import_fresh
from repo_paths import ROOT, every_sample_run

from aisp_prof.cli import cli

DOC = ROOT / "benchmarks" / "results" / "gate_vs_run.md"
REGENERATE = "regenerate benchmarks/results/gate_vs_run.md with the commands in its header"


def _block(name: str) -> str:
    """The text between `<!-- NAME -->` and `<!-- /NAME -->` in the document."""
    found = re.search(rf"<!-- {name} -->\n(.*?)\n<!-- /{name} -->", DOC.read_text(), re.S)
    assert found, f"{DOC.name} lost its {name} markers"
    return found.group(1)


@pytest.fixture(scope="module")
def agree_output(sample_dbs):
    """`bench agree` over every shipped run: (the 120-column table, the --json records)."""
    db = str(sample_dbs.original(*every_sample_run()))
    table = CliRunner().invoke(cli, ["bench", "agree", "--db", db], env={"COLUMNS": "120"})
    as_json = CliRunner().invoke(cli, ["bench", "agree", "--db", db, "--json"])
    assert table.exit_code == 0 and as_json.exit_code == 0, table.output
    return table.output.rstrip("\n"), json.loads(as_json.output)


@pytest.fixture(scope="module")
def dev_script():
    return import_fresh(ROOT / "dev" / "agree_lists.py", "agree_lists_dev")


@pytest.mark.slow         # bench agree over every shipped run, twice (~12 s)
def test_the_counts_and_lists_are_the_script_s(agree_output, dev_script):
    _, records = agree_output
    assert _block("agree-counts") == dev_script.counts(records), REGENERATE
    assert _block("agree-lists") == dev_script.sections(records, "2026-11-26"), REGENERATE
    assert _block("agree-lists-2026-11-30") == dev_script.sections(records, "2026-11-30"), REGENERATE


@pytest.mark.slow         # bench agree over every shipped run, twice (~12 s)
def test_the_table_is_the_command_s(agree_output):
    table, _ = agree_output
    assert _block("agree-table") == f"```\n{table}\n```", REGENERATE


@pytest.mark.slow         # bench agree over every shipped run, twice (~12 s)
def test_the_readmes_quote_the_same_numbers(agree_output):
    table, records = agree_output
    said = {v: sum(r["verdict"] == v for r in records) for v in ("AGREE", "DIFFER", "NO-EVIDENCE")}
    assert table.splitlines()[-1] == (f"{said['AGREE']} AGREE, {said['DIFFER']} DIFFER, "
                                      f"{said['NO-EVIDENCE']} NO-EVIDENCE (0 unexplained)")
    readme = " ".join((ROOT / "README.md").read_text().split())
    quoted = re.search(r"Over the (\d+) shipped runs \([^)]*`benchmarks/results/gate_vs_run.md`\): "
                       r"(\d+) variants AGREE, (\d+) DIFFER, (\d+) NO-EVIDENCE", readme)
    assert quoted, "README.md's bench agree paragraph no longer quotes the document's counts"
    assert [int(n) for n in quoted.groups()] == [len(every_sample_run()), *said.values()]
    index = (ROOT / "benchmarks" / "results" / "README.md").read_text()
    assert f"({said['AGREE']} AGREE, {said['DIFFER']} DIFFER, {said['NO-EVIDENCE']} NO-EVIDENCE, none " \
           "unexplained" in index


def test_a_record_is_listed_under_its_strongest_reason(dev_script):
    """The sections' order on tags the shipped runs carry: a warning beats code only where the gate's
    own timer differs too; a clock that moved beats the one-machine rule; a timer the run lacks is the
    weakest."""
    assert dev_script.strongest(["warn:host_bound", "fmt2"]) == "warn"
    assert dev_script.strongest(["timer", "warn:timers_disagree", "fmt2"]) == "timer"
    assert dev_script.strongest(["code", "timer", "fmt2"]) == "code"
    assert dev_script.strongest(["code?", "fmt2"]) == "format"
    assert dev_script.strongest(["code?", "timer?"]) == "timer?"
    assert dev_script.strongest(["machine"]) == "machine"
    assert dev_script.strongest(["clock"]) == "clock"
    assert dev_script.strongest(["machine", "clock"]) == "clock"
    assert dev_script.strongest(["warn:host_bound", "machine"]) == "warn"


def test_the_script_says_one_line_on_bad_input(dev_script, tmp_path, capsys):
    bad = tmp_path / "agree.json"
    bad.write_text('{"not": "records"}')
    assert dev_script.main([str(bad)]) == 2
    assert dev_script.main([str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
