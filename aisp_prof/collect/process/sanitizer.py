"""compute-sanitizer over a pair's correctness check: is the CUDA code free of out-of-bounds
accesses (memcheck), shared-memory races (racecheck) and illegal barriers (synccheck)?

A new kernel that passes its numeric check can still race (ch09's producer/consumer pair did:
its check passed until a larger size exposed it), so a pair is run once per tool, at a small
size (the sanitizers slow kernels down 10-100x), in the same child process `aisp-prof run`
uses, in its `sanitize` mode (the check, no timing). The command line is a pure function and
the tool's summary is parsed from its text, so both are tested without a GPU.
"""
from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ...errors import OutputError, UnknownTargetError, os_error_message
from ...pairs import KernelPair
from .runner import child_command

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEFAULT_TOOLS = ("memcheck", "racecheck", "synccheck")
ERROR_EXIT = 86                                   # what the sanitizer exits with when it found errors
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_REPORT = re.compile(r"^=+ (?!ERROR SUMMARY|RACECHECK SUMMARY|COMPUTE-SANITIZER)(\S.*)$")
# A library asking the driver for an entry point it does not have (cuda-python's bindings resolve
# every driver function at import, newer than the driver): memcheck counts each failed lookup as an
# API error, but no kernel and no memory is involved.
_ENTRY_POINT_PROBE = re.compile(r"Program hit CUDA_ERROR_\w+ \(error \d+\) due to .* on CUDA API call to "
                                r"cuGetProcAddress(_v\d+)?\.")
_NOT_PRINTED = re.compile(r"ERROR SUMMARY: (\d+) errors? (was|were) not printed")
PRINT_LIMIT = 200                                  # enough to see (and classify) every probe above


@dataclass
class SanitizerResult:
    """One tool over one pair's check: what it found, and whether the check itself passed."""

    pair: str
    tool: str
    errors: int | None                   # None: no summary line (the tool or the process died)
    warnings: int = 0
    check_passed: bool | None = None
    exit_code: int = 0
    wall_s: float = 0.0
    first_reports: list[str] = field(default_factory=list)
    log: str | None = None

    @property
    def ok(self) -> bool:
        return self.errors == 0 and self.check_passed is True

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def sanitizer_command(sanitizer: Path | str, tool: str, child: list[str]) -> list[str]:
    """compute-sanitizer's command line around the child; `tool` one of TOOLS."""
    if tool not in TOOLS:
        raise UnknownTargetError(f"unknown sanitizer tool {tool!r}; choose from {', '.join(TOOLS)}")
    return [str(sanitizer), "--tool", tool, "--error-exitcode", str(ERROR_EXIT), "--print-limit", str(PRINT_LIMIT),
            *child]


def parse_summary(text: str) -> tuple[int | None, int, list[str]]:
    """(errors, warnings, the first report lines) from the sanitizer's output. racecheck ends
    with a RACECHECK SUMMARY (hazards, errors, warnings); the other tools with an ERROR SUMMARY."""
    race = _RACE_SUMMARY.search(text)
    summary = _SUMMARY.search(text)
    if race:
        errors: int | None = int(race.group(2))
    else:
        errors = int(summary.group(1)) if summary else None
    warnings = int(race.group(3)) if race else 0
    reports = [r for r in (m.group(1).strip() for m in map(_REPORT.match, text.splitlines()) if m)
               if not _ENTRY_POINT_PROBE.search(r)][:5]
    probes = entry_point_probes(text)
    if errors is not None and probes:
        errors = max(errors - probes, 0)
    return errors, warnings, reports


def entry_point_probes(text: str) -> int:
    """Printed failed `cuGetProcAddress` lookups: not counted as errors. Only printed reports can
    be classified, so errors beyond the print limit stay errors."""
    return sum(1 for line in text.splitlines() if _ENTRY_POINT_PROBE.search(line))


def sanitize_one(sanitizer: Path, pair: KernelPair, tool: str, sizes: dict[str, int], variants: list[str],
                 log_dir: Path | None = None) -> SanitizerResult:
    """Run the pair's check under one tool; the child's JSON says whether the check passed."""
    with tempfile.TemporaryDirectory(prefix="aisp-sanitize-") as tmp:
        out = Path(tmp) / "check.json"
        cmd = sanitizer_command(sanitizer, tool, child_command(pair, variants, sizes, "sanitize", out))
        started = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        text = proc.stdout + proc.stderr
        errors, warnings, reports = parse_summary(text)
        report = json.loads(out.read_text()) if out.is_file() else {}
    check = (report.get("check") or {}).get("passed") if report.get("ok") else False
    result = SanitizerResult(pair.name, tool, errors, warnings, check, proc.returncode, round(time.time() - started, 1),
                             reports or ([report["error"]] if report.get("error") else []))
    if log_dir is not None:
        path = log_dir / f"{pair.name}.{tool}.log"
        try:
            path.write_text(" ".join(cmd) + "\n\n" + text)
        except OSError as exc:
            raise OutputError(os_error_message(exc, f"writing the log {path} (--log-dir)")) from exc
        result.log = str(path)
    return result


def sanitize_pairs(pairs: list[tuple[KernelPair, list[str]]], tools: tuple[str, ...],
                   sizes_of: Callable[[KernelPair], dict[str, int]], sanitizer: Path, log_dir: Path | None = None,
                   progress: Callable[[str], None] = lambda m: None) -> list[SanitizerResult]:
    """Every (pair, the variants that run here) under every tool, one process each, at `sizes_of`.
    The log folder is made first, so an unwritable one fails before any GPU work."""
    if log_dir is not None:
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(os_error_message(exc, f"creating the log folder {log_dir} (--log-dir)")) from exc
    results = []
    for pair, variants in pairs:
        for tool in tools:
            progress(f"{pair.name}: {tool}")
            results.append(sanitize_one(sanitizer, pair, tool, sizes_of(pair), variants, log_dir))
    return results
