"""Keep what the compilers generated in the run folder, indexed by kernel name.

During a collection every child runs with Inductor's and Triton's caches inside the run folder
(`compile_cache/`, see `cache_env`): fresh for each run, so the check's first call compiles from
nothing (its wall time is the honest compile cost) while the later children (timing, ncu, nsys)
find the caches warm (in a gate, Triton's binaries may come from its store: collect.code.binary_store,
copied into the run's cache, so they are indexed as ever); a gate's further timing processes compile in
empty caches of their own (collect.code.compile_cache), which are not indexed: the profilers profile what
the first timed.
When the children are done, `keep_generated` copies out what a reader needs and drops the rest
(shared objects, cubins, pickled graphs):

    generated/index.json                 the kept Triton kernels, the dropped ones (one line each)
                                         and the output-code modules (below)
    generated/output_code/<module>.py    Inductor's output code: the kernels it defines and launches
    generated/triton/<name>-<hash8>/     <name>.ttgir, .ptx, .source, .json (metadata) and, where
                                         cuobjdump is found, .sass and .res_usage.txt

Only what a profile can link to is kept. Under max-autotune Inductor compiles benchmark
candidates (`triton_mm`, `triton_` ...) that no output code launches: on an H100 run of
ch14.graph_break_control_flow 45 of 121 kernels, whose SASS listings made up much of 26 MB and
whose cuobjdump calls most of a minute. A kernel whose TTIR says it was written into Inductor's
cache and whose name no output-code module defines is such a candidate: the index keeps one line
for it (name, hash, warps, stages, `kept: false`), no files, no cuobjdump. Hand-written Triton
kernels (their source is a pair's file) are always kept, and nothing is dropped where no output
code was found. Same-named kernels compiled in several configurations (Inductor's runtime
autotuning of pointwise and reduction kernels) are all kept: which one ran is told by its launch
shape (`analyze.code.generated_code.match_launches`).

Each kernel's entry holds its launch configuration (warps, stages, shared memory), registers and
local memory (cuobjdump -res-usage), PTX and SASS summaries (`parse.code.ptx.kernel_code_summary`)
and the output-code modules that define it. Kernel names are those ncu and nsys report, so a
row of the kernel tables finds its code (`aisp-prof code RUN --kernel NAME`). A cache the user
pointed elsewhere ($TORCHINDUCTOR_CACHE_DIR, $TRITON_CACHE_DIR) is left alone and not indexed.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePath
from typing import Any, Mapping

from ...parse.code.ptx import kernel_code_summary
from .binary_store import found_in_store, store_in_use
from .compile_cache import CACHE_VARS, FRESH_PREFIX, cache_dirs
from .listings import listing
from ...naming import COMPILE_CACHE_DIR, GENERATED_DIR, GENERATED_INDEX
from ...parse.code.generated_code import (extern_calls, is_output_code, kernel_source_file, output_code_kernels,
                                         triton_kernel_dirs)

log = logging.getLogger(__name__)
KEPT_STAGES = ("ttgir", "ptx", "source")          # Triton's text stages worth reading (ttir/llir: in between)
MAX_CUOBJDUMP_WORKERS = 16   # cuobjdump -sass takes ~0.4 s a cubin, all of it in the child process


def cache_env(folder: Path, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The children's cache variables: inside `folder`, each unless the user set it."""
    return {var: path for var, path in cache_dirs(folder / COMPILE_CACHE_DIR).items() if var not in environ}


