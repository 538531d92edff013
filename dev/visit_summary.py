"""The short table that ends a GPU visit (dev/gpu_visit.sh): sanitizer verdicts, the gate's
verdicts, each recorded variant's median and its share of cuBLAS (or of the pair's reference), and
each run's summary line, from the JSON files the visit left in OUT.

    python3 dev/visit_summary.py OUT ["PAIR PAIR ..."]      # the pairs: only theirs (default: all)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def _load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"{path.name}: unreadable ({exc})")
        return None


def _pct(m: dict | None) -> str:
    if m is None:
        return "-"
    c = m["change"]
    return f"{(c['value'] - 1) * 100:+.1f}%[{(c['low'] - 1) * 100:+.1f},{(c['high'] - 1) * 100:+.1f}]±{m['margin'] * 100:.1f}"


def sanitizer(out: Path) -> None:
    for f in sorted(out.glob("sanitize_*.json")):
        for r in (_load(f) or {}).get("results", []):
            print(f"{r['pair']:34s} {r.get('variant', '') or '':22s} {r['tool']:10s} errors={r['errors']} "
                  f"check={r['check_passed']} {'; '.join(r['first_reports'][:1])[:90]}")


def verdicts(out: Path) -> None:
    """One line per variant of each `bench run --json` the visit wrote (gate, slowdowns, record, scratch),
    and of each `bench ab --json` (its t column is the candidate's time relative to the base's)."""
    for f in sorted([*out.glob("gate*.json"), *out.glob("record*.json"), *out.glob("scratch.json"), *out.glob("ab_*.json")]):
        d = _load(f) or {}
        for p in d.get("pairs", []):
            if "process_wall_s" in p:
                print(f"{f.stem:16s} {p['pair']:34s} base {p['base']}, {p['kind']}, processes {p['process_wall_s']} s")
            if not p.get("verdicts"):
                print(f"{f.stem:16s} {p['pair']:34s} {'-':22s} {p['status'].upper():9s} {p.get('message', '')[:80]}")
            for v in p.get("verdicts", []):
                m = {x["metric"]: x for x in v["metrics"]}
                print(f"{f.stem:16s} {p['pair']:34s} {v['variant']:22s} {v['verdict']:9s} t {_pct(m.get('time') or m.get('cand_vs_base')):26s} "
                      f"r {_pct(m.get('ratio')):24s} {v.get('cause', '')[:60]}")
            for b in p.get("bus_bandwidth") or []:     # a multi-rank pair's collectives (--profile minimal)
                bw = b.get("busbw_gb_per_s")
                print(f"{f.stem:16s} {p['pair']:34s} {b['variant']:22s} {b['op']:14s} busbw "
                      f"{'-' if bw is None else f'{bw:.1f} GB/s'} ({p.get('hardware_key')})")
        if "fails" in d:
            print(f"{f.stem}: gate fails: {d['fails']}")


def medians(out: Path, wanted: set[str] | None) -> None:
    for f in sorted(out.glob("*expectations*.json")):
        d = _load(f)
        for name, entry in ((d or {}).get("pairs") or {}).items():
            if wanted and name not in wanted:
                continue
            variants = entry["summary"]["variants"]
            ref = variants.get("cublas", {}).get("median_ns")
            for v, s in variants.items():
                if v.startswith("ref:"):
                    continue
                share = f"{ref / s['median_ns']:.3f} of cublas" if ref else ""
                print(f"{f.name[:28]:28s} {name:34s} {v:26s} {s['median_ns'] / 1e6:8.4f} ms {share}")


def runs(out: Path) -> None:
    for f in sorted(out.glob("run_*.json")):
        d = _load(f)
        if d is not None:
            print(f.name, json.dumps(d.get("summary") or d)[:300] if isinstance(d, dict) else str(d)[:300])


def main(argv: list[str]) -> None:
    out = Path(argv[1])
    wanted = set(argv[2].split()) if len(argv) > 2 and argv[2].strip() else None
    sanitizer(out)
    verdicts(out)
    medians(out, wanted)
    runs(out)


if __name__ == "__main__":
    main(sys.argv)
