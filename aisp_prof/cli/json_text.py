"""`json.dumps(obj, indent=2, default=default)`, the same text, without the standard library's
generators.

With indent, Python 3.11's json runs its pure-Python encoder: a generator per list and dict and
a `yield` per piece, 2.3M of them for the roofline of 10k launches (0.8 s of its 2.2 s). This is
that encoder's logic written as plain recursion appending to one list of pieces, with a fast
path for values of the exact types str, float, int, None and bool; every other value takes the
standard library's checks in the standard library's order (subclasses of str, int and float,
lists and tuples, dicts, else `default`), keys are converted as it converts them, and circular
references raise its ValueError.
"""
from __future__ import annotations

from collections.abc import Callable
from json.encoder import INFINITY, encode_basestring_ascii
from typing import Any

_INDENT = "  "
_int_repr, _float_repr = int.__repr__, float.__repr__


def _float_text(o: float) -> str:
    if o != o:
        return "NaN"
    if o == INFINITY:
        return "Infinity"
    if o == -INFINITY:
        return "-Infinity"
    return _float_repr(o)


def dumps_indent2(obj: Any, default: Callable[[Any], Any]) -> str:
    """json.dumps(obj, indent=2, default=default)."""
    if isinstance(obj, str):
        return encode_basestring_ascii(obj)
    out: list[str] = []
    _Encoder(out, default).value(obj, 0)
    return "".join(out)


class _Encoder:
    def __init__(self, out: list[str], default: Callable[[Any], Any]):
        self.out, self.default, self.markers = out, default, set()
        self.keys: dict[str, str] = {}           # str key -> its encoded text and ": "

    def scalar(self, o: Any) -> str | None:
        """The text of a str, None, bool, int or float (in json's order of checks), else None."""
        t = type(o)
        if t is str:
            return encode_basestring_ascii(o)
        if t is float:
            return _float_text(o)
        if t is int:
            return _int_repr(o)
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        if isinstance(o, str):
            return encode_basestring_ascii(o)
        if isinstance(o, int):
            return _int_repr(o)
        if isinstance(o, float):
            return _float_text(o)
        return None

    def value(self, o: Any, level: int) -> None:
        text = self.scalar(o)
        if text is not None:
            self.out.append(text)
        elif isinstance(o, (list, tuple)):
            self.array(o, level)
        elif isinstance(o, dict):
            self.object(o, level)
        else:
            self._enter(o)
            self.value(self.default(o), level)
            self.markers.discard(id(o))

    def _enter(self, o: Any) -> None:
        if id(o) in self.markers:
            raise ValueError("Circular reference detected")
        self.markers.add(id(o))

    def array(self, items: list[Any] | tuple[Any, ...], level: int) -> None:
        out = self.out
        if not items:
            out.append("[]")
            return
        self._enter(items)
        level += 1
        newline = "\n" + _INDENT * level
        out.append("[" + newline)
        separator = "," + newline
        first = True
        for v in items:
            if not first:
                out.append(separator)
            first = False
            self.value(v, level)
        out.append("\n" + _INDENT * (level - 1) + "]")
        self.markers.discard(id(items))

    def object(self, items: dict[Any, Any], level: int) -> None:
        out, keys = self.out, self.keys
        if not items:
            out.append("{}")
            return
        self._enter(items)
        level += 1
        newline = "\n" + _INDENT * level
        out.append("{" + newline)
        separator = "," + newline
        first = True
        for key, v in items.items():
            head = keys.get(key) if type(key) is str else None
            if head is None:
                head = encode_basestring_ascii(_key_text(key)) + ": "
                if type(key) is str:
                    keys[key] = head
            if not first:
                out.append(separator)
            first = False
            t = type(v)                      # the common exact types inline, the rest as `scalar`
            if t is float and v - v == 0.0:  # finite
                out.append(head + _float_repr(v))
            elif t is str:
                out.append(head + encode_basestring_ascii(v))
            elif v is None:
                out.append(head + "null")
            else:
                text = self.scalar(v)
                if text is not None:
                    out.append(head + text)
                else:
                    out.append(head)
                    self.value(v, level)
        out.append("\n" + _INDENT * (level - 1) + "}")
        self.markers.discard(id(items))


def _key_text(key: Any) -> str:
    """A dict key as json writes it (str, float, bool, None and int keys; others are an error)."""
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float_text(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return _int_repr(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")
