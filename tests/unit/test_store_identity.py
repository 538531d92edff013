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
from sample_files import plain_path

# the fixtures' nsys exports are kept gzipped: these tests copy, open and name the plain files (plain_path)
NSYS_EXPORT = plain_path(FIXTURES / "foreign_h100" / "nested_graph_default.sqlite")      # a user's own nsys export
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

RANK_EXPORTS = [plain_path(FIXTURES / "multigpu_h100x2" / f"nsys.rank{r}.sqlite") for r in (0, 1)]


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


# ------------------------------------------------------------------------------ re-imports, keyed by content

NCU_CSV = FIXTURES / "h200" / "probe_curated_raw_base.csv"
NSYS_SQLITE = plain_path(FIXTURES / "h200" / "probe_nested_graph_nsys.sqlite")


def run_ids(db) -> list[str]:
    return [r["run_id"] for r in json.loads(invoke("runs", "--db", str(db), "--json").stdout)]


def row_counts(db: Path) -> dict[str, int]:
    """Rows of every table of the database (what a second import must not add to)."""
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    counts = {t: conn.execute(f"SELECT count(*) FROM [{t}]").fetchone()[0] for t in tables}
    conn.close()
    return counts


def test_the_same_export_imported_again_stores_nothing_and_names_the_run(tmp_path):
    db = tmp_path / "a.db"
    for export in (NCU_CSV, NSYS_SQLITE):
        first = invoke("import", str(export), "--db", str(db))
        assert first.exit_code == 0, first.output
        run_id, before = first.stdout.strip(), row_counts(db)
        again = invoke("import", str(export), "--db", str(db))
        assert (again.exit_code, again.stdout.strip()) == (0, run_id)
        assert f"{export}: run {run_id} (label '{export.name}') is already in {db}: the same content" \
            in again.stderr
        # a --label, or a copy under another name: the same content, still there
        copy = shutil.copyfile(export, tmp_path / f"renamed{export.suffix}")
        for args in ([str(export), "--label", "before"], [str(copy)]):
            res = invoke("import", *args, "--db", str(db), "--json")
            assert res.exit_code == 0, res.output
            assert [(r["run_id"], r["status"]) for r in json.loads(res.stdout)] == [(run_id, "already stored")]
            assert "already in" in res.stderr
        assert row_counts(db) == before
    assert len(run_ids(db)) == 2


def test_the_same_job_imported_again_stores_nothing(tmp_path):
    db = tmp_path / "a.db"
    first = invoke("import", "--job", "j", "--db", str(db), *map(str, RANK_EXPORTS))
    assert first.exit_code == 0, first.output
    before = row_counts(db)
    again = invoke("import", "--job", "j", "--db", str(db), "--json", *map(str, RANK_EXPORTS))
    assert again.exit_code == 0, again.output
    assert [(r["run_id"], r["status"]) for r in json.loads(again.stdout)] == [(first.stdout.strip(), "already stored")]
    assert row_counts(db) == before and len(run_ids(db)) == 1


