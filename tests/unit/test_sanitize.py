"""`aisp-prof sanitize`: the compute-sanitizer command line, its summary parsed from real output,
and the one-line errors without the tool or without a GPU."""
from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner
from repo_paths import FIXTURES

from aisp_prof.cli import cli
from aisp_prof.collect.process import sanitizer as san
from aisp_prof.collect.process.runner import child_command

SANITIZER = FIXTURES / "sanitizer"


def test_the_command_wraps_the_check_child_once_per_tool():
    child = child_command("ch10.x", ["baseline", "cluster"], {"n": 65536}, "sanitize", Path("/tmp/c.json"))
    cmd = san.sanitizer_command("/usr/local/cuda/bin/compute-sanitizer", "racecheck", child)
    assert cmd[:7] == ["/usr/local/cuda/bin/compute-sanitizer", "--tool", "racecheck", "--error-exitcode",
                       str(san.ERROR_EXIT), "--print-limit", str(san.PRINT_LIMIT)]
    assert cmd[7:] == child and "--mode" in child and child[child.index("--mode") + 1] == "sanitize"
    assert child[child.index("--sizes") + 1] == "n=65536"


def test_an_unknown_tool_is_refused():
    try:
        san.sanitizer_command("cs", "leakcheck", [])
    except Exception as exc:                       # UnknownTargetError: exit 2 with one line
        assert "unknown sanitizer tool 'leakcheck'" in str(exc) and exc.exit_code == 2
    else:
        raise AssertionError("leakcheck accepted")


def test_no_sanitizer_is_exit_4_and_no_gpu_is_exit_3(tmp_path):
    res = CliRunner().invoke(cli, ["sanitize", "ch09.fused_l2norm", "--sanitizer", str(tmp_path / "nope")],
                             env={"AISP_SANITIZER": "", "PATH": "/nonexistent"})
    assert res.exit_code == 4 and "compute-sanitizer not found" in res.output
    fake = tmp_path / "compute-sanitizer"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    res = CliRunner().invoke(cli, ["sanitize", "ch09.fused_l2norm", "--sanitizer", str(fake)])
    if os.environ.get("CUDA_VISIBLE_DEVICES") != "" and _have_gpu():
        return                                     # a GPU machine: covered by the GPU run instead
    assert res.exit_code in (3, 9) and res.output.count("\n") == 1, res.output


def _have_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def test_summaries_parsed_from_real_output():
    """Logs from `aisp-prof sanitize` on an H100 (tests/fixtures/sanitizer/README.md)."""
    read = lambda name: (SANITIZER / name).read_text()     # noqa: E731
    assert san.parse_summary(read("ch09.fused_l2norm.memcheck.log")) == (0, 0, [])
    assert san.parse_summary(read("ch09.fused_l2norm.racecheck.log")) == (0, 0, [])   # RACECHECK SUMMARY only
    errors, warnings, reports = san.parse_summary(read("ch09.warp_specialization_producer_consumer.synccheck.log"))
    assert errors == 3936 and warnings == 0
    assert reports[0] == "Barrier error detected. Missing wait." and len(reports) == 5


def test_an_unwritable_log_dir_is_one_line_before_any_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    ran = []
    try:
        san.sanitize_pairs([("pair", ["baseline"])], ("memcheck",), lambda p: {}, Path("cs"), blocker / "logs",
                           ran.append)
    except Exception as exc:
        # OutputError: exit 14, as every other output that cannot be written
        assert type(exc).__name__ == "OutputError" and exc.exit_code == 14
        assert "creating the log folder" in str(exc) and "--log-dir" in str(exc)
    else:
        raise AssertionError("an unwritable log folder was accepted")
    assert ran == []                               # nothing started


def test_failed_driver_entry_point_lookups_are_not_kernel_errors():
    """Real H100 log (tests/fixtures/sanitizer/README.md): cuda-python's bindings ask the 580 driver for
    entry points it lacks; memcheck counts 34 API errors, prints 20. The printed lookups are not errors;
    the 14 it did not print cannot be classified, so they stay errors (the print limit is now 200)."""
    text = (SANITIZER / "ch14.cuda_python.memcheck.log").read_text()
    assert "ERROR SUMMARY: 34 errors" in text and san.entry_point_probes(text) == 20
    assert san.parse_summary(text) == (14, 0, [])
    fully_printed = text.replace("========= ERROR SUMMARY: 14 errors were not printed. Use --print-limit option "
                                 "to adjust the number of printed errors\n", "").replace("34 errors", "20 errors")
    assert san.parse_summary(fully_printed) == (0, 0, [])
    real = fully_printed.replace("ERROR SUMMARY: 20 errors", "ERROR SUMMARY: 21 errors") + \
        "========= Invalid __global__ read of size 4 bytes\n"
    errors, _, reports = san.parse_summary(real)
    assert errors == 1 and reports == ["Invalid __global__ read of size 4 bytes"]