def find_cuobjdump() -> Path | None:
    """cuobjdump: $AISP_CUOBJDUMP, the one Triton bundles (it matches Triton's ptxas), PATH,
    /usr/local/cuda/bin; None when there is none (then no SASS, only PTX)."""
    candidates = [os.environ.get("AISP_CUOBJDUMP", "")]
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.origin:
        candidates.append(str(Path(spec.origin).parent / "backends" / "nvidia" / "bin" / "cuobjdump"))
    candidates += [shutil.which("cuobjdump") or "", "/usr/local/cuda/bin/cuobjdump"]
    return next((Path(c) for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


def _cuobjdump(tool: Path | None, flag: str, cubin: Path) -> str | None:
    if tool is None or not cubin.is_file():
        return None
    try:
        proc = subprocess.run([str(tool), flag, str(cubin)], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("%s %s %s failed: %s", tool, flag, cubin, exc)
        return None
    return proc.stdout if proc.returncode == 0 else None


def _triton_kernel(folder: Path, meta: dict[str, Any], out: Path, cuobjdump: Path | None,
                   store: Path | None = None) -> dict[str, Any]:
    """Copy one cached kernel's text stages (and its SASS) into out/triton/<name>-<hash8>/; its listings
    made once per cubin (collect.code.listings: kept in `store`'s folder for the kernel's key, if any)."""
    name = meta["name"]
    digest = str(meta.get("hash") or folder.name)
    rel = Path("triton") / f"{name}-{digest[:8]}"
    dest = out / rel
    dest.mkdir(parents=True, exist_ok=True)
    files = {}
    for stage in KEPT_STAGES + ("json",):
        src = folder / f"{name}.{stage}"
        if src.is_file():
            shutil.copyfile(src, dest / src.name)
            files[stage] = str(rel / src.name)
    kept = store / folder.name if store is not None else None
    cubin = folder / f"{name}.cubin"
    listings = {kind: None if cuobjdump is None else listing(cuobjdump, flag, cubin, _cuobjdump, kept)
                for kind, flag in (("sass", "-sass"), ("res_usage", "-res-usage"))}
    for kind, text in listings.items():
        if text:
            target = dest / (f"{name}.sass" if kind == "sass" else f"{name}.res_usage.txt")
            target.write_text(text)
            files[kind] = str(rel / target.name)
    ptx = (folder / f"{name}.ptx").read_text(errors="replace") if (folder / f"{name}.ptx").is_file() else None
    return {"name": name, "hash": digest, "dir": str(rel), "files": files,
            "arch": meta.get("arch") or (meta.get("target") or {}).get("arch"),
            "num_warps": meta.get("num_warps"), "num_stages": meta.get("num_stages"),
            "num_ctas": meta.get("num_ctas"), "shared_bytes": meta.get("shared"),
            "triton_version": meta.get("triton_version"),
            **kernel_code_summary(name, ptx, listings["sass"], listings["res_usage"]), "defined_in": []}


def _output_code(root: Path, out: Path) -> list[dict[str, Any]]:
    """Inductor's output-code modules under `root`, copied to out/output_code/, with their kernels."""
    modules = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(errors="replace")
        if not is_output_code(text):
            continue
        rel = Path("output_code") / path.name
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / rel)
        modules.append({"file": str(rel), "kernels": output_code_kernels(text), "extern_calls": extern_calls(text)})
    return modules


def in_inductor_cache(source_file: str | None, inductor_dir: Path) -> bool:
    """Whether a kernel's defining file lies in Inductor's cache: under `inductor_dir`, or under
    any run folder's `compile_cache/inductor/` or a process's own `aisp-compile-*/inductor/` (the TTIR
    keeps the path the kernel was first compiled in: with the binary store, an earlier run's, maybe under a
    user's cache), or named as a file of `inductor_dir` (Inductor names its files by their content's hash)."""
    if not source_file:
        return False
    path = PurePath(source_file)
    if path.is_relative_to(inductor_dir) or (inductor_dir / path.parent.name / path.name).is_file():
        return True
    parts = path.parts
    return any(parts[i + 1] == "inductor" and (parts[i] == COMPILE_CACHE_DIR or parts[i].startswith(FRESH_PREFIX))
               for i in range(len(parts) - 1))


def unused_candidate(name: str, source_file: str | None, used: set[str], inductor_dir: Path) -> bool:
    """An Inductor-written kernel that no output-code module defines (an autotuning benchmark
    candidate): dropped. False for every kernel when `used` is empty (no output code found)."""
    return bool(used) and name not in used and in_inductor_cache(source_file, inductor_dir)


def _source_file(folder: Path, name: str) -> str | None:
    try:
        with open(folder / f"{name}.source", errors="replace") as f:
            return kernel_source_file(f.read(4000))
    except OSError:
        return None


def _dropped(meta: dict[str, Any], folder: Path) -> dict[str, Any]:
    return {"name": meta["name"], "hash": str(meta.get("hash") or folder.name), "num_warps": meta.get("num_warps"),
            "num_stages": meta.get("num_stages"), "kept": False}


def index_generated(cache: Path, out: Path, cuobjdump: Path | None = None, store: Path | None = None) -> dict[str, Any]:
    """Copy and summarize a compile cache (`cache`/inductor, `cache`/triton) into `out`; write
    and return the index: {"kernels": [...kept...], "dropped": [...one line each...],
    "dropped_kernels": n, "output_code": [...], "cuobjdump": path or None}. Kernels are sorted
    out before any file is copied or cuobjdump runs; `store`: the binary store the run compiled through."""
    out.mkdir(parents=True, exist_ok=True)
    modules = _output_code(cache / "inductor", out) if (cache / "inductor").is_dir() else []
    used = {d["name"] for m in modules for d in m["kernels"]}
    found = triton_kernel_dirs(cache / "triton") if (cache / "triton").is_dir() else []
    drop = [unused_candidate(meta["name"], _source_file(folder, meta["name"]), used, cache / "inductor")
            for folder, meta in found]
    keep = [(folder, meta) for (folder, meta), gone in zip(found, drop) if not gone]
    # each kernel writes only its own folder; cuobjdump runs in a child, so threads overlap them
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_CUOBJDUMP_WORKERS, os.cpu_count() or 1))) as pool:
        kernels = [{**k, "kept": True} for k in pool.map(lambda fm: _triton_kernel(*fm, out, cuobjdump, store), keep)]
    dropped = [_dropped(meta, folder) for (folder, meta), gone in zip(found, drop) if gone]
    for k in kernels:
        k["defined_in"] = [m["file"] for m in modules if any(d["name"] == k["name"] for d in m["kernels"])]
    text = json.dumps({"kernels": kernels, "dropped": dropped, "dropped_kernels": len(dropped), "output_code": modules,
                       "cuobjdump": str(cuobjdump) if cuobjdump else None, **_store_counts(found, store)},
                      indent=1, sort_keys=True)
    (out / "index.json").write_text(text)
    return json.loads(text)        # as a reader of the file sees it (byte-width keys are strings)


