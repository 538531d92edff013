"""Errors a user can act on, each with its own process exit code.

The library raises these; the CLI turns them into one line on stderr and `exit_code`, so a CI
job can tell "no GPU here" from "the optimized kernel is wrong" without parsing text.
"""
from __future__ import annotations


class AispError(Exception):
    """Base class. `exit_code` is what `aisp-prof` exits with."""

    exit_code = 1


class UnknownTargetError(AispError):
    """A pair or run name that does not exist (the message suggests close names)."""

    exit_code = 2


class NoGpuError(AispError):
    """A command that needs a CUDA GPU ran where there is none."""

    exit_code = 3


class ToolNotFoundError(AispError):
    """ncu, nsys or nvcc could not be found."""

    exit_code = 4


class CounterPermissionError(AispError):
    """ncu answered ERR_NVGPUCTRPERM: the user may not read GPU performance counters."""

    exit_code = 5


class ExportParseError(AispError):
    """An ncu/nsys export is truncated, corrupt or not what was expected."""

    exit_code = 6


class CorrectnessError(AispError):
    """An optimized variant's output does not match the baseline or the float64 reference."""

    exit_code = 7


class ProfilerFailedError(AispError):
    """A profiler or the profiled child process failed for another reason."""

    exit_code = 8


class RequirementError(AispError):
    """The pair cannot run on this machine (e.g. it needs sm_100, or triton is missing)."""

    exit_code = 9


class BuildError(AispError):
    """nvcc failed to compile a pair's CUDA source."""

    exit_code = 10


class RegressionError(AispError):
    """`bench run` found a pair slower than its recorded expectation allows."""

    exit_code = 11


class SizesError(AispError):
    """A `--sizes` value the pair does not take (unknown key, not a positive integer)."""

    exit_code = 12
