#!/usr/bin/env bash
# One GPU visit for the Hopper ports of chapter 9 (issue 5): environment line, then the probes
# of scripts/hopper_probe.py named on the command line (default: tma sdpa sparse), each under
# its own timeout, logs under $OUT, a short summary last. Clocks are never touched.
#
#   OUT=/tmp/out bash scripts/hopper_session.sh [tma] [sdpa] [sparse]
set -u -o pipefail
OUT=${OUT:-/tmp/hopper_out}; export OUT; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 AISP_BUILD_DIR=${AISP_BUILD_DIR:-/tmp/aisp_build}
PROBES=${*:-tma sdpa sparse}
START=$(date +%s)
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader 2>&1)"
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, torch.cuda.get_device_name(0))"
nvcc --version | tail -n 2 | head -n 1
for p in $PROBES; do
  echo "== probe $p t=$(( $(date +%s) - START ))s"
  timeout "${PROBE_TIMEOUT:-200}" python3 scripts/hopper_probe.py "$p"
  echo "probe $p rc=$? t=$(( $(date +%s) - START ))s"
done
} 2>&1 | tee "$OUT/log.txt"
echo "== summary"; grep -E "^(check|time|   pipelined|sparse |cudnn|efficient|flash|probe|built)" "$OUT/log.txt" | tail -n 60
