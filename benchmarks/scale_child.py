"""One aisp-prof command measured in a fresh child process: wall time and the child's own peak RSS.

Every measurement is its own `python3 -m aisp_prof ...` process, so nothing one step imported,
cached or allocated is charged to the next, and the peak resident set is that of the child alone:
`os.wait4` returns the rusage of exactly the process it reaps (RUSAGE_CHILDREN would report the
largest child of the whole harness). The children run the code of this checkout: its root is
put first on PYTHONPATH, ahead of any installed copy.

A child that runs past its limit is killed (its own process group, by its id) and reported as
such, never silently dropped.

The code timed is this checkout's unless `code_root` names another (`scale.py --code DIR`): the
harness and the samples stay the same while the timed aisp_prof changes, so a before and an
after can be measured back to back from one copy of the harness.
"""
from __future__ import annotations

import os
import platform
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_code = {"root": ROOT}      # the checkout whose aisp_prof the children import


def code_root(path: Path | None = None) -> Path:
    """The checkout the children run (set it by passing a path: a folder holding aisp_prof/)."""
    if path is not None:
        if not (Path(path) / "aisp_prof" / "__init__.py").is_file():
            raise FileNotFoundError(f"{path}: no aisp_prof/ package there")
        _code["root"] = Path(path).resolve()
    return _code["root"]
BYTES_PER_MB = 1_000_000


@dataclass(frozen=True)
class ChildResult:
    """How one command went: exit status, wall time, the child's peak RSS, the end of stderr, and
    the CPU time it used (user + system: other processes on a shared machine inflate it less than
    the wall time)."""

    argv: list[str]
    returncode: int
    wall_s: float
    peak_rss_mb: float
    killed_at_limit: bool
    stderr_tail: str
    cpu_s: float = 0.0          # user + system CPU of the child and the children it reaped (drawing workers)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.killed_at_limit


def child_env() -> dict[str, str]:
    """The environment of every child: the timed checkout first on the path (children also run in
    it: `python -m` puts the working folder ahead of PYTHONPATH), charts without a display."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(code_root()), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("MPLBACKEND", "Agg")
    return env


# A fixed amount of CPU work that is not aisp-prof (pure Python, then SQLite inserts and a sort): timed
# beside the steps, it shows how fast the machine itself was at that moment. On a shared 2-core VM the
# same command can take 30% longer an hour later; compare two runs only where their references agree.
REFERENCE_WORK = """
import sqlite3
total = sum(i * i % 7 for i in range(6_000_000))
conn = sqlite3.connect(":memory:")
conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
conn.executemany("INSERT INTO t VALUES (?, ?)", ((i * 7919 % 1_000_003, str(i)) for i in range(1_000_000)))
conn.execute("SELECT COUNT(*) FROM (SELECT a FROM t ORDER BY b)").fetchone()
"""


def run_reference(limit_s: float, log_dir: Path) -> ChildResult:
    """REFERENCE_WORK in its own child, measured like every step."""
    return run_child([sys.executable, "-c", REFERENCE_WORK], None, limit_s, log_dir)


def run_tool(args: list[str], db: Path, stdout: Path | None, limit_s: float, log_dir: Path) -> ChildResult:
    """`python3 -m aisp_prof ARGS --db DB`, stdout to a file (or /dev/null), killed after limit_s."""
    return run_child([sys.executable, "-m", "aisp_prof", *args, "--db", str(db)], stdout, limit_s, log_dir)


def run_child(argv: list[str], stdout: Path | None, limit_s: float, log_dir: Path) -> ChildResult:
    """Run argv with stdout to a file (or /dev/null); its wall time and own peak RSS; killed after limit_s."""
    log_dir.mkdir(parents=True, exist_ok=True)
    err_path = log_dir / f"stderr-{time.monotonic_ns()}.txt"
    with open(err_path, "wb") as err, (open(stdout, "wb") if stdout else open(os.devnull, "wb")) as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=child_env(), cwd=code_root(), start_new_session=True)
        killed = threading.Event()

        def kill() -> None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)     # the child's own group: it and anything it started
                killed.set()
            except ProcessLookupError:                  # it finished just now
                pass

        timer = threading.Timer(limit_s, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall_s = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here; keep Popen from waiting again
    tail = err_path.read_text(errors="replace")[-2000:]
    return ChildResult(argv, proc.returncode, wall_s, usage.ru_maxrss * 1024 / BYTES_PER_MB, killed.is_set(), tail,
                       usage.ru_utime + usage.ru_stime)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(code_root()), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _meminfo_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) * 1024 / 1e9, 1)
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, object]:
    """Where and on what code the numbers were taken: they mean nothing without it."""
    code = subprocess.run([sys.executable, "-c", "import aisp_prof; print(aisp_prof.__file__)"], capture_output=True,
                          text=True, env=child_env(), cwd=code_root(), check=False).stdout.strip()
    dirty = _git("status", "--porcelain", "--", "aisp_prof")
    return {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git("rev-parse", "HEAD"),
        "aisp_prof_commit": _git("log", "-1", "--format=%H", "--", "aisp_prof"),   # the last change to the timed code
        "aisp_prof_changes_uncommitted": bool(dirty and dirty != "unknown"),
        "code_root": str(code_root()),
        "aisp_prof_imported_from": code,
        "cpu_cores": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "ram_gb": _meminfo_gb(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "pandas": _version("pandas"),
        "numpy": _version("numpy"),
        "sqlite_utils": _version("sqlite-utils"),
        "sqlite": sqlite3.sqlite_version,
        "matplotlib": _version("matplotlib"),
        "click": _version("click"),
    }
