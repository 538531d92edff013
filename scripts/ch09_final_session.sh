#!/usr/bin/env bash
# GPU visit: GPU tests of the CUDA pairs, profile the two CUDA pairs added last (samples), and
# record/refresh their timing expectations (fused_l2norm's after the keep-alive fix).
set -u
OUT=${OUT:-/tmp/aisp_out}; export OUT; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.devlib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1 AISP_BUILD_DIR=/tmp/aisp_build
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
AISP="python3 -m aisp_prof"
NEW="${NEW:-ch09.micro_tiling_matmul ch09.warp_specialization_producer_consumer}"
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) git ${AISP_GIT_SHA:-?}"
python3 -m pytest -q -m gpu ${GPU_TESTS:-tests/test_gpu.py tests/test_fused_l2norm.py tests/test_micro_tiling_matmul.py tests/test_warp_specialization.py} 2>&1 | tail -3
$AISP run $NEW --profiles-dir profiles --label ch09-session 2>&1 | grep -v Processing
BENCH=${BENCH:-"ch09.fused_l2norm ch09.micro_tiling_matmul ch09.warp_specialization_producer_consumer"}
$AISP bench run $(for t in $BENCH; do printf -- '--targets %s ' "$t"; done) --repeats 50 --update-expectations
} 2>&1 | tee "$OUT/final.log"
cp kernels/ch09/expectations_*.json "$OUT/"
tar czf "$OUT/runs.tgz" --exclude='*.ncu-rep.gz' --exclude='*.nsys-rep' --exclude='nsys_export.log' profiles/2026*
