"""aisp-prof at scale (issue 17): import, `kernels`, `ranges`, `roofline` and `report` timed on
exports built from the shipped real samples, with wall time and peak RSS per command.

    python benchmarks/scale.py                 # full set: 10k/100k/1M kernels, 1k/10k launches, 50 pages
    python benchmarks/scale.py --sizes small   # 10k kernels, 1k launches, a 12-page report (a minute or two)
    python benchmarks/scale.py --json          # every measurement, with the machine and the commit
    python benchmarks/scale.py --code ../other-checkout --save-json after.json   # time another checkout's aisp_prof
    python benchmarks/scale.py --from-json before.json after.json   # saved runs side by side

What is timed, each in a fresh `python3 -m aisp_prof` process with its own database in a
temporary folder (`scale_child`):

* nsys: the shipped export of one run (default ch09.fused_l2norm, 57 kernels) replicated to about
  10k / 100k / 1M kernels (`scale_exports`), then `import`, `kernels RUN --json > /dev/null`,
  `ranges RUN --json`. The shipped export itself is measured first: the floor every size pays.
  With --report-one, also `report RUN --out DIR` of each size's run: one pair's page (issue 33
  item 3: at most 5 s at 1M kernels).
* ncu: the same run's `--page raw` CSV replicated to about 1k / 10k launches, then `import`,
  `roofline RUN --json > /dev/null`, `kernels RUN --json` (its output feeds the check).
* report: N pages (12 or 50). The run folders are the 12 shipped H200 samples, then the 12 H100
  samples (profiles/samples_h100), then the same 24 again as copies whose run.json carries a new
  run id ("<id>-c1", ...), until N: 50 pages = 24 + 24 copies + 2 more copies. All are imported
  in one `import` (timed too), then `report ID...` with every id named.

No export is timed unless it scales exactly (`scale_check`): before any size, a 3-copy export
goes through the tool and must report exactly 3x the original; each large export's tables must
hold exactly k x the rows with unique correlation ids; and the timed `ranges`/`kernels` output
of each size must be exactly k x the original's, or that size's numbers are withheld.

A step is skipped, with the reason, when its time (or peak RSS) extrapolated linearly from the
previous size exceeds --max-seconds (or --max-rss-mb), and killed at --max-seconds if it gets
there. Sizes of data are in MB (10^6 bytes); peak RSS is ru_maxrss, also in MB.

Wall times on a shared VM drift: the same command took 20-40% longer in one run than in the next
on the 2-core machine of issue 17, while repeats within a run agreed to a few percent and peak RSS
did not move at all. So a fixed piece of CPU work that is not aisp-prof (`scale_child.REFERENCE_WORK`)
is timed at the start and after each phase: compare two runs (before/after a change) only where
their references agree, run them back to back, and use --repeat for a median. Each step's notes
also give the child's CPU time (user + system, median): when other processes share the cores it
moves much less than the wall time.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import os

from scale_check import check_against_sql, check_launches, check_ranges, sql_range_totals
from scale_child import (
    BYTES_PER_MB,
    ROOT,
    ChildResult,
    code_root,
    machine_info,
    run_reference,
    run_tool,
)
from scale_exports import (
    DEFAULT_SAMPLE,
    NCU_FILE,
    NSYS_FILE,
    check_nsys_rows,
    copies_for,
    ncu_launch_count,
    nsys_kernel_count,
    resolve_export,
    scale_ncu_csv,
    scale_nsys_export,
)
from scale_report import report_folders
from scale_table import compare, markdown, targets_table

SIZES = {
    "small": {"nsys_kernels": [10_000], "ncu_launches": [1_000], "report_pages": 12},
    "full": {"nsys_kernels": [10_000, 100_000, 1_000_000], "ncu_launches": [1_000, 10_000], "report_pages": 50},
    # issue 33: the import and the queries of long traces (10M: --nsys-kernels 1000000 3000000 10000000)
    "issue33": {"nsys_kernels": [1_000_000, 3_000_000], "ncu_launches": [1_000], "report_pages": 12},
}
PRECHECK_COPIES = 3
REFERENCE_STEP = "reference: fixed CPU work, not aisp-prof"


@dataclass
class Measure:
    """One timed command (or the reason it was not timed)."""

    step: str
    size: int | None
    size_unit: str
    status: str = "ok"            # ok | skipped | killed | failed | check failed | refused
    wall_s: float | None = None
    peak_rss_mb: float | None = None
    note: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def add_note(self, text: str) -> None:
        self.note = "; ".join(filter(None, [self.note, text]))


def _mb(path: Path) -> float:
    return round(path.stat().st_size / BYTES_PER_MB, 1)


class Bench:
    """The measurements of one harness run, and the limits that decide what is skipped."""

    def __init__(self, work: Path, max_seconds: float, max_rss_mb: float, repeat: int = 1):
        self.work, self.max_seconds, self.max_rss_mb, self.repeat = work, max_seconds, max_rss_mb, repeat
        self.measures: list[Measure] = []
        self.import_only = False       # --import-only: nsys import, ranges and the checks; no other query
        self.report_one = False        # --report-one: also `report RUN` of each size's one run (issue 33 item 3)
        self.logs = work / "logs"
        self._last_ok: dict[str, Measure] = {}

    def add(self, m: Measure, floor: bool = False) -> Measure:
        self.measures.append(m)
        if m.status == "ok" and m.size and not floor:      # the shipped export's floor predicts nothing
            self._last_ok[m.step] = m
        wall = "-" if m.wall_s is None else f"{m.wall_s:.2f} s"
        rss = "-" if m.peak_rss_mb is None else f"{m.peak_rss_mb:.0f} MB"
        print(f"[scale] {m.step} @ {m.size} {m.size_unit}: {m.status} {wall} {rss} {m.note}", file=sys.stderr,
              flush=True)
        return m

    def _too_big(self, step: str, size: int) -> str | None:
        """Why `step` at `size` would break a limit, judged linearly from its last size; None if not."""
        prev = self._last_ok.get(step)
        if prev is None or not prev.size or prev.size >= size:
            return None
        ratio = size / prev.size
        if prev.wall_s * ratio > self.max_seconds:
            return (f"skipped: {prev.wall_s:.1f} s at {prev.size} x {ratio:.0f} predicts {prev.wall_s * ratio:.0f} s "
                    f"> --max-seconds {self.max_seconds:.0f}")
        if prev.peak_rss_mb * ratio > self.max_rss_mb:
            return (f"skipped: {prev.peak_rss_mb:.0f} MB at {prev.size} x {ratio:.0f} predicts "
                    f"{prev.peak_rss_mb * ratio:.0f} MB > --max-rss-mb {self.max_rss_mb:.0f}")
        return None

    def time(self, step: str, size: int, unit: str, args: list[str], db: Path, stdout: Path | None = None,
             needs: Measure | None = None, floor: bool = False) -> Measure:
        """Run one command in its own child (--repeat times: the median wall time, the largest peak
        RSS) and record it; skip it if a limit or a failed `needs` says so. An `import` starts each
        repetition from an empty database. `floor`: a measurement of the shipped export, not used to
        extrapolate to larger sizes."""
        if needs is not None and needs.status != "ok":
            return self.add(Measure(step, size, unit, "skipped", note=f"skipped: {needs.step} did not complete"))
        reason = self._too_big(step, size)
        if reason:
            return self.add(Measure(step, size, unit, "skipped", note=reason))
        fresh = db if args[0] == "import" else None
        return self._measure(Measure(step, size, unit), lambda: run_tool(args, db, stdout, self.max_seconds, self.logs),
                             fresh, floor)

    def reference(self) -> Measure:
        """The machine's own speed right now (`scale_child.REFERENCE_WORK`), beside the steps."""
        return self._measure(Measure(REFERENCE_STEP, None, ""), lambda: run_reference(self.max_seconds, self.logs),
                             None, floor=True)

    def _measure(self, m: Measure, run: Callable[[], ChildResult], fresh_db: Path | None, floor: bool) -> Measure:
        results, load = [], [os.getloadavg()[0]]     # other processes on the cores, beside each measurement
        for _ in range(self.repeat):
            if fresh_db is not None:
                fresh_db.unlink(missing_ok=True)
            results.append(run())
            if not results[-1].ok:
                break
        r = results[-1]
        walls = [round(x.wall_s, 2) for x in results]
        cpus = [round(x.cpu_s, 2) for x in results]
        m.wall_s, m.peak_rss_mb = round(statistics.median(walls), 2), round(max(x.peak_rss_mb for x in results), 1)
        # CPU seconds too: on a shared machine they move less with the load than wall time does
        load.append(os.getloadavg()[0])
        m.data = {"argv": r.argv[2:], "wall_s_each": walls, "cpu_s_each": cpus,
                  "load_avg_1m": [round(x, 2) for x in load]}
        if len(walls) > 1:
            m.note = f"median of {len(walls)}: {min(walls):.2f}-{max(walls):.2f} s"
        m.add_note(f"cpu {statistics.median(cpus):.2f} s")
        if r.killed_at_limit:
            m.status, m.note = "killed", f"killed at --max-seconds {self.max_seconds:.0f}"
        elif r.returncode < 0:
            m.status, m.note = "killed", f"killed by signal {-r.returncode} (out of memory?)"
        elif r.returncode:
            last = (r.stderr_tail.strip().splitlines() or [""])[-1]
            m.status, m.note = "failed", f"exit {r.returncode}: {last[:200]}"
        return self.add(m, floor)

    def withhold(self, measures: list[Measure], problems: list[str]) -> None:
        """The output was wrong: those timings measured the wrong work."""
        for m in measures:
            if m.status == "ok":
                m.status, m.note = "check failed", "; ".join(problems[:3])
                print(f"[scale] {m.step} @ {m.size}: exact-scaling check FAILED: {problems[:3]}", file=sys.stderr)

    def refuse(self, steps: list[str], sizes: list[int], unit: str, why: str) -> None:
        for n in sizes:
            for s in steps:
                self.add(Measure(s, n, unit, "refused", note=why))


