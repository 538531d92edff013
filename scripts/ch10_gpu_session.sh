#!/usr/bin/env bash
# GPU visit for chapter 10 (issue 12). Clocks are never touched.
#   STEP=check    ncu metric-name probes, GPU tests of the ch10 pairs, then `aisp-prof sanitize`
#                 (memcheck, racecheck, synccheck) on every ch10 pair at its small size and on the
#                 planted race (tests/fixtures/sanitizer_kernels).
#   STEP=profile  `aisp-prof run` (check + ncu + nsys) of each pair into profiles/ (the run
#                 folders come back in $OUT/runs.tgz).
#   STEP=record   the gate's evidence: `bench run --targets ch10 --update-expectations`.
# Logs and JSON land in $OUT; a short table last. PAIRS overrides the pairs (default: all of ch10).
set -u -o pipefail
. scripts/device_env.sh /tmp/ch10_out
PAIRS=${PAIRS:-$($AISP bench list-targets --chapter ch10 | cut -f1)}
START=$(date +%s)
t() { echo "t=$(( $(date +%s) - START ))s"; }
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader) git ${AISP_GIT_SHA:-?} step ${STEP:-check}"
echo "pairs: $PAIRS"
if [ "${STEP:-check}" = check ] && [ -z "${NO_PROBES:-}" ]; then
  ncu --query-metrics --chip gh100 2>&1 | grep -i -E "cluster|dsmem|distributed|dshared|multicast" \
    > "$OUT/ncu_cluster_metrics.txt"; echo "ncu cluster/DSMEM metric names: $(wc -l < "$OUT/ncu_cluster_metrics.txt")"
  # which launch/atomic metric names this ncu takes (a wrong name fails a whole profile, so probe first)
  for m in launch__cluster_dim_x launch__cluster_dim_y launch__cluster_dim_z launch__cluster_max_active \
           launch__cluster_max_potential_size launch__cluster_scheduling_policy \
           l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum l1tex__t_requests_pipe_lsu_mem_global_op_red.sum; do
    r=$(ncu --clock-control none --metrics $m --csv python3 -c "import torch; torch.ones(1024, device='cuda').sum(); torch.cuda.synchronize()" 2>&1 | grep -E "\"$m\"|ERROR" | head -1)
    echo "probe $m: ${r:0:160}"
  done
fi
if [ "${STEP:-check}" = check ]; then
  TESTS=${TESTS:-tests/test_ch10_*.py}
  python3 -m pytest -q -p no:cacheprovider -m gpu $TESTS 2>&1 | tail -25; echo "gpu_tests_rc $? $(t)"
  $AISP sanitize $PAIRS --log-dir "$OUT/sanitizer" --json > "$OUT/sanitize.json"; echo "sanitize_rc $? $(t)"
  if [ -z "${NO_PROBES:-}" ]; then   # the planted race and ch09's pipelined variant: rc lines only when they ran
    AISP_KERNELS=tests/fixtures/sanitizer_kernels $AISP sanitize ch99.racy_block_sum --log-dir "$OUT/sanitizer_planted" \
      --json > "$OUT/sanitize_planted.json"; echo "sanitize_planted_rc $? (7 expected) $(t)"
    # ch09's pipelined variant drew synccheck's "Missing wait": that variant alone, then with every block given 2+ tiles
    $AISP sanitize ch09.warp_specialization_producer_consumer --tool synccheck --variants pipelined --sizes n=65536 \
      --log-dir "$OUT/sanitizer_ch09" --json > "$OUT/sanitize_ch09_pipelined.json"; echo "ch09 pipelined synccheck rc $? $(t)"
  fi
  (cd "$OUT" && tar czf sanitizer_logs.tgz sanitizer* && rm -rf sanitizer sanitizer_planted sanitizer_ch09)
fi
if [ "${STEP:-check}" = profile ]; then
  for p in $PAIRS; do
    $AISP run "$p" --profiles-dir profiles --label ch10-session --json > "$OUT/run_$p.json" 2> "$OUT/run_$p.err"
    echo "run $p rc $? $(t)"; tail -2 "$OUT/run_$p.err"
  done
  # one archive for the run folders and the stderr logs: the device returns at most 8 files
  tar czf "$OUT/runs.tgz" --exclude='*.nsys-rep' profiles/2026* "$OUT"/run_*.err 2>/dev/null && rm -f "$OUT"/run_*.err
fi
if [ "${STEP:-check}" = record ]; then
  $AISP bench run $(for p in $PAIRS; do printf -- '--targets %s ' "$p"; done) --repeats 10 --budget-s 1.5 \
    --update-expectations --record-processes ${RECORD_PROCESSES:-3} --db /tmp/gate.db --profiles-dir /tmp/profiles \
    --json > "$OUT/record.json"; echo "record_rc $? $(t)"
  cp kernels/ch10/expectations_*.json "$OUT/" 2>/dev/null
  python3 -c "
import json; d=json.load(open('$OUT/record.json'))
for p in d['pairs']:
    print(p['pair'], p['status'], p['message'][:80], p.get('recorded'))
"
fi
  python3 - "$OUT" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
for name in ("sanitize.json", "sanitize_planted.json", "sanitize_ch09_pipelined.json"):
    f = out / name
    if f.is_file() and f.stat().st_size:
        for r in json.load(open(f))["results"]:
            print(f"{r['pair']:36s} {r['tool']:10s} errors={r['errors']} check={r['check_passed']} {r['wall_s']}s {'; '.join(r['first_reports'][:1])[:100]}")
for f in sorted(out.glob("run_*.json")):
    try:
        d = json.load(open(f))
    except ValueError:
        print(f.name, "no JSON"); continue
    s = d.get("summary") or d
    print(f.name, json.dumps(s)[:400])
PY
} 2>&1 | tee -a "$OUT/session.log"
