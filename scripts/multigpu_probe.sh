#!/usr/bin/env bash
# Issue 15, first visit to a 2-GPU host: what the multi-rank collection will rest on, by hand.
#   1. the host: GPUs, their link (nvidia-smi topo -m), NCCL's multicast switches (must stay off)
#   2. ch14.quantized_allreduce through torchrun, each rank's check child under nsys
#      (-o nsys.rank%q{RANK}: nsys expands the environment variable), then each report to SQLite
#   3. ncu on rank 0 only, NCCL kernels left out (-k regex:^(?!nccl)), rank 1 bare
#   4. the link's all-reduce bus bandwidth at 1 GiB (nccl-tests' busbw convention)
# Everything lands in $OUT/mg.tgz; a short table last. Clocks are never touched.
set -u -o pipefail
. scripts/device_env.sh /tmp/mg_out
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NSYS=${NSYS:-/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys}
D=/tmp/mg; rm -rf $D; mkdir -p $D
PAIR=ch14.quantized_allreduce; VARS=baseline,fp32_rs_ag,int8,int8_overlap
START=$(date +%s); t() { echo "t=$(( $(date +%s) - START ))s"; }
{
echo "## $(date -u +%FT%TZ) git ${AISP_GIT_SHA:-?}"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
nvidia-smi topo -m
env | grep -E "NCCL|MULTICAST|NVLS" | sort
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
CHILD="python3 -m aisp_prof.collect.child --pair $PAIR --variants $VARS --sizes numel=67108864"
# 2. check + timing + nsys capture, every rank under nsys
python3 -m torch.distributed.run --standalone --nproc-per-node 2 --no-python \
  $NSYS profile --trace=cuda,nvtx --cuda-graph-trace=node --sample=none --cpuctxsw=none \
  --capture-range=cudaProfilerApi --capture-range-end=stop --force-overwrite=true -o "$D/nsys.rank%q{RANK}" \
  $CHILD --mode check --out $D/check.json --repeats 20 --budget-s 2 --nsys-iterations 5 --nsys-out $D/nsys_child.json \
  > $D/check.log 2>&1; echo "check_rc $? $(t)"; tail -4 $D/check.log
ls $D
for r in 0 1; do
  $NSYS export --type sqlite --force-overwrite=true -o $D/nsys.rank$r.sqlite $D/nsys.rank$r.nsys-rep > $D/export$r.log 2>&1
  echo "export rank$r rc $? $(t)"
done
# 3. ncu on rank 0 only, NCCL kernels excluded (replaying one would wait forever for its peer)
cat > $D/rank_ncu.sh <<EOF
#!/usr/bin/env bash
if [ "\$RANK" = 0 ]; then
  exec ncu --clock-control none --target-processes all --nvtx $(for v in ${VARS//,/ }; do printf -- '--nvtx-include aisp/%s/%s/ ' $PAIR $v; done) \
    -k 'regex:^(?!nccl)' --section SpeedOfLight -o $D/ncu_rank0 -f $CHILD --mode profile --out $D/ncu_child.json
else
  exec $CHILD --mode profile --out $D/ncu_child.json
fi
EOF
chmod +x $D/rank_ncu.sh
timeout 300 python3 -m torch.distributed.run --standalone --nproc-per-node 2 --no-python $D/rank_ncu.sh > $D/ncu.log 2>&1
echo "ncu_rc $? $(t)"; grep -E "==PROF==|==ERROR==|==WARNING==" $D/ncu.log | sort | uniq -c | sort -rn | head -12
ncu --import $D/ncu_rank0.ncu-rep --csv --page raw --print-units base > $D/ncu_rank0.csv 2>/dev/null; echo "ncu csv rows $(wc -l < $D/ncu_rank0.csv)"
cut -d, -f5 $D/ncu_rank0.csv | sort | uniq -c | head
# 4. the link: all-reduce of 1 GiB fp32, bus bandwidth
cat > $D/busbw.py <<'EOF'
import os, torch, torch.distributed as dist
r = int(os.environ["LOCAL_RANK"]); torch.cuda.set_device(r)
dist.init_process_group("nccl", device_id=torch.device("cuda", r)); w = dist.get_world_size()
for mib in (64, 256, 1024):
    x = torch.ones(mib << 18, device="cuda")
    for _ in range(5): dist.all_reduce(x)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(); s.record()
    for _ in range(20): dist.all_reduce(x)
    e.record(); torch.cuda.synchronize(); t = s.elapsed_time(e) / 20 / 1e3
    if dist.get_rank() == 0:
        alg = x.numel() * 4 / t / 1e9
        print(f"all_reduce {mib} MiB: {t*1e3:.3f} ms algbw {alg:.1f} GB/s busbw {alg * 2 * (w - 1) / w:.1f} GB/s")
dist.destroy_process_group()
EOF
python3 -m torch.distributed.run --standalone --nproc-per-node 2 $D/busbw.py 2>&1 | grep all_reduce; echo "busbw $(t)"
python3 - $D <<'PY'
import json, sys, glob
d = sys.argv[1]
for f in sorted(glob.glob(f"{d}/check*.json")):
    c = json.load(open(f))
    if not c.get("ok"): print(f, "ERROR", c.get("error")); continue
    print(f.split("/")[-1], "passed", c["check"]["passed"], {k: round(v.get("median_ns", 0) / 1e3, 1) for k, v in c["timing"].items()})
    print("   ", [(x["variant"], x["trial"], round(x["rel_err_vs_reference"] or -1, 5)) for x in c["check"]["checks"]])
PY
} 2>&1 | tee $OUT/probe.log
rm -f $D/*.nsys-rep; gzip -f $D/*.ncu-rep 2>/dev/null
tar czf $OUT/mg.tgz -C /tmp mg
