"""Which generated kernels a question is about: by name, or those a variant launched.

A pure function of the run folder's generated index (`collect.generated`) and the run's kernel
tables: ncu and nsys name a Triton or Inductor kernel by its function name
("triton_poi_fused_add_relu_0"), the index by the same name, so the tables link to the code.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

import pandas as pd


def base_name(kernel: str) -> str:
    """'void at::<unnamed>::k<float, 8>(T1 *, int)' -> 'k'; 'triton_poi_fused_add_0' stays itself."""
    text = str(kernel).replace("(anonymous namespace)", "anon").replace("<unnamed>", "anon")
    while True:                                   # drop template arguments, innermost first
        stripped = re.sub(r"<[^<>]*>", "", text)
        if stripped == text:
            break
        text = stripped
    head = text.split("(", 1)[0].strip()
    words = head.rsplit("::", 1)[-1].split()
    return words[-1] if words else ""


def launched_names(variant: str, *frames: pd.DataFrame) -> set[str]:
    """Kernel base names `variant` launched, from ncu's kernels and nsys's timeline."""
    names: set[str] = set()
    for f in frames:
        if f is None or f.empty or "variant" not in f:
            continue
        rows = f[f["variant"] == variant]
        for col in ("kernel", "short_name"):
            if col in rows:
                names |= {base_name(k) for k in rows[col].dropna().unique()}
    return names - {""}


def select_kernels(index: dict[str, Any], kernel: str | None = None,
                   launched: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The index's Triton kernels whose name contains `kernel` (case-insensitive) and, when
    `launched` is given, that are among those names."""
    wanted = set(launched) if launched is not None else None
    out = []
    for k in index.get("kernels") or []:
        if kernel and kernel.lower() not in k["name"].lower():
            continue
        if wanted is not None and k["name"] not in wanted:
            continue
        out.append(k)
    return out


def select_output_code(index: dict[str, Any], kernels: list[dict[str, Any]], kernel: str | None = None,
                       launched: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Output-code modules defining any of `kernels`, or any kernel matching the filters (C++
    kernels have no Triton entry); every module when there is no filter."""
    modules = index.get("output_code") or []
    if kernel is None and launched is None:
        return list(modules)
    files = {f for k in kernels for f in k.get("defined_in") or []}
    wanted = set(launched) if launched is not None else None

    def matches(name: str) -> bool:
        return (not kernel or kernel.lower() in name.lower()) and (wanted is None or name in wanted)

    return [m for m in modules if m["file"] in files or any(matches(d["name"]) for d in m.get("kernels") or [])]


def code_rows(index: dict[str, Any] | None, variants: Iterable[str], *frames: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per generated Triton kernel for the report: which variants launched it (by the
    ncu/nsys names), launch configuration, registers, local memory, instruction counts, the
    matrix instructions (wgmma/HGMMA vs mma.sync/HMMA) and LDL/STL (spills), and its files."""
    if not index:
        return []
    launched = {v: launched_names(v, *frames) for v in variants}
    rows = []
    for k in index.get("kernels") or []:
        ptx, sass = k.get("ptx") or {}, k.get("sass") or {}
        rows.append({
            "name": k["name"], "hash": str(k.get("hash", ""))[:8],
            "variants": [v for v, names in launched.items() if k["name"] in names],
            **{f: k.get(f) for f in ("num_warps", "num_stages", "shared_bytes", "registers", "local_bytes")},
            "ptx_instructions": ptx.get("instructions"), "sass_instructions": sass.get("instructions"),
            "wgmma": ptx.get("wgmma"), "mma_sync": ptx.get("mma_sync"), "hgmma": sass.get("hgmma"),
            "hmma": sass.get("hmma"), "tma": sass.get("tma"),
            "ldl_stl": (sass.get("ldl", 0) + sass.get("stl", 0)) if sass else None,
            "files": k.get("files") or {}, "defined_in": k.get("defined_in") or [],
        })
    return sorted(rows, key=lambda r: (not r["variants"], r["name"]))
