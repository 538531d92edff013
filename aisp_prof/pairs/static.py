"""A pair's metadata read from its source, without importing it (so without torch): the one
reader of a pair's declaration in its source.

`list`, `bench list-targets` and `history` only need a pair's name, chapter, lesson and variant
names; importing the module needs the kernels extra (torch, triton). Here the module is parsed
(`ast`) and the `PAIR = KernelPair(...)` call is evaluated only where it is literal: constants,
containers, module-level names bound to literals, `Requirements(...)` and `dict(...)`, and the
calls a caller names (`pairs.declared` adds `Mechanism(...)` and `Book(...)`). What is not
literal (a dict comprehension of variant needs) is left out, never guessed. Nothing runs.
"""
from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..paths import kernels_root


@dataclass(frozen=True)
class PairInfo:
    """What `list` shows of a pair whose module cannot be imported here."""

    name: str
    chapter: int
    lesson: str
    variants: tuple[str, ...]
    source: str
    sizes: dict[str, int] | None = None          # None: not a literal in the source
    requires: dict[str, Any] = field(default_factory=dict)   # Requirements' literal keywords

    @property
    def chapter_key(self) -> str:
        return f"ch{self.chapter:02d}"


class _NotLiteral(Exception):
    pass


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.LShift: operator.lshift, ast.Pow: operator.pow}


def _keywords_only(*args: Any, **kwargs: Any) -> dict[str, Any]:
    if args:
        raise _NotLiteral("positional arguments")
    return kwargs


# calls evaluated as literals: name -> what builds the value from the literal arguments
LITERAL_CALLS: Mapping[str, Callable[..., Any]] = {"dict": _keywords_only, "Requirements": _keywords_only}


def _value(node: ast.AST, env: dict[str, Any], calls: Mapping[str, Callable[..., Any]] = LITERAL_CALLS) -> Any:
    """The value of a literal expression; _NotLiteral for anything that would need to run code."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_value(e, env, calls) for e in node.elts)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_value(k, env, calls): _value(v, env, calls) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, env, calls)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _value(node.left, env, calls), _value(node.right, env, calls)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)):
            return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in calls:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise _NotLiteral("*args or **kwargs")
        return calls[node.func.id](*(_value(a, env, calls) for a in node.args),
                                   **{k.arg: _value(k.value, env, calls) for k in node.keywords})
    raise _NotLiteral(ast.dump(node)[:80])


def literal(node: ast.AST | None, env: dict[str, Any], calls: Mapping[str, Callable[..., Any]] = LITERAL_CALLS) -> Any:
    """`node`'s value where it is literal (`_value`), else None (a call that refuses its literal
    arguments, TypeError or ValueError, is not literal either)."""
    try:
        return None if node is None else _value(node, env, calls)
    except (_NotLiteral, TypeError, ValueError):
        return None


def pair_declaration(path: Path) -> tuple[dict[str, ast.expr], dict[str, Any]] | None:
    """The keywords of the module's `PAIR = KernelPair(...)` as written (name -> expression) and
    the module-level names bound to literals before it, for `literal`; None when the module
    defines no `PAIR = KernelPair(...)`. SyntaxError for a module that does not parse."""
    tree = ast.parse(path.read_text(), str(path))
    env: dict[str, Any] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        target = node.targets[0].id
        if target != "PAIR":
            try:
                env[target] = _value(node.value, env)
            except (_NotLiteral, TypeError, ValueError):
                env.pop(target, None)
            continue
        call = node.value
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "KernelPair"):
            return None
        return {k.arg: k.value for k in call.keywords if k.arg}, env
    return None


def read_pair_info(path: Path) -> PairInfo | None:
    """The `PAIR` of the module at `path`, read without importing it; None when the module
    defines no `PAIR = KernelPair(...)` or its name, chapter, lesson or variants are not literal."""
    found = pair_declaration(path)
    if found is None:
        return None
    kw, env = found
    variants = kw.get("variants")
    try:
        name, chapter, lesson = (_value(kw[k], env) for k in ("name", "chapter", "lesson"))
        if not isinstance(variants, ast.Dict):
            raise _NotLiteral("variants")
        names = tuple(_value(k, env) for k in variants.keys if k is not None)
    except (KeyError, _NotLiteral):
        return None
    sizes = literal(kw.get("sizes"), env)
    requires = literal(kw.get("requires"), env)
    return PairInfo(name, chapter, lesson, names, str(path),
                    sizes if isinstance(sizes, dict) else None if "sizes" in kw else {},
                    requires if isinstance(requires, dict) else {})


def pair_modules(root: Path | None = None) -> list[Path]:
    """The modules discovery looks at: kernels/ch*/*.py, not those starting with '_'."""
    root = root or kernels_root()
    return [p for p in sorted(root.glob("ch*/*.py")) if not p.name.startswith("_")]


def pair_infos(root: Path | None = None) -> list[PairInfo]:
    """Every pair under `root`, read without importing, sorted by name."""
    infos = [info for p in pair_modules(root) if (info := read_pair_info(p)) is not None]
    return sorted(infos, key=lambda i: i.name)
