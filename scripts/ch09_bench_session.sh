#!/usr/bin/env bash
# One GPU visit for chapter 9: profile every pair that runs here (ncu + nsys) for the shipped
# samples, then record and check the timing expectations.
#
#   OUT=/tmp/out bash scripts/ch09_bench_session.sh profile   # aisp-prof run ch09 -> $OUT/ch09_runs.tgz
#   OUT=/tmp/out bash scripts/ch09_bench_session.sh bench     # bench --update-expectations, then the gate
set -u
OUT=${OUT:-/tmp/aisp_out}; export OUT; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.devlib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1 AISP_BUILD_DIR=/tmp/aisp_build
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
AISP="python3 -m aisp_prof"
case "${1:-}" in
profile)
  $AISP run ch09 --profiles-dir profiles --label ch09-session 2>&1 | grep -v Processing | tee "$OUT/run_ch09.log"
  # keep the small exports; the gzipped .ncu-rep and the .nsys-rep stay on the machine
  tar czf "$OUT/ch09_runs.tgz" --exclude='*.ncu-rep.gz' --exclude='*.nsys-rep' profiles/2026*
  ;;
bench)
  $AISP bench run --targets ch09 --repeats 50 --update-expectations 2>&1 | tee "$OUT/bench_update.log"
  echo "## the gate against what was just recorded (expect ok)"
  $AISP bench run --targets ch09 --repeats 50 --json > "$OUT/bench_gate.json" 2> "$OUT/bench_gate.err"
  echo "gate rc $?"
  cp kernels/ch09/expectations_*.json "$OUT/"
  python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/bench_gate.json"))
for p in d["pairs"]:
    for v in p["verdicts"]:
        ch = "-" if v["change"] is None else f"{v['change']:+.1%}"
        tol = "-" if v["tolerance"] is None else f"{v['tolerance']:.1%}"
        print(f"{v['pair']:28s} {v['variant']:14s} {v['what']:8s} {ch:>8s} tol {tol:>6s} {v['status']}")
    if not p["verdicts"]:
        print(f"{p['pair']:28s} {p['status']}: {p['message'][:80]}")
PY
  ;;
*) echo "usage: $0 profile|bench"; exit 2 ;;
esac
