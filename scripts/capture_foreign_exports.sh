#!/usr/bin/env bash
# Issue 16's fixtures: exports made the way users make them, not by aisp-prof. Run on the GPU
# machine from the repo root (sources scripts/device_env.sh); files land in $OUT/foreign/.
#   full:  ncu --set full (instruction counters come as rates) of scripts/foreign_workload.py
#   sum:   ncu with aisp-prof's own .sum metric list, same kernels (the reference for derived counts)
#   nsys:  nsys with the DEFAULT --cuda-graph-trace (graph), nested ranges on two threads; and the
#          same with --cuda-graph-trace=node for comparison
set -u -o pipefail
. scripts/device_env.sh /tmp/foreign_out
D=$OUT/foreign; mkdir -p "$D"; W=scripts/foreign_workload.py
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
METRICS=$(python3 -c "from aisp_prof.parse.metric_table import metric_names; print(','.join(metric_names()))")
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) ncu $(ncu --version | tail -1) nsys $($NSYS --version 2>&1 | tail -1) torch $(python3 -c 'import torch;print(torch.__version__)')"
MODE=ncu ncu --clock-control none --nvtx --nvtx-include "foreign/" --set full -o "$D/full" -f python3 $W > "$D/full.log" 2>&1; echo "full rc $?"
ncu --import "$D/full.ncu-rep" --csv --page raw --print-units base > "$D/full_raw_base.csv"; echo "full csv rc $?"
MODE=ncu ncu --clock-control none --nvtx --nvtx-include "foreign/" --metrics "$METRICS" -o "$D/sum" -f python3 $W > "$D/sum.log" 2>&1; echo "sum rc $?"
ncu --import "$D/sum.ncu-rep" --csv --page raw --print-units base > "$D/sum_raw_base.csv"; echo "sum csv rc $?"
MODE=nsys $NSYS profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite=true -o "$D/nested_graph_default" python3 $W > "$D/nsys_default.log" 2>&1; echo "nsys default rc $?"
$NSYS export --type sqlite --force-overwrite=true -o "$D/nested_graph_default.sqlite" "$D/nested_graph_default.nsys-rep"; echo "export rc $?"
MODE=nsys $NSYS profile --trace=cuda,nvtx --cuda-graph-trace=node --sample=none --cpuctxsw=none --force-overwrite=true -o "$D/nested_graph_node" python3 $W > "$D/nsys_node.log" 2>&1; echo "nsys node rc $?"
$NSYS export --type sqlite --force-overwrite=true -o "$D/nested_graph_node.sqlite" "$D/nested_graph_node.nsys-rep"; echo "export rc $?"
echo "metrics: $METRICS" > "$D/sum_metrics.txt"
gzip -kf "$D/sum.ncu-rep"; rm -f "$D"/*.nsys-rep
ls -la "$D"
} 2>&1 | tee "$D/capture.log"
(cd "$OUT" && tar czf foreign.tgz foreign && rm -rf foreign)
