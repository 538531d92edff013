#!/usr/bin/env bash
# Session 9's GPU visit (issue 13: the warp-specialized GEMM's 90% of cuBLAS). Clocks never touched.
#   STEPS (space-separated, in order):
#     sanitize  compute-sanitizer memcheck/racecheck/synccheck of SAN_PAIRS (default PAIRS), SAN_VARIANTS
#               (comma-separated; default all), at the small size
#     tests     the GPU tests of TESTS
#     scratch   time PAIRS side by side, recorded into a scratch expectations file (not the repo's)
#     record    the gate's evidence for PAIRS: bench run --update-expectations (3 processes)
#     run       aisp-prof run (check + ncu + nsys) of PAIRS into profiles/ ($OUT/runs.tgz)
# Logs and JSON land in $OUT; a short table last.
set -u -o pipefail
. scripts/device_env.sh /tmp/s9_out
PAIRS=${PAIRS:-ch10.warp_specialization}
START=$(date +%s)
t() { echo "t=$(( $(date +%s) - START ))s"; }
targets() { for p in $PAIRS; do printf -- '--targets %s ' "$p"; done; }
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader) git ${AISP_GIT_SHA:-?} steps ${STEPS:-}"
for step in ${STEPS:-}; do
  case $step in
    sanitize)
      for p in ${SAN_PAIRS:-$PAIRS}; do
        $AISP sanitize "$p" ${SAN_VARIANTS:+--variants $SAN_VARIANTS} --log-dir "$OUT/sanitizer" --json \
          > "$OUT/sanitize_$p.json"; echo "sanitize $p rc $? $(t)"
      done
      (cd "$OUT" && tar czf sanitizer_logs.tgz sanitizer && rm -rf sanitizer) ;;
    tests)
      python3 -m pytest -q -p no:cacheprovider -m gpu ${TESTS:-tests/test_ch10_warp_specialization.py} 2>&1 | tail -15
      echo "gpu_tests_rc $? $(t)" ;;
    scratch)
      $AISP bench run $(targets) --repeats 10 --budget-s 1.5 --update-expectations --record-processes 2 \
        --expectations "$OUT/scratch_expectations.json" --db /tmp/scratch.db --profiles-dir /tmp/profiles \
        --json > "$OUT/scratch.json"; echo "scratch_rc $? $(t)" ;;
    record)
      $AISP bench run $(targets) --repeats 10 --budget-s 1.5 --update-expectations \
        --record-processes ${RECORD_PROCESSES:-3} --db /tmp/gate.db --profiles-dir /tmp/profiles \
        --json > "$OUT/record.json"; echo "record_rc $? $(t)"
      for c in $(for p in $PAIRS; do echo "${p%%.*}"; done | sort -u); do
        for f in kernels/$c/expectations_*.json; do cp "$f" "$OUT/${c}_$(basename "$f")"; done
      done ;;
    run)
      for p in $PAIRS; do
        $AISP run "$p" --profiles-dir profiles --label session9 --json > "$OUT/run_$p.json" 2> "$OUT/run_$p.err"
        echo "run $p rc $? $(t)"; tail -2 "$OUT/run_$p.err"
      done ;;
  esac
done
python3 scripts/session9_table.py "$OUT" "$PAIRS"
} 2>&1 | tee -a "$OUT/session.log"
# at most 8 files come back: the run folders and their logs go in one archive
if ls "$OUT"/run_* >/dev/null 2>&1; then
  tar czf "$OUT/runs.tgz" --exclude='*.nsys-rep' profiles/2026* "$OUT"/run_* 2>/dev/null && rm -f "$OUT"/run_*
fi
