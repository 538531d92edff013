"""What a caller hands aisp-prof, checked once where it comes in (the API's methods, the run
resolver every query goes through): a value of the wrong type or out of range is an
ArgumentError (exit 2) naming the argument and what it takes. Never a TypeError from deep
inside, a string taken apart into its characters where a sequence was meant, or a silently
empty answer."""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from .errors import ArgumentError, shorten

INT64_MAX = 2**63 - 1          # SQLite's INTEGER, a C long long: the largest whole number passed on


def _shown(value: Any) -> str:
    return f"{shorten(repr(value), 60)} ({type(value).__name__})"


def text(value: Any, name: str, what: str = "text") -> str:
    """`value` if it is a str, else ArgumentError "`name` takes `what`, not 5 (int)"."""
    if isinstance(value, str):
        return value
    raise ArgumentError(f"{name} takes {what}, not {_shown(value)}")


def optional_text(value: Any, name: str, what: str = "text") -> str | None:
    return None if value is None else text(value, name, what)


def texts(value: Any, name: str, what: str = "text") -> tuple[str, ...]:
    """A sequence of str as a tuple; one str is one item ("baseline" is ("baseline",), not its
    letters); None is none."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (bytes, os.PathLike)) or not hasattr(value, "__iter__"):
        raise ArgumentError(f"{name} takes {what} or a list of it, not {_shown(value)}")
    return tuple(text(v, f"each of {name}", what) for v in value)


def paths(value: Any, name: str) -> list[Path]:
    """A sequence of paths (str or os.PathLike) as Paths; one path is one item."""
    if isinstance(value, (str, os.PathLike)):
        return [Path(value).expanduser()]
    if isinstance(value, bytes) or not hasattr(value, "__iter__"):
        raise ArgumentError(f"{name} takes a path or a list of paths, not {_shown(value)}")
    return [path(v, f"each of {name}") for v in value]


def path(value: Any, name: str) -> Path:
    """A path (str or os.PathLike), '~' expanded as a shell would: a notebook's open_db("~/runs.db")."""
    if isinstance(value, (str, os.PathLike)):
        return Path(value).expanduser()
    raise ArgumentError(f"{name} takes a path (str or pathlib.Path), not {_shown(value)}")


def whole(value: Any, name: str, minimum: int | None = None, maximum: int = INT64_MAX) -> int:
    """A whole number from `minimum` to `maximum` (not a bool, a float or text)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ArgumentError(f"{name} takes a whole number, not {_shown(value)}")
    if (minimum is not None and value < minimum) or value > maximum:
        low = "" if minimum is None else f"at least {minimum}"
        raise ArgumentError(f"{name} {value} is out of range: it must be {low}{' and ' if low else ''}"
                            f"at most {maximum}")
    return int(value)


def optional_whole(value: Any, name: str, minimum: int | None = None, maximum: int = INT64_MAX) -> int | None:
    return None if value is None else whole(value, name, minimum, maximum)


def positive(value: Any, name: str) -> float:
    """A finite number above 0 (not NaN, not infinity, not a bool or text)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value <= 0:
        raise ArgumentError(f"{name} takes a finite number above 0, not {_shown(value)}")
    return float(value)


def fields(value: Any, kind: type, name: str, given: tuple[str, ...] = ()) -> dict[str, Any]:
    """A mapping of the dataclass `kind`'s field names (`given`: those the caller sets itself) as a
    dict; None is none. Another name is an ArgumentError listing them, not a TypeError from `kind(**value)`."""
    import dataclasses

    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ArgumentError(f"{name} takes a dict of {kind.__name__} fields, not {_shown(value)}")
    known = [f.name for f in dataclasses.fields(kind) if f.init and f.name not in given]
    unknown = [k for k in value if k not in known]
    if unknown:
        raise ArgumentError(f"{name}: {kind.__name__} has no field {shorten(repr(unknown[0]), 60)}; "
                            f"its fields are {', '.join(known)}")
    return dict(value)