def _store_counts(found: list[tuple[Path, dict[str, Any]]], store: Path | None) -> dict[str, int]:
    """How many of the cache's Triton kernels (kept or dropped) the run found in the binary store, and how
    many it compiled ({} without a store): `triton_binaries` says "kept between runs" even where none was found."""
    if store is None:
        return {}
    seen = [found_in_store(folder) for folder, _ in found]
    return {"from_store": seen.count(True), "compiled_here": seen.count(False)}


def keep_generated(folder: Path, env: Mapping[str, str]) -> dict[str, Any] | None:
    """After the children: index the run's own compile cache into generated/, then remove the
    cache. Returns what run.json records (kept and dropped counts, where, seconds spent indexing),
    or None when nothing was generated."""
    cache = folder / COMPILE_CACHE_DIR
    ours = {sub for var, sub in CACHE_VARS.items() if env.get(var) == str(cache / sub)}
    if not ours or not cache.is_dir():
        return None
    start = time.perf_counter()
    try:
        index = index_generated(cache, folder / GENERATED_DIR, find_cuobjdump(), store_in_use(env))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if not index["kernels"] and not index["output_code"]:
        shutil.rmtree(folder / GENERATED_DIR, ignore_errors=True)
        return None
    return {"index": GENERATED_INDEX, "triton_kernels": len(index["kernels"]),
            "dropped_kernels": index["dropped_kernels"], "output_code_modules": len(index["output_code"]),
            "sass": index["cuobjdump"] is not None, "index_wall_s": round(time.perf_counter() - start, 2),
            **{k: index[k] for k in ("from_store", "compiled_here") if k in index}}
