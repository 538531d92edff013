"""Issue 31's store side, on the real shipped exports: a database that is not aisp-prof's is
refused untouched (exit 13); an import is keyed by the content it read (a second import stores
nothing and names the stored run); a run folder missing exports its run.json says were made is
refused (exit 6); `rm` and `import --replace` fix mistakes; `import --job NAME` is `ranks NAME`,
and a job mixing an export with RANK and one without is refused."""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from repo_paths import FIXTURES, SAMPLES

from aisp_prof.cli import cli

NSYS_EXPORT = FIXTURES / "foreign_h100" / "nested_graph_default.sqlite"      # a user's own nsys export
SAMPLE = SAMPLES / "20261126T011557Z-ch09.fused_l2norm-90df"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_error(res, code: int, *needles: str) -> str:
    """Exit `code`, exactly one line on stderr, no traceback."""
    assert res.exit_code == code, (res.exit_code, res.output, res.exception)
    assert isinstance(res.exception, SystemExit), res.exception
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aisp-prof: error:"), res.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------------------ foreign databases


def test_an_nsys_export_given_as_db_is_refused_untouched(tmp_path):
    db = shutil.copyfile(NSYS_EXPORT, tmp_path / "my_nsys_export.sqlite")
    before = digest(db)
    one_error(invoke("import", str(SAMPLE), "--db", str(db)), 13, "not an aisp-prof run database", "nsys export")
    assert digest(db) == before
    assert listing(tmp_path) == ["my_nsys_export.sqlite"]            # no -wal, no -shm
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()
    # reading commands refuse it too (and create nothing)
    one_error(invoke("runs", "--db", str(db)), 13, "not an aisp-prof run database")
    assert digest(db) == before and listing(tmp_path) == ["my_nsys_export.sqlite"]


def test_a_newer_schema_is_refused_untouched(tmp_path):
    db = tmp_path / "a.db"
    assert invoke("import", str(SAMPLE), "--db", str(db)).exit_code == 0
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.execute("PRAGMA journal_mode = DELETE")      # as a newer aisp-prof might leave it
    conn.close()
    before = digest(db)
    other = SAMPLES / "20261126T015142Z-ch09.compute_bound-4289"
    one_error(invoke("import", str(other), "--db", str(db)), 13, "newer aisp-prof", "nothing was written")
    assert digest(db) == before and listing(tmp_path) == ["a.db"]


# ------------------------------------------------------------------------------ import --job NAME

RANK_EXPORTS = [FIXTURES / "multigpu_h100x2" / f"nsys.rank{r}.sqlite" for r in (0, 1)]


def test_a_job_is_read_back_by_its_name(tmp_path):
    db = str(tmp_path / "a.db")
    res = invoke("import", "--job", "step42", "--db", db, *map(str, RANK_EXPORTS))
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip()
    res = invoke("ranks", "step42", "--db", db, "--json")
    assert res.exit_code == 0, res.output
    assert [r["rank"] for r in json.loads(res.stdout)["ranks"]] == [0, 1]
    assert json.loads(invoke("runs", "--db", db, "--json").stdout)[0]["job"] == "step42"
    assert invoke("summary", "step42", "--db", db, "--json").exit_code == 0
    one_error(invoke("ranks", "step43", "--db", db), 2, "unknown run", "step42")
    assert json.loads(invoke("runs", "--db", db, "--json").stdout)[0]["run_id"] == run_id


def test_a_job_mixing_a_ranked_export_with_an_unranked_one_is_refused(tmp_path):
    db = tmp_path / "a.db"
    res = invoke("import", "--job", "j", "--db", str(db), str(RANK_EXPORTS[0]), str(NSYS_EXPORT))
    one_error(res, 6, "nsys.rank0.sqlite has rank 0", "RANK", "nested_graph_default.sqlite names no rank")
    assert not db.exists()
