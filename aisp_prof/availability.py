"""Can a pair run on this machine? Answered without launching anything on the GPU."""
from __future__ import annotations

import importlib.util
from typing import Any

from . import pairs as pairs_mod
from .errors import ToolNotFoundError


def machine_capabilities() -> dict[str, Any]:
    """{'gpu': bool, 'cc': (major, minor) | None, 'gpu_name', 'triton': bool, 'nvcc': bool,
    'cutlass': bool (CUTLASS headers found by collect.tools.find_cutlass_include)}."""
    caps: dict[str, Any] = {"gpu": False, "cc": None, "gpu_name": None,
                            "triton": importlib.util.find_spec("triton") is not None}
    try:
        import torch

        if torch.cuda.is_available():
            caps.update(gpu=True, cc=torch.cuda.get_device_capability(0),
                        gpu_name=torch.cuda.get_device_name(0))
    except ImportError:
        pass
    try:
        from .collect.tools import find_nvcc

        find_nvcc()
        caps["nvcc"] = True
    except ToolNotFoundError:
        caps["nvcc"] = False
    from .collect.tools import have_cutlass

    caps["cutlass"] = have_cutlass()
    return caps


def why_not(pair: pairs_mod.KernelPair, caps: dict[str, Any]) -> str:
    """'' when the pair can run here, else the reason (shown by `list` and `run`)."""
    if not caps["gpu"]:
        return "no CUDA GPU"
    cc, req = caps["cc"], pair.requires
    if cc < req.min_cc or (req.max_cc is not None and cc > req.max_cc):
        note = f" ({req.note})" if req.note else ""
        return f"needs sm_{req.min_cc[0]}{req.min_cc[1]}+{note}, this GPU is sm_{cc[0]}{cc[1]}"
    return ""


def pair_listing() -> list[dict[str, Any]]:
    caps = machine_capabilities()
    rows = []
    for pair in pairs_mod.discover():
        reason = why_not(pair, caps)
        runnable = [v for v in pair.variants
                    if all(caps.get(n, False) for n in pair.variant_needs.get(v, ()))]
        rows.append({
            "name": pair.name, "chapter": pair.chapter, "chapter_key": pair.chapter_key,
            "lesson": pair.lesson, "variants": list(pair.variants),
            "requires": {"min_cc": ".".join(map(str, pair.requires.min_cc)),
                         "max_cc": ".".join(map(str, pair.requires.max_cc)) if pair.requires.max_cc else None,
                         "needs": sorted({n for v in pair.variant_needs.values() for n in v}),
                         "note": pair.requires.note},
            "default_sizes": dict(pair.sizes), "can_run": not reason, "reason": reason,
            "variants_runnable_here": runnable if not reason else [],
        })
    return rows
