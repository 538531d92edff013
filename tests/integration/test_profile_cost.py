"""One check process under nsys (issue 18, "a profile that costs less than ncu --set full"):
the command lines, the child's order (check and timing before cudaProfilerStart), and the
runner with fake nsys and a fake child, with and without nsys. No GPU."""
from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from repo_paths import ROOT

from aisp_prof.collect import commands
from aisp_prof.collect.process import child, runner
from aisp_prof.collect.process.steps import StepContext
from aisp_prof.errors import ProfilerFailedError
from aisp_prof.naming import CHECK_JSON, NSYS_CHILD_JSON, NSYS_SQLITE, RUN_JSON
from aisp_prof.pairs import find


def test_nsys_command_captures_only_the_profiler_api_range(tmp_path):
    child_cmd = ["python3", "-m", "aisp_prof.collect.process.child", "--mode", "check"]
    cmd = commands.nsys_command(Path("/opt/nsys"), child_cmd, tmp_path / "nsys.nsys-rep")
    assert cmd[:2] == ["/opt/nsys", "profile"]
    assert "--capture-range=cudaProfilerApi" in cmd and "--capture-range-end=stop" in cmd   # not stop-shutdown
    assert {"--trace=cuda,nvtx", "--cuda-graph-trace=node", "--sample=none", "--cpuctxsw=none"} <= set(cmd)
    assert cmd[cmd.index("-o") + 1] == str(tmp_path / "nsys")
    assert cmd[-len(child_cmd):] == child_cmd


def test_the_check_child_asks_for_the_capture_only_under_nsys(tmp_path):
    bare = runner.child_command("ch09.x", ["baseline"], {"n": 1}, "check", tmp_path / CHECK_JSON)
    assert "--nsys-iterations" not in bare
    folded = runner.child_command("ch09.x", ["baseline"], {"n": 1}, "check", tmp_path / CHECK_JSON,
                                  "--nsys-iterations", "5", "--nsys-out", str(tmp_path / NSYS_CHILD_JSON))
    assert folded[folded.index("--nsys-iterations") + 1] == "5" and folded[folded.index("--mode") + 1] == "check"


# --------------------------------------------------------------------------- the child's order


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    """The child's main() with the GPU parts replaced by recorders: returns the list of what ran."""
    import torch

    from aisp_prof.collect.correctness import check
    from aisp_prof.collect.timing import timer as timing

    calls: list[str] = []
    passed = {"value": True}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for name in ("synchronize", "empty_cache"):
        monkeypatch.setattr(torch.cuda, name, lambda *a, **k: None)
    monkeypatch.setattr(timing, "l2_flush_bytes", lambda: 0)
    monkeypatch.setattr(child, "software_env", lambda: {})

    def fake_check(pair, sizes, device, variants):
        calls.append("check")
        ok = passed["value"]
        return SimpleNamespace(passed=ok, skipped_variants={}, to_dict=lambda: {"passed": ok, "checks": []})

    def fake_timing(*args, **kwargs):
        calls.append("timing")
        return {"timing": {"baseline": {"median_ns": 1.0}}, "samples": []}

    def start():
        assert (tmp_path / CHECK_JSON).is_file(), "the check's report is written before the capture opens"
        calls.append("cudaProfilerStart")

    monkeypatch.setattr(check, "check_pair", fake_check)
    monkeypatch.setattr(child, "run_timing", fake_timing)
    monkeypatch.setattr(child, "run_profile", lambda pair, sizes, variants, warmup, iterations: calls.append(
        "profile") or {"variants": variants, "iterations": iterations, "warmup": warmup})
    monkeypatch.setattr(child, "_profiler", lambda: (start, lambda: calls.append("cudaProfilerStop")))
    return SimpleNamespace(calls=calls, passed=passed)


def _main(tmp_path, *extra):
    return child.main(["--pair", "ch09.fused_l2norm", "--variants", "baseline", "--mode", "check",
                       "--out", str(tmp_path / CHECK_JSON), *extra])


@pytest.mark.slow
def test_check_and_timing_run_before_the_capture_opens(recorded, tmp_path):
    assert _main(tmp_path, "--nsys-iterations", "5", "--nsys-out", str(tmp_path / NSYS_CHILD_JSON)) == 0
    assert recorded.calls == ["check", "timing", "cudaProfilerStart", "profile", "cudaProfilerStop"]
    check = json.loads((tmp_path / CHECK_JSON).read_text())
    assert check["ok"] and check["check"]["passed"] and "capture_started_at" not in check   # as before
    capture = json.loads((tmp_path / NSYS_CHILD_JSON).read_text())
    assert capture["ok"] and capture["iterations"] == 5 and capture["warmup"] == 3
    assert capture["capture_started_at"] > 0 and capture["variants"] == ["baseline"]


