#!/usr/bin/env bash
# GPU tests of the files in TESTS (pytest -m gpu), nothing else; the tail of the log last.
set -u -o pipefail
. scripts/device_env.sh /tmp/gt_out
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader) git ${AISP_GIT_SHA:-?}"
python3 -m pytest -q -p no:cacheprovider -m gpu $TESTS -rfE 2>&1 | tee $OUT/gpu_tests.log | tail -${TEST_TAIL:-15}
