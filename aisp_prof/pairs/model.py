"""What a kernel pair is: a chapter example with an explicit baseline and optimized variants.

A pair module under `kernels/chNN/` defines one `PAIR = KernelPair(...)` and nothing runs on
import. The dataclasses here need neither torch nor a GPU; the factories they hold do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .book import Book
from .roles import CONTROL, Mechanism, check_roles, variant_roles
from .size_rules import SizeRule, check_sizes

Inputs = dict[str, Any]
Launch = Callable[[], Any]            # zero-argument closure that only launches work, returns the output
Factory = Callable[[Inputs], Launch]  # builds a closure from inputs (allocations happen here)


@dataclass(frozen=True)
class Requirements:
    """What a pair needs to run. `min_cc`/`max_cc` are (major, minor) compute capabilities."""

    min_cc: tuple[int, int] = (7, 0)
    max_cc: tuple[int, int] | None = None
    needs: tuple[str, ...] = ()         # any of: "gpu", "triton", "nvcc", "cutlass" (every variant)
    note: str = ""                       # shown when the pair is skipped, e.g. "needs sm_100 (tcgen05)"


@dataclass(frozen=True)
class KernelPair:
    """One chapter example: an explicit baseline and one or more optimized variants.

    `variants` maps a variant name to its factory; the one named `baseline` is the reference
    that speedups and correctness are measured against, every other entry is an optimization
    unless `roles` says it is a `reference` (a vendor library or a roof: shown beside the
    optimization, never its headline). `comparison` pairs claim no speedup, only a side by side.
    `expect` is what the docstring predicts the profile shows, as data the verdict checks.
    `reference` computes the expected output in float64 so that baseline and optimized are
    both checked against the math, not only against each other. `tolerance` bounds every variant's
    error unless `variant_tolerance` gives it its own (an fp32 variant of a pair whose bf16 ones
    need a looser bound is held to what fp32 can do). `book` names the variant that ports the
    book's optimized code, the headline, with the book's B200 ratio (pairs.book).
    """

    name: str                                   # "ch09.fused_l2norm"
    chapter: int
    lesson: str
    make_inputs: Callable[[Mapping[str, int], str, int], Inputs]   # (sizes, device, seed)
    variants: Mapping[str, Factory]
    reference: Callable[[Inputs], Any]
    flops: Callable[[Mapping[str, int]], int]          # analytic FLOPs of one call
    bytes: Callable[[Mapping[str, int]], int]          # analytic minimum DRAM bytes of one call
    sizes: Mapping[str, int] = field(default_factory=dict)    # default problem size
    tolerance: float = 1e-5                     # max ||out - ref|| / ||ref||
    # a variant's own bound where the pair mixes precisions ({"baseline": 5e-4} in a bf16 pair whose
    # baseline is fp32); collect.correctness.check also derives each variant's per-row bound from it
    variant_tolerance: Mapping[str, float] = field(default_factory=dict)
    requires: Requirements = field(default_factory=Requirements)
    # per-variant needs beyond the pair's: {"cuda": ("gpu", "nvcc"), "triton": ("triton",)};
    # lets the CPU-only CI check the variants that can run there (Triton under TRITON_INTERPRET=1)
    variant_needs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # a size small enough for compute-sanitizer (10-100x slower kernels) that still exercises
    # every code path (several tiles, clusters, pipeline stages): `aisp-prof sanitize` uses it
    small_sizes: Mapping[str, int] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)   # {"cublas": "reference"}; pairs.roles
    comparison: bool = False                    # no speed claim: variants shown side by side
    expect: tuple[Mechanism, ...] = ()          # predicted mechanism: Mechanism("dram_bytes", "decrease", 2.0)
    # ranks of a torchrun job, one GPU each: `run` launches a pair with world_size > 1 through
    # torchrun (--nproc-per-node overrides, down to min_world_size); 1: a plain process
    world_size: int = 1
    min_world_size: int = 1
    # (sizes, world_size) -> {"variant/Op": bytes}: each collective's message size S as nccl-tests
    # defines it (analyze.ranks.collectives), for bus bandwidths; nsys exports carry no message sizes
    collective_bytes: Callable[[Mapping[str, int], int], Mapping[str, int]] | None = None
    # the time its lesson is about, which its speedups and the gate use (analyze.timing.speedup): "" for GPU
    # time (CUDA events, calls queued ahead of the GPU); "latency" (one call on an idle GPU, host
    # included) or "steady" (calls back to back) where the lesson is the host's work or launches
    timer: str = ""
    # the sizes the kernels take (pairs.size_rules): --sizes off them is a SizesError before anything runs
    size_rules: tuple[SizeRule, ...] = ()
    source: str = ""                            # module path, filled in by discovery
    book: Book | None = None                    # the book's optimized variant and B200 ratio (pairs.book)

    def __post_init__(self) -> None:
        # role values only: a pair narrowed by `replace(pair, variants=...)` may drop a reference
        check_roles(list(self.roles), self.roles)
        for v, tol in {"": self.tolerance, **self.variant_tolerance}.items():
            if not tol >= 0:
                raise ValueError(f"{self.name}: tolerance{' of ' + repr(v) if v else ''} must be >= 0, got {tol}")
        if self.book is not None and self.roles.get(self.book.variant) == CONTROL:
            raise ValueError(f"{self.name}: the book's variant {self.book.variant!r} is declared a control")
        if not 1 <= self.min_world_size <= self.world_size:
            raise ValueError(f"{self.name}: need 1 <= min_world_size ({self.min_world_size}) <= "
                             f"world_size ({self.world_size})")
        stray = [r.key for r in self.size_rules if r.key not in self.sizes or (r.per and r.per not in self.sizes)]
        if stray:
            raise ValueError(f"{self.name}: size rules for sizes it does not have: {', '.join(stray)}")

    def checked_sizes(self, sizes: Mapping[str, int]) -> dict[str, int]:
        """`sizes` if they pass the pair's size rules, else SizesError naming each rule and the
        nearest valid sizes (pairs.size_rules)."""
        return check_sizes(self.name, self.size_rules, sizes)

    @property
    def distributed(self) -> bool:
        """Whether the pair runs as several ranks (torchrun), not one process."""
        return self.world_size > 1

    @property
    def baseline(self) -> Factory:
        return self.variants["baseline"]

    @property
    def optimized(self) -> dict[str, Factory]:
        return {k: v for k, v in self.variants.items() if k != "baseline"}

    def tolerance_for(self, variant: str) -> float:
        """The bound on `variant`'s ||out - ref|| / ||ref||: its own, else the pair's."""
        return float(self.variant_tolerance.get(variant, self.tolerance))

    def role(self, variant: str) -> str:
        """baseline, optimization or reference (pairs.roles)."""
        return variant_roles(list(self.variants), self.roles)[variant]

    @property
    def chapter_key(self) -> str:
        return f"ch{self.chapter:02d}"

    def needs(self, variant: str) -> tuple[str, ...]:
        """Everything `variant` needs: the pair's needs, then the variant's own."""
        return tuple(dict.fromkeys((*self.requires.needs, *self.variant_needs.get(variant, ()))))
