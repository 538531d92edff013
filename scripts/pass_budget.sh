#!/usr/bin/env bash
# Replay passes per kernel for candidate metric sets (cuda variant of ch09.fused_l2norm, small
# size): decides which groups of aisp_prof.parse.metric_table the default profile collects.
set -u
PAIR=ch09.fused_l2norm
for groups in "$@"; do
  M=$(python3 -c "from aisp_prof.parse.metric_table import metric_names;print(','.join(metric_names(tuple('$groups'.split('+')))))")
  ncu --clock-control none --nvtx --nvtx-include "aisp/$PAIR/cuda/" --metrics "$M" \
    python3 -m aisp_prof.collect.child --pair $PAIR --variants baseline,cuda --sizes rows=2048,cols=8192 \
    --mode profile --out /tmp/pb.json > /tmp/pb.log 2>&1
  P=$(grep -o -- '- [0-9]* pass[es]*' /tmp/pb.log | head -1)
  echo "passes[$groups] $P"
done
