"""Profiler command lines and tool discovery, without a GPU."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from aisp_prof import tools
from aisp_prof.collect import commands
from aisp_prof.naming import nvtx_path
from aisp_prof.errors import ToolNotFoundError
from aisp_prof.parse.metrics.table import METRICS, metric_names


def test_ncu_command_profiles_only_the_pair_ranges_and_leaves_clocks_alone(tmp_path):
    child = ["python3", "-m", "aisp_prof.collect.process.child", "--pair", "ch09.x"]
    ranges = [nvtx_path("ch09.x", v) for v in ("baseline", "cuda")]
    cmd = commands.ncu_command(Path("/opt/ncu"), child, ranges, metric_names(), tmp_path / "ncu.ncu-rep")
    assert cmd[:3] == ["/opt/ncu", "--clock-control", "none"]
    assert "--set" not in cmd
    includes = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--nvtx-include"]
    assert includes == ["aisp/ch09.x/baseline/", "aisp/ch09.x/cuda/"]   # trailing / = push/pop range
    assert cmd[cmd.index("--metrics") + 1].split(",") == metric_names()
    assert cmd[cmd.index("-o") + 1] == str(tmp_path / "ncu")            # ncu appends .ncu-rep itself
    assert cmd[-len(child):] == child


def test_ncu_export_is_raw_page_in_base_units():
    cmd = commands.ncu_export_command(Path("ncu"), Path("r.ncu-rep"))
    assert cmd == ["ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"]


def test_nsys_command_traces_graph_nodes(tmp_path):
    cmd = commands.nsys_command(Path("nsys"), ["python3", "x.py"], tmp_path / "n.nsys-rep")
    assert cmd[:2] == ["nsys", "profile"]
    assert "--trace=cuda,nvtx" in cmd and "--cuda-graph-trace=node" in cmd
    assert "--capture-range=cudaProfilerApi" in cmd      # collects only the child's capture range
    assert cmd[-2:] == ["python3", "x.py"]
    export = commands.nsys_export_command(Path("nsys"), tmp_path / "n.nsys-rep", tmp_path / "n.sqlite")
    assert export[:4] == ["nsys", "export", "--type", "sqlite"]


def test_metric_table_is_consistent():
    raws = [m.raw for m in METRICS]
    cols = [m.column for m in METRICS]
    assert len(set(raws)) == len(raws) and len(set(cols)) == len(cols)
    assert "gpu__time_duration.sum" in raws
    # every numeric column names its unit or is a percentage/ratio/count by its suffix
    assert all(m.unit for m in METRICS)


def _fake_tool(path: Path, version: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'NVIDIA Tool Version {version} (build 1)'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_find_tools_honours_explicit_and_env_then_reads_version(tmp_path, monkeypatch):
    ncu = _fake_tool(tmp_path / "a" / "ncu", "2025.3.1.0")
    nsys = _fake_tool(tmp_path / "b" / "nsys", "2025.3.1.0")
    monkeypatch.setenv("AISP_NSYS", str(nsys))
    assert tools.find_ncu(str(ncu)) == ncu
    assert tools.find_nsys() == nsys
    assert tools.tool_version(ncu) == "2025.3.1.0"


def test_nsys_found_beside_ncu(tmp_path, monkeypatch):
    root = tmp_path / "nsight-compute" / "2025.3.1"
    ncu = _fake_tool(root / "ncu", "2025.3.1.0")
    nsys = _fake_tool(root / "host" / "target-linux-x64" / "nsys", "2025.3.1.0")
    monkeypatch.delenv("AISP_NSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(tools, "_sorted_glob", lambda pattern: [str(nsys)] if str(root) in pattern else [])
    assert tools.find_nsys(ncu=ncu) == nsys


def test_missing_tools_say_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("AISP_NCU", raising=False)
    monkeypatch.delenv("AISP_NSYS", raising=False)
    monkeypatch.setattr(tools, "_sorted_glob", lambda pattern: [])
    monkeypatch.setattr(os.path, "isfile", lambda p: False)
    with pytest.raises(ToolNotFoundError, match="AISP_NCU"):
        tools.find_ncu()
    with pytest.raises(ToolNotFoundError, match="AISP_NSYS"):
        tools.find_nsys()
