#!/usr/bin/env bash
# Issue 15 on a 2-GPU host: `aisp-prof run` of the multi-rank pairs (torchrun, nsys on every rank,
# ncu on one), then what the tool says of them. RUNS (default ch14.quantized_allreduce),
# RUN_ARGS. Run folders -> $OUT/runs.tgz (no .nsys-rep / .ncu-rep.gz); a short table last.
set -u -o pipefail
. scripts/device_env.sh /tmp/mgr_out
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
P=/tmp/pmg; rm -rf $P
START=$(date +%s); t() { echo "t=$(( $(date +%s) - START ))s"; }
{
echo "## $(date -u +%FT%TZ) git ${AISP_GIT_SHA:-?} $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ')"
$AISP list --json | python3 -c 'import json,sys; [print(r["name"], r["can_run"], r["reason"], r.get("world_size")) for r in json.load(sys.stdin) if r.get("world_size", 1) and r.get("world_size", 1) > 1]'
for p in ${RUNS:-ch14.quantized_allreduce}; do
  $AISP run $p --profiles-dir $P --db $P/aisp.db --label multigpu ${RUN_ARGS:-} --json > $OUT/run_$p.json 2> $OUT/run_$p.err
  echo "run $p rc $? $(t)"; tail -5 $OUT/run_$p.err
done
ls -la $P/*/ | head -40
(cd $P && tar czf $OUT/runs.tgz --exclude="*.nsys-rep" --exclude="*.ncu-rep.gz" --exclude="*/generated/triton" .)
$AISP runs --db $P/aisp.db 2>&1 | tail -5
if [ "${LINK:-1}" = 1 ]; then
  $AISP calibrate --link 2 --db $P/aisp.db --write-json $OUT > $OUT/link.txt 2>&1; echo "link rc $? $(t)"; cat $OUT/link.txt
fi
COLUMNS=140 $AISP ranks latest --db $P/aisp.db; echo "ranks rc $? $(t)"
} 2>&1 | tee $OUT/session.log
