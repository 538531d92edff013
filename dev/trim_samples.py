"""Trim run folders' nsys exports to what aisp-prof reads from them: the activity rows (kernels, runtime
calls, copies, sets, synchronizations) that start before the first NVTX range of the export.

    python dev/trim_samples.py profiles/samples_h200_ch14/        # every run folder in it
    python dev/trim_samples.py --dry-run profiles/samples*/        # say what each export would lose

Why: the timeline capture (`collect.process.child.capture_for_nsys`) starts before each variant's factory
and warm-up, so a torch.compile pair's export also holds the compile and the autotuner's benchmarking
(ch14.regional_triton on an H200: 20,739 of its 21,738 kernels, 2.5 of 2.8 MB, before the first range).
Nothing aisp-prof shows comes from them: every figure and table is built from the NVTX ranges of the
timed iterations. Checked, not assumed: each folder is imported into a scratch database before and
after, and the summary (`summary --json`), the report page's data and, for a multi-rank run, `ranks`
must be equal; if anything differs the exports are put back and the command exits 1. The export keeps
its name and gzip form (dev/shrink_samples.py), so trimming twice changes nothing the second time.

Not for the chapter 9 samples (`profiles/samples/`, `profiles/samples_h100/`): the parser's and the store's
tests read their whole exports as oracles (set-up copies outside any range, every timeline kernel, the
stored-table digests of tests/fixtures/stored_tables_digest.json); they are kept as captured.
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from aisp_prof.api.database import open_db
from aisp_prof.errors import AispError, ArgumentError
from shrink_samples import run_folders     # dev/ is the script's folder: on sys.path

ACTIVITY = "CUPTI_ACTIVITY_KIND_%"


def trim_export(db: Path) -> int:
    """Delete the activity rows of one plain SQLite export that start before its first NVTX event;
    the number of rows deleted (0 where it has no NVTX event)."""
    with sqlite3.connect(db) as c:
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "NVTX_EVENTS" not in tables:
            return 0
        first = c.execute("SELECT min(start) FROM NVTX_EVENTS").fetchone()[0]
        if first is None:
            return 0
        gone = 0
        for (table,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?",
                                  (ACTIVITY,)).fetchall():
            if "start" in {r[1] for r in c.execute(f"PRAGMA table_info({table})")}:
                gone += c.execute(f"DELETE FROM {table} WHERE start < ?", (first,)).rowcount
    if gone:
        with sqlite3.connect(db) as c:
            c.execute("VACUUM")
    return gone


def _without_digest(value):
    """`value` less every `content_sha256` (the digest of the folder's files, which trimming changes)."""
    if isinstance(value, dict):
        return {k: _without_digest(v) for k, v in value.items() if k != "content_sha256"}
    if isinstance(value, list):
        return [_without_digest(v) for v in value]
    return value


def seen(folder: Path, scratch: Path) -> dict:
    """What aisp-prof shows of one run folder: its summary, report page data and ranks (less the
    folder's content digest)."""
    db = open_db(scratch)
    run_id = db.import_path(folder)
    try:
        ranks = {k: v.to_dict("records") for k, v in db.ranks(run_id).items()}
    except ArgumentError:               # a one-process run has no ranks to show
        ranks = {}
    return _without_digest({"summary": db.summary_result(run_id), "page": db.page(run_id), "ranks": ranks})


def trim(folder: Path, work: Path, dry_run: bool = False) -> tuple[int, int, int]:
    """Trim every nsys export of `folder`; (bytes before, bytes after, rows deleted)."""
    exports = sorted(folder.glob("nsys*.sqlite.gz")) + sorted(folder.glob("nsys*.sqlite"))
    if not exports:
        return 0, 0, 0
    keep = work / "originals"
    keep.mkdir(parents=True, exist_ok=True)
    before = None if dry_run else seen(folder, work / "before.db")
    size_before = size_after = rows = 0
    for path in exports:
        shutil.copy2(path, keep / path.name)
        plain = work / path.name.removesuffix(".gz")
        plain.write_bytes(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
        rows += trim_export(plain)
        data = plain.read_bytes()
        out = gzip.compress(data, compresslevel=9, mtime=0) if path.suffix == ".gz" else data
        size_before += path.stat().st_size
        size_after += len(out)
        if not dry_run:
            partial = path.with_name(path.name + ".partial")
            partial.write_bytes(out)
            partial.replace(path)
    if not dry_run and rows:
        try:
            after = seen(folder, work / "after.db")
            bad = [k for k in before if before[k] != after[k]]
        except AispError as exc:            # a trim that broke the export: no longer importable
            bad = [f"the import ({exc})"]
        if bad:
            for path in exports:
                shutil.copy2(keep / path.name, path)
            raise SystemExit(f"{folder}: {', '.join(bad)} would change once trimmed; the exports are back")
    return size_before, size_after, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="run folders, or folders of run folders")
    parser.add_argument("--dry-run", action="store_true", help="say what each export would lose, change nothing")
    args = parser.parse_args(argv)
    total = [0, 0]
    for folder in run_folders(args.paths):
        with tempfile.TemporaryDirectory(prefix="aisp-trim-") as tmp:
            a, b, rows = trim(folder, Path(tmp), args.dry_run)
        total[0] += a
        total[1] += b
        if rows:
            print(f"{folder}: {rows} rows before the first range, {a / 1e6:.2f} MB -> {b / 1e6:.2f} MB", flush=True)
    print(f"total: {total[0] / 1e6:.2f} MB -> {total[1] / 1e6:.2f} MB" + (" (dry run)" if args.dry_run else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
