#!/usr/bin/env bash
# ch09.cublaslt_gemm on a Hopper GPU, in one visit:
#   1. ptxas resource report (-Xptxas -v) of kernels/ch09/cublaslt_gemm.cu and its SASS mix
#      (HMMA, LDSM, LDGSTS) if cuobjdump is there;
#   2. correctness (aisp_prof.collect.check.check_pair: float64 reference of the dequantized operands,
#      poisoned outputs, every variant against the baseline) at edge sizes, 2048^3 and 8192^3;
#   3. which kernels cuBLASLt runs (torch.profiler kernel names, one call per variant);
#   4. timing (aisp_prof.collect.timing.time_variant: CUDA events, L2 flushed, median) at 8192^3:
#      median ms and TFLOP/s;
#   5. with --profile: `aisp-prof run ch09.cublaslt_gemm --label validate` and
#      `aisp-prof summary latest`;
# then a short table last. Clocks are never touched.
#
#   OUT=/tmp/out bash scripts/cublaslt_gpu.sh [--profile]
#
# Files under $OUT: log.txt, ptxas.txt, sass_mix.txt, results.json (+ with --profile: run.log,
# summary.json, validate_run.tgz). Budget: ~1.5 min without --profile, ~3.5 min with it.
set -u -o pipefail
OUT=${OUT:-/tmp/cublaslt_out}; export OUT; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 AISP_BUILD_DIR=${AISP_BUILD_DIR:-/tmp/aisp_build}
PROFILES=${PROFILES:-profiles}; export PROFILES
PROFILE=0; [ "${1:-}" = "--profile" ] && PROFILE=1
SRC=kernels/ch09/cublaslt_gemm.cu
# Discover only this pair (a copy of its two files): another pair's work in progress in the
# same tree cannot break discovery here.
AISP_KERNELS=${AISP_KERNELS:-/tmp/cublaslt_kernels}; export AISP_KERNELS
mkdir -p "$AISP_KERNELS/ch09" && cp kernels/ch09/cublaslt_gemm.py "$SRC" "$AISP_KERNELS/ch09/"
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }

{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader 2>&1)"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0).multi_processor_count, 'SMs')"
nvcc --version | tail -n 2 | head -n 1

echo "== ptxas (sm_90, -O3, the flags aisp_kernels.build uses) t=$(elapsed)s"
nvcc -O3 -std=c++17 -lineinfo -cubin -gencode=arch=compute_90,code=sm_90 -Xptxas -v \
  -o "$OUT/cublaslt_gemm.cubin" "$SRC" > "$OUT/ptxas.txt" 2>&1 || { cat "$OUT/ptxas.txt"; exit 10; }
grep -E "Used|spill" "$OUT/ptxas.txt"
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$OUT/cublaslt_gemm.cubin" > "$OUT/sass.txt" 2>&1
  grep -oE "^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?[A-Z][A-Z0-9_.]+" "$OUT/sass.txt" | awk '{print $NF}' \
    | sort | uniq -c | sort -rn > "$OUT/sass_mix.txt"
  echo "SASS mix (static):"; grep -E "HMMA|LDSM|LDGSTS|BAR|FFMA|STG|LDL|STL" "$OUT/sass_mix.txt"
  rm -f "$OUT/sass.txt"
fi
rm -f "$OUT/cublaslt_gemm.cubin"

echo "== check + kernels + timing t=$(elapsed)s"
timeout 180 python3 - <<'PY'
import json, os, time
import torch
from aisp_prof import pairs
from aisp_prof.collect import check
from aisp_prof.collect.timing import time_variant

out = os.environ["OUT"]
pair = pairs.find("ch09.cublaslt_gemm")
variants = list(pair.variants)
results = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "checks": {}, "timing": {}}

def run_check(sizes, trials):
    t = time.time()
    res = check.check_pair(pair, sizes, device="cuda", trials=trials)
    worst = {}
    for c in res.checks:
        w = worst.setdefault(c.variant, {"rel_err": 0.0, "vs_baseline": 0.0, "passed": True, "message": ""})
        w["rel_err"] = max(w["rel_err"], c.rel_err_vs_reference if c.rel_err_vs_reference is not None else float("nan"))
        if c.rel_err_vs_baseline is not None:
            w["vs_baseline"] = max(w["vs_baseline"], c.rel_err_vs_baseline)
        if not c.passed:
            w["passed"], w["message"] = False, c.message
    key = ",".join(f"{k}={v}" for k, v in sizes.items())
    results["checks"][key] = worst
    bad = [v for v, w in worst.items() if not w["passed"]]
    print(f"check {key} trials={trials}: {'PASS' if not bad else 'FAIL ' + ', '.join(bad)} ({time.time() - t:.1f}s); "
          + " ".join(f"{v}={w['rel_err']:.2e} (vs base {w['vs_baseline']:.2e})" for v, w in worst.items()))
    for v in bad:
        print(f"   {v}: {worst[v]['message']}")
    return not bad

