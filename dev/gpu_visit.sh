#!/usr/bin/env bash
# One visit to the GPU machine: the steps asked for, on the pairs asked for; logs and JSON in
# $OUT/visit.tgz, a short table last (dev/visit_summary.py). Clocks are never touched. Run from the repository root:
#
#   PAIRS="ch10.warp_specialization ch10.warpgroup_specialization" STEPS="tests record run" bash dev/gpu_visit.sh
#
#   STEPS (space-separated, run in the order given):
#     tests      the GPU tests (pytest -m gpu) of TESTS (default: tests/pairs/<chapter>/test_<chapter>_<name>.py of each
#                pair where that file exists, else every test)
#     sanitize   compute-sanitizer memcheck/racecheck/synccheck of SAN_PAIRS (default PAIRS) at the small
#                size, SAN_VARIANTS (comma-separated; default all); logs -> sanitizer_logs.tgz
#     gate       bench run of PAIRS against the committed expectations (no code change: every verdict must
#                pass), then SLOW_PAIR (default ch09.fused_l2norm) with the gate's deliberate slowdown fixture of
#                each SLOW fraction (e.g. SLOW="0.03 0.10"; tests/fixtures/gate_kernels; ch14.quantized_allreduce
#                slows its int8 variant), judged against SLOW_EXPECT if set, else the shipped evidence of the pair's
#                key (kernels/<chapter>/expectations_<key>.json: bench.runner.evidence_path's fallback for a module
#                under $AISP_KERNELS with no evidence beside it)
#     ab         bench ab of PAIRS against AB_BASE (a kernels folder or a git revision; default kernels, the
#                carried tree having no .git): the same code on both sides, every verdict must be SAME; then, for
#                each SLOW fraction, AB_SLOW_PAIR (default ch14.attention_eager_sdpa) with the host-side slowdown
#                fixture (tests/fixtures/gate_kernels) as the candidate: sdpa_flash must be SLOWER, the baseline SAME
#     scratch    time PAIRS side by side into a scratch expectations file (in visit.tgz, not the repository's)
#     record     the gate's evidence for PAIRS, pair by pair: bench run --update-expectations (RECORD_PROCESSES,
#                default 3; PAIR_TIMEOUT s each, default 420; none started after DEADLINE s); each chapter's
#                expectations_*.json comes back in $OUT after every pair
#                BENCH_ARGS is added to every bench run of gate, scratch and record: for a multi-GPU pair
#                "--nproc-per-node 4 --profile minimal" (its evidence is expectations_4x_<gpu>.json; nsys on every
#                rank shows the collectives' bus bandwidth)
#     link       aisp-prof calibrate --link LINK (default: every GPU here): the link's bus bandwidth per collective,
#                into profiles/calibration/<LINK>x_<gpu>.json (later steps' `ranks` use it; copied to $OUT)
#     multinode  aisp-prof run of PAIRS as NNODES (default 2) torchrun agents of NODE_GPUS (default GPUs / NNODES)
#                ranks each on this host (c10d rendezvous, one folder per "node"), then `import --job` of the
#                run's node folders: the imported job must have the same ranks and kernels as the run (-> multinode_*.json);
#                NODE_ARGS added to that run (e.g. "--no-ncu" to save ncu's minute)
#     run        aisp-prof run (check + ncu + nsys) of PAIRS (RUN_ARGS added, e.g. "--nproc-per-node 2"), and of a
#                multi-rank pair `aisp-prof ranks` (ranks_<pair>.txt/.json);
#                each run folder -> $OUT/run_<pair>.tar.xz (keep_run; shrink it with dev/shrink_samples.py before
#                committing it as a sample). A call returns at most 8 files: about five runs a visit
#     calibrate  aisp-prof calibrate (measured ceilings), and with LINK=N the N GPUs' link, -> *.json
#     fuzz       aisp-prof check --fuzz NFUZZ (default 20) --seed SEED (default 1) of PAIRS, each pair split over
#                SHARDS (default 1) processes with --shard k/SHARDS, every process at once, each with empty Inductor
#                and Triton caches of its own, stopped by --time-limit-s FUZZ_LIMIT (default 470; the shape in progress
#                finishes, the rest are "not checked", exit 130) -> fuzz_<pair>_<k>.json (torch.compile pairs compile
#                every shape afresh, 20-110 s a shape on an H200: SHARDS=2 fits 20 shapes of most in one call)
#     cost       benchmarks/profile_cost.py on COST_PAIRS (default ch09.fused_l2norm), COST_REPEATS times,
#                and first on the checkout COST_BEFORE (a folder carried along) if set
# DEADLINE (seconds since the start): no step, and no pair of record or run, starts after it.
# Issue 28 on a one-GPU H200 lease, done 2026-11-29: forked against fresh processes (benchmarks/preload_ab.sh,
# benchmarks/results/preload_ab_h200.md: the same GPU time) and a compile cache kept between gates (gate_cost.sh
# with SHARED_COMPILE_CACHE=1, twice: the book in 463 s). To repeat the whole-book cost with the kept cache:
#   COLD=1 SHARED_COMPILE_CACHE=1 NAME=shared_cold TARGETS="ch14 ch09 ch10" LIMIT_S=580 bash benchmarks/gate_cost.sh
#   SHARED_COMPILE_CACHE=1 NAME=shared_warm TARGETS="ch14 ch09 ch10" LIMIT_S=580 bash benchmarks/gate_cost.sh
# The 2-GPU half of issue 34, done 2026-11-29 on nvidia-h200-x2 (kernels/ch14/expectations_2x_h200.json; fixtures
# tests/fixtures/gate/h200x2_* and tests/fixtures/multinode_h200x2): a record call, then each fresh lease the gate:
#   PAIRS=ch14.quantized_allreduce STEPS="link record run multinode" LINK=2 RUN_ARGS="--nproc-per-node 2" NNODES=2 \
#   NODE_GPUS=1 NODE_ARGS=--no-ncu BENCH_ARGS="--nproc-per-node 2 --profile minimal" RECORD_PROCESSES=3 bash dev/gpu_visit.sh
#   PAIRS=ch14.quantized_allreduce STEPS=gate BENCH_ARGS="--nproc-per-node 2 --profile minimal" SLOW=0.10 \
#   SLOW_PAIR=ch14.quantized_allreduce bash dev/gpu_visit.sh          (~70 s; the same on a 2x H100 records 2x_h100)
# The CUTLASS libraries in parts against whole on one machine (~360 s for two rounds; done 2026-11-30 on an H200,
# benchmarks/results/build_parts_h200.jsonl):
#   . dev/device_env.sh /tmp/bp && python3 benchmarks/build_parts.py --rounds 2 --json
# The 4-GPU visit of the multi-rank pair (issue 34), one command:
#   PAIRS=ch14.quantized_allreduce STEPS="link run multinode record gate" LINK=4 RUN_ARGS="--nproc-per-node 4" \
#   NNODES=2 NODE_GPUS=2 NODE_ARGS=--no-ncu BENCH_ARGS="--nproc-per-node 4 --profile minimal" RECORD_PROCESSES=2 \
#   SLOW=0.10 SLOW_PAIR=ch14.quantized_allreduce DEADLINE=420 bash dev/gpu_visit.sh
# The H100 half of issue 28 (its evidence files are format 2, outdated: every pair recorded again, then a fresh-lease
# gate). Recording takes RECORD_PROCESSES=3 processes a pair, each compiling afresh: from the H200's gate costs
# (git show 494fa09:benchmarks/results/gate_cost_h200.md) ~7.5 min for ch09, ~10 for ch10 and ~17 for ch14, so two sessions' device
# time. One call each (DEADLINE leaves the slowest pair room inside the call's 10 minutes); after every call copy
# $OUT/chNN_expectations_h100_80gb_hbm3.json over kernels/chNN/expectations_h100_80gb_hbm3.json and commit it, as the
# next call gets this tree again; give the next call the pairs the last did not start ("record P not started"):
#   STEPS=record DEADLINE=420 PAIRS="$(ls kernels/ch09/*.py | sed 's|kernels/\(ch09\)/\(.*\)\.py|\1.\2|' | tr '\n' ' ')"
#   (the same for ch10, in two calls); ch14 with DEADLINE=330 (regional_triton ~4 min: three cold compiles)
# then, on a later lease, no code change: STEPS=gate PAIRS="ch09 ch10 ch14" (or benchmarks/gate_cost.sh) and
# SLOW=0.10 for the planted slowdown; `aisp-prof bench agree` of the shipped H100 runs against the new evidence.
# Carry what dev/device_env.sh unpacks (.whl, .devlib, .cutlass_xz, .cudapy, .device_sha). Multi-GPU
# pairs run with NVLink multicast off (NCCL_NVLS_ENABLE=0 and the like), as the machines ask.
set -u -o pipefail
. dev/device_env.sh /tmp/visit_out
# A call returns only a few files from $OUT: everything the visit writes goes to $W, packed into
# $OUT/visit.tgz after every pair and step (a visit cut off by the call's limit still returns what it
# did); $OUT itself holds visit.tgz, table.txt and the chapters' expectations files.
W=${STAGE:-/tmp/visit_stage}; mkdir -p "$W"
pack() { tar czf "$OUT/visit.tgz.part" -C "$W" . && mv "$OUT/visit.tgz.part" "$OUT/visit.tgz"; }
# One run folder -> $OUT/run_NAME.tar.xz, as soon as it is done, without what is large and stays on the machine
# (.nsys-rep, .ncu-rep, the Triton binaries in generated/triton; their exports and index are kept). Run folders
# never go into visit.tgz: one compiled pair's (70 MB) once made it too big to come back (16 MiB a file).
keep_run() {
  [ -d "$1" ] || return 0
  tar cJf "$OUT/run_$2.tar.xz" --exclude='*.nsys-rep' --exclude='*.ncu-rep' --exclude='generated/triton' \
    -C "$(dirname "$1")" "$(basename "$1")" && echo "kept $2 ($(du -h "$OUT/run_$2.tar.xz" | cut -f1))"
}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PAIRS=${PAIRS:-}
STEPS=${STEPS:-}
RUNS=/tmp/visit_profiles
ARGS="--repeats ${REPEATS:-10} --budget-s ${BUDGET_S:-1.5} --db /tmp/visit_gate.db --profiles-dir /tmp/visit_bench --json ${BENCH_ARGS:-}"
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || echo 0)
START=$(date +%s); START_MARK=$W/.visit_start; touch "$START_MARK"
t() { echo "t=$(( $(date +%s) - START ))s"; }
targets() { for p in $PAIRS; do printf -- '--targets %s ' "$p"; done; }
default_tests() {
  local files=""
  for p in $PAIRS; do f=tests/pairs/${p%%.*}/test_${p%%.*}_${p#*.}.py; [ -f "$f" ] && files="$files $f"; done
  echo "${files:-tests}"
}
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader | sort | uniq -c | tr -s ' ') git ${AISP_GIT_SHA:-?} steps ${STEPS:-none} pairs ${PAIRS:-none}"
for step in $STEPS; do
  if [ -n "${DEADLINE:-}" ] && [ $(( $(date +%s) - START )) -ge "$DEADLINE" ]; then echo "$step not started: deadline $(t)"; continue; fi
  case $step in
    tests)
      python3 -m pytest -q -p no:cacheprovider -m gpu -rfE ${TESTS:-$(default_tests)} 2>&1 | tee "$W/gpu_tests.log" | tail -15
      echo "gpu_tests_rc $? $(t)" ;;
    sanitize)
      for p in ${SAN_PAIRS:-$PAIRS}; do
        $AISP sanitize "$p" ${SAN_VARIANTS:+--variants $SAN_VARIANTS} --log-dir "$W/sanitizer" --json \
          > "$W/sanitize_$p.json"; echo "sanitize $p rc $? $(t)"; pack
      done
      (cd "$W" && tar czf sanitizer_logs.tgz sanitizer && rm -rf sanitizer) ;;
    gate)
      $AISP bench run $(targets) $ARGS > "$W/gate.json"; echo "gate_rc $? $(t)"
      # the slowed pair is judged against the real pair's evidence: with none beside the fixture, the gate
      # reads the shipped file of the key it computes for the pair (e.g. 4x_h200), as the plain run above did
      slow_pair=${SLOW_PAIR:-ch09.fused_l2norm}
      for f in ${SLOW:-}; do
        AISP_KERNELS=tests/fixtures/gate_kernels AISP_GATE_SLOWDOWN=$f $AISP bench run --targets "$slow_pair" \
          ${SLOW_EXPECT:+--expectations "$SLOW_EXPECT"} $ARGS > "$W/gate_slow_$f.json"
        echo "gate_slow_${f}_rc $? $(t) (against ${SLOW_EXPECT:-the shipped evidence})"
      done ;;
    link)
      # into profiles/calibration/ too, where the later steps' `ranks` find the link's bus bandwidth
      touch "$W/.link_start"
      $AISP calibrate --link "${LINK:-$GPUS}" --write-json profiles/calibration --json > "$W/calibrate_link.json" \
        2> "$W/calibrate_link.err"; echo "link ${LINK:-$GPUS} rc $? $(t)"; tail -2 "$W/calibrate_link.err"
      # only the file this calibration wrote (newer than the mark touched before it): the shipped links of other
      # cards stay behind, as a call returns at most 8 files
      for f in $(find profiles/calibration -name "${LINK:-$GPUS}x_*.json" -newer "$W/.link_start"); do
        cp "$f" "$W/" && cp "$f" "$OUT/"; done ;;
    multinode)
      mkdir -p "$RUNS"
      nodes=${NNODES:-2}; per=${NODE_GPUS:-$(( GPUS / ${NNODES:-2} ))}
      for p in $PAIRS; do
        $AISP run "$p" --nnodes "$nodes" --nproc-per-node "$per" --profiles-dir "$RUNS" --db "$RUNS/aisp.db" \
          --label multinode ${NODE_ARGS:-} --json > "$W/multinode_$p.json" 2> "$W/multinode_$p.err"
        echo "multinode $p rc $? $(t)"; tail -2 "$W/multinode_$p.err"
        dir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["run_dir"])' "$W/multinode_$p.json" 2>/dev/null)
        [ -n "$dir" ] || continue
        keep_run "$dir" "multinode_$p"
        ls -R "$dir" > "$W/multinode_${p}_files.txt"
        $AISP import --job "multinode-$p" "$dir"/node* --db "$RUNS/aisp.db" --json > "$W/multinode_import_$p.json" \
          2>> "$W/multinode_$p.err"; echo "multinode import --job rc $? $(t)"
        job=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["run_id"])' "$W/multinode_import_$p.json" 2>/dev/null)
        $AISP ranks "$(basename "$dir")" --db "$RUNS/aisp.db" --json > "$W/multinode_ranks_run.json" 2>> "$W/multinode_$p.err"
        $AISP ranks "$job" --db "$RUNS/aisp.db" --json > "$W/multinode_ranks_job.json" 2>> "$W/multinode_$p.err"
        $AISP ranks "$(basename "$dir")" --db "$RUNS/aisp.db" 2>&1 | tail -25
        python3 - "$W/multinode_ranks_run.json" "$W/multinode_ranks_job.json" <<'PY'
