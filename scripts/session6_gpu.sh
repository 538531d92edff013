#!/usr/bin/env bash
# One GPU visit that confirms on a real GPU what landed CPU-tested only (session 6):
#   PART=h200     on an H200: the ch09 gate (issue 11, scripts/gate_gpu_session.sh MODE=gate);
#                 on anything else, PART=confirm instead (every kind=nvidia-h200 request so far got an H100)
#   PART=confirm  1. GPU tests of the compile-insight probe and the ch14 pairs named in TESTS
#                 2. `aisp-prof run` of RUNS (check + ncu + nsys) into ${PDIR:-/tmp/p6}; run folders -> runs.tgz
#                 3. `aisp-prof sanitize` of SANITIZE (memcheck, racecheck, synccheck) at small sizes
#                 4. FOREIGN=1: issue 16's foreign exports (scripts/capture_foreign_exports.sh)
# Clocks are never touched. Logs in $OUT; a short table last.
set -u -o pipefail
. scripts/device_env.sh /tmp/s6_out
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ "${PART:-confirm}" = h200 ]; then
  case "$GPU" in *H200*) MODE=gate TARGETS=ch09 SLOW="${SLOW:-0.03}" bash scripts/gate_gpu_session.sh; exit $?;; esac
fi
START=$(date +%s); t() { echo "t=$(( $(date +%s) - START ))s"; }
{
echo "## $(date -u +%FT%TZ) $GPU $(nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv,noheader) git ${AISP_GIT_SHA:-?} torch $(python3 -c 'import torch,triton;print(torch.__version__, triton.__version__)')"
if [ -n "${TESTS:-}" ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu $TESTS -rfE 2>&1 | tail -${TEST_TAIL:-30}; echo "gpu_tests_rc $? $(t)"
fi
for p in ${RUNS:-}; do
  $AISP run "$p" --profiles-dir ${PDIR:-/tmp/p6} --label session6 ${RUN_ARGS:-} --json > "$OUT/run_$p.json" 2> "$OUT/run_$p.err"
  echo "run $p rc $? $(t)"; tail -3 "$OUT/run_$p.err"
done
if [ -n "${RUNS:-}" ]; then
  (cd ${PDIR:-/tmp/p6} && tar czf "$OUT/runs.tgz" --exclude="*.nsys-rep" --exclude="*.ncu-rep.gz" --exclude="*/generated/triton" . ) && (cd "$OUT" && tar czf run_logs.tgz run_*.json run_*.err && rm -f run_*.json run_*.err)
fi
if [ -n "${SANITIZE:-}" ]; then
  $AISP sanitize $SANITIZE --log-dir /tmp/s6_sanitizer --json > "$OUT/sanitize.json"; echo "sanitize_rc $? $(t)"
  tar czf "$OUT/sanitizer_logs.tgz" -C /tmp s6_sanitizer
  python3 - "$OUT/sanitize.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(print("sanitize: no JSON"))
for r in d["results"]:
    print(f"{r['pair']:36s} {r['tool']:10s} errors={r['errors']} check={r['check_passed']} {r['wall_s']}s {'; '.join(r['first_reports'][:1])[:100]}")
PY
fi
if [ -n "${FOREIGN:-}" ]; then bash scripts/capture_foreign_exports.sh > /tmp/foreign.log 2>&1; echo "foreign_rc $? $(t)"; tail -14 /tmp/foreign.log; fi
} 2>&1 | tee -a "$OUT/session.log"
