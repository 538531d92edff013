#!/usr/bin/env bash
# GPU visits for issue 11 (the regression gate). Clocks are never touched.
#   MODE=record TARGETS="ch09.a ch09.b": record those pairs' evidence into
#       kernels/ch09/expectations_<key>.json (a new session each); the file comes back in $OUT.
#   MODE=gate [TARGETS=ch09] [SLOW="0.03 0.10"]: on a fresh machine, the pairs against the
#       committed file (no code change: every verdict must pass), then ch09.fused_l2norm with a
#       deliberate slowdown of its cuda variant (tests/fixtures/gate_kernels) of each SLOW fraction.
# Logs, verdict JSON and the timed samples of the gate runs land in $OUT; a verdict table last.
set -u -o pipefail
. scripts/device_env.sh /tmp/gate_out
ARGS="--repeats ${REPEATS:-10} --budget-s ${BUDGET_S:-1.5} --db /tmp/gate.db --profiles-dir /tmp/profiles --json"
KEY=$(python3 -c "from aisp_prof.bench.runner import current_hardware_key; print(current_hardware_key())")
FILE=kernels/ch09/expectations_$KEY.json
START=$(date +%s)
show() {  # pair variant verdict time cycles ratio cause, one line per variant of a bench JSON
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pct = lambda m: "-" if m is None else f"{(m['change']['value']-1)*100:+.1f}%[{(m['change']['low']-1)*100:+.1f},{(m['change']['high']-1)*100:+.1f}]±{m['margin']*100:.1f}"
for p in d["pairs"]:
    if not p["verdicts"]:
        print(f"{p['pair']:44s} {'-':22s} {p['status'].upper():9s} {p['message'][:90]}")
    for v in p["verdicts"]:
        m = {x["metric"]: x for x in v["metrics"]}
        print(f"{p['pair']:44s} {v['variant']:22s} {v['verdict']:9s} t {pct(m.get('time')):26s} c {pct(m.get('cycles')):26s} "
              f"r {pct(m.get('ratio')):24s} {v['cause'][:70]}")
    if p.get("recorded"): print(f"  recorded -> {p['recorded']}")
print("gate fails:", d["fails"])
PY
}
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader) git ${AISP_GIT_SHA:-?} key $KEY mode ${MODE:-?}"
if [ "${MODE:-}" = record ]; then
  $AISP bench run $(for t in $TARGETS; do printf -- '--targets %s ' "$t"; done) $ARGS --update-expectations \
    --record-processes ${RECORD_PROCESSES:-3} \
    > "$OUT/record_${TAG:-a}.json"; echo "record_rc $? t=$(( $(date +%s) - START ))s"
  show "$OUT/record_${TAG:-a}.json"; cp "$FILE" "$OUT/"
else
  $AISP bench run $(for t in ${TARGETS:-ch09}; do printf -- '--targets %s ' "$t"; done) $ARGS \
    > "$OUT/gate_${TAG:-a}.json"; echo "gate_rc $? t=$(( $(date +%s) - START ))s"
  show "$OUT/gate_${TAG:-a}.json"
  for f in ${SLOW:-}; do
    AISP_KERNELS=tests/fixtures/gate_kernels AISP_GATE_SLOWDOWN=$f $AISP bench run --targets ch09.fused_l2norm $ARGS \
      --expectations "$FILE" > "$OUT/slow_$f.json"; echo "slow_${f}_rc $? t=$(( $(date +%s) - START ))s"
    show "$OUT/slow_$f.json"
  done
  (cd /tmp/profiles && tar czf "$OUT/gate_runs_${TAG:-a}.tgz" */run.json */check.json */timing_p*.json)
fi
} 2>&1 | tee "$OUT/session.log"
