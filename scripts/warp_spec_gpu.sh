#!/usr/bin/env bash
# One GPU visit for ch09.warp_specialization_producer_consumer: build with `nvcc -Xptxas -v`
# (registers, shared memory, spills), check every variant against the float64 reference
# (aisp_prof.collect.check.check_pair on cuda, odd sizes and the default), time each variant with
# aisp_prof.collect.timing.time_variant (median of 50, L2 flushed) against the bound
# max(bytes / DRAM, FLOPs / fp32) from profiles/calibration/, sweep resident blocks per SM and
# the polynomial degree, then (PROFILE=1, the default) `aisp-prof run` + `summary latest` twice
# (as many blocks per SM as fit, then --sizes blocks_per_sm=1) and `pytest -m gpu` on the pair's
# tests. A short table prints last (timings, sweep, ncu issue/stall columns, summaries);
# everything lands in $OUT: log.txt, ptxas.txt, results.json, summary_occ{0,1}.json and
# runs_light.tgz (run.json, check.json, ncu_raw.csv and logs of both runs).
#
#   OUT=/tmp/out bash scripts/warp_spec_gpu.sh            # PROFILE=0 skips aisp-prof run
#
# Expects the repo's wheels installed and PYTHONPATH/LD_LIBRARY_PATH set (see the device call
# in the session notes). Each step is cut off so that the whole script ends by HARD_S (270 s).
set -u
OUT=${OUT:-/tmp/warp_spec_out}; export OUT; mkdir -p "$OUT"
HARD_S=${HARD_S:-270}; PROFILE=${PROFILE:-1}
START=$(date +%s)
left() { echo $(( HARD_S - $(date +%s) + START )); }
export PYTHONUNBUFFERED=1 AISP_BUILD_DIR=${AISP_BUILD_DIR:-/tmp/aisp_build}
PAIR=ch09.warp_specialization_producer_consumer
SRC=kernels/ch09/warp_specialization_producer_consumer.cu
LOG=$OUT/log.txt
LOGS=/tmp/warp_spec_logs; mkdir -p "$LOGS"   # bulky logs travel inside runs_light.tgz (8 files come back at most)

{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader 2>&1)"
echo "## git $(git rev-parse --short HEAD 2>/dev/null) (+ uncommitted pair files)"
echo "## nvcc -Xptxas -v (sm_90)"
t0=$(date +%s)
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90,code=sm_90 -Xptxas -v \
  -o /tmp/wsp_ptxas.so "$SRC" > "$OUT/ptxas.txt" 2>&1
echo "nvcc rc $? in $(( $(date +%s) - t0 ))s"
# one line per kernel: name<degree>  registers  smem  stack/spills
awk '/Compiling entry function/ { match($0, /[a-z_]+_kernelILi[0-9]+/); k = substr($0, RSTART, RLENGTH);
       sub(/ILi/, "<", k); k = k ">" }
     /bytes stack frame/ { st = $0; sub(/^ +/, "", st) }
     /Used [0-9]+ registers/ { r = $0; sub(/.*Used /, "", r); printf "  %-32s %s | %s\n", k, r, st }' "$OUT/ptxas.txt"
grep -iE "warning|error" "$OUT/ptxas.txt" | head -5
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass /tmp/wsp_ptxas.so > /tmp/wsp.sass 2>/dev/null
  for k in baseline pipelined warp_specialized direct warp_specialized_tma; do
    awk -v k="${k}_kernelILi64" '$0 ~ "Function : .*"k {f=1; next} f && /Function : / {f=0} f' /tmp/wsp.sass \
      | grep -oE "\b(FFMA|LDGSTS[.A-Z0-9]*|LDG[.A-Z0-9]*|STS[.0-9]*|LDS[.0-9]*|BAR\.SYNC[.A-Z_]*|STG[.A-Z0-9]*|SYNCS\.[.A-Z0-9_]*|UBLKCP[.A-Z0-9_]*|NANOSLEEP)\b" \
      | sort | uniq -c | awk -v k="$k" 'BEGIN { printf "  SASS %-17s", k } { printf " %s:%s", $2, $1 } END { print "" }'
  done
fi
} 2>&1 | tee "$LOG"

