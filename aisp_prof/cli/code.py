"""`aisp-prof code`: what the compilers generated for a run (Triton kernels, Inductor output code)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .common import database, db_option, echo_json, json_option, table_width, wide_option

STAGES = ("summary", "ptx", "sass", "ttgir", "source", "output")


@click.command("code")
@click.argument("run")
@click.option("--variant", help="Only the kernels this variant launched (names from the ncu/nsys tables).")
@click.option("--kernel", help="Only kernels whose name contains this text.")
@click.option("--show", type=click.Choice(STAGES), default="summary", show_default=True,
              help="What to print: the summary table, a listing of each kernel (ptx, sass, ttgir, source: "
                   "Triton's MLIR), or Inductor's output code (the module that defines and launches them).")
@db_option
@json_option
@wide_option
def code_cmd(run: str, variant: str | None, kernel: str | None, show: str, db: Path | None, as_json: bool) -> None:
    """The code the compilers generated for RUN: each Triton kernel's launch configuration,
    registers, local memory and PTX/SASS instruction mix, and Inductor's output code, kept in
    the run folder (generated/) by `aisp-prof run`.

    \b
    Examples:
      aisp-prof code latest
      aisp-prof code ch14.regional_triton --variant compiled --show sass
      aisp-prof code latest --kernel triton_poi_fused --show output
    """
    found = database(db).generated_code(run, variant, kernel)
    if as_json:
        echo_json(found)
        return
    if show == "summary":
        _print_summary(found)
        return
    root = Path(found["generated_dir"])
    if show == "output":
        for m in found["output_code"]:
            click.echo(f"=== {m['file']} ===")
            click.echo((root / m["file"]).read_text())
        return
    for k in found["kernels"]:
        rel = (k.get("files") or {}).get(show)
        click.echo(f"=== {k['name']} ({k['hash'][:8]}): {show} ===")
        click.echo((root / rel).read_text() if rel else f"(no {show} kept: "
                   + ("cuobjdump was not found when the run was collected)" if show == "sass" else "not in the cache)"))


def _print_summary(found: dict[str, Any]) -> None:
    from ..render.table import render, wrap_lines

    width = table_width()
    where = f" launched by {found['variant']}" if found.get("variant") else ""
    lines = [f"run {found['run_id']}: {len(found['kernels'])} Triton kernel(s){where}; files under "
             f"{found['generated_dir']}"]
    rows = []
    for k in found["kernels"]:
        ptx, sass = k.get("ptx") or {}, k.get("sass") or {}
        loads = ptx.get("global_loads_by_bytes") or {}
        rows.append([k["name"], k["hash"][:8], k.get("num_warps"), k.get("num_stages"), k.get("shared_bytes"),
                     k.get("registers"), k.get("local_bytes"), ptx.get("instructions"),
                     ", ".join(f"{b}B x{n}" for b, n in loads.items()) or "-", sass.get("instructions"),
                     _mma(ptx, sass), _spills(k, sass)])
    if rows:
        lines.append(render(["kernel", "hash", "warps", "stages", "shared B", "regs", "local B", "PTX instr",
                           "global loads", "SASS instr", "matrix", "LDL/STL"], rows, width,
                           drop=("local B", "stages", "PTX instr", "SASS instr", "shared B"), clip=("kernel",),
                           wrap=("global loads", "matrix")))
    out = []
    for m in found["output_code"]:
        launches = ", ".join(f"{d['name']} x{d['launches_per_call']}" for d in m["kernels"]) or "none"
        extern = ", ".join(f"{n} x{c}" for n, c in (m.get("extern_calls") or {}).items())
        out.append(f"output code {m['file']}: launches per call: {launches}" + (f"; library calls: {extern}" if extern else ""))
    for line in wrap_lines(lines[:1], width) + lines[1:] + wrap_lines(out, width):
        click.echo(line)


def _mma(ptx: dict[str, Any], sass: dict[str, Any]) -> str:
    """'wgmma 8 / HGMMA 8', 'mma.sync 4', or '-'."""
    parts = [f"{name} {n}" for name, n in (("wgmma", ptx.get("wgmma")), ("mma.sync", ptx.get("mma_sync")),
                                           ("HGMMA", sass.get("hgmma")), ("HMMA", sass.get("hmma"))) if n]
    return " / ".join(parts) or "-"


def _spills(k: dict[str, Any], sass: dict[str, Any]) -> str:
    if not sass:
        return "-"
    return f"{sass.get('ldl', 0)}/{sass.get('stl', 0)}"
