"""What a pair's CUDA builds will cost, said in the progress lines of `run` and `check`.

A pair's CUDA library is built by nvcc on first use and kept in a content-hashed build cache
(aisp_kernels.build: the key hashes the source, its local headers, the flags with the arch, and
`nvcc --version`; `$AISP_BUILD_DIR`, else ~/.cache/aisp-prof/build/), so only the first check on a
machine (or after an edit) pays for it; a CUTLASS build takes a minute or more. Before the check
starts, `pending_builds` names the libraries not in the cache (the pair module's CudaLibrary
values, asked without building); after it, `build_lines` says how long each build took (the
child's check.json `builds`). Nothing here imports aisp_kernels: the pair module already did.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterable, Mapping

from ...pairs import KernelPair


def pair_libraries(pair: KernelPair, variants: Iterable[str] | None = None) -> list[Any]:
    """The CUDA library descriptions (aisp_kernels.binding.CudaLibrary) the pair's module holds:
    those its inputs and the given variants (default: all; the baseline always runs) can reach."""
    found: dict[int, Any] = {}
    wanted = None if variants is None else {"baseline", *variants}
    chosen = [fn for name, fn in pair.variants.items() if wanted is None or name in wanted]
    for fn in (pair.make_inputs, *chosen):
        for value in getattr(fn, "__globals__", {}).values():
            if not isinstance(value, type) and callable(getattr(value, "needs_build", None)):
                found[id(value)] = value
    return list(found.values())


def pending_builds(pair: KernelPair) -> list[str]:
    """The pair's CUDA sources nvcc will build before its first call here (not in the build cache)."""
    return sorted({Path(lib.source).name for lib in pair_libraries(pair) if lib.needs_build()})


def pending_line(pair: KernelPair) -> str | None:
    """"building cutlass_gemm.cu first (...)" or None when every library is cached."""
    names = pending_builds(pair)
    if not names:
        return None
    return (f"      building {', '.join(names)} first (not in the build cache {build_dir_text()}; "
            "a CUTLASS build takes a minute or more, later checks reuse it)")


def build_lines(builds: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per build the child ran: what, for which arch, how long."""
    return [f"      built {b.get('source')} for {b.get('arch')} in {b.get('seconds')} s (cached for the next check)"
            for b in builds]


def build_dir_text() -> str:
    build = sys.modules.get("aisp_kernels.build")
    return str(build.build_dir()) if build is not None else "$AISP_BUILD_DIR"


def builds_so_far() -> list[dict[str, Any]]:
    """The builds this process ran (aisp_kernels.build.BUILT), if the build helper was loaded."""
    return list(getattr(sys.modules.get("aisp_kernels.build"), "BUILT", []))
