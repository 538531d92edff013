"""Errors a user can act on, each with its own process exit code.

The library raises these; the CLI turns them into one line on stderr and `exit_code`, so a CI
job can tell "no GPU here" from "the optimized kernel is wrong" without parsing text. The README's
"Exit codes" table lists them; Ctrl-C exits INTERRUPTED_EXIT_CODE (130). An OSError or SQLite
failure the library did not wrap still ends as one line with OutputError's or StorageError's code.
"""
from __future__ import annotations

import errno


class AispError(Exception):
    """Base class. `exit_code` is what `aisp-prof` exits with."""

    exit_code = 1


class InstallError(AispError):
    """aisp-prof's shipped files (kernels/, profiles/samples/) are not where the package looks."""


class NotRecordedError(AispError):
    """`bench record` or `bench run --update-expectations` refused to record a run (throttled, no
    timed samples, a failed check, or other code than the pair's module now)."""


class ChartError(AispError):
    """A report chart could not be drawn (the plotting library raised); nothing is left behind."""


class UnknownTargetError(AispError):
    """A pair or run name that does not exist (the message suggests close names), or another name
    that is not one of a fixed list (a calibration probe, a compute-sanitizer tool)."""

    exit_code = 2


class ArgumentError(AispError):
    """An argument or option of the wrong type, out of range, or at odds with another (`--node-rank 3
    --nnodes 2`), or a run the command does not apply to (`ranks` of a one-rank run): the caller's
    mistake, said before anything runs (as click's usage errors, exit 2)."""

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


class StorageError(AispError):
    """The run database could not be opened, read or written: missing (a query never creates
    one), read-only, on a full disk, locked by other writers past the retries, not a database, or
    not an aisp-prof one (someone's nsys export, a newer schema: refused before anything is written)."""

    exit_code = 13


class NoKernelError(RuntimeError):
    """A backend has no kernel for this shape (raised by a pair's helper before it asks the backend,
    e.g. cuSPARSELt and a dense operand off its 16-byte alignment). Not an AispError and not a wrong
    result: the correctness check records the variant as skipped at these sizes, with this message."""


class MissingDatabaseError(StorageError):
    """A command that only reads found no database at --db (it creates none)."""


class OutputError(AispError):
    """A file or folder could not be written (report, chart, run folder): an unwritable or
    read-only place, a full disk, a name too long. Nothing half-written is left behind."""

    exit_code = 14


class RunExistsError(AispError):
    """A run id that is already stored (writing it again would overwrite a run), or, by
    `same_content`, the content of an import already stored as `run_id` (labelled `label`)."""

    def __init__(self, run_id: str, where: object, same_content: bool = False, label: str | None = None):
        labelled = f" (label {label!r})" if label else ""
        super().__init__(f"run {run_id}{labelled} is already in {where}: the same content" if same_content
                         else f"run {run_id} is already in {where}")
        self.run_id = run_id


INTERRUPTED_EXIT_CODE = 130          # Ctrl-C, as shells report a process stopped by SIGINT

_OS_ADVICE = {
    errno.ENOSPC: "the disk is full: free some space and run again",
    errno.EDQUOT: "the disk quota is exhausted: free some space and run again",
    errno.EROFS: "the file system is read-only: choose a writable place",
    errno.EACCES: "permission denied: choose a place you may write to, or fix its permissions",
    errno.EPERM: "not permitted: choose a place you may write to, or fix its permissions",
    errno.ENAMETOOLONG: "the file name is too long: choose a shorter one",
    errno.ENOTDIR: "a part of the path is a file, not a folder: choose another place",
    errno.ENOENT: "no such file or folder, or no new file may be made there: choose another place",
    errno.EISDIR: "it is a folder, not a file",
    errno.EEXIST: "a file of that name is in the way of a folder: choose another place",
}


def os_error_message(exc: OSError, what: str, name_file: bool = True) -> str:
    """One line for an OSError while `what` ("writing the report to reports/x"): what failed,
    why in plain words, and what to do. `name_file=False` leaves out the file the OS names (a
    temporary one the user never asked for)."""
    advice = _OS_ADVICE.get(exc.errno or 0) or exc.strerror or str(exc)
    named = name_file and exc.filename and str(exc.filename) not in what
    where = f" ({shorten(exc.filename)})" if named else ""
    return f"{what} failed{where}: {advice}"


def shorten(text: object, width: int = 160) -> str:
    """A path for a one-line message: a 5000-character name keeps its head and tail."""
    text = str(text)
    return text if len(text) <= width else f"{text[: width // 2]}...{text[-width // 3:]}"
