"""What a profile costs (issue 18): `aisp-prof run PAIR` against `ncu --set full` of the same child.

    python benchmarks/profile_cost.py                                  # both default pairs, 2 repeats
    python benchmarks/profile_cost.py --pairs ch09.fused_l2norm --repeats 3 --compare-bare
    python benchmarks/profile_cost.py --code /path/to/other/checkout --label before
    python benchmarks/profile_cost.py --from-json a.json b.json        # saved measurements as one table

Needs a GPU with ncu and nsys; without one it stops with one line (exit 3). Per pair and repeat,
back to back on the same card, in fresh processes:

* `aisp-prof run PAIR` (its own profiles folder and database in a temporary folder): the wall
  time of the whole command, and run.json's `wall_s` per stage (check, nsys_capture, nsys_export,
  ncu, timing_pN; a run of an older checkout has check and nsys) and its `ncu_passes_per_kernel`.
* `ncu --set full` of the same child: run.json's `commands.ncu` with `--metrics ...` replaced by
  `--set full` (the same NVTX filter, clock control and child; the report and the child's JSON go
  to the temporary folder), the ncu passes per kernel from its "- N passes" lines. Its Inductor
  and Triton caches start empty, as the run's own do (`collect.code.generated.cache_env`), so both
  compile from nothing; `--warm-baseline` also times it again on the caches it just filled,
  the cheapest `ncu --set full` can be.
* `--compare-bare`: one more `aisp-prof run PAIR --no-ncu --no-nsys`, whose CUDA-event medians
  are set beside those timed under nsys (capture range not yet open): they must agree within
  the noise, or nsys's presence leaks into the timing.

Each measurement is appended to benchmarks/results/profile_cost_<hardware key>.json as it
completes (a run cut short keeps what it measured), and the table of everything in that file is
written to profile_cost_<hardware key>.md with the card, the date, the commit and tool versions.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_PAIRS = ("ch09.fused_l2norm", "ch14.graph_break_control_flow")
TARGET_RATIO = 0.8
_PASSES = re.compile(r"- (\d+) passes?")
STAGES = ("check", "nsys_capture", "nsys_export", "nsys", "ncu")


def require_gpu() -> None:
    """One line and exit 3 where there is no GPU, ncu or nsys."""
    sys.path.insert(0, str(ROOT))
    from aisp_prof import tools
    from aisp_prof.errors import ToolNotFoundError

    smi = shutil.which("nvidia-smi")
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True).stdout if smi else ""
    problem = None if "GPU" in listed else "needs an NVIDIA GPU (nvidia-smi lists none here); run it on the GPU machine"
    try:
        tools.find_nsys(None, tools.find_ncu())
    except ToolNotFoundError as exc:
        problem = problem or str(exc)
    if problem:
        print(f"profile_cost: {problem}", file=sys.stderr)
        sys.exit(3)


def child_env(code: Path, cache: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", AISP_KERNELS=str(code / "kernels"),
               PYTHONPATH=os.pathsep.join(p for p in (str(code), os.environ.get("PYTHONPATH", "")) if p))
    if cache is not None:
        env.update(TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"), TRITON_CACHE_DIR=str(cache / "triton"))
    return env


def timed(cmd: list[str], env: dict[str, str], log: Path) -> tuple[int, float, str]:
    """Run in the log's folder: `python -m` puts the working folder first on sys.path, and a
    checkout there would shadow --code."""
    log.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with open(log, "w") as fh:
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=log.parent).returncode
    return rc, time.monotonic() - began, log.read_text(errors="replace")


def aisp_run(pair: str, code: Path, work: Path, *extra: str) -> tuple[dict[str, Any], float]:
    """`aisp-prof run PAIR` in its own folders; (run.json, wall seconds of the command)."""
    profiles = work / "profiles"
    cmd = [sys.executable, "-m", "aisp_prof", "run", pair, "--profiles-dir", str(profiles),
           "--db", str(work / "aisp.db"), "--json", *extra]
    rc, wall, text = timed(cmd, child_env(code), work / "aisp_run.log")
    runs = sorted(p for p in profiles.glob("*") if (p / "run.json").is_file()) if profiles.is_dir() else []
    if rc != 0 or not runs:
        raise RuntimeError(f"aisp-prof run {pair} exited {rc}: {text.strip()[-400:]}")
    return json.loads((runs[-1] / "run.json").read_text()), wall


def full_set_command(ncu_cmd: list[str], report: Path, child_out: Path) -> list[str]:
    """run.json's ncu command with `--set full` for its metric list, the report and the child's
    JSON moved to `report` / `child_out` (the run folder that held them was renamed), and the
    child's wait for the check's release dropped (ncu full runs alone)."""
    cmd, i = [], 0
    while i < len(ncu_cmd):
        arg = ncu_cmd[i]
        if arg == "--metrics":
            cmd += ["--set", "full"]
            i += 2
        elif arg == "-o" and "-o" not in cmd:       # ncu's own -o (the child's flags come later)
            cmd += ["-o", str(report)]
            i += 2
        elif arg == "--out":
            cmd += ["--out", str(child_out)]
            i += 2
        elif arg in ("--wait-for", "--wait-parent"):
            i += 2
        else:
            cmd.append(arg)
            i += 1
    return cmd


def ncu_full(info: dict[str, Any], code: Path, work: Path, warm: bool) -> list[dict[str, Any]]:
    """`ncu --set full` of the run's ncu child on empty compile caches (and again, warm)."""
    cache = work / "full_cache"
    out = []
    for phase in ("cold", "warm") if warm else ("cold",):
        cmd = full_set_command(info["commands"]["ncu"], work / f"full_{phase}", work / f"full_{phase}_child.json")
        rc, wall, text = timed(cmd, child_env(code, cache), work / f"ncu_full_{phase}.log")
        if rc != 0:
            raise RuntimeError(f"ncu --set full exited {rc}: {text.strip()[-400:]}")
        passes = [int(p) for p in _PASSES.findall(text)]
        out.append({"phase": phase, "wall_s": round(wall, 2), "passes_per_kernel": max(passes) if passes else None,
                    "kernels_profiled": len(passes), "command": cmd})
    return out


