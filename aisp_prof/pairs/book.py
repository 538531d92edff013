"""Which variant ports the book's optimized code, and what the book measured with it on a B200.

A run's headline is the book's optimization, not whichever variant happens to be fastest: a
port is judged by what the book taught, and a variant added beyond the book (a retuned tile,
another library, a second step) is shown as such after it, never in its place. `ratio_b200` is
the book's own baseline/optimized ratio (its `expectations_b200.json`, as the project's spec
tabulates it), `source` says where it was read, and `off_reason` is the one line shown when the
Hopper ratio lands more than OFF_FACTOR away from the book's (a different baseline, a host-bound
timing, another backend): a far-off ratio with no reason reads as a bug or a triumph, and it is
usually neither. `also` names further variants that port the book's code (the book's alias pairs
against the same baseline), with their own B200 ratios: they are in the book, not beyond it.

Declared on the pair (`KernelPair(..., book=Book("tma_ring3", 1.289, "spec §3.2 ..."))`) and
recorded in run.json as `book` (plain JSON), so a stored run keeps what its pair claimed; runs
recorded before it read the pair module's declaration now (pairs.declared). Torch-free.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

OFF_FACTOR = 2.0           # a Hopper ratio beyond 2x either side of the book's needs its reason
THE_BOOKS, IN_THE_BOOK, BEYOND_THE_BOOK = "the book's optimization", "in the book", "beyond the book"


@dataclass(frozen=True)
class Book:
    """The variant that ports the book's optimized code, its B200 ratio (None where the book gives
    none), where that ratio was read, and why a Hopper ratio may be far from it."""

    variant: str
    ratio_b200: float | None = None
    source: str = ""
    off_reason: str = ""
    also: Mapping[str, float | None] = field(default_factory=dict)   # other ports of the book's code

    def __post_init__(self) -> None:
        if not self.variant or self.variant == "baseline":
            raise ValueError(f"Book.variant names the book's optimized variant, not {self.variant!r}")
        for name, ratio in {self.variant: self.ratio_b200, **self.also}.items():
            if ratio is not None and not ratio > 0:
                raise ValueError(f"Book ratio of {name!r} must be > 0 (a baseline/optimized ratio), got {ratio}")

    def ratio_of(self, variant: str) -> float | None:
        """The book's B200 ratio for one of its variants (None for any other)."""
        return self.ratio_b200 if variant == self.variant else self.also.get(variant)

    def mark(self, variant: str) -> str:
        """THE_BOOKS, IN_THE_BOOK or BEYOND_THE_BOOK (for an optimization the book does not have)."""
        if variant == self.variant:
            return THE_BOOKS
        return IN_THE_BOOK if variant in self.also else BEYOND_THE_BOOK

    def off(self, ratio: float | None) -> bool:
        """Whether a measured ratio is more than OFF_FACTOR away from the book's B200 one."""
        if ratio is None or self.ratio_b200 is None or not ratio > 0:
            return False
        return not 1 / OFF_FACTOR <= ratio / self.ratio_b200 <= OFF_FACTOR

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "ratio_b200": self.ratio_b200, "source": self.source,
                "off_reason": self.off_reason, "also": dict(self.also)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Book":
        ratio = d.get("ratio_b200")
        return cls(str(d["variant"]), None if ratio is None else float(ratio), str(d.get("source") or ""),
                   str(d.get("off_reason") or ""),
                   {str(k): (None if v is None else float(v)) for k, v in (d.get("also") or {}).items()})


def book_of(value: Any) -> Book | None:
    """A Book from a Book, its dict (run.json) or None; None for anything unreadable (a damaged or
    foreign run.json must still read, without the book's claim)."""
    if value is None or isinstance(value, Book):
        return value
    try:
        return Book.from_dict(value)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
