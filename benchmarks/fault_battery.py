"""Issue 31's fault battery: every case of "nothing lost, nothing foreign touched" run as a user
would, on copies of the shipped samples in a temporary folder, no GPU.

    python benchmarks/fault_battery.py [--keep DIR]

Each case calls `python -m aisp_prof ...` (this checkout) in a folder of its own and prints one
line: the case, the exit code (and the one wanted), what the database holds after it, what was
left behind (partial folders, .tmp files, empty folders, a foreign file changed), and ok or FAIL
with why. Exits 1 if any case failed: something lost, something foreign touched, an exit code
other than the documented one. `benchmarks/results/fault_battery.txt` keeps the latest output.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "profiles"
L2 = PROFILES / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"
L2_H100 = PROFILES / "samples_h100" / "20261126T045251Z-ch09.fused_l2norm-ba93"
GRAPH = PROFILES / "samples_h100_ch14" / "20261126T144407Z-ch14.graph_break_control_flow-65b4"
QUANT = PROFILES / "samples_h100_ch14" / "20261126T151027Z-ch14.gpu_quantization-fdf0"
FP8 = PROFILES / "samples" / "20261126T024238Z-ch09.cublaslt_gemm-a129"
JOB = PROFILES / "samples_h100x2_ch14" / "20261126T174545Z-ch14.quantized_allreduce-cbe0"
# `python -c NO_TORCH args...`: the CLI with torch and triton unimportable (find_spec raises too), and
# an error if either was imported anyway (tests/integration/test_without_torch.py and test_small_faults.py use it)
NO_TORCH = """
import sys
class NoKernelsExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'triton'):
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
sys.meta_path.insert(0, NoKernelsExtra())
from aisp_prof.cli import cli
try:
    cli(sys.argv[1:], prog_name='aisp-prof')
finally:
    assert not any(m.split('.')[0] in ('torch', 'triton') for m in sys.modules), 'torch was imported'
"""


@dataclass
class Result:
    case: str
    rc: int | None
    want: str
    stored: str
    left: list[str]
    why: str = ""          # empty: ok

    def line(self) -> str:
        left = ", ".join(self.left) or "nothing"
        verdict = "ok" if not self.why else f"FAIL: {self.why}"
        return f"{self.case:<38} exit {self.rc!s:>4} (want {self.want:<5}) stored {self.stored:<12} left {left}  {verdict}"


def aisp(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: int = 600,
         code: str | None = None) -> subprocess.CompletedProcess:
    """`aisp-prof ARGS` as a user runs it, from `cwd` (or `python -c code ARGS`)."""
    cmd = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "aisp_prof", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", **(env or {})})


def runs(db: Path) -> list[tuple[str, str]]:
    """(run_id, status) of every stored run, read only; [] without a database."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT run_id, status FROM runs").fetchall()
    except sqlite3.DatabaseError:
        return []


def stored(db: Path) -> str:
    return "no db" if not db.exists() else f"{len(runs(db))} run(s)"


def left_behind(folder: Path, expected: set[str]) -> list[str]:
    """What is in `folder` (recursively) that no case should leave: partial folders, .tmp
    files, empty folders, and any top-level entry not `expected`."""
    out = []
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if ".partial" in p.name or p.name.endswith(".tmp") or (p.is_dir() and not any(p.iterdir())):
            out.append(rel)
        elif p.parent == folder and p.name not in expected and not p.name.endswith(("-wal", "-shm")):
            out.append(rel)
    return out


def digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for base in paths:
        for p in sorted([base, *base.rglob("*")] if base.is_dir() else [base]):
            if p.is_file():
                h.update(str(p).encode() + p.read_bytes())
    return h.hexdigest()


def gunzip(src: Path, dest: Path) -> Path:
    with gzip.open(src, "rb") as f, open(dest, "wb") as out:
        shutil.copyfileobj(f, out)
    return dest


def case(name: str, want: str, res: subprocess.CompletedProcess | None, db: Path, folder: Path,
         expected: set[str], checks: list[tuple[bool, str]]) -> Result:
    rc = None if res is None else res.returncode
    why = [text for good, text in checks if not good]
    if res is not None and "Traceback" in res.stderr:
        why.append("a traceback")
    if res is not None and str(rc) not in want.split("|"):
        why.append(f"exit {rc}: {res.stderr.strip().splitlines()[-1][:90] if res.stderr.strip() else ''}")
    left = left_behind(folder, expected)
    if left:
        why.append("left behind")
    return Result(name, rc, want, stored(db), left, "; ".join(why))