import json, sys
run, job = (json.load(open(f)) for f in sys.argv[1:3])
key = lambda r: (r["rank"], r.get("hostname"), r.get("local_rank"))
same_ranks = sorted(map(key, run["ranks"])) == sorted(map(key, job["ranks"]))
busy = lambda d: sorted((r["variant"] or "", r["rank"], round(r["gpu_busy_ns"] or 0)) for r in d["per_rank"])
print(f"multinode same_job ranks={same_ranks} per_rank={busy(run) == busy(job)} "
      f"hosts={sorted({r.get('hostname') for r in run['ranks']})} "
      f"clock_residual_ns_max={max(abs(r.get('clock_residual_ns') or 0) for r in run['ranks'])}")
PY
        pack
      done ;;
    ab)
      $AISP bench ab $(targets) --base "${AB_BASE:-kernels}" --json > "$W/ab_aa.json"; echo "ab_aa_rc $? $(t)"; pack
      for f in ${SLOW:-}; do
        AISP_KERNELS=tests/fixtures/gate_kernels AISP_GATE_SLOWDOWN=$f $AISP bench ab \
          --targets "${AB_SLOW_PAIR:-ch14.attention_eager_sdpa}" --base "${AB_BASE:-kernels}" --json > "$W/ab_slow_$f.json"
        echo "ab_slow_${f}_rc $? $(t)"; pack
      done ;;
    scratch)
      $AISP bench run $(targets) $ARGS --update-expectations --record-processes 2 \
        --expectations "$W/scratch_expectations.json" > "$W/scratch.json"; echo "scratch_rc $? $(t)" ;;
    record)
      # pair by pair, each chapter's file copied back after each pair: a visit cut off by the call's
      # limit still returns every pair it finished (DEADLINE: no pair starts after that many seconds)
      for p in $PAIRS; do
        if [ -n "${DEADLINE:-}" ] && [ $(( $(date +%s) - START )) -ge "$DEADLINE" ]; then echo "record $p not started: deadline"; continue; fi
        timeout "${PAIR_TIMEOUT:-420}" $AISP bench run --targets "$p" $ARGS --update-expectations \
          --record-processes "${RECORD_PROCESSES:-3}" > "$W/record_$p.json"; echo "record $p rc $? $(t)"; pack
        # the chapter's files this visit's recordings wrote (not its other cards'): a call returns at most 8 files
        for f in $(find "kernels/${p%%.*}" -name 'expectations_*.json' -newer "$START_MARK"); do
          cp "$f" "$OUT/${p%%.*}_$(basename "$f")"; cp "$f" "$W/"; done
      done ;;
    run)
      mkdir -p "$RUNS"
      for p in $PAIRS; do
        if [ -n "${DEADLINE:-}" ] && [ $(( $(date +%s) - START )) -ge "$DEADLINE" ]; then echo "run $p not started: deadline $(t)"; continue; fi
        $AISP run "$p" --profiles-dir "$RUNS" --db "$RUNS/aisp.db" --label "${LABEL:-visit}" ${RUN_ARGS:-} --json \
          > "$W/run_$p.json" 2> "$W/run_$p.err"
        echo "run $p rc $? $(t)"; tail -2 "$W/run_$p.err"
        keep_run "$(ls -td "$RUNS"/2026*-"$p"-* 2>/dev/null | head -1)" "$p"
        # a multi-rank pair: its ranks rank by rank (bus bandwidth against the link, hidden communication,
        # stragglers, wire bytes); a one-process pair has none (exit 6) and leaves no file
        if $AISP ranks "$p" --db "$RUNS/aisp.db" --wide > "$W/ranks_$p.txt" 2>&1; then
          $AISP ranks "$p" --db "$RUNS/aisp.db" --json > "$W/ranks_$p.json"; tail -12 "$W/ranks_$p.txt"
        else rm -f "$W/ranks_$p.txt"; fi
        pack
      done ;;
    calibrate)
      $AISP calibrate --write-json "$W" > "$W/calibrate.txt" 2>&1; echo "calibrate rc $? $(t)"
      if [ -n "${LINK:-}" ]; then
        $AISP calibrate --link "$LINK" --write-json "$W" > "$W/calibrate_link.txt" 2>&1; echo "link rc $? $(t)"
      fi ;;
    fuzz)
      pids=""
      for p in $PAIRS; do for k in $(seq 1 "${SHARDS:-1}"); do
        c=/tmp/visit_fuzz_cache/${p}_$k
        TORCHINDUCTOR_CACHE_DIR=$c/inductor TRITON_CACHE_DIR=$c/triton $AISP check "$p" --fuzz "${NFUZZ:-20}" \
          --seed "${SEED:-1}" --shard "$k/${SHARDS:-1}" --time-limit-s "${FUZZ_LIMIT:-470}" --json \
          > "$W/fuzz_${p}_$k.json" 2> "$W/fuzz_${p}_$k.err" &
        pids="$pids $!"
      done; done
      for pid in $pids; do wait "$pid"; echo "fuzz process $pid rc $? $(t)"; done
      python3 - "$W" <<'PY2'
