#!/usr/bin/env bash
# Validate the chapter 9 pairs on a Hopper GPU in one visit: `aisp-prof run` (check, ncu, nsys,
# store) for each pair, the Triton softmax's compiled PTX/SASS as the GPU builds it, the GPU
# tests of tests/test_ch09_pairs.py if time is left, then one table: pair, variant, correct,
# GPU time, speedup, achieved DRAM TB/s and TFLOP/s.
#
#   OUT=/tmp/out bash scripts/ch09_gpu_validate.sh [PAIR ...]     # default: all new ch09 pairs
#
# Budget: expected ~5-6 min on an H100 at the default sizes (each run ~25-90 s: three child
# processes, ncu with 14 replay passes per kernel). Every step is cut off (timeout) so that the
# whole script ends by HARD_S (default 465 s); a pair with less than 40 s left is not started and
# is reported as such. Sizes can be overridden per pair with SIZES_<pair>="k=v,..."
# (e.g. SIZES_structured_sparsity_ffn="tokens=16384").
# Exit status: 0 when every pair that ran passed its check (nvfp4_gemm's skip on Hopper, exit 9,
# is expected), 1 otherwise.
set -u
OUT=${OUT:-/tmp/aisp_ch09}; export OUT; mkdir -p "$OUT/summaries" "$OUT/logs"
HARD_S=${HARD_S:-465}
START=$(date +%s)
export PYTHONUNBUFFERED=1 AISP_BUILD_DIR=${AISP_BUILD_DIR:-/tmp/aisp_build}
export TRITON_DEFAULT_FP_FUSION=${TRITON_DEFAULT_FP_FUSION:-1}
if [ -d .devlib ]; then export LD_LIBRARY_PATH=$PWD/.devlib:${LD_LIBRARY_PATH:-}; fi
if ! python3 -c "import sqlite_utils, click_default_group, nvtx" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD:${PYTHONPATH:-}
fi
AISP="python3 -m aisp_prof"
PROFILES=${PROFILES:-profiles}; export PROFILES
PAIRS=${*:-"nvfp4_gemm memory_bound triton compute_bound sdpa_attention structured_sparsity structured_sparsity_ffn"}
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( HARD_S - $(date +%s) + START )); }

{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
python3 - <<'PY'
import torch, importlib.util
print("torch", torch.__version__, "cuda", torch.version.cuda, "cc", torch.cuda.get_device_capability(0))
print("triton", __import__("triton").__version__ if importlib.util.find_spec("triton") else None)
cs = getattr(torch.backends, "cusparselt", None)
print("cusparselt", cs.is_available() and cs.version() if cs else None,
      "flash sdp", torch.backends.cuda.flash_sdp_enabled())
PY
$AISP list --chapter ch09
} 2>&1 | tee "$OUT/env.txt"

: > "$OUT/status.tsv"
for p in $PAIRS; do
  limit=$(left); [ "$limit" -gt 300 ] && limit=300
  if [ "$limit" -lt 40 ]; then
    printf '%s\tnot_run\t0\tnot started: %ss budget (HARD_S) spent\n' "$p" "$HARD_S" >> "$OUT/status.tsv"; continue
  fi
  var="SIZES_$p"; sizes=${!var:-}
  extra=(); [ -n "$sizes" ] && extra+=(--sizes "$sizes")
  [ "$p" = structured_sparsity_ffn ] && extra+=(--nsys-iterations 3)
  echo "== ch09.$p ${extra[*]:-} (t=$(elapsed)s)"
  t0=$(date +%s)
  timeout "$limit" $AISP run "ch09.$p" --label validate --profiles-dir "$PROFILES" ${extra[@]+"${extra[@]}"} \
    > "$OUT/logs/$p.log" 2>&1
  rc=$?
  tail -n 8 "$OUT/logs/$p.log"
  wall=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ] || [ $rc -eq 7 ]; then      # 7: stored, but a variant failed its check
    $AISP summary latest --json > "$OUT/summaries/$p.json" 2>> "$OUT/logs/$p.log"
  fi
  reason=$(grep -E "^(aisp-prof: error|Error|Traceback)" "$OUT/logs/$p.log" | tail -1 | cut -c1-200)
  [ $rc -eq 124 ] && reason="cut off after $limit s (budget)"
  printf '%s\t%s\t%s\t%s\n' "$p" "$rc" "$wall" "$reason" >> "$OUT/status.tsv"
done

# The Triton softmax as this GPU's Triton compiles it (chapter 9: verify the generated code)
if [ "$(left)" -ge 30 ]; then
timeout 30 python3 - > "$OUT/logs/triton_artifacts.log" 2>&1 <<'PY'
import importlib.util, json, os
from pathlib import Path
out = Path(os.environ["OUT"])
spec = importlib.util.spec_from_file_location("ch09_triton_gpu", "kernels/ch09/triton.py")
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
art = mod.compiled_artifacts(mod.make_inputs({"rows": 64, "cols": 8192}, "cuda", 0))
(out / "triton_softmax_gpu.ptx").write_text(art.pop("ptx"))
if art.get("sass"):
    (out / "triton_softmax_gpu.sass").write_text(art.pop("sass"))
