"""`aisp-prof code`: what the compilers generated for a run (Triton kernels, Inductor output code)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import ExportParseError, shorten
from .common import database, db_option, echo_json, json_option, table_width, wide_option

STAGES = ("summary", "ptx", "sass", "ttgir", "source", "output")


@click.command("code")
@click.argument("run")
@click.option("--variant", help="Only this variant's launches (and, with --all, the kernels of those names).")
@click.option("--kernel", help="Only kernels whose name contains this text.")
@click.option("--all", "all_kernels", is_flag=True,
              help="Every kept kernel, ran or not (one name may have been compiled in several configurations), "
                   "instead of the ones ncu saw run.")
@click.option("--show", type=click.Choice(STAGES), default="summary", show_default=True,
              help="What to print: the summary table, a listing of each kernel (ptx, sass, ttgir, source: "
                   "Triton's MLIR), or Inductor's output code (the module that defines and launches them).")
@db_option
@json_option
@wide_option
def code_cmd(run: str, variant: str | None, kernel: str | None, all_kernels: bool, show: str, db: Path | None,
             as_json: bool) -> None:
    """The code the compilers generated for RUN, kept in the run folder (generated/) by
    `aisp-prof run`: each ncu launch joined to the compiled kernel that ran (by name, block
    threads, registers and dynamic shared memory), those kernels' launch configuration,
    registers, local memory and PTX/SASS instruction mix, and Inductor's output code.

    \b
    Examples:
      aisp-prof code latest
      aisp-prof code ch14.regional_triton --variant regional --show sass
      aisp-prof code latest --kernel triton_red_fused_sum_3 --show ptx
      aisp-prof code latest --all --kernel triton_poi_fused --show output
    """
    found = database(db).generated_code(run, variant, kernel, all_kernels)
    if as_json:
        echo_json(found)
        return
    if show == "summary":
        _print_summary(found)
        return
    root = Path(found["generated_dir"])
    if show != "output" and not found["kernels"] and not found["all"]:
        click.echo("no launch ncu saw ran a kept build" + (f" named like {kernel!r}" if kernel else "")
                   + ": --all prints every kept kernel", err=True)
    if show == "output":
        texts = [(f"=== {m['file']} ===", _listing(root, m["file"])) for m in found["output_code"]]
    else:
        texts = [(_heading(k, show, found), _listing(root, (k.get("files") or {}).get(show))) for k in found["kernels"]]
    if texts and all(text is None for _, text in texts) and not _kept_any(root, show):
        raise ExportParseError(f"this run kept no generated code for --show {show}: {shorten(root)} holds no "
                               f"{show} listing; --show summary reads what its index recorded")
    for heading, text in texts:
        click.echo(heading)
        click.echo(text if text is not None else f"(no {show} kept in this run's folder)")


def _heading(k: dict[str, Any], show: str, found: dict[str, Any]) -> str:
    unsure = {h: r for r in found["launches"] if r["match"].startswith("ambiguous") for h in r["candidates"]}
    maybe = (f" (one of {len(unsure[k['hash']]['candidates'])} builds that fit launch "
             f"{unsure[k['hash']]['launch_id']})" if k["hash"] in unsure and not found["all"] else "")
    return f"=== {k['name']} ({k['hash'][:8]}): {show}{maybe} ==="


def _kept_any(root: Path, show: str) -> bool:
    """Whether the run folder holds any listing of this kind, for any kernel."""
    return next(root.rglob(f"*.{'py' if show == 'output' else show}"), None) is not None


def _listing(root: Path, rel: str | None) -> str | None:
    """The text of the kept listing `rel` under generated/, or None when the run kept none (the
    index names files a shrunk folder, like the shipped samples', does not hold). Reads only."""
    if not rel:
        return None
    try:
        return (root / rel).read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _print_launches(found: dict[str, Any]) -> None:
    from ..render.table import render, wrap_lines

    rows = [[r["variant"], r["launch_id"], r["kernel"], _us(r["duration_ns"]), _int(r["block_size"]),
             _int(r["registers_per_thread"]), _int(r["dynamic_shared_bytes"]),
             r["hash"][:8] if r["hash"] else r["match"]] for r in found["launches"]]
    if rows:
        click.echo(render(["variant", "launch", "kernel", "duration us", "threads", "regs", "dyn shared B",
                           "generated"], rows, table_width(), clip=("kernel",),
                           drop=("dyn shared B", "threads", "regs")))
        ambiguous = [f"launch {r['launch_id']} ({r['kernel']}): builds {', '.join(h[:8] for h in r['candidates'])} "
                     "all fit its launch shape" for r in found["launches"] if r["match"].startswith("ambiguous")]
        for line in wrap_lines(ambiguous, table_width()):
            click.echo(line)


def _us(ns: Any) -> str:
    return "-" if ns is None else f"{float(ns) / 1e3:.2f}"


def _int(x: Any) -> Any:
    return "-" if x is None else int(x)


def _print_summary(found: dict[str, Any]) -> None:
    from ..render.table import render, wrap_lines

    width = table_width()
    where = f" launched by {found['variant']}" if found.get("variant") else ""
    if found.get("all"):
        head = f"{len(found['kernels'])} kept Triton kernel(s){where}"
    else:
        head = (f"{len(found['launches'])} ncu launch(es){where}, {len(found['kernels'])} generated kernel(s) "
                "that ran (--all: every kept one)")
    dropped = f", {found['dropped_kernels']} autotune candidate(s) not kept" if found.get("dropped_kernels") else ""
    for line in wrap_lines([f"run {found['run_id']}: {head}{dropped}; files under {found['generated_dir']}"], width):
        click.echo(line)
    if not found.get("all"):
        _print_launches(found)
    lines: list[str] = []
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
                           wrap=("global loads", "matrix"), min_width={"global loads": 10, "matrix": 10}))
    out = []
    for m in found["output_code"]:
        launches = ", ".join(f"{d['name']} x{d['launches_per_call']}" for d in m["kernels"]) or "none"
        extern = ", ".join(f"{n} x{c}" for n, c in (m.get("extern_calls") or {}).items())
        out.append(f"output code {m['file']}: launches per call: {launches}" + (f"; library calls: {extern}" if extern else ""))
    for line in lines + wrap_lines(out, width):
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
