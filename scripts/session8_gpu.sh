#!/usr/bin/env bash
# One single-GPU visit, asked as kind=nvidia-h200 (issue 11's fresh-H200 gate), hedged:
#   on an H200: the gate of GATE_TARGETS (default ch09) against kernels/ch09/expectations_h200.json
#               (scripts/gate_gpu_session.sh MODE=gate, SLOW deliberate slowdowns, default 3% and 10%),
#               then the gate's evidence of the H200_RECORD pairs (until DEADLINE_S);
#   otherwise:  STEPS (default "test run"), each for PAIRS (default ch10.warpgroup_specialization):
#                 test    the pair's GPU tests (tests/test_<chapter>_<name>.py -m gpu)
#                 run     `aisp-prof run` (check + ncu + nsys) into profiles/ ($OUT/runs.tgz)
#                 record  the gate's evidence (`bench run --update-expectations`, 3 processes)
#                 cost    benchmarks/profile_cost.py on COST_PAIRS (issue 18), before (COST_BEFORE, a
#                         checkout path) and after, each repeated COST_REPEATS times
# Carry .whl, .cutlass_xz, .device_sha and .devlib (nsys). Clocks are never touched.
set -u -o pipefail
. scripts/device_env.sh /tmp/s8_out
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ "$GPU" == *H200* ]] && [ "${GATE_TARGETS:-ch09}" != none ]; then   # the gate, then H200_RECORD pairs' evidence
  MODE=gate TARGETS="${GATE_TARGETS:-ch09}" SLOW="${SLOW-0.03 0.10}" bash scripts/gate_gpu_session.sh
  [ -z "${H200_RECORD:-}" ] && exit 0
  START=$(date +%s)
  for p in $H200_RECORD; do
    [ $(( $(date +%s) - START )) -gt ${DEADLINE_S:-400} ] && { echo "skip $p: deadline"; continue; }
    python3 -m aisp_prof bench run --targets $p --repeats 10 --budget-s 1.5 --update-expectations --record-processes 3 \
      --db /tmp/gate.db --profiles-dir /tmp/profiles --json > "$OUT/record_$p.json" 2> "$OUT/record_$p.err"
    echo "record $p rc $? t=$(( $(date +%s) - START ))s"; tail -1 "$OUT/record_$p.err"
  done
  for f in kernels/ch*/expectations_h200.json; do cp "$f" "$OUT/$(basename "$(dirname "$f")")_$(basename "$f")"; done
  (cd "$OUT" && tar czf record_logs.tgz record_*.json record_*.err 2>/dev/null && rm -f record_*.json record_*.err)
  exit 0
fi
PAIRS=${PAIRS:-ch10.warpgroup_specialization}
START=$(date +%s); t() { echo "t=$(( $(date +%s) - START ))s"; }
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) git ${AISP_GIT_SHA:-?} steps ${STEPS:-test run}"
for step in ${STEPS:-test run}; do
  case $step in
  test)
    for p in $PAIRS; do f=tests/test_${p%%.*}_${p#*.}.py
      python3 -m pytest -q -p no:cacheprovider -m gpu "$f" 2>&1 | tail -4; echo "gpu_tests $p rc $? $(t)"; done;;
  run)
    for p in $PAIRS; do
      $AISP run "$p" --profiles-dir profiles --label session8 --json > "$OUT/run_$p.json" 2> "$OUT/run_$p.err"
      echo "run $p rc $? $(t)"; tail -2 "$OUT/run_$p.err"
    done
    tar czf "$OUT/runs.tgz" --exclude='*.nsys-rep' profiles/2026* "$OUT"/run_*.err 2>/dev/null && rm -f "$OUT"/run_*.err;;
  record)
    $AISP bench run $(for p in $PAIRS; do printf -- '--targets %s ' "$p"; done) --repeats 10 --budget-s 1.5 \
      --update-expectations --record-processes ${RECORD_PROCESSES:-3} --db /tmp/gate.db --profiles-dir /tmp/profiles \
      --json > "$OUT/record.json" 2> "$OUT/record.err"; echo "record_rc $? $(t)"; tail -2 "$OUT/record.err"
    for f in kernels/ch*/expectations_*.json; do cp "$f" "$OUT/$(basename "$(dirname "$f")")_$(basename "$f")"; done
    python3 -c "
import json; d=json.load(open('$OUT/record.json'))
for p in d['pairs']: print(p['pair'], p['status'], p['message'][:80], p.get('recorded'))";;
  cost)
    [ -n "${COST_BEFORE:-}" ] && python3 benchmarks/profile_cost.py --pairs ${COST_PAIRS:-ch09.fused_l2norm} \
      --repeats ${COST_REPEATS:-2} --code "$COST_BEFORE" --label before --out-dir "$OUT" 2>&1 | tail -3
    python3 benchmarks/profile_cost.py --pairs ${COST_PAIRS:-ch09.fused_l2norm} --repeats ${COST_REPEATS:-2} \
      --compare-bare --label after --out-dir "$OUT" 2>&1 | tail -8; echo "cost rc $? $(t)";;
  esac
done
if [[ "$GPU" == *H200* ]]; then for p in ${H200_RECORD:-}; do
  [ $(( $(date +%s) - START )) -gt ${DEADLINE_S:-400} ] && { echo "skip $p: deadline"; continue; }
  $AISP bench run --targets $p --repeats 10 --budget-s 1.5 --update-expectations --record-processes 3 \
    --db /tmp/gate.db --profiles-dir /tmp/profiles --json > "$OUT/record_$p.json" 2> "$OUT/record_$p.err"
  echo "record $p rc $? $(t)"; done
  for f in kernels/ch*/expectations_h200.json; do cp "$f" "$OUT/$(basename "$(dirname "$f")")_$(basename "$f")"; done
fi
python3 - "$OUT" <<'PY'
import json, sys, pathlib
for f in sorted(pathlib.Path(sys.argv[1]).glob("run_*.json")):
    try:
        d = json.load(open(f))
    except ValueError:
        print(f.name, "no JSON"); continue
    print(f.name, json.dumps(d.get("summary") or d)[:600])
PY
} 2>&1 | tee -a "$OUT/session.log"
