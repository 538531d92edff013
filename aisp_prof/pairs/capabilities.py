"""Can a pair run here? The one answer `list`, `run`, `bench` and the tests all use.

A machine is described once (`Machine`: GPU and compute capability, the tools and packages pairs
need); `runnable(pair, machine)` says which variants run, which are skipped and why, and, when
the pair cannot be profiled at all, the reason and the error (with its exit code) that says so:
no GPU (3), a missing tool such as nvcc or the CUTLASS headers (4), a GPU of the wrong
generation or a missing package (9). Nothing is launched on the GPU to find out.
"""
from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass, field

from ..errors import AispError, NoGpuError, RequirementError, ToolNotFoundError, UnknownTargetError
from .model import KernelPair
from .size_rules import rule_texts
from .static import PairInfo

log = logging.getLogger(__name__)

KNOWN_NEEDS = ("gpu", "nvcc", "triton", "cutlass")
# what a missing need is called in a message, and how to get it
NEED_HINTS = {
    "gpu": "a CUDA GPU",
    "nvcc": "nvcc (install the CUDA toolkit or set AISP_NVCC)",
    "cutlass": "the CUTLASS headers (pip install nvidia-cutlass or set AISP_CUTLASS_INCLUDE)",
    "triton": "triton (pip install triton)",
}
NEED_ERRORS: dict[str, type[AispError]] = {"gpu": NoGpuError, "nvcc": ToolNotFoundError,
                                           "cutlass": ToolNotFoundError}


@dataclass(frozen=True)
class Machine:
    """What this machine offers pairs. `cc` is None without a CUDA GPU."""

    have: frozenset[str] = frozenset()          # met needs among KNOWN_NEEDS
    cc: tuple[int, int] | None = None
    gpu_name: str | None = None
    torch: bool = True
    gpu_count: int = 0                          # CUDA devices visible: a rank per GPU


    @property
    def gpu(self) -> bool:
        return self.cc is not None

    @classmethod
    def of(cls, *have: str, cc: tuple[int, int] | None = None, gpu_name: str | None = None,
           gpu_count: int | None = None) -> "Machine":
        """A machine with these needs met; `cc` defaults to Hopper when "gpu" is among them,
        `gpu_count` to 1 GPU when there is one."""
        cc = cc if cc is not None else ((9, 0) if "gpu" in have else None)
        count = gpu_count if gpu_count is not None else (1 if cc else 0)
        return cls(frozenset(have) | ({"gpu"} if cc else set()), cc, gpu_name, True, count)


GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg")     # the driver's, and WSL's


def surely_no_gpu() -> bool:
    """True on Linux when no NVIDIA device node (nor WSL's /dev/dxg) exists: CUDA cannot see a GPU
    there, so `quickstart` need not import torch (1-2 s) to find out. Elsewhere False: ask torch."""
    import os
    import sys

    return sys.platform.startswith("linux") and not any(os.path.exists(p) for p in GPU_DEVICE_NODES)


def detect_machine() -> Machine:
    """This machine: torch's view of GPU 0, and whether triton, nvcc and CUTLASS are found."""
    from ..tools import find_nvcc, have_cutlass

    have = set()
    cc = name = None
    count = 0
    torch_ok = _installed("torch")
    if torch_ok:
        import torch

        if torch.cuda.is_available():
            cc, name = tuple(torch.cuda.get_device_capability(0)), torch.cuda.get_device_name(0)
            count = torch.cuda.device_count()
            have.add("gpu")
    if _installed("triton"):
        have.add("triton")
    try:
        find_nvcc()
        have.add("nvcc")
    except ToolNotFoundError:
        pass
    if have_cutlass():
        have.add("cutlass")
    return Machine(frozenset(have), cc, name, torch_ok, count)