@pytest.mark.slow
def test_no_capture_without_nsys_iterations_or_after_a_failed_check(recorded, tmp_path):
    assert _main(tmp_path) == 0
    assert recorded.calls == ["check", "timing"] and not (tmp_path / NSYS_CHILD_JSON).exists()
    recorded.calls.clear()
    recorded.passed["value"] = False
    assert _main(tmp_path, "--nsys-iterations", "5") == 0
    assert recorded.calls == ["check"] and not (tmp_path / NSYS_CHILD_JSON).exists()


# --------------------------------------------------------------------- the runner, fake tools

FAKE_NSYS = """#!/bin/sh
# a stand-in for nsys: --version; profile ... -o OUT CHILD... runs CHILD, then writes OUT.nsys-rep;
# export ... -o SQLITE REP writes SQLITE
case "$1" in
  --version) echo "NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0"; exit 0;;
  profile) shift; out=""
    while [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift 2; break;; *) shift;; esac; done
    "$@"; rc=$?; echo "fake nsys report" > "$out.nsys-rep"; exit $rc;;
  export) while [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift 2;; *) shift;; esac; done
    sleep "${FAKE_EXPORT_S:-0}"; echo "fake sqlite" > "$out"; exit 0;;
esac
exit 9
"""

FAKE_NCU = """#!/bin/sh
# a stand-in for ncu: --version; --import REP ... prints a CSV; else OPTIONS... -o OUT -f CHILD... runs CHILD,
# writes OUT.ncu-rep and one "N passes" line
case "$1" in
  --version) echo "Version 2025.3.1.0 (build 1)"; exit 0;;
  --import) echo '"ID","Kernel Name"'; exit 0;;
esac
out=""
while [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift 2;; -f) shift; break;; *) shift;; esac; done
echo "==PROF== Profiling kernel - 14 passes"
"$@"; rc=$?; echo "fake ncu report" > "$out.ncu-rep"; exit $rc
"""

FAKE_CHILD = """
import argparse, json, os, time
from pathlib import Path
started = time.time()
ap = argparse.ArgumentParser()
for flag in ("--pair", "--variants", "--sizes", "--mode", "--repeats", "--budget-s", "--floor-rounds", "--process",
             "--nsys-out"):
    ap.add_argument(flag)
ap.add_argument("--out", type=Path)
ap.add_argument("--nsys-iterations", type=int, default=0)
ap.add_argument("--references", action="store_true")
ap.add_argument("--fresh-compile-cache", action="store_true")
ap.add_argument("--kinds", default="gpu,latency,steady")
ap.add_argument("--release", type=Path)
ap.add_argument("--wait-for", type=Path)
ap.add_argument("--wait-parent", type=int, default=0)
args = ap.parse_args()
passed = "{passed}" == "True"
if args.mode == "profile":
    while args.wait_for is not None and not args.wait_for.exists():
        time.sleep(0.01)
    args.out.write_text(json.dumps({{"ok": True, "started": started, "gpu_from": time.time(),
                                     "wait_parent": args.wait_parent}}))
    raise SystemExit(0)
time.sleep({check_s})
if os.environ.get("FAKE_LEAVE_CACHE"):      # a process killed after its report: its empty cache stays
    (args.out.parent / "aisp-compile-left").mkdir(exist_ok=True)
args.out.write_text(json.dumps({{"ok": True, "check": {{"passed": passed, "checks": []}}, "env": {{}},
                                 "timing": {{}}, "samples": [], "sensor": {{"sm_clock_max_mhz": 1980.0}}}}))
if args.nsys_iterations and passed:
    time.sleep(0.05)
    began = time.time()
    time.sleep(0.05)
    Path(args.nsys_out).write_text(json.dumps({{"ok": True, "iterations": args.nsys_iterations,
                                                "capture_started_at": began}}))
if args.release is not None and passed:      # the time first: a child may see the release at once
    Path(str(args.release) + ".checked_at").write_text(str(time.time()))
    args.release.write_text(str(time.time()))
"""


