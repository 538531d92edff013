#!/usr/bin/env bash
# One visit to the GPU machine: install what it lacks, run the GPU tests, profile
# ch09.fused_l2norm with aisp-prof, and measure what a profile costs against a bare run and
# `ncu --set full` of the same child. Everything lands in $OUT; a short table prints last.
#
#   OUT=/tmp/out bash scripts/gpu_session.sh [GROUPS ...]   # GROUPS: metric sets (a+b+c) to count passes for
set -u
OUT=${OUT:-/tmp/aisp_out}; export OUT; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.devlib:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PYTHONUNBUFFERED=1 AISP_BUILD_DIR=/tmp/aisp_build
AISP="python3 -m aisp_prof"
PAIR=ch09.fused_l2norm
LOG=$OUT/session.log
NCU=$(command -v ncu)
now() { python3 -c "import time; print(f'{time.time():.3f}')"; }
since() { python3 -c "import time; print(f'{time.time() - $1:.1f}')"; }
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
echo "## git $(git rev-parse HEAD 2>/dev/null)"
$AISP list
echo "## GPU tests"
python3 -m pytest -q -m gpu tests 2>&1 | tail -15

echo "## bare child (no profiler): the same command the profilers watch"
T0=$(now)
python3 -m aisp_prof.collect.child --pair $PAIR --variants baseline,cuda,triton --mode profile --out /tmp/bare.json --iterations 1
echo "bare_child_wall_s $(since $T0)"

echo "## aisp-prof run"
T0=$(now)
$AISP run $PAIR --profiles-dir profiles --label gpu-session
echo "aisp_run_rc $?"
echo "aisp_run_wall_s $(since $T0)"
RUN=$(ls -t profiles | grep $PAIR | head -1)
python3 -c "import json;d=json.load(open('profiles/$RUN/run.json'));print('wall_s',d['wall_s'],'passes',d.get('ncu_passes_per_kernel'))"
$AISP ranges latest
$AISP kernels latest

echo "## ncu --set full of the same child"
T0=$(now)
$NCU --clock-control none --set full --nvtx --nvtx-include "aisp/$PAIR/baseline/" --nvtx-include "aisp/$PAIR/cuda/" \
  --nvtx-include "aisp/$PAIR/triton/" -o /tmp/full -f \
  python3 -m aisp_prof.collect.child --pair $PAIR --variants baseline,cuda,triton --mode profile --out /tmp/full.json > /tmp/full.log 2>&1
echo "ncu_set_full_wall_s $(since $T0)"
grep -o -- '- [0-9]* passes' /tmp/full.log | sort | uniq -c

if [ $# -gt 0 ]; then
  echo "## replay passes of candidate metric sets"
  bash scripts/pass_budget.sh "$@"
fi
} 2>&1 | tee "$LOG"
RUN=$(ls -t profiles | grep $PAIR | head -1)
tar czf "$OUT/run.tgz" profiles/"$RUN" profiles/aisp.db 2>/dev/null
ls -la "$OUT"
echo "## summary"; grep -E "_wall_s|passes|^group|rc |wall_s" "$LOG" | tail -30