def _run_id(path: Path) -> str:
    """The run id `import` printed (its last line)."""
    return path.read_text().strip().splitlines()[-1]


def _shipped_import(bench: Bench, step: str, size: int, unit: str, source: Path, db: Path) -> str:
    """Time the import of the shipped export itself (the floor of every size) and return its run id."""
    m = bench.time(step, size, unit, ["import", str(source)], db, bench.work / "id.txt", floor=True)
    if m.status != "ok":
        raise RuntimeError(f"the shipped export {source} did not import: {m.note}")
    return _run_id(bench.work / "id.txt")


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _tool_json(bench: Bench, args: list[str], db: Path, name: str) -> Any:
    """An untimed command whose JSON output a check needs."""
    out = bench.work / f"{name}.json"
    r = run_tool([*args, "--json"], db, out, bench.max_seconds, bench.work / "logs")
    if not r.ok:
        raise RuntimeError(f"{' '.join(args)} failed: {r.stderr_tail[-500:]}")
    return _json(out)


def _import(bench: Bench, path: Path, db: Path) -> str:
    out = bench.work / "import-id.txt"
    r = run_tool(["import", str(path)], db, out, bench.max_seconds, bench.work / "logs")
    if not r.ok:
        raise RuntimeError(f"import {path} failed: {r.stderr_tail[-500:]}")
    return _run_id(out)


