#!/usr/bin/env bash
# Forked against fresh check and timing processes on ONE GPU machine (issue 28: is a GPU-timed verdict the
# same when the gate forks its processes from a preloaded torch, collect/process/preload.py?). One call:
# `bench run` of PAIRS forked, then with --fresh-processes, alternated ROUNDS times, each arm into its own
# database; then benchmarks/preload_ab.py's table (per variant: each arm's median of process medians, the
# ratio, each arm's spread between processes) and each arm's verdicts. From the repository root:
#
#   PAIRS="ch10.warp_specialization ch10.matmul_wgmma_pipelined ch09.fused_l2norm" ROUNDS=3 bash benchmarks/preload_ab.sh
#
# LIMIT_S (default 560): no run starts after it. Returns forked.db, fresh.db, the two logs, table.txt/.json.
set -u -o pipefail
. dev/device_env.sh /tmp/preload_ab_out
args=(); for p in ${PAIRS:-ch10.warp_specialization ch10.matmul_wgmma_pipelined ch09.fused_l2norm}; do
  args+=(--targets "$p"); done
END=$(( $(date +%s) + ${LIMIT_S:-560} ))
for r in $(seq 1 "${ROUNDS:-3}"); do
  for arm in forked fresh; do
    left=$(( END - $(date +%s) )); [ "$left" -lt 30 ] && break 2
    flag=""; [ "$arm" = fresh ] && flag=--fresh-processes
    timeout --signal=INT "$left" python3 -m aisp_prof bench run "${args[@]}" $flag --db "$OUT/$arm.db" \
      --profiles-dir "/tmp/preload_ab_$arm" --json > /dev/null 2>> "$OUT/$arm.log"
    echo "$arm round $r exit $?"
  done
done
python3 benchmarks/preload_ab.py "$OUT/forked.db" "$OUT/fresh.db" --json > "$OUT/table.json"
python3 benchmarks/preload_ab.py "$OUT/forked.db" "$OUT/fresh.db" | tee "$OUT/table.txt"
