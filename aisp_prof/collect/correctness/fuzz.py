"""Shapes to fuzz a pair with: random sizes inside its size rules, edges included.

`check --fuzz N` checks each pair at N shapes drawn here against its float64 reference. The
first shapes are the edges, then random ones: every size at its smallest valid value (1 where
no rule says otherwise), the largest shape that fits the budget (the defaults grown a size at a
time), then shapes whose sizes are each, at random, the default, the smallest, a prime, one past a
power-of-two tile (2^j + 1, or 2^j + the rule's step) or log-uniform up to twice the default,
each moved to the nearest value its rule takes (pairs.size_rules). A size whose default is 0 (an
"auto" setting: blocks_per_sm, grid) keeps it. Every shape fits the budget: `footprint`, the
pair's analytic bytes of one call times FOOTPRINT_FACTOR (the float64 reference and the outputs
of the variants beside the inputs), within `memory_bytes`, and its analytic FLOPs within
`flops` (the float64 reference computes them all). Reproducible: the same seed draws the same.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Mapping

from ...pairs import KernelPair
from ...pairs.size_rules import SizeRule

FOOTPRINT_FACTOR = 8
GROWTH = 8             # the largest shape takes no size past 8x its default (one that costs no memory)
KINDS = ("default", "smallest", "prime", "past_tile", "random")


@dataclass(frozen=True)
class Budget:
    memory_bytes: int = 2 << 30
    flops: float = 2e12


def _rules(pair: KernelPair) -> dict[str, SizeRule]:
    return {r.key: r for r in pair.size_rules}


def _order(pair: KernelPair) -> list[str]:
    """The sizes, those another rule's step depends on (`per`) first."""
    first = [r.per for r in pair.size_rules if r.per]
    return list(dict.fromkeys([*first, *pair.sizes]))


def _smallest(rule: SizeRule | None, sizes: Mapping[str, int]) -> int:
    if rule is None:
        return 1
    if rule.choices:
        return min(rule.choices)
    step = rule.step_for(sizes)
    return -(-rule.minimum // step) * step


def snap(pair: KernelPair, sizes: Mapping[str, int], rng: random.Random | None = None) -> dict[str, int]:
    """`sizes` with each one off its rule moved to a nearest valid value (the lower one without
    `rng`, else either at random), in `_order`; a size without a rule is at least 1 (or its 0)."""
    rules, out = _rules(pair), dict(sizes)
    for key in _order(pair):
        value, rule = int(out[key]), rules.get(key)
        if rule is None:
            out[key] = value if value >= 1 or pair.sizes[key] == 0 else 1
        elif not rule.valid(value, out):
            near = rule.nearest(value, out) or [_smallest(rule, out)]
            out[key] = rng.choice(near) if rng is not None else near[0]
    return out


def fits(pair: KernelPair, sizes: Mapping[str, int], budget: Budget) -> bool:
    """Whether one check at `sizes` stays within the budget (module docstring)."""
    try:
        return (FOOTPRINT_FACTOR * pair.bytes(sizes) <= budget.memory_bytes
                and pair.flops(sizes) <= budget.flops)
    except (ArithmeticError, KeyError, ValueError, TypeError):
        return False


def _free(pair: KernelPair) -> list[str]:
    """The sizes a draw may change: not an auto 0, not one of a few fixed choices."""
    rules = _rules(pair)
    return [k for k in _order(pair) if pair.sizes[k] != 0 and not (k in rules and rules[k].choices)]


def _shrink(pair: KernelPair, sizes: dict[str, int], budget: Budget) -> dict[str, int] | None:
    """Halve the size furthest above its smallest until the shape fits; None if it never does."""
    rules = _rules(pair)
    for _ in range(200):
        if fits(pair, sizes, budget):
            return sizes
        key = max(_free(pair) or [None], key=lambda k: sizes[k] / max(_smallest(rules.get(k), sizes), 1)
                  if k else 0)
        if key is None or sizes[key] <= _smallest(rules.get(key), sizes):
            return None
        sizes = snap(pair, {**sizes, key: sizes[key] // 2})
    return None


def largest(pair: KernelPair, budget: Budget) -> dict[str, int] | None:
    """The defaults (shrunk to fit if need be), then each size doubled in turn while it fits,
    up to GROWTH times its default."""
    sizes = _shrink(pair, snap(pair, pair.sizes), budget)
    grew = sizes is not None
    while grew:
        grew = False
        for key in _free(pair):
            bigger = snap(pair, {**sizes, key: sizes[key] * 2})
            if sizes[key] < bigger[key] <= GROWTH * max(pair.sizes[key], 1) and fits(pair, bigger, budget):
                sizes, grew = bigger, True
    return sizes


def _next_prime(n: int) -> int:
    n = max(n, 2)
    while any(n % p == 0 for p in range(2, math.isqrt(n) + 1)):
        n += 1
    return n


def _draw(kind: str, key: str, pair: KernelPair, sizes: Mapping[str, int], rng: random.Random) -> int:
    rule, default = _rules(pair).get(key), int(pair.sizes[key])
    top = max(2 * default, 2)
    if kind == "default":
        return default
    if kind == "smallest":
        return _smallest(rule, sizes)
    if rule is not None and rule.choices:
        return rng.choice(rule.choices)
    log_uniform = int(math.exp(rng.uniform(0.0, math.log(top))))
    if kind == "prime":
        return _next_prime(log_uniform)
    if kind == "past_tile":
        step = rule.step_for(sizes) if rule is not None else 1
        return 2 ** rng.randint(4, max(4, int(math.log2(top)))) + step
    return max(log_uniform, 1)


def random_shape(pair: KernelPair, rng: random.Random) -> dict[str, int]:
    """Each free size of the shape drawn by a kind picked at random (module docstring)."""
    sizes = dict(pair.sizes)
    for key in _order(pair):
        if key in _free(pair) or (key in _rules(pair) and _rules(pair)[key].choices):
            sizes[key] = _draw(rng.choice(KINDS), key, pair, sizes, rng)
        sizes = snap(pair, sizes, rng)
    return sizes


def draw_shapes(pair: KernelPair, count: int, seed: int = 0, budget: Budget = Budget()) -> list[dict[str, int]]:
    """`count` distinct shapes inside the pair's rules and the budget: the edges first (smallest,
    largest), then random ones (module docstring); fewer where the pair has fewer distinct shapes."""
    rng = random.Random(f"{seed}:{pair.name}")
    smallest = dict(pair.sizes)
    for key in _free(pair):                 # in _order: a `per` size is set before the sizes it steps
        smallest = snap(pair, {**smallest, key: _smallest(_rules(pair).get(key), smallest)})
    shapes: list[dict[str, int]] = []
    candidates = [smallest, largest(pair, budget)]
    tries = 0
    while len(shapes) < count and tries < 20 * count + 20:
        shape = candidates.pop(0) if candidates else random_shape(pair, rng)
        tries += 1
        shape = _shrink(pair, shape, budget) if shape is not None else None
        if shape is not None and shape not in shapes:
            shapes.append(shape)
    return shapes


def shape_text(sizes: Mapping[str, int]) -> str:
    """"m=129,n=8,k=1": the --sizes spelling."""
    return ",".join(f"{k}={v}" for k, v in sizes.items())