def fresh(work: Path, name: str, base_db: Path | None = None) -> tuple[Path, Path]:
    """A folder of its own for a case, with a copy of the samples' database when asked."""
    folder = work / name
    folder.mkdir()
    db = folder / "a.db"
    if base_db is not None:
        with sqlite3.connect(base_db) as src, sqlite3.connect(db) as dst:
            src.backup(dst)
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    return folder, db


def item1_foreign_db(work: Path, base: Path) -> list[Result]:
    folder, _ = fresh(work, "1-foreign-db")
    mine = gunzip(L2 / "nsys.sqlite.gz", folder / "my_nsys_export.sqlite")
    before = digest(mine)
    res = aisp("import", str(L2), "--db", str(mine), cwd=folder)
    return [case("1 import --db a foreign SQLite", "13", res, folder / "none.db", folder, {"my_nsys_export.sqlite"},
                 [(digest(mine) == before, "the foreign file changed"),
                  (not Path(f"{mine}-wal").exists(), "a -wal beside it")])]


def _killed_report(db: Path, out: Path, sig: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AISP_REPORT_WORKERS": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "aisp_prof", "report", "--db", str(db), "--out", str(out)],
                            cwd=out.parent, env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if len(process_group(proc.pid)) > 1 and list(out.parent.glob(f".{out.name}.partial-*")):
            break
        time.sleep(0.05)
    os.kill(proc.pid, sig)
    stdout, stderr = proc.communicate(timeout=120)
    for _ in range(100):
        if not process_group(proc.pid):
            break
        time.sleep(0.1)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr + "".join(
        f"\nworker {pid} alive" for pid in process_group(proc.pid)))


