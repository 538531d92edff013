#!/usr/bin/env bash
# One visit to the GPU machine to learn its facts: versions, metric names, ncu NVTX filter
# syntax, replay passes of the curated metric list, nsys with graph tracing.
# Usage there: OUT=/some/dir bash scripts/device_probe.sh
set -u
OUT=${OUT:-/tmp/aisp_probe}; export OUT; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.devlib:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
NSYS=$(ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys | head -1)
{
  nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,clocks.sm,memory.total --format=csv
  ncu --version; $NSYS --version; nvcc --version | tail -2; python3 -c 'import torch,triton;print(torch.__version__,triton.__version__,torch.version.cuda)'
  ls /opt/nvidia/nsight-compute/*/extras/python; ls /opt/nvidia/ 2>&1; which nsys
} > "$OUT/versions.txt" 2>&1
ncu --query-metrics --chip gh100 > "$OUT/query_metrics_gh100.txt" 2>&1
python3 - <<'PY' > "$OUT/missing_metrics.txt" 2>&1
import re
from aisp_prof.parse.metric_table import METRICS
import os; names = set(l.split()[0] for l in open(os.environ["OUT"] + "/query_metrics_gh100.txt") if l.strip())
for m in METRICS:
    base = m.raw.split(".")[0]
    if base not in names: print("MISSING", m.raw)
print("tensor-ish:", sorted(n for n in names if n.startswith("sm__ops_path_tensor_src")))
PY
P=scripts/probe_nvtx.py
q() { ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw "$@" python3 $P 2>&1 | grep -E '^"[0-9]|ERROR|WARN' | cut -c1-220; }
for f in "aisp/pairA/baseline/" "aisp/" "aisp/pairA/" "aisp/pairB/baseline/" 'aisp\/pairB\/baseline/' "aisp@pairC/baseline/" "aisp/pairG/graph/"; do
  echo "=== --nvtx-include $f"; q --nvtx --nvtx-include "$f"
done > "$OUT/nvtx_filters.txt" 2>&1
M=$(python3 -c 'from aisp_prof.parse.metric_table import metric_names;print(",".join(metric_names()))')
ncu --clock-control none --nvtx --nvtx-include "aisp/" --metrics "$M" -o "$OUT/probe" -f python3 $P > "$OUT/ncu_curated.log" 2>&1
grep -E 'passes|ERROR' "$OUT/ncu_curated.log" | head -20
ncu --import "$OUT/probe.ncu-rep" --csv --page raw --print-units base > "$OUT/probe_curated_raw_base.csv" 2>&1
$NSYS profile --trace=cuda,nvtx --cuda-graph-trace=node --sample=none --cpuctxsw=none -o /tmp/nsys_probe -f true python3 $P > "$OUT/nsys.log" 2>&1
$NSYS export --type sqlite -o "$OUT/probe_nsys.sqlite" -f true /tmp/nsys_probe.nsys-rep >> "$OUT/nsys.log" 2>&1
ls -la "$OUT"; tail -3 "$OUT/nsys.log"; cat "$OUT/missing_metrics.txt" | cut -c1-3000; cat "$OUT/nvtx_filters.txt"; head -30 "$OUT/versions.txt"