def measure(pair: str, repeat: int, args: argparse.Namespace) -> dict[str, Any]:
    code = (args.code or ROOT).resolve()
    with tempfile.TemporaryDirectory(prefix="profile_cost_") as tmp:
        work = Path(tmp)
        info, command_wall = aisp_run(pair, code, work / "run")
        row: dict[str, Any] = {
            "pair": pair, "repeat": repeat, "label": args.label, "code": str(code),
            "gpu_name": info.get("gpu", {}).get("gpu_name") or info.get("env", {}).get("gpu_name"),
            "driver_version": info.get("gpu", {}).get("driver_version"), "git_sha": info.get("git_sha"),
            "created_at": info.get("created_at"),
            "versions": {**{k: v.get("version") for k, v in info.get("tools", {}).items()},
                         "torch": info.get("env", {}).get("torch_version"),
                         "triton": info.get("env", {}).get("triton_version")},
            "run_wall_s": info.get("wall_s", {}), "command_wall_s": round(command_wall, 2),
            "ncu_passes_per_kernel": info.get("ncu_passes_per_kernel"),
            "ncu_kernels_profiled": info.get("ncu_kernels_profiled"),
            "timing_median_ns": {v: t.get("median_ns") for v, t in info.get("timing_cuda_events", {}).items()},
        }
        row["ncu_full"] = ncu_full(info, code, work, args.warm_baseline)
        if args.compare_bare:
            bare, _ = aisp_run(pair, code, work / "bare", "--no-ncu", "--no-nsys")
            row["bare_timing_median_ns"] = {v: t.get("median_ns") for v, t in bare.get("timing_cuda_events", {}).items()}
    return row


# ------------------------------------------------------------------------------------ the table


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def _stages(wall: dict[str, Any]) -> str:
    parts = [f"{k} {wall[k]:.1f}" for k in STAGES if k in wall]
    parts += [f"{k} {v:.1f}" for k, v in wall.items() if k.startswith("timing_p")]
    return ", ".join(parts)


def _timing_drift(row: dict[str, Any]) -> str:
    bare, ours = row.get("bare_timing_median_ns") or {}, row.get("timing_median_ns") or {}
    diffs = [f"{v} {100 * (ours[v] / bare[v] - 1):+.1f}%" for v in ours if bare.get(v) and ours.get(v)]
    return ", ".join(diffs) or "-"