echo "## check, timing, sweep (t=$(( $(date +%s) - START ))s)" | tee -a "$LOG"
timeout $(( $(left) > 200 ? 170 : $(left) - 30 )) python3 - <<'PY' 2>&1 | tee -a "$LOG"
import importlib.util, json, os, subprocess, time
from pathlib import Path
import torch
from aisp_prof import pairs
from aisp_prof.collect import check
from aisp_prof.collect.timing import time_variant

out = Path(os.environ["OUT"])
pair = pairs.find("ch09.warp_specialization_producer_consumer")
spec = importlib.util.spec_from_file_location("wsp_mod", pair.source)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
VARIANTS = list(pair.variants)
props = torch.cuda.get_device_properties(0)
name = props.name
calib_file = {"H100": "h100_80gb_hbm3.json", "H200": "h200.json"}
calib = next((json.loads((Path("profiles/calibration") / f).read_text())["ceilings"]
              for key, f in calib_file.items() if key in name), None)
dram = calib["dram_bytes_per_s"] if calib else (4.26e12 if "H200" in name else 3.01e12)
fp32 = calib["flops_per_s"]["fp32"] if calib else 60.3e12
res = {"gpu": name, "sm_count": props.multi_processor_count, "l2_bytes": props.L2_cache_size,
       "ceilings": {"dram_bytes_per_s": dram, "fp32_flops_per_s": fp32}, "checks": [], "info": {},
       "timing": {}, "sweep": []}

def save():
    (out / "results.json").write_text(json.dumps(res, indent=1, default=str))

def smi():
    q = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active"
    return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()

def bound(sizes):
    t_mem, t_math = pair.bytes(sizes) / dram, pair.flops(sizes) / fp32
    return t_mem, t_math, max(t_mem, t_math)

# 1. correctness: tails (n % 4), partial tiles, n < 4, many tiles per block, every degree
cases = [({"n": 1_000_003, "degree": 64}, 0), ({"n": 4096 * 130 + 5, "degree": 16}, 0),
         ({"n": 3, "degree": 32}, 0), ({"n": 1 << 22, "degree": 128}, 1), ({"n": 1 << 22, "degree": 64}, 2),
         (dict(pair.sizes), 0), (dict(pair.sizes), 1)]
ok_all = True
for sizes, bps in cases:
    t0 = time.time()
    sizes = {**sizes, "blocks_per_sm": bps}
    r = check.check_pair(pair, sizes, device="cuda", trials=2 if sizes["n"] < 1 << 25 else 1)
    worst = {}
    for c in r.checks:
        worst[c.variant] = max(worst.get(c.variant, 0.0), c.rel_err_vs_reference or float("nan"))
    ok_all &= r.passed
    print(f"check n={sizes['n']} degree={sizes['degree']} blocks/SM={bps or 'max'}: "
          f"{'PASS' if r.passed else 'FAIL ' + str(r.failed_variants)}  max rel err "
          + " ".join(f"{v}={e:.2e}" for v, e in worst.items()) + f"  ({time.time() - t0:.1f}s)")
    if not r.passed:
        print("   ", [c.message for c in r.checks if not c.passed][:4])
    res["checks"].append({"sizes": sizes, "blocks_per_sm": bps, "result": r.to_dict()})
    save()
if not ok_all:
    print("CORRECTNESS FAILED: no timing"); raise SystemExit(7)

# 2. launch shapes
for v in VARIANTS:
    res["info"][v] = mod.kernel_info(v, 64)
    print(f"info {v:17s}", res["info"][v])
save()

# 3. timing at the default size, each variant's own max occupancy (and again, for spread)
sizes = dict(pair.sizes)
t_mem, t_math, t_bound = bound(sizes)
print(f"bound n={sizes['n']} degree={sizes['degree']}: memory {t_mem*1e6:.1f} us, math {t_math*1e6:.1f} us, "
      f"bound {t_bound*1e6:.1f} us, no-overlap sum {(t_mem+t_math)*1e6:.1f} us")
print("clocks before:", smi())
for rep in (0, 1):
    for v in VARIANTS:
        st = time_variant(pair, v, sizes, repeats=50)
        st["clocks_after"] = smi()
        res["timing"].setdefault(v, []).append(st)
        med = st["median_ns"] * 1e-9
        print(f"time {v:17s} rep{rep} median {med*1e6:8.1f} us  p10 {st['p10_ns']/1e3:8.1f}  p90 {st['p90_ns']/1e3:8.1f}"
              f"  {pair.bytes(sizes)/med/1e9:7.0f} GB/s  {pair.flops(sizes)/med/1e12:5.1f} TFLOP/s"
              f"  {100*t_bound/med:5.1f}% of bound  [{st['clocks_after']}]")
        save()

