"""The time a gate run spent where, from its stamped progress log (benchmarks/gate_cost.sh writes it:
each stderr line of `aisp-prof bench run` prefixed by the seconds since the start).

Per pair: seconds from its `== pair (i/N)` line to the next pair's (or the log's end), the timing
processes it started, and how much of it went to the first process (check, compile and the first
timing) against the further ones; per chapter and in all, with the CUDA builds apart. A log cut off
by the call's limit gives the pairs it reached and says which one was cut.

    python benchmarks/gate_cost_table.py cold.log [--json]
"""
from __future__ import annotations

import argparse
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
    lines.append("slowest pairs: " + ", ".join(f"{p['pair']} {p['s']:.0f} s ({p['processes']} proc)" for p in
                                                sorted(cost["pairs"], key=lambda p: -p["s"])[:8]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        cost = read(a.log.read_text(errors="replace"))
    except OSError as e:
        print(f"gate_cost_table: cannot read {a.log}: {e.strerror}", file=sys.stderr)
        return 2
    print(json.dumps(cost, indent=1) if a.json else table(cost))
    return 0


if __name__ == "__main__":
    sys.exit(main())
