#!/usr/bin/env bash
# What the whole-book gate costs on this GPU machine (issue 28: at most 10 minutes on one GPU), one call:
# `aisp-prof bench run` of TARGETS against the shipped evidence, every progress line stamped with the
# seconds since the start, so the time per pair, per build and per timing process can be read off
# (benchmarks/gate_cost_table.py), with each check process's wall and compile seconds from the run folders.
# From the repository root, on the GPU machine:
#
#   COLD=1 bash benchmarks/gate_cost.sh     # an empty build cache (a fresh machine: nvcc builds every library)
#   bash benchmarks/gate_cost.sh            # the libraries the previous call built (the everyday gate)
#
# Triton's and Inductor's caches are what `bench run` gives each run (its own, in its run folder: every
# pair compiles afresh in every gate), unless SHARED_COMPILE_CACHE=1 puts them under CACHE for every run (a
# gate after a gate then finds its compiles done: a user's choice, not the default). Triton's compiled binaries
# go through `bench run`'s binary store (collect.code.binary_store), here $CACHE/triton-binaries: a COLD call
# starts it empty, a later call finds the binaries the calls before compiled (FLAGS=--fresh-binaries: none).
# TARGETS (default "ch14 ch09 ch10"), LIMIT_S (default 575: the call's 10 minutes less the packing), CACHE
# (default /tmp/gate_cache: $AISP_BUILD_DIR under it), NAME (default cold or warm), FLAGS (added to bench run,
# e.g. --fresh-processes). A run cut off by LIMIT_S still returns its stamped log; a finished one its --json too.
set -u -o pipefail
. dev/device_env.sh /tmp/gate_cost_out
CACHE=${CACHE:-/tmp/gate_cache}
NAME=${NAME:-$([ "${COLD:-0}" = 1 ] && echo cold || echo warm)}
[ "${COLD:-0}" = 1 ] && rm -rf "$CACHE" /tmp/gate_cost.db
PROFILES=/tmp/gate_cost_profiles_$NAME; rm -rf "$PROFILES"
mkdir -p "$CACHE"
export AISP_BUILD_DIR=$CACHE/build AISP_TRITON_STORE=$CACHE/triton-binaries
[ "${SHARED_COMPILE_CACHE:-0}" = 1 ] && export TRITON_CACHE_DIR=$CACHE/triton TORCHINDUCTOR_CACHE_DIR=$CACHE/inductor
args=(); for t in ${TARGETS:-ch14 ch09 ch10}; do args+=(--targets "$t"); done
{ nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
  echo "boot $(cat /proc/sys/kernel/random/boot_id) cpus $(nproc) git ${AISP_GIT_SHA:-?} $(date -u +%FT%TZ)"
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  echo "cache $CACHE: $(du -sh "$CACHE" | cut -f1) at the start; compile caches: ${TRITON_CACHE_DIR:-each run its own}"
  echo "triton binaries: $([ -d "$AISP_TRITON_STORE" ] && du -sh "$AISP_TRITON_STORE" | cut -f1 || echo none) kept at the start"
  echo "flags: ${FLAGS:-none}"; } > "$OUT/${NAME}_env.txt" 2>&1
START=$(date +%s.%N)
echo "start_epoch_s $START" >> "$OUT/${NAME}_env.txt"
stamp() { python3 -u -c 'import sys, time
for line in sys.stdin: print(f"{time.time() - float(sys.argv[1]):7.1f} {line}", end="", flush=True)' "$START"; }
timeout --signal=INT --kill-after=10 "${LIMIT_S:-575}" python3 -m aisp_prof bench run "${args[@]}" ${FLAGS:-} \
  --db /tmp/gate_cost.db --profiles-dir "$PROFILES" --json > "$OUT/${NAME}.json" \
  2> >(stamp > "$OUT/${NAME}.log")
rc=$?
sleep 1
echo "exit $rc after $(( $(date +%s) - ${START%.*} )) s" >> "$OUT/${NAME}_env.txt"
table=(python3 benchmarks/gate_cost_table.py "$OUT/${NAME}.log" --runs "$PROFILES")
"${table[@]}" --json > "$OUT/${NAME}_cost.json"
"${table[@]}" | tee "$OUT/${NAME}_table.txt"
tail -1 "$OUT/${NAME}_env.txt"
