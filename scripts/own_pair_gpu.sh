#!/usr/bin/env bash
# Issue 19's last open item on a GPU: a user's own pair, from `aisp-prof new` to a profiled run, the
# way the README's loop says (outside the repository, no edits): the template's test on the GPU, then
# `aisp-prof run path/to/pair.py` (check + ncu + nsys), the summary and a report. Run folder ->
# $OUT/own_run.tgz (no .nsys-rep / .ncu-rep.gz); a short table last.
set -u -o pipefail
. scripts/device_env.sh /tmp/own_out
W=/tmp/my_pairs; P=/tmp/own_profiles; rm -rf $W $P; mkdir -p $W
START=$(date +%s); t() { echo "t=$(( $(date +%s) - START ))s"; }
{
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader) git ${AISP_GIT_SHA:-?}"
(cd /tmp && $AISP new mine.fused_relu --dir $W); echo "new rc $? $(t)"; ls $W
(cd /tmp && python3 -m pytest -q -p no:cacheprovider $W/test_fused_relu.py 2>&1 | tail -3); echo "template test $(t)"
(cd /tmp && $AISP run $W/fused_relu.py --profiles-dir $P --db $P/aisp.db --label own --json > $OUT/own_run.json 2> $OUT/own_run.err)
echo "run rc $? $(t)"; tail -4 $OUT/own_run.err
(cd /tmp && COLUMNS=120 $AISP summary latest --db $P/aisp.db | tail -25)
(cd /tmp && $AISP report --db $P/aisp.db --out $P/report > /dev/null 2>&1); echo "report rc $? $(t)"
(cd $P && tar czf $OUT/own_run.tgz --exclude="*.nsys-rep" --exclude="*.ncu-rep.gz" --exclude="*/generated/triton" 2026* report)
cp $W/fused_relu.py $OUT/
} 2>&1 | tee $OUT/session.log