def _precheck(bench: Bench, build: Callable[[Path, int], Any], export_name: str, query: str,
              compare: Callable[[Any, Any, Any], list[str]], original: Any) -> list[str]:
    """Build a PRECHECK_COPIES-copy export and push it through the tool: it must scale exactly."""
    db = bench.work / f"precheck-{export_name}.db"
    scaling = build(bench.work / f"precheck-{export_name}", PRECHECK_COPIES)
    run = _import(bench, scaling.path, db)
    return compare(original, _tool_json(bench, [query, run], db, f"precheck-{export_name}"), scaling)


def nsys_phase(bench: Bench, sample: Path, sizes: list[int]) -> None:
    """Import, kernels and ranges of nsys exports of each size."""
    steps, unit = ["nsys import", "nsys kernels --json", "nsys ranges --json"], "kernels"
    source = resolve_export(sample, NSYS_FILE)
    db, per_copy = bench.work / "nsys-shipped.db", nsys_kernel_count(source)
    run = _shipped_import(bench, "nsys import", per_copy, unit, source, db)
    original = _tool_json(bench, ["ranges", run], db, "nsys-ranges-shipped")
    problems = sql_reference(bench, source, per_copy, original)
    if problems:
        return bench.refuse(steps, sizes, unit, f"refused: the shipped export's ranges differ from SQL: {problems[:3]}")
    if not bench.import_only:
        bench.time("nsys kernels --json", per_copy, unit, ["kernels", run, "--json"], db, floor=True)
    bench.time("nsys ranges --json", per_copy, unit, ["ranges", run, "--json"], db, floor=True)
    problems = _precheck(bench, lambda p, k: scale_nsys_export(source, p.with_suffix(".sqlite"), k), "nsys", "ranges",
                         lambda o, s, sc: check_ranges(o, s, sc.copies, sc.shift_ns), original)
    if problems:
        return bench.refuse(steps, sizes, unit, f"refused: {PRECHECK_COPIES}-copy export failed the check: {problems[:3]}")
    for n in sizes:
        copies = copies_for(n, per_copy)
        scaling = scale_nsys_export(source, bench.work / f"nsys-{n}.sqlite", copies)
        note = f"{copies} x {per_copy}; export {_mb(scaling.path)} MB built in {scaling.build_s:.1f} s"
        bad = check_nsys_rows(scaling)
        note += f"; rows k x, {PRECHECK_COPIES}-copy pre-check exact"
        if bad:
            bench.refuse(steps, [scaling.kernels], unit, f"refused: export failed the row check: {bad[:3]}")
            continue
        db = bench.work / f"nsys-{n}.db"
        imp = bench.time("nsys import", scaling.kernels, unit, ["import", str(scaling.path)], db, bench.work / "id.txt")
        imp.add_note(note + (f"; database {_mb(db)} MB" if imp.status == "ok" else ""))
        run = _run_id(bench.work / "id.txt") if imp.status == "ok" else ""
        kern = None if bench.import_only else bench.time("nsys kernels --json", scaling.kernels, unit,
                                                         ["kernels", run, "--json"], db, needs=imp)
        out = bench.work / f"nsys-ranges-{n}.json"
        rng = bench.time("nsys ranges --json", scaling.kernels, unit, ["ranges", run, "--json"], db, out, needs=imp)
        queries = [] if bench.import_only else [kern, *query_steps(bench, scaling.kernels, run, db, imp)]
        if bench.report_one:        # the page of the run: one pair, its timeline strip, kernels table, roofline
            queries.append(bench.time(REPORT_ONE_STEP, scaling.kernels, unit,
                                      ["report", run, "--out", str(bench.work / f"report-{n}")], db, needs=imp))
        timed = [imp, rng, *queries]
        if rng.status == "ok":
            bad = check_ranges(original, _json(out), copies, scaling.shift_ns)
            bad += sql_reference(bench, scaling.path, scaling.kernels, _json(out))
            if bad:
                bench.withhold(timed, bad)
            else:
                rng.add_note(f"per-range output exactly {copies}x the shipped export's and the SQL reference's: checked")
        scaling.path.unlink(missing_ok=True)
        db.unlink(missing_ok=True)


