"""Profile a few calibration probes with ncu's own roofline sections AND the project's metric list
in one ncu run, so a test can compare aisp-prof's roofline numbers with ncu's computation from
the same capture. Also asks for the tensor-core peaks with and without sparsity, to settle
which of ncu's tensor peaks are 2:4-sparse rates.

    python3 scripts/roofline_sections.py WORKDIR [probe,probe,...]

Writes WORKDIR/sections_raw.csv (raw page, base units), WORKDIR/sections_details.csv (details
page), WORKDIR/sections_ncu.log, WORKDIR/sections_cmd.json (the exact ncu command line).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aisp_prof.collect import commands, tools  # noqa: E402
from aisp_prof.naming import nvtx_path  # noqa: E402
from aisp_prof.parse.metric_table import DEFAULT_GROUPS, metric_names  # noqa: E402

PROBES = "fma_fp32,copy_dram,stream_l2,gemm_bf16,gemm_fp8,gemm_fp64"


def section_ids(folder: Path) -> list[str]:
    ids = []
    for f in sorted(folder.glob("*Roofline*.section")):
        m = re.search(r'^Identifier:\s*"([^"]+)"', f.read_text(), re.M)
        if m:
            ids.append(m.group(1))
    return ids


def sparsity_metrics(query: Path) -> list[str]:
    """Peak (no replay cost) of every tensor-path metric with 'sparsity' in its name, and the
    bf16 counters, so one run shows the dense and sparse peaks side by side."""
    if not query.exists():
        return []
    names = sorted({m.group(1) for m in re.finditer(r"^\s*(sm__\S*ops_path_tensor\S*)", query.read_text(), re.M)})
    out = []
    for n in names:
        base = n.split(".")[0]
        if "sparsity" in base:
            out.append(f"{base}.sum.peak_sustained")
            if "bf16" in base or "fp16" in base:
                out.append(f"{base}.sum")
    return list(dict.fromkeys(out))[:48]


def run(work: Path, probes: str, extra: list[str], sections: list[str]) -> tuple[int, str, list[str]]:
    ncu = tools.find_ncu(None)
    child = [sys.executable, "-m", "aisp_prof.calibrate.child", "--mode", "profile", "--out",
             str(work / "sections_child.json"), "--probes", probes, "--warmup", "1", "--repeats", "1"]
    metrics = metric_names(DEFAULT_GROUPS) + [m for m in extra if m not in metric_names(DEFAULT_GROUPS)]
    cmd = commands.ncu_command(ncu, child, [nvtx_path("calibrate", p) for p in probes.split(",")],
                               metrics, work / "sections.ncu-rep")
    at = cmd.index("--metrics")
    for s in reversed(sections):
        cmd[at:at] = ["--section", s]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr, cmd


def main() -> int:
    work = Path(sys.argv[1])
    probes = sys.argv[2] if len(sys.argv) > 2 else PROBES
    sections = section_ids(work / "sections")
    extra = sparsity_metrics(work / "query_metrics.txt")
    print("sections:", sections)
    print("extra metrics:", len(extra), extra[:12])
    rc, log, cmd = run(work, probes, extra, sections)
    if rc != 0 and extra:
        print("ncu failed with the sparsity metrics; retrying without them:", log.strip().splitlines()[-3:])
        (work / "sections_ncu_failed.log").write_text(log)
        rc, log, cmd = run(work, probes, [], sections)
    (work / "sections_ncu.log").write_text(log)
    (work / "sections_cmd.json").write_text(json.dumps(cmd, indent=1))
    print("ncu rc", rc, "passes:", sorted(set(re.findall(r"- (\d+) passes", log))))
    if rc != 0:
        print(log[-2000:])
        return rc
    ncu = tools.find_ncu(None)
    rep = work / "sections.ncu-rep"
    with open(work / "sections_raw.csv", "w") as fh:
        subprocess.run(commands.ncu_export_command(ncu, rep), stdout=fh, check=False)
    with open(work / "sections_details.csv", "w") as fh:
        subprocess.run([str(ncu), "--import", str(rep), "--csv", "--page", "details", "--print-units", "base",
                        "--print-details", "all"], stdout=fh, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
