"""Which generated kernels a question is about: by name, or the ones a variant's launches ran.

Pure functions of the run folder's generated index (`collect.code.generated`) and the run's kernel
tables: ncu and nsys name a Triton or Inductor kernel by its function name
("triton_poi_fused_add_relu_0"), the index by the same name. One name is not one kernel:
Inductor autotunes pointwise and reduction kernels at run time, compiling one name in up to 14
configurations (an H100 run of ch14.graph_break_control_flow), and all stay in the index. A
launch is joined to the configuration that ran by its shape (`match_launches`): block threads
= warps x 32, registers per thread, dynamic shared memory (Triton's `shared` is all dynamic).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

# ncu's launch__registers_per_thread never reads below 16 on that H100 run, where cuobjdump
# -res-usage says 12-14 (triton_per_fused_lt_sum_1's only 1-warp build: 14, ncu 16): the
# hardware allocates at least 16 registers a thread, and ncu reports the allocation.
MIN_REGISTERS_PER_THREAD = 16
NOT_GENERATED = "not generated here"
MATCHED = "matched"


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


def code_rows(index: dict[str, Any] | None, variants: Iterable[str], matches: pd.DataFrame | None = None,
              *frames: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per generated Triton kernel for the report: which variants ran this very build
    (`matches`: ncu launches joined by `match_launches`; without ncu, by name in `frames`),
    which had a launch it might be (`maybe_variants`: ambiguous joins), launch configuration,
    registers, local memory, instruction counts, the matrix instructions (wgmma/HGMMA vs
    mma.sync/HMMA) and LDL/STL (spills), and its files."""
    if not index:
        return []
    variants = list(variants)
    ran: dict[str, set[str]] = {}
    maybe: dict[str, set[str]] = {}
    if matches is not None and not matches.empty:
        for _, m in matches.iterrows():
            target = ran if m["match"] == MATCHED else maybe
            for h in m["candidates"]:
                target.setdefault(h, set()).add(m["variant"])
        by_name = None
    else:
        by_name = {v: launched_names(v, *frames) for v in variants}
    rows = []
    for k in index.get("kernels") or []:
        ptx, sass = k.get("ptx") or {}, k.get("sass") or {}
        digest = str(k.get("hash", ""))
        if by_name is not None:
            who, might = [v for v in variants if k["name"] in by_name[v]], []
        else:
            who = [v for v in variants if v in ran.get(digest, ())]
            might = [v for v in variants if v in maybe.get(digest, ())]
        rows.append({
            "name": k["name"], "hash": digest[:8], "variants": who, "maybe_variants": might,
            **{f: k.get(f) for f in ("num_warps", "num_stages", "shared_bytes", "registers", "local_bytes")},
            "ptx_instructions": ptx.get("instructions"), "sass_instructions": sass.get("instructions"),
            "wgmma": ptx.get("wgmma"), "mma_sync": ptx.get("mma_sync"), "hgmma": sass.get("hgmma"),
            "hmma": sass.get("hmma"), "tma": sass.get("tma"),
            "ldl_stl": (sass.get("ldl", 0) + sass.get("stl", 0)) if sass else None,
            "files": k.get("files") or {}, "defined_in": k.get("defined_in") or [],
        })
    return sorted(rows, key=lambda r: (not r["variants"], not r["maybe_variants"], r["name"]))


def link_kernel_rows(rows: list[dict[str, Any]], matches: pd.DataFrame) -> list[dict[str, Any]]:
    """The report's kernel rows (one per variant, kernel and launch shape) with `generated`: the
    8-character hash of the build their launches ran, where the join found exactly one; else
    `generated_match` says why not ('ambiguous (2 candidates)'; None for a library kernel)."""
    for r in rows:
        r["generated"] = r["generated_match"] = None
        if matches is None or matches.empty:
            continue
        same = matches[(matches["variant"] == r["variant"]) & (matches["kernel"] == base_name(r["kernel"]))]
        for col in ("registers_per_thread", "dynamic_shared_bytes"):
            if r.get(col) is not None:
                same = same[same[col].astype(float) == float(r[col])]
        statuses = set(same["match"])
        hashes = {h for h in same["hash"] if h}
        if statuses == {MATCHED} and len(hashes) == 1:
            r["generated"] = next(iter(hashes))[:8]
        elif statuses and statuses != {NOT_GENERATED}:
            r["generated_match"] = ", ".join(sorted(statuses))
    return rows


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and value != value)