REPORT_ONE_STEP = "nsys report (one run)"
QUERY_STEPS = (  # issue 33: what a user asks of a long trace after the import (the diff: the run against itself)
    ("nsys summary --json", ["summary", "{run}", "--json"]),
    ("nsys diff --json", ["diff", "{run}", "{run}", "--json"]),
    ("nsys kernels --json --limit 1000", ["kernels", "{run}", "--json", "--limit", "1000"]),
    ("nsys kernels --ndjson", ["kernels", "{run}", "--ndjson"]),
)


def query_steps(bench: Bench, size: int, run: str, db: Path, imp: Measure) -> list[Measure]:
    """Each of QUERY_STEPS on the imported run (a code without an option fails it: recorded so)."""
    return [bench.time(step, size, "kernels", [a.format(run=run) for a in args], db, needs=imp)
            for step, args in QUERY_STEPS]


def sql_reference(bench: Bench, export: Path, size: int, ranges: Any) -> list[str]:
    """The tool's per-range kernel counts and times against SQLite's own attribution of the same
    export (`scale_check.sql_range_totals`), timed in this process; its problems (none: exact)."""
    import time

    t0 = time.perf_counter()
    reference = sql_range_totals(export)
    wall = round(time.perf_counter() - t0, 2)
    bad = check_against_sql(reference, ranges)
    m = Measure("SQL reference: per-range totals by SQLite alone", size, "kernels", "ok" if not bad else "check failed",
                wall_s=wall, peak_rss_mb=None, note=(f"{len(reference)} ranges, kernel counts and times equal the tool's"
                                                     if not bad else "; ".join(bad[:3])))
    bench.measures.append(m)
    print(f"[scale] {m.step} @ {size}: {m.status} {wall:.1f} s {m.note}", file=sys.stderr, flush=True)
    return bad


