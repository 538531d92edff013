"""What every command shares: the error-to-exit-code group, shared options, JSON output."""
from __future__ import annotations

import contextlib
import errno
import json
import math
import shutil
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import click

from ..arguments import INT64_MAX
from ..errors import INTERRUPTED_EXIT_CODE, AispError, OutputError, StorageError, os_error_message, shorten
from ..values import to_python


class AispGroup(click.Group):
    """Turns AispError into `aisp-prof: error: ...` on stderr and the error's own exit code.

    What the library did not turn into an AispError still ends in one line: an OS failure
    (OutputError's exit code), a SQLite one (StorageError's), and Ctrl-C exits 130 ("interrupted";
    click alone prints "Aborted!" and exits 1). Partial outputs are removed by the code that
    wrote them, which sees the KeyboardInterrupt first. Anything else (a malformed input the
    parsers did not foresee, a bug, running out of memory) is one line and exit 1 too, naming the
    exception; `aisp-prof -v ...` lets it through with its traceback, for a bug report."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return self._invoke_known(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except MemoryError:
            if ctx.params.get("verbose"):
                raise
            fail(ctx, "out of memory: give it a smaller input or more memory (-v prints where it ran out)", 1)
        except Exception as exc:                 # noqa: BLE001 - the last line of defence: never a traceback
            if ctx.params.get("verbose") or (isinstance(exc, OSError) and exc.errno == errno.EPIPE):
                raise
            text = (str(exc).strip().splitlines() or [""])[0][:300]
            fail(ctx, f"unexpected {type(exc).__name__}{': ' + text if text else ''} (a malformed input or a bug; "
                      "`aisp-prof -v ...` prints the traceback to report it)", 1)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        """The subcommand; `--json` before one that prints no JSON is a usage error, as after it (it was ignored)."""
        name, command, rest = super().resolve_command(ctx, args)
        if ctx.meta.get(JSON_KEY) and command is not None and not isinstance(command, click.Group) and not any(
                "--json" in getattr(p, "opts", ()) for p in command.params):
            raise click.UsageError(f"--json: `aisp-prof {name}` has no JSON output", ctx)
        return name, command, rest

    def _invoke_known(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AispError as exc:
            fail(ctx, str(exc), exc.exit_code)
        except KeyboardInterrupt:
            click.echo("aisp-prof: interrupted", err=True)
            ctx.exit(INTERRUPTED_EXIT_CODE)
        except OSError as exc:
            if exc.errno == errno.EPIPE:         # `aisp-prof kernels --json | head`: click exits quietly
                raise
            fail(ctx, os_error_message(exc, "a file operation"), OutputError.exit_code)
        except sqlite3.DatabaseError as exc:
            if not isinstance(exc, sqlite3.OperationalError) and type(exc) is not sqlite3.DatabaseError:
                raise                                # a bug (a value SQLite cannot bind), not the file
            fail(ctx, f"the run database failed ({exc}): check --db, free space and permissions",
                 StorageError.exit_code)


class Terminated:
    """What `terminate_as_interrupt` yields: `check()` raises KeyboardInterrupt once SIGTERM came;
    after `settle()` a SIGTERM changes nothing (the command's output is whole, its exit code stands)."""

    def __init__(self) -> None:
        self.seen = False
        self.settled = False

    def check(self) -> None:
        if self.seen:
            raise KeyboardInterrupt

    def settle(self) -> None:
        """The output is complete and in place (a report renamed into its folder): a SIGTERM that came
        since the last `check()` is forgotten and one that comes later is ignored until the block ends,
        so the command does not say "interrupted" (130) about an output it finished and kept."""
        self.seen, self.settled = False, True


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[Terminated]:
    """Inside the block SIGTERM (`kill PID`, a CI timeout) stops the command as Ctrl-C does: the
    code that writes an output removes what it half-wrote and the command exits 130, instead of
    Python's default of dying on the spot with its partial folder left (issue 31). The first
    SIGTERM only marks the yielded state: the block calls `check()` at each step it can stop at
    (a KeyboardInterrupt raised anywhere can land in a fork's at-fork hooks, which swallow it, or
    in a thread's start, which then hangs); a second SIGTERM raises at once. Main thread only."""
    state = Terminated()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def interrupt(signum: int, frame: Any) -> None:
        if state.settled:
            return
        if state.seen:
            raise KeyboardInterrupt
        state.seen = True
    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield state
        state.check()
    finally:
        signal.signal(signal.SIGTERM, before)


def fail(ctx: click.Context, message: str, code: int) -> None:
    click.echo(f"aisp-prof: error: {message}", err=True)
    ctx.exit(code)


# Shared options are accepted before the subcommand (`aisp-prof --db X runs`, kept in the
# context's meta, which every context of one command line shares) and after it (`aisp-prof runs
# --db X`, which wins when both are given).
DB_KEY, JSON_KEY, WIDE_KEY = "aisp_prof.db", "aisp_prof.json", "aisp_prof.wide"
TABLE_FALLBACK_COLUMNS = 120       # the width tables fit when stdout is not a terminal and $COLUMNS is unset


def _shared(key: str) -> Callable:
    """Option callback: a value given here is kept for the subcommands; one not given here is
    taken from before the subcommand."""
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None or value is False:
            return ctx.meta.get(key, value)
        ctx.meta[key] = value
        return value
    return callback


def db_option(f: Callable, expose_value: bool = True) -> Callable:
    return click.option("--db", "db", type=click.Path(path_type=Path), default=None,    # a folder: exit 13, as README
                        callback=_shared(DB_KEY), expose_value=expose_value,
                        help="Run database (default: $AISP_PROF_DB or profiles/aisp.db).")(f)


def json_option(f: Callable, expose_value: bool = True) -> Callable:
    return click.option("--json", "as_json", is_flag=True, callback=_shared(JSON_KEY), expose_value=expose_value,
                        help="Print JSON instead of a table.")(f)


def wide_option(f: Callable) -> Callable:
    return click.option("--wide", is_flag=True, callback=_shared(WIDE_KEY), expose_value=False,
                        help="Print every table column whole, however wide (default: fit the terminal; "
                             f"{TABLE_FALLBACK_COLUMNS} columns when not a terminal, or $COLUMNS).")(f)


def table_width() -> int | None:
    """How many columns a table may use: None (everything) with --wide; else $COLUMNS, the
    terminal's width, or 120 when stdout is not a terminal (a pipe, a file)."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(WIDE_KEY):
        return None
    return shutil.get_terminal_size((TABLE_FALLBACK_COLUMNS, 24)).columns


def profiles_dir_option(f: Callable) -> Callable:
    return click.option("--profiles-dir", type=output_path(folder=True), default=Path("profiles"),
                        show_default=True, help="Where run folders are written.")(f)


class FiniteFloat(click.FloatRange):
    """click's FloatRange, NaN and infinity refused: they pass its range checks (every comparison with NaN is
    false) and then failed deep inside as "unexpected ValueError" (`check --budget-gb nan`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def finite_number(minimum: float = 0.0, min_open: bool = True) -> click.ParamType:
    """An option's number: finite, above `minimum` (at least it, without `min_open`); else a usage error, exit 2."""
    return FiniteFloat(minimum, min_open=min_open)


def whole_number(minimum: int = 0, maximum: int = INT64_MAX) -> click.IntRange:
    """An option's whole number from `minimum` to `maximum` (at most SQLite's INTEGER, a C long long: a
    larger one failed as "unexpected OverflowError"); else a usage error, exit 2."""
    return click.IntRange(minimum, maximum)


class OutputPath(click.Path):
    """Where a command writes a file (`folder=False`) or a folder. One that exists as the other kind is an
    OutputError (exit 14, the README's code for every output), said before anything runs: click's own
    kind check was a usage error, exit 2 (`report --out FILE`, `new --dir FILE`)."""

    def __init__(self, folder: bool):
        super().__init__(path_type=Path)
        self.folder = folder

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = super().convert(value, param, ctx)
        if path.exists() and path.is_dir() != self.folder:
            kinds = ("file", "folder") if self.folder else ("folder", "file")
            name = f"{param.opts[0]} " if param is not None and param.opts else ""
            raise OutputError(f"{name}{shorten(path)} is a {kinds[0]}, not a {kinds[1]}: choose another place")
        return path


def output_path(folder: bool) -> click.Path:
    """The type of an option naming an output file or (`folder`) folder: `OutputPath`."""
    return OutputPath(folder)


def chapter_option(f: Callable) -> Callable:
    return click.option("--chapter", help="Only this chapter, e.g. ch09.")(f)


def database(db: Path | None) -> Any:
    """The library's RunDatabase for --db (imported here: pandas loads only when a command runs)."""
    from ..api import open_db

    return open_db(db)


def echo_json(data: Any) -> None:
    """json.dumps(data, indent=2) on stdout (`json_text`: the same text, faster)."""
    from .json_text import dumps_indent2

    click.echo(dumps_indent2(data, _json_default))


def stream_json(batches: Any) -> None:
    """A JSON array written as its records come (batches of them), never whole in memory; the
    same text `echo_json` would print for the list."""
    stream_json_texts([json.dumps(record, indent=2, default=_json_default).replace("\n", "\n  ")
                       for record in batch] for batch in batches)


def stream_json_texts(batches: Any) -> None:
    """`stream_json` of records already encoded, each as json.dumps(indent=2) indented one level
    more (`json_columns.record_texts`)."""
    first = True                                   # click.echo, not click.get_text_stream (issue 31: a
    for batch in batches:                          # DeprecationWarning of the project's own, in one click)
        if batch:                                  # one write per batch, not per record
            click.echo(("[\n  " if first else ",\n  ") + ",\n  ".join(batch), nl=False)
            first = False
    click.echo("[]" if first else "\n]")


def record_texts(frame: Any, layout: Any, compact: bool = False) -> list[str]:
    """A frame's records (`layout`) as `stream_json_texts` takes them (`json_columns`); `compact`:
    one line each, as `stream_ndjson` takes them."""
    from .json_columns import record_texts as encode

    return encode(frame, layout, _json_default, compact)


def stream_ndjson(batches: Any) -> None:
    """Records already encoded one line each (`record_texts(..., compact=True)`), a line per record."""
    for batch in batches:
        if batch:
            click.echo("\n".join(batch))


def _json_default(v: Any) -> Any:
    """What json cannot write: a numpy scalar as its Python value, anything else as its text."""
    plain = to_python(v)
    return plain if plain is not v else str(v)


def short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def extra_hint(rows: list[dict[str, Any]]) -> None:
    """On stderr, once: how to install what the pairs `list` could not import need."""
    from ..pairs.discovery import KERNELS_EXTRA_HINT, KERNELS_EXTRA_MISSING

    if any(r["reason"].startswith(KERNELS_EXTRA_MISSING) for r in rows):
        click.echo(f"aisp-prof: {KERNELS_EXTRA_HINT}", err=True)
