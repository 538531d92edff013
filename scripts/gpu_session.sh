#!/usr/bin/env bash
# One visit to the GPU machine: install what it lacks, run the GPU tests, profile
# ch09.fused_l2norm with aisp-prof, and measure what a profile costs against a bare run and
# `ncu --set full` of the same child. Everything lands in $OUT; a short table prints last.
#
#   OUT=/tmp/out bash scripts/gpu_session.sh [passes]   # 'passes' also measures passes per metric group
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
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
echo "## git $(git rev-parse HEAD 2>/dev/null)"
$AISP list
echo "## GPU tests"
python3 -m pytest -q -m gpu tests 2>&1 | tail -15

echo "## bare child (no profiler): the same command the profilers watch"
T0=$(date +%s.%N)
python3 -m aisp_prof.collect.child --pair $PAIR --variants baseline,cuda,triton --mode profile --out /tmp/bare.json --iterations 1
T1=$(date +%s.%N); echo "bare_child_wall_s $(echo "$T1 - $T0" | bc)"

echo "## aisp-prof run"
T0=$(date +%s.%N)
$AISP run $PAIR --profiles-dir profiles --label gpu-session
echo "aisp_run_rc $?"
T1=$(date +%s.%N); echo "aisp_run_wall_s $(echo "$T1 - $T0" | bc)"
RUN=$(ls -t profiles | grep $PAIR | head -1)
python3 -c "import json;d=json.load(open('profiles/$RUN/run.json'));print('wall_s',d['wall_s'],'passes',d.get('ncu_passes_per_kernel'))"
$AISP ranges latest
$AISP kernels latest

echo "## ncu --set full of the same child"
T0=$(date +%s.%N)
$NCU --clock-control none --set full --nvtx --nvtx-include "aisp/$PAIR/baseline/" --nvtx-include "aisp/$PAIR/cuda/" \
  --nvtx-include "aisp/$PAIR/triton/" -o /tmp/full -f \
  python3 -m aisp_prof.collect.child --pair $PAIR --variants baseline,cuda,triton --mode profile --out /tmp/full.json > /tmp/full.log 2>&1
T1=$(date +%s.%N); echo "ncu_set_full_wall_s $(echo "$T1 - $T0" | bc)"
grep -o -- '- [0-9]* passes' /tmp/full.log | sort | uniq -c

if [ "${1:-}" = passes ]; then
  echo "## replay passes per metric group (cuda variant, small size)"
  for g in $(python3 -c "from aisp_prof.parse.metric_table import METRICS;print(' '.join(sorted({m.group for m in METRICS})))"); do
    M=$(python3 -c "from aisp_prof.parse.metric_table import METRICS;print(','.join(m.raw for m in METRICS if m.group=='$g'))")
    P=$($NCU --clock-control none --nvtx --nvtx-include "aisp/$PAIR/cuda/" --metrics "$M" \
      python3 -m aisp_prof.collect.child --pair $PAIR --variants baseline,cuda --sizes rows=1024,cols=8192 --mode profile --out /tmp/g.json 2>&1 | grep -o -- '- [0-9]* passes' | head -1)
    echo "group $g: $P"
  done
fi
} 2>&1 | tee "$LOG"
tar czf "$OUT/run.tgz" profiles/"$RUN" profiles/aisp.db 2>/dev/null
ls -la "$OUT"
echo "## summary"; grep -E "_wall_s|passes|^group|rc |wall_s" "$LOG" | tail -30