art["ptx_summary"].pop("opcodes"); (art.get("sass_summary") or {}).pop("opcodes", None)
(out / "triton_softmax_gpu.json").write_text(json.dumps(art, indent=2, default=str))
s, ss = art["ptx_summary"], art.get("sass_summary") or {}
print(f"triton softmax ({art['source']}, triton {art['triton_version']}): registers {art['registers']}, "
      f"spills {art['spills']}, shared {art['shared_bytes']} B, global loads by bytes {s['global_loads_by_bytes']}, "
      f"stores {s['global_stores_by_bytes']}, shfl {s['shfl_sync']}, ex2 {s['ex2_approx']}, "
      f"local ld/st {s['ld_local']}/{s['st_local']}, SASS LDG.128 {ss.get('ldg_128')} STL {ss.get('stl')}")
PY
tail -n 3 "$OUT/logs/triton_artifacts.log"
fi

# GPU tests of the new pairs at small sizes, if the budget allows (~1 min)
if [ "$(left)" -ge 60 ]; then
  limit=$(( $(left) - 10 )); [ "$limit" -gt 120 ] && limit=120
  timeout "$limit" python3 -m pytest -q -m gpu tests/test_ch09_pairs.py > "$OUT/logs/pytest_gpu.log" 2>&1
  echo "pytest -m gpu tests/test_ch09_pairs.py: rc $? ($(tail -n 1 "$OUT/logs/pytest_gpu.log"))"
else
  echo "pytest -m gpu tests/test_ch09_pairs.py: skipped (budget)"
fi

# Light copy of the validate runs (run.json, check.json, ncu CSV, logs; no .ncu-rep/.sqlite)
RUNS=$(python3 -c "
import json, glob
for f in sorted(glob.glob('$OUT/summaries/*.json')):
    print(json.load(open(f))['run']['run_id'])" 2>/dev/null)
[ -n "$RUNS" ] && (cd "$PROFILES" && tar czf "$OUT/ch09_validate_runs.tgz" \
  $(for r in $RUNS; do ls -d "$r"/run.json "$r"/check.json "$r"/ncu_raw.csv "$r"/*.log 2>/dev/null; done))

echo "## total $(elapsed)s"
python3 - <<'PY'
import json, os
from pathlib import Path
out = Path(os.environ["OUT"]); profiles = Path(os.environ.get("PROFILES", "profiles"))
def fmt(v, scale, digits=3):
    return "-" if v is None else f"{v / scale:.{digits}g}"
rows, bad = [], 0
for line in (out / "status.tsv").read_text().splitlines():
    pair, rc, wall, reason = (line.split("\t") + [""] * 4)[:4]
    summ = out / "summaries" / f"{pair}.json"
    if rc in ("0", "7") and summ.exists():
        data = json.loads(summ.read_text())
        run = data["run"]
        if run.get("pair") != f"ch09.{pair}":
            rows.append([pair, "-", "?"] + ["-"] * 8 + [f"summary is of {run.get('pair')}"]); bad += 1; continue
        info = json.loads((profiles / run["run_id"] / "run.json").read_text())
        flops = info.get("analytic", {}).get("flops")
        for s in data["summary"]:
            t = s.get("gpu_time_ns")
            ok = s.get("correct")
            bad += ok is False
            rows.append([pair, s["variant"], {True: "yes", False: "NO"}.get(ok, "-"),
                         fmt(s.get("kernels_per_call"), 1), fmt(t, 1e6, 4), fmt(s.get("cuda_event_median_ns"), 1e6, 4),
                         f"{s['speedup_vs_baseline']:.2f}x" if s.get("speedup_vs_baseline") else "-",
                         fmt(s.get("dram_bytes"), 1e9), fmt(s.get("dram_bytes_per_s"), 1e12), fmt(s.get("flops_per_s"), 1e12),
                         fmt(flops / t * 1e9 if flops and t else None, 1e12),
                         f"{float(wall):.0f}s"])
    else:
        expected = rc == "9" and pair == "nvfp4_gemm"
        bad += not expected
        rows.append([pair, "-", "skipped" if expected else f"rc {rc}"] + ["-"] * 8
                    + [(reason or "see logs/" + pair + ".log")[:90]])
hdr = ["pair", "variant", "correct", "kern/call", "gpu ms (nsys)", "event ms", "speedup", "DRAM GB", "DRAM TB/s",
       "TFLOP/s (ncu)", "TFLOP/s (analytic)", "wall / note"]
w = [max(len(str(r[i])) for r in [hdr] + rows) for i in range(len(hdr))]
for r in [hdr, ["-" * x for x in w]] + rows:
    print("  ".join(str(c).ljust(x) for c, x in zip(r, w)).rstrip())
(out / "exit_status").write_text("1" if bad else "0")
PY
exit "$(cat "$OUT/exit_status" 2>/dev/null || echo 1)"
