# hedged 2-GPU visit: on H200s, the multi-rank pair and the one-GPU cuda_python recording; else nothing
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "cards: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ')"
case "$name" in
  *H200*)
    LINK=0 bash scripts/multigpu_run.sh 2>&1 | tail -30
    OUT=$OUT/s9 CUDA_VISIBLE_DEVICES=0 STEPS=record PAIRS=ch14.cuda_python bash scripts/session9_gpu.sh 2>&1 | tail -6 ;;
  *) echo "not H200: nothing run" ;;
esac