def _collect(tmp_path, monkeypatch, with_nsys: bool, passed: bool = True, module: str = "fake_child",
             ncu: Path | None = None, export_s: float = 0, overlap_ncu: bool = False, check_s: float = 0,
             timing: runner.TimingOptions | None = None, leave_cache: bool = False) -> dict:
    tools_dir = tmp_path / "tools"
    tools_dir.mkdir(exist_ok=True)
    for name, text in (("nsys", FAKE_NSYS), ("ncu", FAKE_NCU)):
        (tools_dir / name).write_text(text)
        (tools_dir / name).chmod((tools_dir / name).stat().st_mode | stat.S_IEXEC)
    nsys = tools_dir / "nsys"
    (tools_dir / "fake_child.py").write_text(textwrap.dedent(FAKE_CHILD.format(passed=passed, check_s=check_s)))
    monkeypatch.setattr(runner, "CHILD_MODULE", module)
    for var in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    folder = tmp_path / "run"
    folder.mkdir()
    pair = find("ch09.fused_l2norm")
    ctx = StepContext(folder, {"gpu": {}, "wall_s": {}, "commands": {}, "tools": {}},
                      env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tools_dir), "FAKE_EXPORT_S": str(export_s),
                           **({"FAKE_LEAVE_CACHE": "1"} if leave_cache else {})})
    plan = runner._Plan(pair, ["baseline"], dict(pair.sizes), ncu, nsys if with_nsys else None)
    opts = runner.RunOptions(pair=pair, nsys_iterations=4, overlap_ncu=overlap_ncu,
                             **({"timing": timing} if timing else {}))
    runner.collect_into(ctx, plan, opts)
    return json.loads((folder / RUN_JSON).read_text())


@pytest.mark.slow
def test_with_nsys_one_process_checks_then_captures_and_run_json_splits_its_time(tmp_path, monkeypatch):
    info = _collect(tmp_path, monkeypatch, with_nsys=True)
    cmd = info["commands"]["check"]
    assert Path(cmd[0]).name == "nsys" and "--capture-range=cudaProfilerApi" in cmd
    assert cmd[cmd.index("--nsys-iterations") + 1] == "4" and sys.executable in cmd
    assert {"check", "nsys_capture", "nsys_export", "total"} <= set(info["wall_s"]) and "nsys" not in info["wall_s"]
    assert info["wall_s"]["nsys_capture"] >= 0.04 and info["status"] == "ok"
    assert info["tools"]["nsys"]["version"] == "2025.3.1.90"
    folder = tmp_path / "run"
    assert (folder / NSYS_SQLITE).is_file() and (folder / CHECK_JSON).is_file()
    assert json.loads((folder / NSYS_CHILD_JSON).read_text())["iterations"] == 4


@pytest.mark.slow
def test_without_nsys_the_check_runs_bare_as_before(tmp_path, monkeypatch):
    info = _collect(tmp_path, monkeypatch, with_nsys=False)
    cmd = info["commands"]["check"]
    assert cmd[0] == sys.executable and "--nsys-iterations" not in cmd
    assert set(info["wall_s"]) == {"check", "total"} and "nsys" not in info["tools"]
    assert not (tmp_path / "run" / NSYS_SQLITE).exists() and info["status"] == "ok"


@pytest.mark.slow
def test_a_failed_check_under_nsys_exports_nothing(tmp_path, monkeypatch):
    info = _collect(tmp_path, monkeypatch, with_nsys=True, passed=False)
    assert info["status"] == "failed_check" and not (tmp_path / "run" / NSYS_SQLITE).exists()
    assert "nsys_export" not in info["commands"]


@pytest.mark.slow
def test_nsys_that_cannot_start_the_child_is_a_profiler_error(tmp_path, monkeypatch):
    with pytest.raises(ProfilerFailedError, match="nsys exited 1"):
        _collect(tmp_path, monkeypatch, with_nsys=True, module="no_such_module_here")


# ------------------------------------------------------------------------ the benchmark


def _benchmark():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import profile_cost

    return profile_cost


def test_benchmark_swaps_the_metric_list_for_the_full_set(tmp_path):
    bench = _benchmark()
    ncu_cmd = ["/opt/ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "aisp/p/baseline/",
               "--metrics", "a,b", "-o", "/gone/.partial-x/ncu", "-f", "/py", "-m", "aisp_prof.collect.process.child",
               "--pair", "p", "--mode", "profile", "--out", "/gone/.partial-x/ncu_child.json"]
    cmd = bench.full_set_command(ncu_cmd + ["--wait-for", "/gone/.partial-x/.gpu_released", "--wait-parent", "7"],
                                 tmp_path / "full", tmp_path / "child.json")
    assert "--wait-for" not in cmd and "--wait-parent" not in cmd and "7" not in cmd
    assert cmd[cmd.index("--set") + 1] == "full" and "--metrics" not in cmd and "a,b" not in cmd
    assert cmd[cmd.index("-o") + 1] == str(tmp_path / "full") and cmd[-1] == str(tmp_path / "child.json")
    assert cmd[:6] == ncu_cmd[:6] and cmd[cmd.index("/py"):-1] == ncu_cmd[ncu_cmd.index("/py"):-1]


