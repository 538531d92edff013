"""What each variant of a pair is for, and what its lesson predicts the profile must show.

A variant is the `baseline`, an `optimization` (the chapter's claim), a `reference`: a vendor
library (cuBLAS, cuDNN, torch's own kernel) or a roof, shown beside the optimization ("pipelined
reaches 93% of cublas") and never its headline (the gate also reads it as a machine reference while it
moves as machines do: analyze.gate.verdict.judge_one), or a `control`: the optimization with one of its
ingredients taken out (four stages without the multicast, the same kernel without the CUDA graph),
there to measure that ingredient alone; it is timed, checked and gated like an optimization but
never the headline, and the lesson's predicted mechanism is not asked of it. A `comparison` pair makes no speed claim at all:
its variants are shown side by side. Roles are declared data on the pair, never guessed from a
variant's name: `KernelPair(..., roles={"cublas": "reference"})`; undeclared variants default to
baseline (the one named `baseline`) and optimization (every other).

`Mechanism` is one prediction of the pair's docstring as data, checked against the measured
numbers by `analyze.verdict.rules`:

    Mechanism("dram_bytes", "decrease", factor=2.0)     # baseline / variant >= 2
    Mechanism("kernels_per_call", "decrease")           # variant < baseline
    Mechanism("tensor_pipe_active_pct", "increase", variants=("tensorop_sm90",))

Both travel with a run in run.json (`roles`, `comparison`, `expect`, and the pair's `book`) as plain
JSON. Torch-free.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

BASELINE, OPTIMIZATION, REFERENCE, CONTROL = "baseline", "optimization", "reference", "control"
ROLES = (BASELINE, OPTIMIZATION, REFERENCE, CONTROL)
CHANGES = ("decrease", "increase")


@dataclass(frozen=True)
class Mechanism:
    """A measured quantity that the optimization must move: `metric` is a per-call field of the
    run summary (dram_bytes, l2_bytes, kernels_per_call, flops_tensor, ...) or a duration-weighted
    ncu percentage (tensor_pipe_active_pct, sol_dram_pct); `factor` is the least ratio that counts
    (1.0: any change beyond noise); `variants` limits it to some optimizations (default: all)."""

    metric: str
    change: str                       # "decrease" | "increase"
    factor: float = 1.0
    variants: tuple[str, ...] = ()
    why: str = ""                     # the docstring's reason, one clause

    def __post_init__(self) -> None:
        if self.change not in CHANGES:
            raise ValueError(f"Mechanism change must be one of {CHANGES}, not {self.change!r}")
        if self.factor < 1.0:
            raise ValueError(f"Mechanism factor is a ratio >= 1 (got {self.factor}); say 'increase' or 'decrease'")

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "change": self.change, "factor": self.factor,
                "variants": list(self.variants), "why": self.why}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Mechanism":
        return cls(str(d["metric"]), str(d["change"]), float(d.get("factor") or 1.0),
                   tuple(d.get("variants") or ()), str(d.get("why") or ""))


def check_roles(variants: Sequence[str], roles: Mapping[str, str]) -> None:
    """ValueError for a role of a variant the pair does not have, or a role that is not one of ROLES."""
    for v, role in roles.items():
        if v not in variants:
            raise ValueError(f"roles names {v!r}, which is not a variant ({', '.join(variants)})")
        if role not in ROLES:
            raise ValueError(f"role of {v!r} is {role!r}; a role is one of {', '.join(ROLES)}")


def variant_roles(variants: Sequence[str], declared: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every variant's role: declared, else baseline for `baseline` and optimization for the rest."""
    declared = declared or {}
    return {v: declared.get(v) or (BASELINE if v == "baseline" else OPTIMIZATION) for v in variants}


def run_declarations(variants: Sequence[str], roles: Mapping[str, str], comparison: bool,
                     expect: Sequence[Mechanism], timer: str = "", book: Any = None) -> dict[str, Any]:
    """What run.json records of a pair's declarations: roles of every variant, comparison, expect,
    the timer its speedups are taken by first and its book (pairs.book: the book's optimized
    variant and B200 ratio, a Book or its dict), where it declares them."""
    book = book.to_dict() if hasattr(book, "to_dict") else book
    return {"roles": variant_roles(variants, roles), "comparison": bool(comparison),
            "expect": [m.to_dict() for m in expect], **({"timer": timer} if timer else {}),
            **({"book": dict(book)} if book else {})}


def roles_of(info: Mapping[str, Any], variants: Sequence[str]) -> dict[str, str]:
    """The roles a stored run's variants play (runs recorded before roles get the defaults)."""
    recorded = info.get("roles") if isinstance(info.get("roles"), Mapping) else {}
    return variant_roles(variants, {k: v for k, v in recorded.items() if v in ROLES})


def expectations_of(info: Mapping[str, Any]) -> list[Mechanism]:
    """The mechanisms a stored run's pair predicted ([] for runs before `expect`, or unreadable ones)."""
    out = []
    for d in info.get("expect") or []:
        try:
            out.append(Mechanism.from_dict(d))
        except (KeyError, TypeError, ValueError):
            continue
    return out
