"""Read what a compiler left in its caches: Inductor's output code and Triton's per-kernel files.

Inductor writes one Python module per compiled graph ("output code"): each kernel is defined as
`<name> = async_compile.<kind>(...)` (`triton` on a GPU, `cpp_pybinding` on the CPU), preceded on
a GPU by comments naming the ATen ops it fused ("Original ATen: [aten.add, aten.relu]"), and the
module's `call()` launches them (`<name>.run(...)` for Triton, `<name>(...)` for C++) beside
library calls (`extern_kernels.mm(...)`: cuBLAS). Triton writes, per compiled kernel, a folder
`<hash>/` holding `<name>.json` (its metadata: warps, stages, shared memory, target) and the
stages `<name>.ttir`, `.ttgir`, `.llir`, `.ptx`, `.cubin`, `.source`.

Pure functions of text and folder listings, so they run on saved output anywhere.
"""
from __future__ import annotations

import gzip
import json
import re
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

from ...naming import GENERATED_INDEX, stored

_DEFINE = re.compile(r"^(\w+)\s*=\s*async_compile\.(\w+)\(", re.M)
_ATEN = re.compile(r"Original ATen:\s*\[([^\]]*)\]")
_EXTERN = re.compile(r"\bextern_kernels\.(\w+)\(")
TRITON_STAGES = ("ttir", "ttgir", "llir", "ptx", "source")     # text stages Triton caches per kernel


def _call_body(text: str) -> str:
    """The source of the functions that launch kernels: the module's `call` (a top-level
    `def call(args)` in torch <= 2.9, `Runner.call(self, args)` later) and, where Inductor
    splits the graph into partitions (torch 2.11: `call` only runs `self.partitions[i]`), each
    top-level `def partition_<i>(args)`; '' if none."""
    lines = text.splitlines()
    bodies = []
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)def (call|partition_\d+)\(", line)
        if not m or (m.group(2) != "call" and m.group(1)):
            continue
        indent, body = len(m.group(1)), [line]
        for nxt in lines[i + 1:]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break
            body.append(nxt)
        bodies.append("\n".join(body))
    return "\n".join(bodies)


def output_code_kernels(text: str) -> list[dict[str, Any]]:
    """Each kernel an Inductor output-code module defines: name, kind ('triton', 'cpp_pybinding',
    ...), the ATen ops it fused (GPU output code says; [] otherwise) and how many times `call()`
    launches it (`launches_per_call`, a static count: a launch inside a loop counts once)."""
    body = _call_body(text)
    out = []
    defs = list(_DEFINE.finditer(text))
    for i, m in enumerate(defs):
        name, kind = m.group(1), m.group(2)
        if kind == "wait":
            continue
        start = defs[i - 1].end() if i else 0
        comments = text[start:m.start()]
        aten = _ATEN.findall(comments)
        launches = len(re.findall(rf"\b{re.escape(name)}(?:\.run)?\(", body))
        out.append({"name": name, "kind": kind,
                    "aten": [a.strip() for a in aten[-1].split(",") if a.strip()] if aten else [],
                    "launches_per_call": launches})
    return out


def extern_calls(text: str) -> dict[str, int]:
    """Library calls in `call()` (extern_kernels.mm, .addmm, .bmm, ...: cuBLAS and friends), counted."""
    return dict(Counter(_EXTERN.findall(_call_body(text))))


def is_output_code(text: str) -> bool:
    """An Inductor output-code module (not a kernel's own source file, which has no `call`)."""
    return "async_compile" in text and bool(re.search(r"^\s*def call\(", text, re.M))


def triton_kernel_dirs(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(folder, metadata) of every kernel in a Triton cache folder (`<root>/<hash>/<name>.json`,
    not the `__grp__` group files), in name order."""
    found = []
    for meta_path in sorted(root.rglob("*.json")):
        if meta_path.name.startswith("__grp__"):
            continue
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(meta, dict) and meta.get("name") == meta_path.stem:
            found.append((meta_path.parent, meta))
    return sorted(found, key=lambda fm: (fm[1]["name"], str(fm[0])))


_LOC = re.compile(r'^#loc\d* = loc\("([^"]+)":\d+:\d+\)', re.M)


def kernel_source_file(ttir: str) -> str | None:
    """The Python file that defined a Triton kernel, from its TTIR (`<name>.source` in the cache
    starts `#loc = loc("<file>":<line>:<col>)`); None when the text names none. For a kernel
    Inductor wrote, that file lies in Inductor's cache; for a hand-written one, beside its pair."""
    m = _LOC.search(ttir[:4000])
    return m.group(1) if m else None


def read_index(run_dir: Path) -> dict[str, Any] | None:
    """A run folder's generated/index.json (`collect.code.generated`; or index.json.gz, as the shipped
    samples keep it), or None when it has none."""
    path = stored(Path(run_dir) / GENERATED_INDEX)
    try:
        data = path.read_bytes() if path is not None else None
        return None if data is None else json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)
    except (OSError, EOFError, zlib.error, json.JSONDecodeError):
        return None
