"""Keep what the compilers generated in the run folder, indexed by kernel name.

During a collection every child runs with Inductor's and Triton's caches inside the run folder
(`compile_cache/`, see `cache_env`): fresh for each run, so the check's first call compiles from
nothing (its wall time is the honest compile cost) while the later children (timing, ncu, nsys)
find the caches warm. When the children are done, `keep_generated` copies out what a reader
needs and drops the rest (shared objects, cubins, pickled graphs):

    generated/index.json                 every Triton kernel and output-code module (below)
    generated/output_code/<module>.py    Inductor's output code: the kernels it defines and launches
    generated/triton/<name>-<hash8>/     <name>.ttgir, .ptx, .source, .json (metadata) and, where
                                         cuobjdump is found, .sass and .res_usage.txt

Each kernel's entry holds its launch configuration (warps, stages, shared memory), registers and
local memory (cuobjdump -res-usage), PTX and SASS summaries (`analyze.ptx.kernel_code_summary`)
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
from pathlib import Path
from typing import Any, Mapping

from ..analyze.ptx import kernel_code_summary
from ..naming import COMPILE_CACHE_DIR, GENERATED_DIR, GENERATED_INDEX
from ..parse.generated_code import extern_calls, is_output_code, output_code_kernels, triton_kernel_dirs

log = logging.getLogger(__name__)
CACHE_VARS = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"}
KEPT_STAGES = ("ttgir", "ptx", "source")          # Triton's text stages worth reading (ttir/llir: in between)


def cache_env(folder: Path, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The children's cache variables: inside `folder`, each unless the user set it."""
    return {var: str(folder / COMPILE_CACHE_DIR / sub) for var, sub in CACHE_VARS.items() if var not in environ}


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


def _triton_kernel(folder: Path, meta: dict[str, Any], out: Path, cuobjdump: Path | None) -> dict[str, Any]:
    """Copy one cached kernel's text stages (and its SASS) into out/triton/<name>-<hash8>/."""
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
    listings = {"sass": _cuobjdump(cuobjdump, "-sass", folder / f"{name}.cubin"),
                "res_usage": _cuobjdump(cuobjdump, "-res-usage", folder / f"{name}.cubin")}
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


def index_generated(cache: Path, out: Path, cuobjdump: Path | None = None) -> dict[str, Any]:
    """Copy and summarize a compile cache (`cache`/inductor, `cache`/triton) into `out`; write
    and return the index: {"kernels": [...], "output_code": [...], "cuobjdump": path or None}."""
    out.mkdir(parents=True, exist_ok=True)
    kernels = [_triton_kernel(folder, meta, out, cuobjdump)
               for folder, meta in triton_kernel_dirs(cache / "triton")] if (cache / "triton").is_dir() else []
    modules = _output_code(cache / "inductor", out) if (cache / "inductor").is_dir() else []
    for k in kernels:
        k["defined_in"] = [m["file"] for m in modules if any(d["name"] == k["name"] for d in m["kernels"])]
    text = json.dumps({"kernels": kernels, "output_code": modules, "cuobjdump": str(cuobjdump) if cuobjdump else None},
                      indent=1, sort_keys=True)
    (out / "index.json").write_text(text)
    return json.loads(text)        # as a reader of the file sees it (byte-width keys are strings)


def keep_generated(folder: Path, env: Mapping[str, str]) -> dict[str, Any] | None:
    """After the children: index the run's own compile cache into generated/, then remove the
    cache. Returns what run.json records (counts and where), or None when nothing was generated."""
    cache = folder / COMPILE_CACHE_DIR
    ours = {sub for var, sub in CACHE_VARS.items() if env.get(var) == str(cache / sub)}
    if not ours or not cache.is_dir():
        return None
    try:
        index = index_generated(cache, folder / GENERATED_DIR, find_cuobjdump())
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if not index["kernels"] and not index["output_code"]:
        shutil.rmtree(folder / GENERATED_DIR, ignore_errors=True)
        return None
    return {"index": GENERATED_INDEX, "triton_kernels": len(index["kernels"]),
            "output_code_modules": len(index["output_code"]), "sass": index["cuobjdump"] is not None}