def test_every_path_is_tried_and_reported_and_a_failed_one_stores_nothing(tmp_path):
    db = tmp_path / "a.db"
    cut = tmp_path / "cut.csv"
    cut.write_text(NCU_CSV.read_text()[: NCU_CSV.stat().st_size // 2])
    assert invoke("import", str(SAMPLE), "--db", str(db)).exit_code == 0
    res = invoke("import", str(SAMPLE), str(cut), str(NCU_CSV), str(tmp_path / "nowhere.csv"), "--db", str(db), "--json")
    assert res.exit_code == 6, res.output                 # the first failure's code: a bad export
    records = json.loads(res.stdout)
    assert [r["status"] for r in records] == ["already stored", "failed", "stored", "failed"]
    assert records[0]["run_id"] == SAMPLE.name and records[1]["run_id"] is None and records[2]["run_id"]
    assert records[1]["message"].startswith(str(cut)) and records[1]["exit_code"] == 6
    assert "no such file" in records[3]["message"]
    errors = [line for line in res.stderr.splitlines() if line.startswith("aisp-prof: error:")]
    assert len(errors) == 2 and "Traceback" not in res.output
    assert run_ids(db) == [SAMPLE.name, records[2]["run_id"]]     # nothing of the failed files



# ------------------------------------------------------------------------------ incomplete run folders

MULTI_RANK = SAMPLES.parent / "samples_h200x2_ch14" / "20261126T231409Z-ch14.quantized_allreduce-3c06"


def partial_copy(run_dir: Path, dest: Path, drop: tuple[str, ...] = (), keep_only: tuple[str, ...] = ()) -> Path:
    shutil.copytree(run_dir, dest)
    for f in list(dest.iterdir()):
        if f.name in drop or (keep_only and f.name not in keep_only):
            shutil.rmtree(f) if f.is_dir() else f.unlink()
    return dest


def test_a_folder_holding_only_run_json_is_refused_naming_what_is_missing(tmp_path):
    db = tmp_path / "a.db"
    folder = partial_copy(SAMPLE, tmp_path / SAMPLE.name, keep_only=("run.json",))
    one_error(invoke("import", str(folder), "--db", str(db)), 6, "incomplete run folder",
              "check.json, ncu_raw.csv, nsys.sqlite were made")
    assert not db.exists()                                 # nothing written, not even an empty database
    # the complete folder then stores as the run, not "already there"
    res = invoke("import", str(SAMPLE), "--db", str(db))
    assert (res.exit_code, res.stdout.strip(), res.stderr) == (0, SAMPLE.name, "")


def test_a_run_missing_one_export_is_refused(tmp_path):
    db = tmp_path / "a.db"
    folder = partial_copy(SAMPLE, tmp_path / "one", drop=("nsys.sqlite.gz",))
    one_error(invoke("import", str(folder), "--db", str(db)), 6, "nsys.sqlite was made", "lacks it")
    folder = partial_copy(MULTI_RANK, tmp_path / "two", drop=("nsys.rank1.sqlite.gz",))
    one_error(invoke("import", str(folder), "--db", str(db)), 6, "nsys.rank1.sqlite was made")
    assert not db.exists()


# ------------------------------------------------------------------------------ rm and --replace

OTHER = SAMPLES / "20261126T015142Z-ch09.compute_bound-4289"


def rows_of(db: Path, run_id: str) -> int:
    """Rows of `run_id` in every table with a run_id column."""
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    n = sum(conn.execute(f"SELECT count(*) FROM [{t}] WHERE run_id = ?", [run_id]).fetchone()[0] for t in tables
            if "run_id" in {c[1] for c in conn.execute(f"PRAGMA table_info([{t}])")})
    conn.close()
    return n


def test_rm_removes_a_run_and_every_row_of_it(tmp_path):
    db = tmp_path / "a.db"
    assert invoke("import", str(SAMPLE), str(OTHER), "--db", str(db)).exit_code == 0
    kept = rows_of(db, OTHER.name)
    assert rows_of(db, SAMPLE.name) > 500
    one_error(invoke("rm", SAMPLE.name, "no-such-run", "--db", str(db)), 2, "unknown run 'no-such-run'")
    assert run_ids(db) == [SAMPLE.name, OTHER.name]          # nothing removed
    res = invoke("rm", "ch09.fused_l2norm", "--db", str(db), "--json")
    assert res.exit_code == 0, res.output
    [removed] = json.loads(res.stdout)
    assert (removed["run_id"], removed["pair"]) == (SAMPLE.name, "ch09.fused_l2norm") and removed["rows_removed"] > 500
    assert rows_of(db, SAMPLE.name) == 0 and rows_of(db, OTHER.name) == kept and run_ids(db) == [OTHER.name]
    # removed, it can be imported again
    assert invoke("import", str(SAMPLE), "--db", str(db)).stdout.strip() == SAMPLE.name
    one_error(invoke("rm", "x", "--db", str(tmp_path / "none.db")), 13, "no run database")
    assert not (tmp_path / "none.db").exists()


def test_replace_stores_a_run_again_in_place_of_the_old(tmp_path):
    db = tmp_path / "a.db"
    first = invoke("import", str(NCU_CSV), "--db", str(db), "--label", "wrong").stdout.strip()
    assert invoke("import", str(SAMPLE), "--db", str(db)).exit_code == 0
    counts = row_counts(db)
    res = invoke("import", str(NCU_CSV), str(SAMPLE), "--db", str(db), "--label", "right", "--replace", "--json")
    assert res.exit_code == 0, res.output
    records = json.loads(res.stdout)
    assert [(r["status"], r["replaced"]) for r in records] == [("replaced", [first]), ("replaced", [SAMPLE.name])]
    assert records[1]["run_id"] == SAMPLE.name and records[0]["run_id"] != first
    assert row_counts(db) == counts                          # nothing doubled
    labels = {r["run_id"]: r["label"] for r in json.loads(invoke("runs", "--db", str(db), "--json").stdout)}
    assert labels == {records[0]["run_id"]: "right", SAMPLE.name: "right"}


# ------------------------------------------------------------------------------ a first import that fails


def test_a_first_import_that_fails_while_writing_leaves_no_database_nor_folder(tmp_path, monkeypatch):
    """The disk fills up half-way through the first run written to a new database: exit 13, and
    neither the 4 KB database nor the folder made for it remains."""
    from aisp_prof.store import db as store

    real, calls = store._insert, []

    def full(db_, name, df, run_id):
        calls.append(name)
        if len(calls) == 3:
            raise sqlite3.OperationalError("database or disk is full")
        return real(db_, name, df, run_id)

    monkeypatch.setattr(store, "_insert", full)
    db = tmp_path / "team" / "profiles" / "a.db"
    one_error(invoke("import", str(SAMPLE), "--db", str(db)), 13, f"the disk holding {db} is full")
    assert len(calls) == 3 and listing(tmp_path) == []
    monkeypatch.setattr(store, "_insert", real)
    assert invoke("import", str(SAMPLE), "--db", str(db)).exit_code == 0
    assert listing(db.parent) == ["a.db"] and run_ids(db) == [SAMPLE.name]
