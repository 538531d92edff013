"""A stored run's roles and expected mechanism, for runs recorded before run.json carried them.

New runs record `roles`, `comparison`, `expect`, `timer` and `book` (pairs.roles, pairs.book). An
older run gets them from its pair's module as it is now, read without importing it (the module
needs torch; reading a run must not): the literal keywords of `PAIR = KernelPair(...)`,
`Mechanism(...)` and `Book(...)` calls with literal arguments included (`pairs.static`, the one
reader of a pair's declaration). A keyword that is not a literal is left out (defaults apply), and
`declared_from` says where the run's declarations came from.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Mapping

from ..errors import AispError
from ..model.run_data import RunData
from .book import Book
from .roles import CONTROL, OPTIMIZATION, REFERENCE, Mechanism, run_declarations
from .source import expected_module
from .static import LITERAL_CALLS, literal, pair_declaration

log = logging.getLogger(__name__)
KEYWORDS = ("roles", "comparison", "expect", "timer", "book")
_CALLS = {**LITERAL_CALLS, "Mechanism": Mechanism, "Book": Book}


def module_declarations(module: Path) -> dict[str, Any]:
    """The literal `roles`, `comparison`, `expect`, `timer` and `book` of the module's
    `PAIR = KernelPair(...)` ({} if none, or the module does not parse)."""
    try:
        found = pair_declaration(module)
    except (OSError, SyntaxError, ValueError):
        return {}
    if found is None:
        return {}
    keywords, env = found
    out = {}
    for k in KEYWORDS:
        if k in keywords:
            value = literal(keywords[k], env, _CALLS)
            if value is None:
                log.info("%s: %s= is not a literal; defaults apply", module, k)
            else:
                out[k] = value
    return out


def with_declarations(info: Mapping[str, Any]) -> dict[str, Any]:
    """run.json with roles, comparison and expect: as recorded, else from the pair's module now,
    else the defaults; `declared_from` is "run", "pair module now" or "defaults"."""
    out = dict(info)
    if "roles" in info:
        out.setdefault("declared_from", "run")
        return _with_controls(out)
    variants = list(info.get("variants") or [])
    found: dict[str, Any] = {}
    if info.get("pair"):
        try:
            found = module_declarations(expected_module(str(info["pair"])))
        except AispError:             # no kernels root here
            found = {}
    roles = {v: r for v, r in (found.get("roles") or {}).items() if v in variants}
    out.update(run_declarations(variants, roles, bool(found.get("comparison")), found.get("expect") or (),
                                str(found.get("timer") or ""), found.get("book")))
    out["declared_from"] = "pair module now" if found else "defaults"
    return out


def declared(run: RunData) -> RunData:
    """The run with its pair's roles and expected mechanism in its info (`with_declarations`)."""
    info = run.info
    if "declared_from" not in info:
        run.run["info_json"] = json.dumps(with_declarations(info))
    return run


def _with_controls(info: dict[str, Any]) -> dict[str, Any]:
    """A run recorded before the `control` role called its controls optimizations (or references):
    where the pair's module now declares one of those a control, it is one; and a run recorded
    before pairs declared their `timer` or `book` takes the module's (declared_from says which)."""
    roles = info.get("roles")
    if not isinstance(roles, Mapping) or not info.get("pair"):
        return info
    try:
        declared_now = module_declarations(expected_module(str(info["pair"])))
    except AispError:
        return info
    if declared_now.get("timer") and "timer" not in info:        # recorded before pairs declared one
        info["timer"] = str(declared_now["timer"])
        info["declared_from"] = f"{info.get('declared_from', 'run')}; timer from the pair module now"
    if isinstance(declared_now.get("book"), Book) and "book" not in info:   # recorded before pairs declared it
        info["book"] = declared_now["book"].to_dict()
        info["declared_from"] = f"{info.get('declared_from', 'run')}; book from the pair module now"
    now = declared_now.get("roles") or {}
    controls = {v for v, r in now.items() if r == CONTROL and roles.get(v) in (OPTIMIZATION, REFERENCE)}
    if not controls:
        return info
    info["roles"] = {v: (CONTROL if v in controls else r) for v, r in roles.items()}
    info["declared_from"] = f"{info.get('declared_from', 'run')}; controls from the pair module now"
    return info
