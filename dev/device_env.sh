# Sourced by GPU-machine scripts (dev/gpu_visit.sh): $OUT, the commit, nsys's libraries, the carried
# wheels, and $AISP. Usage, from the repository root, first thing after `set`:  . dev/device_env.sh /tmp/default_out
OUT=${OUT:-$1}; export OUT; mkdir -p "$OUT"
# The commit profiled: the machine gets a copy without history, so `git rev-parse HEAD > .device_sha`
# here before the call and carry it (a hand-typed AISP_GIT_SHA once recorded a wrong commit).
[ -z "${AISP_GIT_SHA:-}" ] && [ -f .device_sha ] && AISP_GIT_SHA=$(cat .device_sha)
export AISP_GIT_SHA=${AISP_GIT_SHA:-}
export LD_LIBRARY_PATH=$PWD/.devlib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1 AISP_BUILD_DIR=/tmp/aisp_build
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
# CUTLASS's headers (include/ and tools/util/include/) as a ~1 MB .cutlass_xz/cutlass_include.tar.xz (the 6.4 MB wheel no
# longer fits the 64 MiB a call carries): unpacked here, found through AISP_CUTLASS_INCLUDE
if [ -f .cutlass_xz/cutlass_include.tar.xz ]; then
  mkdir -p /tmp/cutlass && tar xJf .cutlass_xz/cutlass_include.tar.xz -C /tmp/cutlass && export AISP_CUTLASS_INCLUDE=/tmp/cutlass/include
fi
# cuda-python's cuda.bindings.{driver,nvrtc} + cuda.pathfinder (cp312) as a ~1.6 MB .cudapy/cuda_bindings_min.tar.xz (the 7 MB
# wheels don't fit the 64 MiB a call carries; ch14.cuda_python's nvrtc variant needs them): unpacked into /tmp/site, on PYTHONPATH
if [ -f .cudapy/cuda_bindings_min.tar.xz ]; then
  mkdir -p /tmp/site && tar xJf .cudapy/cuda_bindings_min.tar.xz -C /tmp/site
fi
AISP="python3 -m aisp_prof"
