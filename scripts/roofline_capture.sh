#!/usr/bin/env bash
# One visit to the GPU machine for the roofline (issue 3): measure the ceilings, profile the
# known-answer probes under ncu with the project's metric list, capture ncu's own roofline
# sections for a few of them, and settle which tensor peaks are sparse. Everything lands in $OUT
# (at most 8 files); a short table prints last.
#
#   OUT=/tmp/out bash scripts/roofline_capture.sh
#   OUT=/tmp/out CALIBRATE_ONLY=1 bash scripts/roofline_capture.sh   # only time the probes: $OUT/<key>.json
set -u
OUT=${OUT:-/tmp/roofline_out}; export OUT; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.devlib:${LD_LIBRARY_PATH:-}
if [ -d .whl ] && [ ! -d /tmp/site/sqlite_utils ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD AISP_BUILD_DIR=/tmp/aisp_build PYTHONUNBUFFERED=1
W=/tmp/rw; rm -rf $W; mkdir -p $W/sections $W/calibration
AISP="python3 -m aisp_prof"
LOG=$OUT/capture.log
if [ -n "${CALIBRATE_ONLY:-}" ]; then
  { echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit --format=csv,noheader)"
    $AISP calibrate --db $W/aisp.db --write-json "$OUT"; echo "calibrate_rc $?"; } 2>&1 | tee "$LOG"
  exit 0
fi
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader)"
ncu --version | tail -1
python3 -c "import torch, triton; p=torch.cuda.get_device_properties(0); print('torch', torch.__version__, 'triton', triton.__version__, p.name, p.multi_processor_count, 'SMs', p.L2_cache_size, 'B L2', p.total_memory, 'B')"

echo "## 1. tensor-path metric names this ncu knows (sparsity variants?)"
ncu --query-metrics > $W/query_metrics.txt 2>&1 || ncu --query-metrics --chip gh100 > $W/query_metrics.txt 2>&1
grep -E "^\s*sm__\S*ops_path_tensor" $W/query_metrics.txt | awk '{print $1}' | tr '\n' ' '; echo
grep -ciE "sparsity" $W/query_metrics.txt

echo "## 2. ncu's roofline section files"
cp /opt/nvidia/nsight-compute/*/sections/*Roofline*.section $W/sections/ 2>/dev/null
ls $W/sections

echo "## 3. calibrate: time every probe (CUDA events), then profile them under ncu (project metric list)"
T0=$(date +%s)
$AISP calibrate --db $W/aisp.db --write-json $W/calibration --profile --profiles-dir $W/profiles
echo "calibrate_rc $? wall $(( $(date +%s) - T0 )) s"
RUN=$(ls $W/profiles | grep calibrate | head -1)
echo "probe run: $RUN"
python3 -c "import json;d=json.load(open('$W/profiles/$RUN/run.json'));print('passes',d.get('ncu_passes_per_kernel'),'kernels',d.get('ncu_kernels_profiled'),'errors',d.get('probe_errors'))"
grep -E -- "- [0-9]+ passes" $W/profiles/$RUN/ncu.log | head -3

echo "## 4. ncu roofline sections + project metrics + sparsity peaks, same capture"
T0=$(date +%s)
python3 scripts/roofline_sections.py $W
echo "sections_rc $? wall $(( $(date +%s) - T0 )) s"

echo "## 5. SASS: HFMA2 in pure-fp32 kernels (constant moves counted as fp16 FLOPs?)"
python3 -c "from aisp_kernels import build; print(build.build_shared_library('kernels/ch09/fused_l2norm.cu'))"
for so in $AISP_BUILD_DIR/*.so; do
  echo "$so: HFMA2 $(cuobjdump -sass $so 2>/dev/null | grep -c HFMA2) FFMA $(cuobjdump -sass $so 2>/dev/null | grep -c FFMA)"
  cuobjdump -sass $so 2>/dev/null | grep -m3 HFMA2
done

echo "## 6. the roofline of the probe run (smoke test on the GPU machine)"
$AISP roofline $RUN --db $W/aisp.db --flops counted --precision tensor_bf16 --precision fp32
$AISP roofline $RUN --db $W/aisp.db --json > $W/roofline.json; echo "roofline_json_rc $?"
$AISP roofline $RUN --db $W/aisp.db --level all --out $W/probe_roofline.png > /dev/null; echo "roofline_png_rc $?"
} 2>&1 | tee "$LOG"

RUN=$(ls $W/profiles | grep calibrate | head -1)
mkdir -p $W/bundle/probe_run
cp $W/profiles/$RUN/run.json $W/profiles/$RUN/ncu_raw.csv $W/profiles/$RUN/ncu.log $W/bundle/probe_run/ 2>/dev/null
cp -r $W/calibration $W/sections $W/bundle/ 2>/dev/null
cp $W/sections_*.csv $W/sections_*.log $W/sections_cmd.json $W/roofline.json $W/bundle/ 2>/dev/null
grep -E "ops_path_tensor|sparsity" $W/query_metrics.txt > $W/bundle/query_metrics_tensor.txt
tar czf "$OUT/capture.tgz" -C $W/bundle .
cp $W/probe_roofline.png "$OUT/" 2>/dev/null
cp $W/profiles/$RUN/ncu.ncu-rep.gz "$OUT/probe_run.ncu-rep.gz" 2>/dev/null
ls -la "$OUT"
echo "## summary"
python3 - "$W" <<'EOF'
import json, sys, glob
w = sys.argv[1]
for f in glob.glob(f"{w}/calibration/*.json"):
    c = json.load(open(f))
    print(c["hardware_key"], c["gpu_name"], "driver", c["driver_version"])
    for n, p in c["probes"].items():
        print(f"  {n:10s} {p.get('rate', 0):.4g} {p.get('unit', p.get('error', ''))}  median {p.get('median_ns', 0) / 1e3:.1f} us  spread {p.get('spread_pct', 0):.1f}%")
EOF
grep -E "_rc |passes|wall" "$LOG" | tail -12