ok = True
for sizes in ({"m": 1, "n": 16, "k": 16}, {"m": 129, "n": 144, "k": 48}, {"m": 1000, "n": 1040, "k": 528}):
    ok &= run_check(sizes, trials=1)
ok &= run_check({"m": 2048, "n": 2048, "k": 2048}, trials=2)
ok &= run_check(dict(pair.sizes), trials=1)
results["all_checks_passed"] = ok
torch.cuda.empty_cache()

sizes = dict(pair.sizes)
inputs = pair.make_inputs(sizes, "cuda", 0)
print("scales:", float(inputs["scale_a"]), float(inputs["scale_b"]))
from torch.profiler import profile, ProfilerActivity
names = {}
for v in variants:
    launch = pair.variants[v](inputs); launch(); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        launch(); torch.cuda.synchronize()
    names[v] = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    print(f"kernels {v}: {names[v]}")
results["kernels"] = names
del inputs, launch
torch.cuda.empty_cache()

flop = pair.flops(sizes)
def timed(v, repeats):
    st = time_variant(pair, v, sizes, repeats=repeats, warmup=5)
    ms = st["median_ns"] / 1e6
    results["timing"].setdefault(v, []).append({"median_ms": ms, "tflops": flop / st["median_ns"] / 1e3,
                                                "rel_spread": st["rel_spread"], "min_ms": st["min_ns"] / 1e6})
    print(f"time {v:16s} median {ms:8.3f} ms  {flop / st['median_ns'] / 1e3:7.1f} TFLOP/s  "
          f"spread {100 * st['rel_spread']:.2f}%", flush=True)
    torch.cuda.empty_cache()

for _ in range(2):
    for v in variants:
        timed(v, 30)
json.dump(results, open(os.path.join(out, "results.json"), "w"), indent=1)
PY
echo "check+timing rc=$? t=$(elapsed)s"

if [ "$PROFILE" = 1 ]; then
  echo "== aisp-prof run ch09.cublaslt_gemm --label validate t=$(elapsed)s"
  timeout 150 python3 -m aisp_prof run ch09.cublaslt_gemm --label validate \
    --profiles-dir "$PROFILES" > "$OUT/run.log" 2>&1
  echo "aisp-prof run rc=$? t=$(elapsed)s"; tail -n 25 "$OUT/run.log"
  python3 -m aisp_prof summary latest --json > "$OUT/summary.json" 2>> "$OUT/run.log"
  python3 -m aisp_prof summary latest
  RUN=$(python3 -c "import json; print(json.load(open('$OUT/summary.json'))['run']['run_id'])" 2>/dev/null)
  [ -n "$RUN" ] && (cd "$PROFILES" && tar czf "$OUT/validate_run.tgz" \
    $(ls -d "$RUN"/run.json "$RUN"/check.json "$RUN"/ncu_raw.csv "$RUN"/*.log 2>/dev/null))
fi

echo "== summary t=$(elapsed)s"
python3 - <<'PY'
import json, os
r = json.load(open(os.path.join(os.environ["OUT"], "results.json")))
print(f"{r['gpu']} torch {r['torch']}  checks passed: {r['all_checks_passed']}")
print(f"{'variant':16s} {'median ms':>10s} {'TFLOP/s':>8s} {'rel err 8192^3':>15s}  kernel")
default = r["checks"].get("m=8192,n=8192,k=8192", {})
for v, runs in r["timing"].items():
    best = min(runs, key=lambda x: x["median_ms"])
    print(f"{v:16s} {best['median_ms']:10.3f} {best['tflops']:8.1f} {default.get(v, {}).get('rel_err', float('nan')):15.2e}  "
          f"{next((k for k in r['kernels'].get(v, []) if not k.startswith('Memset')), '?')[:70]}")
PY
} 2>&1 | tee "$OUT/log.txt"