import collections, glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "fuzz_*.json"))):
    try:
        out = json.load(open(f))
    except ValueError:
        print(os.path.basename(f), "no JSON (see its .err)"); continue
    counts = collections.Counter(r["status"] for r in out["results"])
    print(os.path.basename(f), dict(counts), out["stopped"] or "", f"not checked {out['not_checked']}")
    for r in out["results"]:
        if r["status"] == "fail":
            print("   FAIL", r["pair"], r["shape"], (r.get("detail") or "")[:150])
PY2
      ;;
    cost)
      if [ -n "${COST_BEFORE:-}" ]; then
        python3 benchmarks/profile_cost.py --pairs ${COST_PAIRS:-ch09.fused_l2norm} --repeats "${COST_REPEATS:-2}" \
          --code "$COST_BEFORE" --label before --out-dir "$W" 2>&1 | tail -3
      fi
      python3 benchmarks/profile_cost.py --pairs ${COST_PAIRS:-ch09.fused_l2norm} --repeats "${COST_REPEATS:-2}" \
        --compare-bare --label after --out-dir "$W" 2>&1 | tail -8; echo "cost rc $? $(t)" ;;
    *) echo "unknown step $step (tests sanitize gate ab scratch record run link multinode calibrate fuzz cost)" ;;
  esac
  pack
done
python3 dev/visit_summary.py "$W" "$PAIRS" | tee "$OUT/table.txt"
} 2>&1 | tee -a "$W/session.log"
pack
