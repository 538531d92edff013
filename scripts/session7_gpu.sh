#!/usr/bin/env bash
# One single-GPU visit, asked as kind=nvidia-h200 (issue 11's fresh-H200 gate), hedged:
#   on an H200: the ch09 gate against kernels/ch09/expectations_h200.json (scripts/gate_gpu_session.sh
#               MODE=gate, with the deliberate 3% and 10% slowdowns);
#   otherwise:  issue 14's gate recordings of chapter 14 pairs (PAIRS), one `bench run
#               --update-expectations` per pair so each finished pair is kept, stopping before DEADLINE_S;
#               or, with ELSE_SCRIPT, that script instead.
# Carry .whl and .cutlass_xz (CUTLASS headers for ch09.cutlass_gemm), not .devlib (no nsys needed).
set -u -o pipefail
. scripts/device_env.sh /tmp/s7_out
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$GPU" in *H200*) MODE=gate TARGETS=ch09 SLOW="${SLOW:-0.03 0.10}" bash scripts/gate_gpu_session.sh; exit $?;; esac
if [ -n "${ELSE_SCRIPT:-}" ]; then bash "$ELSE_SCRIPT"; exit $?; fi
START=$(date +%s); t() { echo "t=$(( $(date +%s) - START ))s"; }
{
echo "## $(date -u +%FT%TZ) $GPU (no H200: ch14 recordings) git ${AISP_GIT_SHA:-?}"
for p in ${PAIRS:-ch14.gpu_quantization ch14.graph_break_control_flow ch14.sliding_window_causal ch14.flex_attention_sparse}; do
  [ $(( $(date +%s) - START )) -gt ${DEADLINE_S:-380} ] && { echo "skip $p: deadline"; continue; }
  $AISP bench run --targets $p --repeats 10 --budget-s 1.5 --update-expectations --record-processes ${RECORD_PROCESSES:-3} \
    --db /tmp/gate.db --profiles-dir /tmp/profiles --json > "$OUT/record_$p.json" 2> "$OUT/record_$p.err"
  echo "record $p rc $? $(t)"; tail -2 "$OUT/record_$p.err"
  python3 -c "
import json; d=json.load(open('$OUT/record_$p.json'))
for p in d['pairs']: print('  ', p['pair'], p['status'], p['message'][:100], p.get('recorded'))" 2>&1 | head -3
done
cp kernels/ch14/expectations_*.json "$OUT/"
(cd "$OUT" && tar czf record_logs.tgz record_*.json record_*.err && rm -f record_*.json record_*.err)
} 2>&1 | tee "$OUT/session.log"
