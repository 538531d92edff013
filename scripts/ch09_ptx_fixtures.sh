#!/usr/bin/env bash
# Regenerate tests/fixtures/ch09_ptx/ on any machine, no GPU needed: the Triton softmax of
# ch09.triton compiled ahead of time for sm_90 (the PTX/SASS/resource usage that
# compiled_artifacts() reports), and tiny.cu built by nvcc for sm_90.
#
#   bash scripts/ch09_ptx_fixtures.sh            # PYTHON=... to pick the interpreter
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
D=tests/fixtures/ch09_ptx
BIN=$($PY -c "import os, triton; print(os.path.join(os.path.dirname(triton.__file__), 'backends', 'nvidia', 'bin'))")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# 1. Triton: ch09.triton's kernel for an 8192-wide fp32 row (the default size), sm_90
TRITON_DEFAULT_FP_FUSION=1 "$PY" - "$D" "$TMP" <<'PYEOF'
import importlib.util, sys
from pathlib import Path
import triton
out, tmp = Path(sys.argv[1]), Path(sys.argv[2])
spec = importlib.util.spec_from_file_location("ch09_triton_fixture", "kernels/ch09/triton.py")
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
x = mod.make_inputs({"rows": 4, "cols": 8192}, "cpu", 0)["x"]
block, chunks, warps = mod.launch_config(8192)
compiled = mod._compile_ahead_of_time(x, 8192, {"BLOCK": block, "NUM_CHUNKS": chunks}, warps)
(out / "triton_softmax_sm90.ptx").write_text(compiled.asm["ptx"])
(out / "triton_softmax_sm90.sass").write_text(compiled.asm["sass"])      # Triton's SASS format
(tmp / "softmax.cubin").write_bytes(compiled.asm["cubin"])
print("triton", triton.__version__, "BLOCK", block, "num_warps", warps)
PYEOF
"$BIN/cuobjdump" -res-usage "$TMP/softmax.cubin" > "$D/triton_softmax_sm90.res_usage.txt"

# 2. nvcc: tiny.cu (16-byte accesses, warp shuffles, a run-time indexed array in local memory)
nvcc -arch=sm_90 -O3 -ptx "$D/tiny.cu" -o "$D/tiny_sm90.ptx"
nvcc -arch=sm_90 -O3 -cubin -Xptxas -v "$D/tiny.cu" -o "$TMP/tiny.cubin" > "$D/tiny_sm90.ptxas.txt" 2>&1
"$BIN/cuobjdump" -sass "$TMP/tiny.cubin" > "$D/tiny_sm90.sass"                # cuobjdump's SASS format
nvcc --version | tail -1
ls -la "$D"
