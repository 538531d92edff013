"""Which sizes a pair takes: its declared rules, checked before anything runs.

A kernel built for a vector width, a TMA row pitch or one head dimension cannot run everywhere.
A pair says so as data, `KernelPair(size_rules=(SizeRule("n", step=4, why="16-byte rows"),))`,
and `check_sizes` holds `--sizes` to it in the parent process, before a child process starts,
so a size off the rules is a SizesError (exit 12) naming the rule and the nearest sizes that
pass it, not a ValueError from deep inside the pair module. `list --json` shows each rule's
text (`SizeRule.text`); `check --fuzz` draws its shapes inside them (`collect.correctness.fuzz`).

A rule is one size's limit: a multiple of `step` (of `step` x another size's value when `per`
names one: hidden a multiple of heads), within `minimum`..`maximum`, or one of `choices`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..errors import SizesError

INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class SizeRule:
    """One size's limit; `why` says what makes it real (a vector width, a tile, a library)."""

    key: str
    step: int = 1
    minimum: int = 1
    maximum: int | None = None
    per: str = ""                       # the step is step x sizes[per]
    choices: tuple[int, ...] = ()       # when given, the only values
    why: str = ""

    def __post_init__(self) -> None:
        if self.step < 1 or (self.maximum is not None and self.maximum < self.minimum):
            raise ValueError(f"size rule for {self.key!r}: need step >= 1 and minimum <= maximum")

    def step_for(self, sizes: Mapping[str, int]) -> int:
        """The step at these sizes (step x sizes[per] when `per` is given)."""
        return self.step * max(int(sizes.get(self.per, 1)), 1) if self.per else self.step

    def text(self) -> str:
        """"n: a multiple of 1024, 1024..2147483647 (whole tiles)"."""
        if self.choices:
            what = f"one of {', '.join(map(str, self.choices))}"
        else:
            parts = []
            if self.step > 1 or self.per:
                times = f"{self.step} x {self.per}" if self.per and self.step > 1 else (self.per or str(self.step))
                parts.append(f"a multiple of {times}")
            parts.append(f">= {self.minimum}" if self.maximum is None else f"{self.minimum}..{self.maximum}")
            what = ", ".join(parts)
        return f"{self.key}: {what}" + (f" ({self.why})" if self.why else "")

    def valid(self, value: int, sizes: Mapping[str, int]) -> bool:
        if self.choices:
            return value in self.choices
        top = self.maximum if self.maximum is not None else value
        return self.minimum <= value <= top and value % self.step_for(sizes) == 0

    def nearest(self, value: int, sizes: Mapping[str, int]) -> list[int]:
        """The closest values that pass, at most one below and one above `value`."""
        if self.choices:
            ordered = sorted(self.choices, key=lambda c: (abs(c - value), c))
            return sorted(ordered[:2]) if len(ordered) > 1 and abs(ordered[1] - value) == abs(ordered[0] - value) \
                else sorted(ordered[:1])
        step = self.step_for(sizes)
        first = -(-self.minimum // step) * step                        # smallest valid
        last = self.maximum // step * step if self.maximum is not None else None
        below = value // step * step
        above = below if below == value else below + step
        out = [v for v in (below, above) if v >= first and (last is None or v <= last)]
        if not out:
            out = [first] if value < first else ([last] if last is not None and last >= first else [])
        return sorted(set(out))

    def broken(self, sizes: Mapping[str, int]) -> str | None:
        """None when `sizes` pass; else "k=100: must be ...; nearest valid: k=64 or k=128"."""
        if self.key not in sizes:
            return None
        value = int(sizes[self.key])
        if self.valid(value, sizes):
            return None
        near = " or ".join(f"{self.key}={v}" for v in self.nearest(value, sizes)) or "none"
        rule = self.text().split(": ", 1)[1]
        return f"{self.key}={value}: must be {rule}; nearest valid: {near}"


def broken_rules(rules: Iterable[SizeRule], sizes: Mapping[str, int]) -> list[str]:
    """What each rule that `sizes` break says, in the rules' order."""
    return [msg for rule in rules if (msg := rule.broken(sizes)) is not None]


def check_sizes(name: str, rules: Iterable[SizeRule], sizes: Mapping[str, int]) -> dict[str, int]:
    """`sizes` (a new dict) if every rule passes, else one SizesError naming each broken rule."""
    problems = broken_rules(rules, sizes)
    if problems:
        raise SizesError(f"{name} does not take these sizes: " + "; ".join(problems))
    return dict(sizes)


def rule_texts(rules: Iterable[SizeRule]) -> list[str]:
    """The rules as `list --json` shows them."""
    return [r.text() for r in rules]
