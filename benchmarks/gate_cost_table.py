"""The time a gate run spent where, from its stamped progress log (benchmarks/gate_cost.sh writes it:
each stderr line of `aisp-prof bench run` prefixed by the seconds since the start).

Per pair: seconds from its `== pair (i/N)` line to the next pair's (or the log's end), the timing
processes it started, and how much of it went to the first process (check, compile and the first
timing) against the further ones; per chapter and in all, with the CUDA builds apart. A log cut off
by the call's limit gives the pairs it reached and says which one was cut.

    python benchmarks/gate_cost_table.py cold.log [--json] [--runs PROFILES_DIR]

`--runs` adds, from the gate's run folders, what each pair's processes said of themselves: the check
process's wall time, the seconds its variants' factories took in the check (torch.compile's
compile, a CUDA library's load) and, from runs made since the child reports them, its phases
(torch's import, the pair's load, the check, the timing): a pair's cost split into start-up,
compile and the rest.
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

PAIR = re.compile(r"^== (?P<pair>\S+) \((?P<i>\d+)/(?P<n>\d+)\)")
STAMP = re.compile(r"^\s*(?P<s>\d+(?:\.\d+)?) (?P<text>.*)$")
BUILT = re.compile(r"(?P<built>\d+) of (?P<libs>\d+) built in (?P<s>[\d.]+) s")
VERDICT = re.compile(r"^(?P<pair>ch\d+\.\S+): (?P<status>ok|failed_check|skipped|error)\b")


def read(log: str) -> dict:
    """Pairs in log order with their seconds, processes and status; the builds; the log's last second."""
    pairs: list[dict] = []
    builds = {"libraries": 0, "built": 0, "s": 0.0}
    last_s = 0.0
    for raw in log.splitlines():
        m = STAMP.match(raw)
        if not m:
            continue
        s, text = float(m["s"]), m["text"].strip()
        last_s = s
        if (p := PAIR.match(text)):
            pairs.append({"pair": p["pair"], "chapter": p["pair"].split(".")[0], "start_s": s,
                          "processes": 1, "second_process_at_s": None, "status": "cut off"})
        elif (b := BUILT.search(text)):
            builds = {"libraries": int(b["libs"]), "built": int(b["built"]), "s": float(b["s"])}
        elif pairs and re.match(r"^timing process (\d+)$", text):
            pairs[-1]["processes"] = int(text.split()[-1])
            pairs[-1]["second_process_at_s"] = pairs[-1]["second_process_at_s"] or s
        elif pairs and (v := VERDICT.match(text)) and v["pair"] == pairs[-1]["pair"]:
            pairs[-1]["status"] = v["status"]
    for here, after in zip(pairs, pairs[1:] + [None]):
        end = after["start_s"] if after else last_s
        here["s"] = round(end - here["start_s"], 1)
        first_end = here.pop("second_process_at_s") or end
        here["first_process_s"] = round(first_end - here["start_s"], 1)
    return {"pairs": pairs, "builds": builds, "log_s": last_s}


def _json(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def runs(profiles: Path) -> list[dict]:
    """Per run folder under `profiles` (a gate's --profiles-dir, or shipped samples): the pair, the check
    process's wall seconds, and the seconds of its factories in the check (first trial: the compiles)."""
    out = []
    for check in sorted(profiles.glob("*/check.json*")):
        report = _json(check)
        compiles = (report.get("check") or {}).get("compiles") or []
        factory_s = sum((c.get("factory_wall_ns") or 0) + (c.get("first_call_wall_ns") or 0) for c in compiles) / 1e9
        pair = ((report.get("check") or {}).get("pair")) or check.parent.name.split("-")[1]
        out.append({"pair": pair, "run": check.parent.name, "check_process_wall_s": round(report.get("wall_s") or 0, 1),
                    "factories_in_check_s": round(factory_s, 1), "phases_s": report.get("phases_s") or {}})
    return out


def table(cost: dict) -> str:
    """Per chapter: pairs, seconds, of which first processes; then the builds and the whole."""
    lines = [f"{'part':<12} {'pairs':>5} {'s':>7} {'first processes s':>18} {'further processes s':>20}"]
    chapters: dict[str, list[dict]] = {}
    for p in cost["pairs"]:
        chapters.setdefault(p["chapter"], []).append(p)
    b = cost["builds"]
    lines.append(f"{'builds':<12} {b['libraries']:>5} {b['s']:>7.1f} {'':>18} {'':>20}  ({b['built']} built by nvcc)")
    for ch, rows in chapters.items():
        s = sum(r["s"] for r in rows)
        first = sum(r["first_process_s"] for r in rows)
        lines.append(f"{ch:<12} {len(rows):>5} {s:>7.1f} {first:>18.1f} {s - first:>20.1f}")
    cut = [p["pair"] for p in cost["pairs"] if p["status"] == "cut off"]
    lines.append(f"{'log':<12} {len(cost['pairs']):>5} {cost['log_s']:>7.1f}" +
                 (f"  (cut off in {cut[-1]})" if cut else ""))
    lines.append("slowest pairs:")
    lines += [f"  {p['pair']:<44} {p['s']:>6.1f} s  {p['processes']} process(es)  {p['status']}"
              for p in sorted(cost["pairs"], key=lambda p: -p["s"])[:8]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--runs", type=Path,
                    help="the gate's --profiles-dir: each check process's wall and compile seconds")
    a = ap.parse_args(argv)
    try:
        cost = read(a.log.read_text(errors="replace"))
        if a.runs is not None:
            cost["runs"] = runs(a.runs)
    except (OSError, ValueError) as e:
        why = getattr(e, "strerror", None) or e
        print(f"gate_cost_table: cannot read {a.log if a.runs is None else a.runs}: {why}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(cost, indent=1))
        return 0
    print(table(cost))
    for r in cost.get("runs", []):
        phases = ", ".join(f"{k} {v:.1f}" for k, v in r["phases_s"].items())
        print(f"  {r['pair']:<40} check process {r['check_process_wall_s']:>5.1f} s, factories in the check "
              f"{r['factories_in_check_s']:>5.1f} s" + (f" ({phases})" if phases else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
