"""Print the variant lists of benchmarks/results/gate_vs_run.md from `aisp-prof bench agree --json`.

    aisp-prof import --db /tmp/agree.db profiles/samples*/2026*
    aisp-prof bench agree --db /tmp/agree.db --json > /tmp/agree.json
    python dev/agree_lists.py /tmp/agree.json [--date 2026-11-26]     # and --date 2026-11-30

Prints the counts per card (and per run date where a card has runs of several dates), then each
DIFFER of the runs of `--date` (default 2026-11-26) once, under its strongest reason, in the tool's
own words: its reasons joined by "; ", and "note: ..." where the run's reading of the gate's timer
differs too. The sections, strongest first (`SECTIONS`): validity warnings on a run that differs by
the gate's own timer; other code (source digests); the same timer with only the evidence's format
(and a missing digest) to explain it; explained by the timer; the run lacks the gate's timer; the
SM clock moved (the gate's clock rule: time moved past its margin, cycles did not); the gate's one-machine
rule (host, machine). Every number is the JSON's, formatted here, never typed.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any, Iterable, Mapping

SECTIONS = (
    ("warn", "By the same timer beyond both noises, with validity warnings on the run (the issue's cases)"),
    ("code", "Recorded from other code (source digests differ)"),
    ("format", "By the same timer beyond both noises, only the evidence's format (and the run's missing "
               "digest) to explain it"),
    ("timer", "Explained by the timer: by the gate's own timer the run agrees"),
    ("timer?", "The run lacks the gate's timer (H200: nsys headline vs the gate's CUDA-event GPU time; the ch09 "
               "runs name no digest)"),
    ("clock", "The SM clock moved, not the code: time moved past its margin, cycles did not (the gate's "
              "clock rule)"),
    ("machine", "The gate's one-machine rule: evidence from one machine, the run from another"),
)


def strongest(tags: Iterable[str]) -> str:
    """The section a DIFFER with these tags is listed under (`SECTIONS`' keys)."""
    tags = set(tags)
    by_timer = tags & {"timer", "timer?"}
    if any(t.startswith("warn:") for t in tags) and not by_timer:
        return "warn"
    if "code" in tags:
        return "code"
    if "clock" in tags and not by_timer:
        return "clock"
    if tags & {"host", "machine"} and not by_timer:
        return "machine"
    if not by_timer:
        return "format"
    return "timer" if "timer" in tags else "timer?"


def line(r: Mapping[str, Any]) -> str:
    """One DIFFER as the document lists it: the numbers, then the tool's reasons and notes."""
    text = (f"- {r['pair']} {r['variant']} ({r['card']}): run {r['run_speedup']:.3g}x ({r['run_timer']}), "
            f"gate {r['gate_speedup']:.3g}x ±{r['gate_margin'] * 100:.1f}% ({r['gate_timer']}): "
            + "; ".join(r["reasons"]))
    return text + ("; note: " + "; ".join(r["notes"]) if r["notes"] else "")


def counts(records: list[Mapping[str, Any]]) -> str:
    """Per card: its verdicts, and per run date where it has runs of more than one date."""
    out = []
    order = ("AGREE", "DIFFER", "NO-EVIDENCE")
    for card in sorted({r["card"] for r in records}):
        mine = [r for r in records if r["card"] == card]
        said = Counter(r["verdict"] for r in mine)
        text = f"- {card}: " + ", ".join(f"{said[v]} {v}" for v in order if said[v])
        dates = sorted({r["run_date"] for r in mine})
        if len(dates) > 1:
            per = [f"{d}: " + ", ".join(f"{n} {v}" for v in order
                                        if (n := sum(r['verdict'] == v for r in mine if r['run_date'] == d)))
                   for d in dates]
            text += " (runs of " + "; ".join(per) + ")"
        out.append(text)
    return "\n".join(out)


def sections(records: list[Mapping[str, Any]], date: str) -> str:
    """The DIFFERs of the runs of `date`, each under its strongest reason, in JSON order."""
    differ = [r for r in records if r["verdict"] == "DIFFER" and r["run_date"] == date]
    out = []
    for key, title in SECTIONS:
        mine = [r for r in differ if strongest(r["tags"]) == key]
        if mine:
            out.append("\n".join([f"### {title} ({len(mine)})", ""] + [line(r) for r in mine]))
    return "\n\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json_file", help="what `aisp-prof bench agree --json` printed")
    ap.add_argument("--date", default="2026-11-26", help="list the DIFFERs of the runs of this date")
    args = ap.parse_args(argv)
    try:
        with open(args.json_file) as f:
            records = json.load(f)
    except (OSError, ValueError) as e:
        print(f"error: cannot read {args.json_file}: {e}", file=sys.stderr)
        return 2
    try:
        print(counts(records) + "\n\n" + sections(records, args.date))
    except (KeyError, TypeError) as e:
        print(f"error: {args.json_file} is not what `aisp-prof bench agree --json` prints ({e!r})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
