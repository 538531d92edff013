"""`json_text.dumps_indent2` writes exactly what json.dumps(indent=2, default=...) writes."""
from __future__ import annotations

import enum
import json
import random

import numpy as np
import pytest

from aisp_prof.cli.common import _json_default
from aisp_prof.cli.json_text import dumps_indent2


class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _Enum(enum.IntEnum):
    A = 3


_SCALARS = [None, True, False, 0, -7, 2**70, 1.5, -0.0, float("nan"), float("inf"), -float("inf"), 1e-300, "x",
            "é\u2028\"\\\n", "", _Str("sub"), _Int(4), _Float(2.5), _Enum.A, np.float64(0.1), np.int64(5),
            np.bool_(True), np.float32(1.1), (1, "a"), ()]
_KEYS = ["a", "b", 1, 2.5, True, False, None, _Str("k"), "ü", float("nan"), float("inf")]


def _build(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 4 or r < 0.4:
        return rng.choice(_SCALARS)
    if r < 0.7:
        return [_build(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(_KEYS): _build(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _both(obj):
    out = []
    for encode in (lambda: json.dumps(obj, indent=2, default=_json_default), lambda: dumps_indent2(obj, _json_default)):
        try:
            out.append(encode())
        except (TypeError, ValueError) as exc:
            out.append((type(exc), str(exc)))
    return out


@pytest.mark.slow
def test_random_values_encode_as_json_dumps():
    rng = random.Random(2026)
    for _ in range(5000):
        obj = _build(rng)
        std, fast = _both(obj)
        assert std == fast, obj


@pytest.mark.parametrize("obj", [[1, {"a": []}], {"x": {}}, "top", 1.0, None])
def test_edges(obj):
    std, fast = _both(obj)
    assert std == fast


def test_errors_are_json_dumps_errors():
    loop: list = []
    loop.append(loop)
    cyc: dict = {}
    cyc["self"] = cyc
    for obj in (loop, cyc, {(1, 2): 1}):
        std, fast = _both(obj)
        assert isinstance(std, tuple) and std == fast