def _installed(name: str) -> bool:
    """Whether `name` can be imported here, without importing it (an import hook that refuses
    the package counts as not installed)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class Runnable:
    """The answer for one pair on one machine."""

    pair: str
    variants: tuple[str, ...]                              # baseline first: what runs here
    skipped: dict[str, str] = field(default_factory=dict)  # variant -> "needs nvcc (...)"
    reason: str = ""                                       # why the pair cannot be profiled here
    error: type[AispError] | None = None

    @property
    def ok(self) -> bool:
        return not self.reason

    def require(self) -> list[str]:
        """The variants to profile, or the error that says why the pair cannot run here."""
        if self.reason:
            raise (self.error or RequirementError)(f"{self.pair}: {self.reason}")
        for variant, why in self.skipped.items():
            log.warning("skipping variant %s of %s: %s", variant, self.pair, why)
        return list(self.variants)


def _missing(pair: KernelPair, variant: str, machine: Machine) -> list[str]:
    needs = pair.needs(variant)
    unknown = [n for n in needs if n not in KNOWN_NEEDS]
    if unknown:
        log.warning("%s/%s needs %s, which this tool cannot detect", pair.name, variant, ", ".join(unknown))
    return [n for n in needs if n not in machine.have]


def _needs_text(missing: list[str]) -> str:
    return "needs " + ", ".join(NEED_HINTS.get(n, n) for n in missing)


def _cc_reason(pair: KernelPair, cc: tuple[int, int]) -> str:
    req = pair.requires
    if cc >= req.min_cc and (req.max_cc is None or cc <= req.max_cc):
        return ""
    note = f" ({req.note})" if req.note else ""
    wanted = f"sm_{req.min_cc[0]}{req.min_cc[1]}" + ("" if req.max_cc == req.min_cc else "+")
    return f"needs {wanted}{note}, this GPU is sm_{cc[0]}{cc[1]}"


def runnable(pair: KernelPair, machine: Machine, asked: tuple[str, ...] | list[str] = ()) -> Runnable:
    """Which variants of `pair` run on `machine` (baseline always first), and if the pair
    cannot be profiled here, why. `asked` restricts the variants; asking for one that cannot
    run is a reason, not a silent skip. An unknown variant name is UnknownTargetError."""
    unknown = [v for v in asked if v not in pair.variants]
    if unknown:
        raise UnknownTargetError(f"{pair.name} has no variant {', '.join(unknown)}; it has {', '.join(pair.variants)}")
    names = ["baseline"] + [v for v in (asked or pair.variants) if v != "baseline"]
    variants, skipped, missing_of = [], {}, {}
    for v in names:
        missing = _missing(pair, v, machine)
        if missing:
            skipped[v], missing_of[v] = _needs_text(missing), missing
        else:
            variants.append(v)
    blocking = [v for v in names if v in skipped and (v == "baseline" or v in asked)]
    if not machine.torch:
        from ..paths import kernels_extra_install

        reason, error = f"needs torch in this Python ({kernels_extra_install()})", RequirementError
    elif not machine.gpu:
        reason, error = "no CUDA GPU", NoGpuError
    elif _cc_reason(pair, machine.cc):
        reason, error = _cc_reason(pair, machine.cc), RequirementError
    elif pair.min_world_size > 1 and machine.gpu_count < pair.min_world_size:
        reason = (f"needs {pair.min_world_size} GPUs (a rank each, through torchrun and NCCL), "
                  f"this machine has {machine.gpu_count}")
        error = RequirementError
    elif blocking:
        first = blocking[0]
        reason = f"{'the baseline' if first == 'baseline' else 'variant ' + first} {skipped[first]}"
        error = NEED_ERRORS.get(missing_of[first][0], RequirementError)
    else:
        reason, error = "", None
    return Runnable(pair.name, tuple(variants), skipped, reason, error)


def listing(pairs: list[KernelPair], machine: Machine,
            unimportable: list[tuple[PairInfo, str]] = ()) -> list[dict]:
    """`aisp-prof list` rows: each pair, its lesson, needs, and whether it can run here; the
    pairs in `unimportable` (read from source, `discovery.discover_here`) with the reason."""
    rows = [_static_row(info, reason) for info, reason in unimportable]
    for pair in pairs:
        answer = runnable(pair, machine)
        rows.append({
            "name": pair.name, "chapter": pair.chapter, "chapter_key": pair.chapter_key,
            "lesson": pair.lesson, "variants": list(pair.variants),
            "roles": {v: pair.role(v) for v in pair.variants}, "comparison": pair.comparison,
            "expect": [m.to_dict() for m in pair.expect], "book": pair.book.to_dict() if pair.book else None,
            "timer": pair.timer or None,        # the time its headline and gate use (None: GPU time)
            "requires": {"min_cc": ".".join(map(str, pair.requires.min_cc)),
                         "max_cc": ".".join(map(str, pair.requires.max_cc)) if pair.requires.max_cc else None,
                         "needs": sorted({n for v in pair.variants for n in pair.needs(v)}),
                         "note": pair.requires.note},
            "default_sizes": dict(pair.sizes), "size_rules": rule_texts(pair.size_rules),
            "world_size": pair.world_size,
            "min_world_size": pair.min_world_size, "can_run": answer.ok, "reason": answer.reason,
            "variants_runnable_here": list(answer.variants) if answer.ok else [],
            "variants_skipped_here": answer.skipped if answer.ok else {},
            "source": pair.source,
        })
    return sorted(rows, key=lambda r: r["name"])


def _static_row(info: PairInfo, reason: str) -> dict:
    """A `listing` row from a pair's source: the same keys; what the source does not state
    literally (per-variant needs, sizes built in code) is None."""
    req = info.requires
    cc = (lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else None)
    return {
        "name": info.name, "chapter": info.chapter, "chapter_key": info.chapter_key,
        "lesson": info.lesson, "variants": list(info.variants),
        "requires": {"min_cc": cc(req.get("min_cc", (7, 0))), "max_cc": cc(req.get("max_cc")),
                     "needs": None, "note": req.get("note", "")},
        "default_sizes": info.sizes, "size_rules": None, "world_size": None, "min_world_size": None,
        "can_run": False, "reason": reason,
        "book": None, "timer": None,
        "variants_runnable_here": [], "variants_skipped_here": {},
    }
