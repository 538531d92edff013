"""Read what the compiler generated: instruction counts from PTX and SASS text, resource usage.

Chapter 9's advice is to verify compiler output instead of trusting it: are the global loads
16 bytes wide, are the reductions warp shuffles, did anything go to local memory, are the matrix
instructions the ones you meant (wgmma/HGMMA rather than mma.sync/HMMA or FFMA)? These are
pure functions of text, so they run anywhere on saved output:

    summarize_ptx(ptx_text)         PTX (Triton's compiled.asm["ptx"], `nvcc -ptx`)
    summarize_sass(sass_text)       `cuobjdump -sass` or Triton's compiled.asm["sass"]
    parse_res_usage(text)           `cuobjdump -res-usage` or `ptxas -v` output

Counts are static: instructions in the listing, not instructions executed (a loop body counts
once). For executed counts use ncu (the kernels table's inst_* columns).
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

# PTX element-type suffix -> bits
_PTX_TYPE_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
                  "b32": 32, "u32": 32, "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64,
                  "f64": 64, "b128": 128, "f16x2": 32, "bf16x2": 32}
_PTX_PRED = re.compile(r"^@!?%\w+\s+")
_PTX_COMMENT = re.compile(r"//.*$")
_SASS_WIDTH = {"128": 16, "64": 8, "U8": 1, "S8": 1, "U16": 2, "S16": 2}


def ptx_opcodes(ptx: str) -> Counter[str]:
    """Static count of each full PTX opcode ("ld.global.v4.b32": 8, ...), directives excluded."""
    counts: Counter[str] = Counter()
    body = _strip_block_comments(ptx)
    for raw in body.splitlines():
        line = _PTX_COMMENT.sub("", raw).strip()
        for stmt in line.split(";"):
            stmt = stmt.strip().lstrip("{}").strip()
            if not stmt or stmt.startswith(".") or stmt.endswith(":") or stmt in ("{", "}"):
                continue
            stmt = _PTX_PRED.sub("", stmt)
            opcode = stmt.split(None, 1)[0] if stmt else ""
            if opcode and opcode[0].isalpha():
                counts[opcode] += 1
    return counts


def _strip_block_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def _access_bytes(opcode: str) -> int | None:
    """Bytes moved per thread by a ld/st opcode: vector width x element bits / 8."""
    parts = opcode.split(".")
    vec = 1
    for p in parts:
        if re.fullmatch(r"v\d+", p):
            vec = int(p[1:])
    bits = next((_PTX_TYPE_BITS[p] for p in reversed(parts) if p in _PTX_TYPE_BITS), None)
    return None if bits is None else vec * bits // 8


def _by_bytes(counts: Counter[str], prefix: str) -> dict[int, int]:
    out: Counter[int] = Counter()
    for op, n in counts.items():
        if op.startswith(prefix):
            width = _access_bytes(op)
            if width is not None:
                out[width] += n
    return dict(sorted(out.items()))


def _sum(counts: Counter[str], *prefixes: str) -> int:
    return sum(n for op, n in counts.items() if op.startswith(prefixes))


def summarize_ptx(ptx: str) -> dict[str, Any]:
    """Counts of the PTX instructions a performance review looks for, plus kernel facts.

    Keys: entries, target, reqntid/maxntid, the global loads/stores by bytes per thread
    (`global_loads_by_bytes` {16: n, ...}) and by vector width (ld_global_v4 ...), shared and
    local memory accesses, shfl_sync, ex2_approx, fma, div, rcp, bar_sync, cp_async (incl.
    bulk/TMA), mma_sync, wgmma, instructions (total), opcodes (every opcode's count).
    """
    counts = ptx_opcodes(ptx)
    entries = re.findall(r"\.entry\s+([\w$]+)", ptx)
    target = re.search(r"^\s*\.target\s+([\w,\s]+?)\s*$", ptx, flags=re.M)
    reqntid = re.search(r"\.reqntid\s+([\d,\s]+)", ptx)
    maxntid = re.search(r"\.maxntid\s+([\d,\s]+)", ptx)
    static_shared = sum(int(n) * (_PTX_TYPE_BITS.get(t, 8) // 8) for t, n in
                        re.findall(r"^\s*(?:\.visible\s+)?\.shared\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+[\w$]+\[(\d+)\]",
                                   ptx, flags=re.M))

    def vec(prefix: str, width: str) -> int:
        return sum(n for op, n in counts.items() if op.startswith(prefix) and f".{width}." in f"{op}.")

    def scalar(prefix: str) -> int:
        return sum(n for op, n in counts.items()
                   if op.startswith(prefix) and not re.search(r"\.v\d+(\.|$)", op))

    return {
        "entries": entries,
        "target": target.group(1).strip() if target else None,
        "reqntid": _ints(reqntid.group(1)) if reqntid else None,
        "maxntid": _ints(maxntid.group(1)) if maxntid else None,
        "static_shared_bytes": static_shared,
        "dynamic_shared": bool(re.search(r"\.extern\s+\.shared", ptx)),
        "ld_global_v4": vec("ld.global", "v4"),
        "ld_global_v2": vec("ld.global", "v2"),
        "ld_global_scalar": scalar("ld.global"),
        "st_global_v4": vec("st.global", "v4"),
        "st_global_v2": vec("st.global", "v2"),
        "st_global_scalar": scalar("st.global"),
        "global_loads_by_bytes": _by_bytes(counts, "ld.global"),
        "global_stores_by_bytes": _by_bytes(counts, "st.global"),
        "ld_shared": _sum(counts, "ld.shared"),
        "st_shared": _sum(counts, "st.shared"),
        "ld_local": _sum(counts, "ld.local"),
        "st_local": _sum(counts, "st.local"),
        "shfl_sync": _sum(counts, "shfl.sync"),
        "ex2_approx": _sum(counts, "ex2.approx"),
        "fma": _sum(counts, "fma."),
        "div": _sum(counts, "div."),
        "rcp": _sum(counts, "rcp."),
        "bar_sync": _sum(counts, "bar.sync", "barrier.sync", "bar.cta.sync", "barrier.cta.sync"),
        "cp_async": _sum(counts, "cp.async"),
        "mma_sync": _sum(counts, "mma.sync"),
        "wgmma": _sum(counts, "wgmma.mma_async"),
        "instructions": sum(counts.values()),
        "opcodes": dict(sorted(counts.items())),
    }


def _ints(text: str) -> list[int]:
    return [int(v) for v in re.findall(r"\d+", text)]


# --- SASS ----------------------------------------------------------------------------------

_SASS_ADDR = re.compile(r"/\*[0-9a-fA-F]{4,}\*/")           # /*0080*/ address
_SASS_ENCODING = re.compile(r"/\*\s*0x[0-9a-fA-F]+\s*\*/")   # /* 0x000fe2... */ encoding words
_SASS_CONTROL = re.compile(r"^[0-9a-fA-F-]{2}:[\w-]:[\w-]:[\w-]:[0-9a-fA-F]+\s+")   # Triton's "--:-:0:-:7"
_SASS_PRED = re.compile(r"^@!?U?P(?:[0-9]|T)\s+")
_SASS_OPCODE = re.compile(r"^[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*$")


def sass_opcodes(sass: str) -> Counter[str]:
    """Static count of each full SASS opcode ("LDG.E.128": 8, ...), from either listing format."""
    counts: Counter[str] = Counter()
    for raw in sass.splitlines():
        line = _SASS_ENCODING.sub("", raw)
        had_addr = bool(_SASS_ADDR.search(line))
        line = _SASS_ADDR.sub("", line).strip()
        control = _SASS_CONTROL.match(line)
        if not (had_addr or control):
            continue             # headers, labels, directives, encoding-only lines
        line = _SASS_CONTROL.sub("", line)
        line = _SASS_PRED.sub("", line).strip().rstrip(";").strip()
        if not line:
            continue
        opcode = line.split(None, 1)[0].rstrip(";")
        if _SASS_OPCODE.match(opcode):
            counts[opcode] += 1
    return counts


def _sass_width(opcode: str) -> int:
    for part in opcode.split(".")[1:]:
        if part in _SASS_WIDTH:
            return _SASS_WIDTH[part]
    return 4


def summarize_sass(sass: str) -> dict[str, Any]:
    """Counts of the SASS instructions that tell the fast path from the slow one.

    LDG/STG by bytes per thread (16 = LDG.E.128), shared (LDS/STS), local (LDL/STL: spills or
    a dynamically indexed array), SHFL, MUFU.EX2/RCP, FFMA/FMUL/FADD/FMNMX, HGMMA (wgmma),
    HMMA (mma.sync), QGMMA (fp8 wgmma), UTMALDG (TMA), BAR, and every opcode's count.
    """
    counts = sass_opcodes(sass)

    def by_bytes(prefix: str) -> dict[int, int]:
        out: Counter[int] = Counter()
        for op, n in counts.items():
            if op == prefix or op.startswith(prefix + "."):
                out[_sass_width(op)] += n
        return dict(sorted(out.items()))

    def total(*names: str) -> int:
        return sum(n for op, n in counts.items() if op.split(".")[0] in names)

    return {
        "ldg_by_bytes": by_bytes("LDG"),
        "stg_by_bytes": by_bytes("STG"),
        "ldg_128": by_bytes("LDG").get(16, 0),
        "stg_128": by_bytes("STG").get(16, 0),
        "lds": total("LDS", "LDSM"),
        "sts": total("STS"),
        "ldl": total("LDL"),
        "stl": total("STL"),
        "shfl": total("SHFL"),
        "mufu_ex2": sum(n for op, n in counts.items() if op.startswith("MUFU.EX2")),
        "mufu_rcp": sum(n for op, n in counts.items() if op.startswith("MUFU.RCP")),
        "ffma": total("FFMA"),
        "fmul": total("FMUL"),
        "fadd": total("FADD"),
        "fmnmx": total("FMNMX"),
        "hgmma": total("HGMMA"),
        "qgmma": total("QGMMA"),
        "hmma": total("HMMA"),
        "tma": total("UTMALDG", "UTMASTG", "UBLKCP"),
        "bar": total("BAR"),
        "instructions": sum(counts.values()),
        "opcodes": dict(sorted(counts.items())),
    }


# --- resource usage ------------------------------------------------------------------------

_RES_FIELDS = {"REG": "registers", "STACK": "stack_bytes", "SHARED": "shared_bytes",
               "LOCAL": "local_bytes", "CONSTANT[0]": "constant0_bytes"}


def parse_res_usage(text: str) -> dict[str, dict[str, int]]:
    """Per function: registers, stack/shared/local bytes, spills.

    Reads `cuobjdump -res-usage` ("Function f:" then "REG:50 STACK:0 SHARED:1024 ...") and
    `ptxas -v` ("Compiling entry function 'f'", "N bytes stack frame, N bytes spill stores,
    N bytes spill loads", "Used N registers, ...").
    """
    out: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = re.search(r"Function\s+([\w$.]+)\s*:", line) or \
            re.search(r"(?:Compiling entry function|Function properties for)\s+'?([\w$.]+)'?", line)
        if m:
            current = m.group(1)
            out.setdefault(current, {})
            continue
        if current is None:
            continue
        fields = out[current]
        for key, value in re.findall(r"([A-Z]+(?:\[\d+\])?):(\d+)", line):
            if key in _RES_FIELDS:
                fields[_RES_FIELDS[key]] = int(value)
        m = re.search(r"Used (\d+) registers", line)
        if m:
            fields["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            fields["shared_bytes"] = int(m.group(1))
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            fields.update(stack_bytes=int(m.group(1)), spill_store_bytes=int(m.group(2)),
                          spill_load_bytes=int(m.group(3)))
    return out


# --- one kernel's generated code, summarized ------------------------------------------------

TOP_OPCODES = 12


def _compact(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary without its full opcode table: the most frequent opcodes only."""
    out = {k: v for k, v in summary.items() if k != "opcodes"}
    ops = summary.get("opcodes") or {}
    out["top_opcodes"] = dict(sorted(ops.items(), key=lambda kv: -kv[1])[:TOP_OPCODES])
    return out


def kernel_code_summary(name: str, ptx: str | None = None, sass: str | None = None,
                        res_usage: str | None = None) -> dict[str, Any]:
    """What a review of one compiled kernel looks at, from whichever listings exist: registers,
    stack and local memory per thread (`cuobjdump -res-usage` or `ptxas -v`: local memory or a
    stack means spills or an indexed array), the PTX and SASS summaries (global access widths,
    shuffles, wgmma/HGMMA vs mma.sync/HMMA, TMA, spills as LDL/STL) with their top opcodes.
    Chapter 9's Triton softmax report and every kernel `aisp-prof code` shows are this."""
    usage = parse_res_usage(res_usage or "")
    fields = usage.get(name) or (next(iter(usage.values())) if len(usage) == 1 else {})
    return {
        "registers": fields.get("registers"), "stack_bytes": fields.get("stack_bytes"),
        "local_bytes": fields.get("local_bytes"), "res_shared_bytes": fields.get("shared_bytes"),
        "spill_store_bytes": fields.get("spill_store_bytes"), "spill_load_bytes": fields.get("spill_load_bytes"),
        "ptx": _compact(summarize_ptx(ptx)) if ptx else None,
        "sass": _compact(summarize_sass(sass)) if sass else None,
    }