# 4. sweep: resident blocks per SM (persistent grid), then degree at max occupancy
for bps in (1, 2, 3, 4):
    row = {"sizes": sizes, "blocks_per_sm": bps}
    for v in VARIANTS:
        row[v] = time_variant(pair, v, {**sizes, "blocks_per_sm": bps}, repeats=20)["median_ns"]
    res["sweep"].append(row); save()
    print(f"sweep blocks/SM={bps}: " + "  ".join(f"{v} {row[v]/1e3:7.1f} us ({100*t_bound*1e9/row[v]:4.1f}%)" for v in VARIANTS))
for degree in (16, 32, 128):
    s = {**sizes, "degree": degree}
    tm, tc, tb = bound(s)
    row = {"sizes": s, "blocks_per_sm": 0}
    for v in VARIANTS:
        row[v] = time_variant(pair, v, s, repeats=20)["median_ns"]
    res["sweep"].append(row); save()
    print(f"sweep degree={degree:3d} (mem {tm*1e6:.0f} us, math {tc*1e6:.0f} us): "
          + "  ".join(f"{v} {row[v]/1e3:7.1f} us ({100*tb*1e9/row[v]:4.1f}%)" for v in VARIANTS))
print("clocks after:", smi())
PY
rc=${PIPESTATUS[0]}
echo "python rc $rc (t=$(( $(date +%s) - START ))s)" | tee -a "$LOG"