def table_row(r: dict[str, Any]) -> str:
    """One measurement as a row of the markdown table."""
    full = {f["phase"]: f for f in r["ncu_full"]}
    cold = full.get("cold", {}).get("wall_s")
    warm = full.get("warm", {}).get("wall_s")
    total = r["run_wall_s"].get("total")
    return (f"| {r['pair']} | {r.get('label') or ''} | {(r.get('git_sha') or '')[:10]} | {r['repeat']} | "
            f"{_stages(r['run_wall_s'])} | {total} | {r['command_wall_s']} | {r['ncu_passes_per_kernel']} | "
            f"{cold} / {warm if warm is not None else '-'} | {full.get('cold', {}).get('passes_per_kernel')} | "
            f"{_ratio(total, cold)} | {_ratio(r['command_wall_s'], cold)} | {_timing_drift(r)} |")


def markdown(rows: list[dict[str, Any]]) -> str:
    first = rows[0]
    versions = ", ".join(f"{k} {v}" for k, v in sorted(first["versions"].items()) if v)
    lines = [f"# What a profile costs: `aisp-prof run` vs `ncu --set full` of the same child",
             "", f"Card: {first['gpu_name']} (driver {first['driver_version']}). Written "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `python benchmarks/profile_cost.py`.",
             f"Tools: {versions}.", "",
             "Collect = run.json `wall_s.total` (the children and exports); command = the whole "
             "`aisp-prof run` (parsing, storing, the summary too). ncu full = `ncu --set full` of the run's ncu "
             "child on empty compile caches, as the run's own start; warm = again on the caches it filled. "
             f"Target (issue 18): collect <= {TARGET_RATIO}x ncu full, same card.", "",
             "| pair | label | commit | repeat | stages (s) | collect s | command s | passes ours | "
             "ncu full s (cold / warm) | passes full | collect / full | command / full | timing vs bare |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [table_row(r) for r in rows]
    lines += ["", "Median collect / ncu full (cold) per pair and label:", ""]
    groups: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        cold = next((f["wall_s"] for f in r["ncu_full"] if f["phase"] == "cold"), None)
        if cold and r["run_wall_s"].get("total"):
            groups.setdefault((r["pair"], r.get("label") or ""), []).append(r["run_wall_s"]["total"] / cold)
    for (pair, label), ratios in sorted(groups.items()):
        median = statistics.median(ratios)
        verdict = "meets" if median <= TARGET_RATIO else "misses"
        lines.append(f"- {pair} {label}: {median:.2f}x over {len(ratios)} repeat(s), {verdict} the {TARGET_RATIO}x target")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", nargs="+", default=list(DEFAULT_PAIRS))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--code", type=Path, help="another checkout whose aisp_prof to time (default: this one)")
    ap.add_argument("--label", default="", help="a label for these rows (e.g. before / after)")
    ap.add_argument("--warm-baseline", action="store_true", help="also time ncu --set full on warm caches")
    ap.add_argument("--compare-bare", action="store_true", help="also time the variants with no profiler")
    ap.add_argument("--from-json", nargs="+", type=Path, help="only write the table of saved measurements")
    ap.add_argument("--out-dir", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.from_json:
        rows = [r for path in args.from_json for r in json.loads(path.read_text())]
        print(markdown(rows), end="")
        return 0
    require_gpu()
    from aisp_prof.naming import hardware_key

    stem = args.out_dir / "profile_cost_unknown"
    for repeat in range(1, args.repeats + 1):
        for pair in args.pairs:
            print(f"profile_cost: {pair} repeat {repeat}/{args.repeats}", file=sys.stderr, flush=True)
            row = measure(pair, repeat, args)
            stem = args.out_dir / f"profile_cost_{hardware_key(row['gpu_name'])}"
            saved = json.loads(stem.with_suffix(".json").read_text()) if stem.with_suffix(".json").is_file() else []
            stem.with_suffix(".json").write_text(json.dumps(saved + [row], indent=1) + "\n")
            stem.with_suffix(".md").write_text(markdown(saved + [row]))
            print(table_row(row), file=sys.stderr, flush=True)
    if stem.with_suffix(".md").is_file():
        print(stem.with_suffix(".md").read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