def process_group(pgid: int) -> set[int]:
    """The live (not zombie) processes of process group `pgid` (tests/integration/test_killed_report.py too)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.add(int(stat.parent.name))
    return found


def item2_killed_report(work: Path, base: Path) -> list[Result]:
    out = []
    for sig, want in ((signal.SIGKILL, str(-signal.SIGKILL)), (signal.SIGTERM, "130")):
        folder, db = fresh(work, f"2-report-{sig.name}", base)
        res = _killed_report(db, folder / "rep", sig)
        alive = "worker" in res.stderr.split("\n")[-1]
        after = [p.name for p in folder.iterdir() if ".partial" in p.name]
        nxt = aisp("report", "--db", str(db), "--out", str(folder / "rep"), cwd=folder)
        out.append(case(f"2 {sig.name} report, then report again", want, res, db, folder, {"a.db", "rep"},
                        [(not alive, "a worker outlived the report"), (nxt.returncode == 0, "the next report failed"),
                         (sig == signal.SIGKILL or not after, f"{after} after SIGTERM")]))
    return out


def item3_reimports(work: Path, base: Path) -> list[Result]:
    out = []
    folder, db = fresh(work, "3-reimport")
    csv = shutil.copy(L2 / "ncu_raw.csv.gz", folder / "ncu_raw.csv.gz")
    nsys = gunzip(L2_H100 / "nsys.sqlite.gz", folder / "h100.sqlite")
    for label, args in (("a run folder", [str(L2)]), ("an ncu CSV", [str(csv)]), ("an nsys .sqlite", [str(nsys)]),
                        ("a --job", ["--job", "j1", str(JOB / "nsys.sqlite.gz"), str(JOB / "nsys.rank1.sqlite.gz")])):
        first = aisp("import", *args, "--db", str(db), cwd=folder)
        count = len(runs(db))
        again = aisp("import", *args, "--db", str(db), cwd=folder)
        out.append(case(f"3 import {label} twice", "0", again, db, folder, {"a.db", "ncu_raw.csv.gz", "h100.sqlite"},
                        [(first.returncode == 0, f"first import exit {first.returncode}"),
                         (len(runs(db)) == count, f"stored twice ({count} -> {len(runs(db))} runs)")]))
    return out


def item4_incomplete(work: Path, base: Path) -> list[Result]:
    folder, db = fresh(work, "4-incomplete")
    half = folder / L2.name
    half.mkdir()
    shutil.copy(L2 / "run.json", half / "run.json")
    res = aisp("import", str(half), "--db", str(db), cwd=folder)
    shutil.rmtree(half)
    shutil.copytree(L2, half)
    full = aisp("import", str(half), "--db", str(db), cwd=folder)
    ok = [r for r in runs(db) if r[1] == "ok"]
    has_rm = aisp("rm", "--help", cwd=folder).returncode == 0
    return [case("4 import run.json alone, then the whole", "6|0", res, db, folder, {"a.db", L2.name},
                 [(not (res.returncode == 0 and ok and len(runs(db)) == 1 and full.returncode == 0
                        and "already" in full.stdout + full.stderr), "the complete folder was skipped"),
                  (len(ok) == 1, f"{len(ok)} complete run(s) stored"), (has_rm, "no `aisp-prof rm`")])]


def item5_code(work: Path, base: Path) -> list[Result]:
    folder, db = fresh(work, "5-code")
    generated = sorted(p.parent for p in PROFILES.glob("samples*/*/generated"))
    aisp("import", *map(str, generated), str(L2), "--db", str(db), cwd=folder)
    before, db_before = digest(*generated, L2), digest(db)
    codes = []
    for run in [*generated, L2]:
        for show in ("ptx", "sass", "ttgir", "source"):
            codes.append(aisp("code", run.name, "--show", show, "--all", "--db", str(db), cwd=folder))
    # the README's example as the README gives it: over the H100 ch14 samples alone (the H200 run of the pair,
    # newer, kept no listing, so over every sample its latest run has none to show)
    h100 = folder / "h100.db"
    aisp("import", *map(str, sorted(PROFILES.glob("samples_h100_ch14/*/"))), "--db", str(h100), cwd=folder)
    readme = aisp("code", "ch14.graph_break_control_flow", "--kernel", "triton_red_fused_sum_3", "--show", "sass",
                  "--db", str(h100), cwd=folder)
    bad = sorted({r.returncode for r in codes} - {0, 6})
    return [case(f"5 code --show x4 on {len(generated) + 1} samples", "0", readme, db, folder, {"a.db", "h100.db"},
                 [(not bad, f"exit {bad}"), (digest(*generated, L2) == before, "a run folder changed"),
                  (digest(db) == db_before, "the database changed"),
                  (all(len(r.stderr.strip().splitlines()) <= 1 for r in codes if r.returncode), "not one line"),
                  ("Function : triton_red_fused_sum_3" in readme.stdout, "README example printed no SASS")])]


def item6_job(work: Path, base: Path) -> list[Result]:
    folder, db = fresh(work, "6-job")
    imp = aisp("import", "--job", "myjob", str(JOB / "nsys.sqlite.gz"), str(JOB / "nsys.rank1.sqlite.gz"),
               "--db", str(db), cwd=folder)
    ranks = aisp("ranks", "myjob", "--db", str(db), cwd=folder)
    count = len(runs(db))
    mixed = aisp("import", "--job", "mixed", str(L2 / "nsys.sqlite.gz"), str(JOB / "nsys.rank1.sqlite.gz"),
                 "--db", str(db), cwd=folder)
    return [case("6 import --job NAME, then ranks NAME", "0", ranks, db, folder, {"a.db"},
                 [(imp.returncode == 0, f"import exit {imp.returncode}")]),
            case("6 a job mixing RANK and no RANK", "6", mixed, db, folder, {"a.db"},
                 [(len(runs(db)) == count, "stored")])]


def item7_speedup(work: Path, base: Path) -> list[Result]:
    folder, db = fresh(work, "7-speedup")
    aisp("import", str(QUANT), str(FP8), "--db", str(db), cwd=folder)
    quant = aisp("summary", QUANT.name, "--json", "--db", str(db), cwd=folder)
    fp8 = aisp("summary", FP8.name, "--json", "--db", str(db), cwd=folder)
    rows = json.loads(quant.stdout)["summary"] if quant.returncode == 0 else []
    consistent = bool(rows) and all(
        r.get("speedup_time_ns") and abs(r["speedup_baseline_time_ns"] / r["speedup_time_ns"]
                                         - r["speedup_vs_baseline"]) < 1e-6 * r["speedup_vs_baseline"]
        for r in rows if r.get("speedup_vs_baseline"))
    doc = json.loads(fp8.stdout) if fp8.returncode == 0 else {}
    warned = any(w.get("code") == "above_roof" for w in doc.get("warnings", []))
    stated = "Headroom of cublaslt_fp8: none" in " ".join(doc.get("verdict", []))
    return [case("7 speedup beside its own times", "0", quant, db, folder, {"a.db"},
                 [(consistent, "a speedup without the times it is the ratio of")]),
            case("7 above the roof: a warning, not a finding", "0", fp8, db, folder, {"a.db"},
                 [(warned, "summary --json has no above_roof warning"), (not stated, "'Headroom: none' stated")])]


def item8_widths(work: Path, base: Path) -> list[Result]:
    folder, db = fresh(work, "8-widths")
    aisp("import", str(L2), str(L2_H100), str(JOB), str(GRAPH), "--db", str(db), cwd=folder)
    out = []
    for args in (["diff", L2.name, L2_H100.name], ["ranks", JOB.name], ["code", GRAPH.name]):
        for columns in (80, 120):
            res = aisp(*args, "--db", str(db), cwd=folder, env={"COLUMNS": str(columns)})
            widest = max((len(line) for line in res.stdout.splitlines()), default=0)
            out.append(case(f"8 {args[0]} at COLUMNS={columns}: {widest} wide", "0", res, db, folder, {"a.db"},
                            [(widest <= columns, f"{widest} columns")]))
    return out


def _tiny_disk(folder: Path) -> Path | None:
    """A real 1 MB tmpfs, full (root only), or None."""
    mnt = folder / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode:
        mnt.rmdir()
        return None
    try:
        with open(mnt / "filler", "wb", buffering=0) as f:     # full: every block taken
            while True:
                f.write(b"x" * 4096)
    except OSError:
        pass
    return mnt


def item9_full_disk(work: Path, base: Path) -> list[Result]:
    folder, db = fresh(work, "9-full-disk", base)
    aisp("import", str(L2_H100), "--db", str(db), cwd=folder)
    mnt = _tiny_disk(folder)
    if mnt is None:
        return [Result("9 full disk (no tmpfs here: skipped)", None, "-", "-", [])]
    try:
        out = []
        for name, want, args in (
                ("9 full disk: diff --html", "14", ["diff", L2.name, L2_H100.name, "--db", str(db), "--html",
                                                    str(mnt / "pages" / "d.html")]),
                ("9 full disk: new", "14", ["new", "mine.relu", "--dir", str(mnt / "pairs")]),
                ("9 full disk: first import", "13", ["import", str(L2), "--db", str(mnt / "new.db")])):
            res = aisp(*args, cwd=folder)
            out.append(case(name, want, res, mnt / "new.db", mnt, {"filler"}, []))
        return out
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        mnt.rmdir()


def item9_small(work: Path, base: Path) -> list[Result]:
    folder, db = fresh(work, "9-small", base)
    aisp("import", str(L2_H100), "--db", str(db), cwd=folder)
    typo = aisp("run", "ch09.fused_l2nrom", cwd=folder, code=NO_TORCH)
    aisp("new", "mine.relu", "--dir", "mine", cwd=folder)
    own = aisp("run", "mine/relu.py", cwd=folder, code=NO_TORCH)
    note = aisp(cwd=folder, code="from aisp_prof.analyze.roofline.ceilings import LEVEL_NOTES; "
                                 "print(LEVEL_NOTES['l1'])")
    page = aisp("diff", L2.name, L2_H100.name, "--db", str(db), "--html", "d.html", cwd=folder)
    html = (folder / "d.html").read_text() if (folder / "d.html").exists() else ""
    shas = [json.loads((r / "run.json").read_text())["git_sha"] for r in (L2, L2_H100)]
    warn = aisp("kernels", L2.name, "--json", "--db", str(db), cwd=folder,
                env={"PYTHONWARNINGS": "error::DeprecationWarning"})
    expected = {"a.db", "mine", "d.html"}
    return [case("9 light install: a typo'd target", "2", typo, db, folder, expected,
                 [("did you mean ch09.fused_l2norm" in typo.stderr, "no suggestion")]),
            case("9 light install: own pair, outside repo", "9", own, db, folder, expected,
                 [("compute_bound.py" not in own.stderr, "names compute_bound.py"),
                  ("-e '.[kernels]'" not in own.stderr, "suggests -e '.[kernels]' outside the checkout")]),
            case("9 the L1 note's ~87 has a unit", "0", note, db, folder, expected,
                 [("~87 B/cycle/SM" in note.stdout, "~87 without a unit")]),
            case("9 SHAs of 40 and 7 shown alike", "0", page, db, folder, expected,
                 [(all(f">{s[:7]}</code>" in html for s in shas), f"{[len(s) for s in shas]}-character SHAs differ")]),
            case("9 no DeprecationWarning of our own", "0", warn, db, folder, expected, [])]


ITEMS: list[Callable[[Path, Path], list[Result]]] = [
    item1_foreign_db, item2_killed_report, item3_reimports, item4_incomplete, item5_code, item6_job,
    item7_speedup, item8_widths, item9_full_disk, item9_small]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="work in this (new) folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="aisp-fault-battery-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    base = work / "samples.db"
    made = aisp("import", *map(str, sorted(p for p in (PROFILES / "samples").iterdir() if p.is_dir())),
                "--db", str(base), cwd=work)
    if made.returncode:
        print(f"could not import the samples: {made.stderr.strip()}", file=sys.stderr)
        return 2
    failed = 0
    for item in ITEMS:
        try:
            results = item(work, base)
        except Exception as exc:  # noqa: BLE001 - the battery reports a case that broke and goes on
            results = [Result(item.__name__, None, "-", "-", [], f"the case itself broke: {exc!r}"[:200])]
        for r in results:
            print(r.line(), flush=True)
            failed += bool(r.why)
    print(f"{failed} case(s) failed; {time.monotonic() - started:.0f} s; work folder {work}"
          + ("" if args.keep else " (removed)"))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