if [ "$PROFILE" = 1 ] && [ "$rc" = 0 ]; then
  for occ in 0 1; do   # the default (as many blocks as fit), then one block per SM
    [ "$(left)" -ge 45 ] || { echo "aisp-prof run blocks_per_sm=$occ: skipped (budget)" | tee -a "$LOG"; continue; }
    label=validate; [ $occ = 1 ] && label=validate-occ1
    echo "## aisp-prof run $PAIR --sizes blocks_per_sm=$occ (t=$(( $(date +%s) - START ))s, $(left)s left)" | tee -a "$LOG"
    timeout $(( $(left) - 10 )) python3 -m aisp_prof run "$PAIR" --label $label --sizes blocks_per_sm=$occ \
      > "$LOGS/aisp_run_occ$occ.log" 2>&1
    echo "aisp-prof run rc $?" | tee -a "$LOG"; grep -E "error|Error" "$LOGS/aisp_run_occ$occ.log" | tail -3
    python3 -m aisp_prof summary latest 2>&1 | tee -a "$LOG"
    python3 -m aisp_prof summary latest --json > "$OUT/summary_occ$occ.json" 2>/dev/null
    RUN=$(python3 -c "import json; print(json.load(open('$OUT/summary_occ$occ.json'))['run']['run_id'])" 2>/dev/null)
    [ -n "$RUN" ] && RUNS="${RUNS:-} $RUN"
  done
  [ -n "${RUNS:-}" ] && (cd profiles && cp "$LOGS"/*.log . 2>/dev/null; tar czf "$OUT/runs_light.tgz" aisp_run_occ*.log \
    $(for r in $RUNS; do ls -d "$r"/run.json "$r"/check.json "$r"/ncu_raw.csv "$r"/*.log 2>/dev/null; done))
fi
if [ "$(left)" -ge 40 ]; then
  timeout $(( $(left) - 15 )) python3 -m pytest -q -m gpu tests/test_warp_specialization.py > "$LOGS/pytest_gpu.log" 2>&1
  echo "pytest -m gpu tests/test_warp_specialization.py: rc $? ($(tail -n 1 "$LOGS/pytest_gpu.log"))" | tee -a "$LOG"
  grep -E "^(FAILED|ERROR)" "$LOGS/pytest_gpu.log" | head -5 | tee -a "$LOG"
fi

echo "## table (t=$(( $(date +%s) - START ))s)" | tee -a "$LOG"
python3 - <<'PY' 2>&1 | tee -a "$LOG"
import json, os
from pathlib import Path
out = Path(os.environ["OUT"])
if not (out / "results.json").exists():
    raise SystemExit("no results.json")
r = json.loads((out / "results.json").read_text())
n, degree = 1 << 26, 64
b, f = 8 * n, 2 * degree * n
c = r["ceilings"]
t_mem, t_math = b / c["dram_bytes_per_s"], f / c["fp32_flops_per_s"]
tb = max(t_mem, t_math)
print(f"{r['gpu']}: n=2^26 degree=64, memory {t_mem*1e6:.1f} us, math {t_math*1e6:.1f} us, bound {tb*1e6:.1f} us")
base = None
print(f"{'variant':17s} {'median us':>10s} {'rep2 us':>8s} {'GB/s':>6s} {'TFLOP/s':>7s} {'% bound':>7s} {'speedup':>7s}  regs blocks/SM")
for v, reps in r["timing"].items():
    med = reps[0]["median_ns"] * 1e-9
    base = base or med
    info = r["info"].get(v, {})
    print(f"{v:17s} {med*1e6:10.1f} {reps[-1]['median_ns']/1e3:8.1f} {b/med/1e9:6.0f} {f/med/1e12:7.1f} "
          f"{100*tb/med:6.1f}% {base/med:6.2f}x  {info.get('registers', '-'):>4} {info.get('blocks_per_sm', '-')}")
for row in r.get("sweep", []):
    sz = row["sizes"]
    print(f"sweep degree={sz['degree']:3d} blocks/SM={row['blocks_per_sm'] or 'max'}: "
          + "  ".join(f"{v} {row[v]/1e3:6.1f}" for v in r["timing"]) + " us")
import csv, re
def ncu_rows(run_id):
    path = Path("profiles") / run_id / "ncu_raw.csv"
    if not path.exists():
        return []
    rows = list(csv.reader(path.open()))
    hdr, data = rows[0], rows[2:]
    def val(r, name):
        try:
            return float(r[hdr.index(name)].replace(",", ""))
        except (ValueError, IndexError):
            return float("nan")
    out_rows = []
    for r in data:
        m = re.search(r"(baseline|pipelined|warp_specialized|direct)_kernel", r[hdr.index("Kernel Name")])
        st = lambda k: val(r, f"smsp__average_warps_issue_stalled_{k}_per_issue_active.ratio")
        inst = val(r, "smsp__inst_executed.sum")
        ffma = val(r, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum") / 32
        out_rows.append((m.group(1) if m else "?", val(r, "gpu__time_duration.sum") / 1e3,
                         val(r, "sm__inst_executed.avg.pct_of_peak_sustained_elapsed"),
                         val(r, "dram__bytes.avg.pct_of_peak_sustained_elapsed"), inst / ffma,
                         st("barrier"), st("long_scoreboard"), st("wait"), st("not_selected"),
                         st("math_pipe_throttle"), st("short_scoreboard"), st("branch_resolving"), st("sleeping")))
    return out_rows
for occ in (0, 1):
    summ = out / f"summary_occ{occ}.json"
    if not summ.exists():
        continue
    run_id = json.loads(summ.read_text())["run"]["run_id"]
    print(f"ncu, blocks/SM={occ or 'max'}: variant  us  issue%  dram%  inst/FFMA | stalls per issue: "
          "barrier long_sb wait not_sel math_thr short_sb branch sleep")
    for row in ncu_rows(run_id):
        print(f"  {row[0]:17s} {row[1]:6.1f} {row[2]:5.1f} {row[3]:5.1f} {row[4]:5.3f} | "
              + " ".join(f"{x:5.2f}" for x in row[5:]))
for occ in (0, 1):
    summ = out / f"summary_occ{occ}.json"
    if not summ.exists():
        continue
    s = json.loads(summ.read_text())
    print(f"aisp-prof run {s['run']['run_id']} (blocks_per_sm={occ or 'max'})")
    for row in s["summary"]:
        stalls = ", ".join(f"{x['reason']} {x['cycles_per_inst']:.1f}" for x in row.get("top_stalls") or [])
        print(f"  {row['variant']:17s} correct={row.get('correct')} nsys {(row.get('gpu_time_ns') or 0)/1e3:.1f} us "
              f"ncu {(row.get('ncu_duration_ns') or 0)/1e3:.1f} us dram {(row.get('dram_bytes') or 0)/1e9:.3f} GB "
              f"fp32 {(row.get('flops_fp32') or 0)/1e9:.2f} GFLOP  stalls/inst {stalls}")
PY