def test_benchmark_table_gives_the_ratio_and_the_verdict():
    bench = _benchmark()
    row = {"pair": "ch09.fused_l2norm", "repeat": 1, "label": "after", "git_sha": "abc", "gpu_name": "NVIDIA H100",
           "driver_version": "580", "versions": {"ncu": "2025.3.1.0"}, "command_wall_s": 20.0,
           "run_wall_s": {"check": 9.0, "nsys_capture": 2.0, "nsys_export": 1.0, "ncu": 4.0, "total": 16.0},
           "ncu_passes_per_kernel": 14, "ncu_full": [{"phase": "cold", "wall_s": 25.0, "passes_per_kernel": 38}],
           "timing_median_ns": {"baseline": 101.0}, "bare_timing_median_ns": {"baseline": 100.0}}
    text = bench.markdown([row])
    assert "| 0.64x | 0.80x | baseline +1.0% |" in text and "meets the 0.8x target" in text
    assert "check 9.0, nsys_capture 2.0, nsys_export 1.0, ncu 4.0" in text


def test_benchmark_without_a_gpu_stops_with_one_line(tmp_path):
    import subprocess

    script = ROOT / "benchmarks" / "profile_cost.py"
    proc = subprocess.run([sys.executable, str(script), "--out-dir", str(tmp_path)], capture_output=True, text=True,
                          env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("profile_cost: ")
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_the_nsys_export_runs_beside_the_ncu_step(tmp_path, monkeypatch):
    seen = {}

    def ncu_step(ctx, ncu, child, report, ranges, metrics):
        seen["sqlite_during_ncu"] = (ctx.folder / NSYS_SQLITE).exists()
        seen["export_pending"] = "nsys_export" not in ctx.info["wall_s"]
        return {}

    monkeypatch.setattr(runner, "ncu_step", ncu_step)
    info = _collect(tmp_path, monkeypatch, with_nsys=True, ncu=Path("ncu"), export_s=0.5)
    assert seen == {"sqlite_during_ncu": False, "export_pending": True}
    assert (tmp_path / "run" / NSYS_SQLITE).is_file() and info["wall_s"]["nsys_export"] >= 0.4


@pytest.mark.slow
def test_a_failing_ncu_step_stops_the_background_export(tmp_path, monkeypatch):
    def ncu_step(*args, **kwargs):
        raise ProfilerFailedError("ncu exited 1")

    monkeypatch.setattr(runner, "ncu_step", ncu_step)
    with pytest.raises(ProfilerFailedError, match="ncu exited 1"):
        _collect(tmp_path, monkeypatch, with_nsys=True, ncu=Path("ncu"), export_s=30)
    assert not (tmp_path / "run" / NSYS_SQLITE).exists()


# ------------------------------------------------- ncu started beside the check (issue 18)

@pytest.mark.slow
def test_ncu_starts_beside_the_check_and_touches_the_gpu_only_after_it(tmp_path, monkeypatch):
    """The ncu process and its child start with the check (start-up overlapped), the child passes
    its wait only once the check process released the GPU, and run.json counts ncu's time from
    the release; the release marker does not stay in the run folder."""
    for with_nsys in (True, False):
        run = tmp_path / ("nsys" if with_nsys else "bare")
        run.mkdir()
        info = _collect(run, monkeypatch, with_nsys=with_nsys, ncu=run / "tools" / "ncu", overlap_ncu=True,
                        check_s=0.5)
        folder = run / "run"
        child = json.loads((folder / "ncu_child.json").read_text())
        released = float((folder / ".gpu_released.checked_at").read_text())
        assert child["started"] < released - 0.3                 # started while the check still ran
        assert child["gpu_from"] >= released                      # waited for the release
        assert child["wait_parent"] == os.getpid()
        assert info["status"] == "ok" and info["ncu_passes_per_kernel"] == 14
        assert info["wall_s"]["ncu_startup_overlapped"] >= 0.3 and "ncu" in info["wall_s"]
        cmd = info["commands"]["ncu"]
        assert cmd[cmd.index("--wait-for") + 1] == str(folder / ".gpu_released")
        check = info["commands"]["check"]
        assert check[check.index("--release") + 1] == str(folder / ".gpu_released")
        assert not (folder / ".gpu_released").exists() and (folder / "ncu.ncu-rep.gz").is_file()
        assert (folder / "ncu_raw.csv").read_text().startswith('"ID"')


@pytest.mark.slow
def test_a_failed_check_stops_the_waiting_ncu_and_keeps_nothing_of_it(tmp_path, monkeypatch):
    info = _collect(tmp_path, monkeypatch, with_nsys=True, passed=False, ncu=tmp_path / "tools" / "ncu",
                    overlap_ncu=True, check_s=0.2)
    folder = tmp_path / "run"
    assert info["status"] == "failed_check" and "ncu" not in info["tools"] and "ncu" not in info["wall_s"]
    assert not (folder / "ncu.log").exists() and not (folder / "ncu_child.json").exists()
    assert not (folder / ".gpu_released").exists()


@pytest.mark.slow
def test_a_crashing_check_stops_the_waiting_ncu(tmp_path, monkeypatch):
    started = []
    real_start = runner.start_ncu_early

    def spy(*args, **kwargs):
        started.append(real_start(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(runner, "start_ncu_early", spy)
    with pytest.raises(ProfilerFailedError):
        _collect(tmp_path, monkeypatch, with_nsys=True, module="no_such_module_here",
                 ncu=tmp_path / "tools" / "ncu", overlap_ncu=True)
    (early,) = started
    assert all(proc.poll() is not None for proc in early.procs)      # killed, not left waiting forever
    assert not (tmp_path / "run" / ".gpu_released").exists()


@pytest.mark.slow
def test_no_early_ncu_where_more_timing_processes_follow_the_check(tmp_path, monkeypatch):
    info = _collect(tmp_path, monkeypatch, with_nsys=False, ncu=tmp_path / "tools" / "ncu", overlap_ncu=True,
                    timing=runner.TimingOptions(processes=2, max_processes=2))
    assert "--wait-for" not in info["commands"]["ncu"] and "--release" not in info["commands"]["check"]
    assert "ncu_startup_overlapped" not in info["wall_s"] and info["timing_processes"] == 2


@pytest.mark.slow
def test_the_gate_s_chase_hears_the_check_s_maximum_sm_clock(tmp_path, monkeypatch):
    """It leaves out throttled samples as the verdict does (analyze.gate.rules.Chase)."""
    asked = []
    more = lambda samples, clock_mhz=None: asked.append(clock_mhz) or len(asked) < 2     # noqa: E731
    info = _collect(tmp_path, monkeypatch, with_nsys=False,
                    timing=runner.TimingOptions(processes=1, max_processes=3, more=more))
    assert asked == [1980.0, 1980.0] and info["timing_processes"] == 2


@pytest.mark.slow
def test_a_gate_s_further_timing_process_compiles_anew_and_its_first_does_not(tmp_path, monkeypatch):
    """A confirming process must be a new draw of the compiler's choices (bench.runner.BenchOptions.timing)."""
    info = _collect(tmp_path, monkeypatch, with_nsys=False,
                    timing=runner.TimingOptions(processes=2, max_processes=2, fresh_further_caches=True))
    assert "--fresh-compile-cache" not in info["commands"]["check"]
    assert "--fresh-compile-cache" in info["commands"]["timing_p1"] and info["timing_processes"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("passed", [True, False])
def test_a_killed_process_s_empty_cache_is_not_stored_with_the_run(tmp_path, monkeypatch, passed):
    """A check or timing process killed after it wrote its report cannot remove its empty compile cache:
    the collection does, before the folder is stored, whether the check passed or failed."""
    info = _collect(tmp_path, monkeypatch, with_nsys=False, passed=passed, leave_cache=True,
                    timing=runner.TimingOptions(processes=2, max_processes=2, fresh_further_caches=True))
    assert info["status"] == ("ok" if passed else "failed_check")
    assert not list((tmp_path / "run").glob("aisp-compile-*"))


def test_the_waiting_child_gives_up_when_its_run_is_gone(tmp_path):
    import subprocess

    from aisp_prof.collect.process import child

    gone = subprocess.Popen(["true"])
    gone.wait()
    with pytest.raises(ProfilerFailedError, match=f"pid {gone.pid}"):
        child.wait_for_release(tmp_path / "never", gone.pid, poll_s=0.001)
    (tmp_path / "here").write_text("x")
    child.wait_for_release(tmp_path / "here", os.getpid())            # returns at once
