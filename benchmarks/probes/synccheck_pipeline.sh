#!/usr/bin/env bash
# Runs synccheck_pipeline.cu's three cuda::pipeline kernels under compute-sanitizer synccheck and
# racecheck on the GPU machine (issue 12: is "Missing wait" at producer_commit our misuse or the tool?).
set -u
OUT=${PROBE_OUT:-/tmp/synccheck_out}; mkdir -p "$OUT"   # not the device's $OUT: it returns only 8 files
here=$(cd "$(dirname "$0")" && pwd)
nvcc -arch=sm_90a -std=c++17 -o /tmp/synccheck_pipeline "$here/synccheck_pipeline.cu" 2>/dev/null || { echo "build failed"; exit 1; }
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(compute-sanitizer --version | tail -1)"
for mode in ${MODES:-0 1 2 3 4 5 6 7}; do
  /tmp/synccheck_pipeline $mode
  for tool in synccheck racecheck; do
    compute-sanitizer --tool $tool --print-limit 3 /tmp/synccheck_pipeline $mode > "$OUT/mode${mode}_$tool.log" 2>&1
    echo "mode $mode $tool rc=$? $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/mode${mode}_$tool.log") | $(grep -m1 -E 'Barrier|Missing|hazard' "$OUT/mode${mode}_$tool.log" | cut -c1-100)"
  done
done
# Which arrive pattern synccheck calls "Missing wait" (libcu++'s cp.async.mbarrier.arrive without .noinc?)
nvcc -arch=sm_90a -std=c++17 -o /tmp/synccheck_arrive "$here/synccheck_arrive_noinc.cu" 2>/dev/null || { echo "arrive probe build failed"; exit 1; }
for mode in 0 1 2 3; do
  compute-sanitizer --tool synccheck --print-limit 2 /tmp/synccheck_arrive $mode > "$OUT/arrive_mode${mode}_synccheck.log" 2>&1
  echo "arrive mode $mode synccheck rc=$? $(grep -m1 'ok\|WRONG' "$OUT/arrive_mode${mode}_synccheck.log") $(grep -m1 'ERROR SUMMARY' "$OUT/arrive_mode${mode}_synccheck.log")"
done