def ncu_phase(bench: Bench, sample: Path, sizes: list[int]) -> None:
    """Import, roofline and kernels of ncu CSVs of each size."""
    steps, unit = ["ncu import", "ncu roofline --json", "ncu kernels --json"], "launches"
    source = resolve_export(sample, NCU_FILE)
    db, per_copy = bench.work / "ncu-shipped.db", ncu_launch_count(source)
    run = _shipped_import(bench, "ncu import", per_copy, unit, source, db)
    original = _tool_json(bench, ["kernels", run], db, "ncu-kernels-shipped")
    bench.time("ncu roofline --json", per_copy, unit, ["roofline", run, "--json"], db, floor=True)
    bench.time("ncu kernels --json", per_copy, unit, ["kernels", run, "--json"], db, floor=True)
    problems = _precheck(bench, lambda p, k: scale_ncu_csv(source, p.with_suffix(".csv"), k), "ncu", "kernels",
                         lambda o, s, sc: check_launches(o, s, sc.copies), original)
    if problems:
        return bench.refuse(steps, sizes, unit, f"refused: {PRECHECK_COPIES}-copy CSV failed the check: {problems[:3]}")
    for n in sizes:
        copies = copies_for(n, per_copy)
        scaling = scale_ncu_csv(source, bench.work / f"ncu-{n}.csv", copies)
        db = bench.work / f"ncu-{n}.db"
        imp = bench.time("ncu import", scaling.launches, unit, ["import", str(scaling.path)], db, bench.work / "id.txt")
        run = _run_id(bench.work / "id.txt") if imp.status == "ok" else ""
        imp.add_note(f"{copies} x {per_copy}; CSV {_mb(scaling.path)} MB built in {scaling.build_s:.1f} s; "
                     f"{PRECHECK_COPIES}-copy pre-check exact" + (f"; database {_mb(db)} MB" if imp.status == "ok" else ""))
        roof = bench.time("ncu roofline --json", scaling.launches, unit, ["roofline", run, "--json"], db, needs=imp)
        out = bench.work / f"ncu-kernels-{n}.json"
        kern = bench.time("ncu kernels --json", scaling.launches, unit, ["kernels", run, "--json"], db, out, needs=imp)
        if kern.status == "ok":
            bad = check_launches(original, _json(out), copies)
            if bad:
                bench.withhold([imp, roof, kern], bad)
            else:
                kern.add_note(f"launches and per-variant sums exactly {copies}x the shipped CSV's: checked")
        scaling.path.unlink(missing_ok=True)
        db.unlink(missing_ok=True)


def report_phase(bench: Bench, pages: int) -> None:
    """Import `pages` run folders in one command, then one report of all of them."""
    folders, run_ids, how = report_folders(pages, bench.work / "report-runs")
    db = bench.work / "report.db"
    imp = bench.time("import run folders", pages, "folders", ["import", *map(str, folders)], db,
                     bench.work / "report-ids.txt")
    imp.add_note(how)
    out = bench.work / "report"
    rep = bench.time("report", pages, "pages", ["report", *run_ids, "--out", str(out)], db, needs=imp)
    if rep.status == "ok":
        written = len([p for p in out.glob("*.html") if p.name != "index.html"])
        if written != pages:
            bench.withhold([rep], [f"{written} pages written, expected {pages}"])
        else:
            rep.add_note(f"{written} pages + index checked; {sum(1 for _ in (out / 'img').glob('*'))} images")


