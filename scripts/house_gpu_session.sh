#!/usr/bin/env bash
# One GPU visit for issue 10 (the house): the GPU tests on the restructured code, then one
# real pass through every stage the change touched: `run` (capabilities, run folder, the
# check/ncu/nsys steps, ingest, store, api), `calibrate --profile` (the same steps and folder,
# through their public names), `bench run` (bench -> api), `roofline` and `report` of what was
# just stored, and `list`. Logs under $OUT, a short table last. Clocks are never touched.
#
#   OUT=/tmp/out AISP_GIT_SHA=$(git rev-parse HEAD) bash scripts/house_gpu_session.sh
set -u -o pipefail
. scripts/device_env.sh /tmp/house_out
DB=/tmp/house.db
START=$(date +%s)
step() { echo "== $1 t=$(( $(date +%s) - START ))s"; }
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader) git ${AISP_GIT_SHA:-?}"
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
step "pytest -m gpu"
timeout "${PYTEST_TIMEOUT:-330}" python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.log" 2>&1
echo "pytest_gpu_rc $? :: $(tail -n 1 "$OUT/pytest_gpu.log")"
grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.log" | head -20
step "aisp-prof run ch09.fused_l2norm"
timeout 150 $AISP run ch09.fused_l2norm --db $DB --profiles-dir /tmp/profiles --label house; echo "run_rc $?"
step "calibrate --profile (two probes)"
timeout 120 $AISP calibrate --probes copy_dram,fma_fp32 --repeats 10 --profile --db $DB --profiles-dir /tmp/profiles
echo "calibrate_rc $?"
step "bench run (timing only)"
timeout 90 $AISP bench run --targets ch09.fused_l2norm --repeats 20 --db $DB --profiles-dir /tmp/profiles --json \
  > "$OUT/bench.json"; echo "bench_rc $? (11 = regression against the recorded file, see bench.json)"
step "read back"
$AISP runs --db $DB
$AISP roofline ch09.fused_l2norm --db $DB --out "$OUT/roofline.png" | tail -n 12; echo "roofline_rc $?"
$AISP report --db $DB --out /tmp/house_report > /dev/null; echo "report_rc $?"
$AISP list | cut -c1-120
} 2>&1 | tee "$OUT/session.log"
cp "$OUT/pytest_gpu.log" "$OUT/pytest_gpu.txt" 2>/dev/null
tar czf "$OUT/runs.tgz" --exclude='*.nsys-rep' -C /tmp profiles house_report 2>/dev/null
echo "== summary"
grep -E "^(## |pytest_gpu_rc|run_rc|calibrate_rc|bench_rc|roofline_rc|report_rc|run 2026|baseline|cuda|triton )" "$OUT/session.log"
