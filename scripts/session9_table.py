"""The short table ending a session-9 GPU visit: sanitizer verdicts, then each timed variant's
median and its share of cuBLAS (or of the pair's reference) from the expectations written."""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
wanted = set(sys.argv[2].split()) if len(sys.argv) > 2 else None      # the visit's pairs (default: all)
for f in sorted(out.glob("sanitize_*.json")):
    try:
        for r in json.loads(f.read_text())["results"]:
            print(f"{r['pair']:34s} {r.get('variant', '') or '':22s} {r['tool']:10s} errors={r['errors']} "
                  f"check={r['check_passed']} {'; '.join(r['first_reports'][:1])[:90]}")
    except (ValueError, KeyError) as exc:
        print(f.name, "unreadable:", exc)
for f in sorted(out.glob("*expectations*.json")):
    try:
        pairs = json.loads(f.read_text())["pairs"]
    except (ValueError, KeyError):
        continue
    for name, entry in pairs.items():
        if wanted and name not in wanted:
            continue
        variants = entry["summary"]["variants"]
        ref = variants.get("cublas", {}).get("median_ns")
        for v, s in variants.items():
            if v.startswith("ref:"):
                continue
            share = f"{ref / s['median_ns']:.3f} of cublas" if ref else ""
            print(f"{f.name[:28]:28s} {name:34s} {v:26s} {s['median_ns'] / 1e6:8.4f} ms {share}")
for f in sorted(out.glob("run_*.json")):
    try:
        d = json.loads(f.read_text())
    except ValueError:
        print(f.name, "no JSON")
        continue
    print(f.name, json.dumps(d.get("summary") or d)[:300])