def fits_launch(kernel: dict[str, Any], block_threads: Any, registers: Any, dynamic_shared_bytes: Any) -> bool:
    """Whether a compiled kernel could be the one launched with this shape; a number either
    side does not know (no cuobjdump, no ncu) does not rule it out."""
    warps, regs, shared = kernel.get("num_warps"), kernel.get("registers"), kernel.get("shared_bytes")
    if _known(block_threads) and _known(warps) and int(warps) * 32 != int(block_threads):
        return False
    if _known(registers) and _known(regs) and max(int(regs), MIN_REGISTERS_PER_THREAD) != int(registers):
        return False
    return not (_known(dynamic_shared_bytes) and _known(shared) and int(shared) != int(dynamic_shared_bytes))


def match_launch(index: dict[str, Any] | None, kernel: str, block_threads: Any = None, registers: Any = None,
                 dynamic_shared_bytes: Any = None) -> tuple[str, list[dict[str, Any]]]:
    """(status, candidates) for one launch: 'matched' and the one kernel; 'ambiguous (N
    candidates)' and those N; 'not generated here' (no kept kernel of that name: a library or
    ATen kernel, or code compiled outside the run) or 'no build of this shape (N of this name)'
    with none."""
    name = base_name(kernel)
    same = [k for k in (index or {}).get("kernels") or [] if k["name"] == name]
    if not same:
        return NOT_GENERATED, []
    fits = [k for k in same if fits_launch(k, block_threads, registers, dynamic_shared_bytes)]
    if len(fits) == 1:
        return MATCHED, fits
    if fits:
        return f"ambiguous ({len(fits)} candidates)", fits
    return f"no build of this shape ({len(same)} of this name)", []


def match_launches(kernels: pd.DataFrame, index: dict[str, Any] | None) -> pd.DataFrame:
    """One row per ncu launch: variant, launch_id, kernel (base name), duration_ns, its shape
    (block_size, registers_per_thread, dynamic_shared_bytes), `match` (status of
    `match_launch`), `hash` of the one kernel that ran (None unless matched) and `candidates`
    (the hashes that fit)."""
    cols = ["variant", "launch_id", "kernel", "duration_ns", "block_size", "registers_per_thread",
            "dynamic_shared_bytes", "match", "hash", "candidates"]
    if kernels is None or kernels.empty or "kernel" not in kernels:
        return pd.DataFrame(columns=cols)
    rows = []
    for _, r in kernels.iterrows():
        shape = (r.get("block_size"), r.get("registers_per_thread"), r.get("dynamic_shared_bytes"))
        status, found = match_launch(index, r["kernel"], *shape)
        rows.append({"variant": r.get("variant"), "launch_id": r.get("launch_id"), "kernel": base_name(r["kernel"]),
                     "duration_ns": r.get("duration_ns"), "block_size": shape[0], "registers_per_thread": shape[1],
                     "dynamic_shared_bytes": shape[2], "match": status,
                     "hash": found[0]["hash"] if status == MATCHED else None,
                     "candidates": [k["hash"] for k in found]})
    return pd.DataFrame(rows, columns=cols)


def generated_code_view(run_id: str, run_dir: Path, index: dict[str, Any], kernels: pd.DataFrame,
                        timeline: pd.DataFrame, variant: str | None = None, kernel: str | None = None,
                        all_kernels: bool = False) -> dict[str, Any]:
    """`RunDatabase.generated_code`'s answer from a run's frames and its generated/index.json:
    each ncu launch joined to the compiled kernel that ran, those kernels (or, `all_kernels`,
    every kept one), and the output code that defines them; narrowed to `variant` and to kernel
    names containing `kernel`."""
    from ...naming import GENERATED_DIR

    launches = match_launches(kernels, index)
    if variant:
        launches = launches[launches["variant"] == variant]
    if kernel:
        launches = launches[launches["kernel"].str.contains(kernel, case=False, regex=False)]
    launched = launched_names(variant, kernels, timeline) if variant else None
    if all_kernels:
        chosen = select_kernels(index, kernel, launched)
    else:
        ran = [h for hashes in launches["candidates"] for h in hashes]
        by_hash = {k["hash"]: k for k in index.get("kernels") or []}
        chosen = [by_hash[h] for h in dict.fromkeys(ran)]           # in launch order, once each
    names = {k["name"] for k in chosen}
    return {"run_id": run_id, "generated_dir": str(run_dir / GENERATED_DIR), "variant": variant,
            "kernel": kernel, "all": all_kernels, "launched": sorted(launched) if launched is not None else None,
            "cuobjdump": index.get("cuobjdump"), "dropped_kernels": index.get("dropped_kernels", 0),
            "launches": launches.astype(object).where(launches.notna(), None).to_dict("records"),
            "kernels": chosen,
            # no filter: every module (a graph's output code, whichever of its kernels ran)
            "output_code": select_output_code(index, chosen, kernel, launched if all_kernels or not (variant or kernel)
                                              else names)}