def empty_database(path: Path) -> Path:
    """An SQLite file with no tables: `runs` on it is start-up alone (a missing database is an
    error, exit 13, since `runs` stopped creating one)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE _empty (x)")
    conn.execute("DROP TABLE _empty")
    conn.commit()
    conn.close()
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", choices=sorted(SIZES), default="full")
    parser.add_argument("--json", action="store_true", help="print every measurement as JSON instead of a table")
    parser.add_argument("--save-json", type=Path, help="also write the JSON to this file")
    parser.add_argument("--repeat", type=int, default=1, help="time each command this many times: the "
                        "median wall time is reported, with the range (default 1)")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="per step (default 600)")
    parser.add_argument("--max-rss-mb", type=float, default=None, help="per step (default 90%% of the RAM)")
    parser.add_argument("--sample", type=Path, default=DEFAULT_SAMPLE, help="run folder the exports are built from")
    parser.add_argument("--only", choices=["nsys", "ncu", "report"], action="append", help="only these phases")
    parser.add_argument("--code", type=Path, help="time the aisp_prof of this checkout (default: this one's)")
    parser.add_argument("--work-dir", type=Path, help="where exports and databases go (default: a temporary folder)")
    parser.add_argument("--from-json", type=Path, nargs="+", help="measure nothing: print the table of saved "
                        "results (several: side by side, e.g. before and after)")
    parser.add_argument("--names", nargs="+", help="column names for --from-json (default: the file names)")
    parser.add_argument("--targets", action="store_true", help="with --from-json BEFORE AFTER [AFTER2]: issue 33's "
                        "table (measure, target, before, after, each run's load average)")
    parser.add_argument("--nsys-kernels", type=int, nargs="+", help="nsys sizes instead of --sizes' (e.g. 10000000)")
    parser.add_argument("--import-only", action="store_true", help="nsys: time the import and `ranges --json` "
                        "(the checks need it) only, no other query (e.g. --only nsys --import-only "
                        "--nsys-kernels 1000000 3000000 10000000)")
    parser.add_argument("--report-one", action="store_true", help="nsys: also time `report RUN` of each size's "
                        "run, one pair's page (e.g. --only nsys --import-only --report-one --nsys-kernels 1000000)")
    args = parser.parse_args(argv)
    if args.from_json:
        saved = [json.loads(p.read_text()) for p in args.from_json]
        names = args.names or [p.stem for p in args.from_json]
        if args.targets:
            print(targets_table(saved, names))
        else:
            print(markdown(saved[0]) if len(saved) == 1 else compare(saved, names))
        return 0
    code_root(args.code)
    args.sample = args.sample.resolve()          # children run in the timed checkout, not here
    machine = machine_info()
    max_rss = args.max_rss_mb or 0.9 * (machine["ram_gb"] or 8) * 1000
    work = Path(tempfile.mkdtemp(prefix="aisp-scale-", dir=args.work_dir))
    bench = Bench(work, args.max_seconds, max_rss, args.repeat)
    bench.import_only, bench.report_one = args.import_only, args.report_one
    chosen, phases = dict(SIZES[args.sizes]), args.only or ["nsys", "ncu", "report"]
    if args.nsys_kernels:
        chosen["nsys_kernels"] = args.nsys_kernels
    try:
        bench.reference()
        bench.time("start-up: runs on an empty database", 0, "", ["runs"], empty_database(work / "empty.db"))
        if "nsys" in phases:
            nsys_phase(bench, args.sample, chosen["nsys_kernels"])
            bench.reference()
        if "ncu" in phases:
            ncu_phase(bench, args.sample, chosen["ncu_launches"])
            bench.reference()
        if "report" in phases:
            report_phase(bench, chosen["report_pages"])
            bench.reference()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    where = args.sample.resolve()
    result = {"machine": machine, "sizes": args.sizes,
              "sample": str(where.relative_to(ROOT) if where.is_relative_to(ROOT) else where),
              "measures": [asdict(m) for m in bench.measures]}
    if args.save_json:
        args.save_json.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    bad = [m for m in bench.measures if m.status in ("check failed", "refused")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
