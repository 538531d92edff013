#!/usr/bin/env bash
# Regenerate tests/fixtures/compile_cache/ on any machine, no GPU needed: a real compile cache
# laid out as a run folder's compile_cache/ is during `aisp-prof run` (collect/generated.py):
#   triton/<hash>/   Triton kernels compiled ahead of time for sm_90 (json, ttir, ttgir, llir,
#                    ptx, cubin, source), as Triton's own cache writes it under TRITON_CACHE_DIR:
#                    a plain add+relu, and ch09.triton's _softmax_rows at its default size (the
#                    kernel the shipped ch09.triton samples launch, so their tables link to it)
#   inductor/<xx>/   Inductor's output code of a tiny torch.compile'd function (the CPU backend:
#                    C++ kernels; on a GPU the same module holds async_compile.triton kernels)
#
#   bash scripts/compile_cache_fixture.sh            # PYTHON=... to pick the interpreter
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
D=tests/fixtures/compile_cache
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
rm -rf "$D" && mkdir -p "$D"

cat > "$TMP/add_relu.py" <<'PYEOF'
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def add_relu_kernel(x, y, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m)
    tl.store(out + offs, tl.maximum(v, 0.0), mask=m)


sig = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}
src = ASTSource(fn=add_relu_kernel, signature=sig, constexprs={"BLOCK": 1024})
triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
print("triton", triton.__version__)
PYEOF
TRITON_DEFAULT_FP_FUSION=1 TRITON_CACHE_DIR="$TMP/triton" "$PY" "$TMP/add_relu.py"
TRITON_DEFAULT_FP_FUSION=1 TRITON_CACHE_DIR="$TMP/triton" "$PY" - <<'PYEOF'
import importlib.util
spec = importlib.util.spec_from_file_location("ch09_triton_fixture", "kernels/ch09/triton.py")
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
x = mod.make_inputs({"rows": 4, "cols": 8192}, "cpu", 0)["x"]
block, chunks, warps = mod.launch_config(8192)
mod._compile_ahead_of_time(x, 8192, {"BLOCK": block, "NUM_CHUNKS": chunks}, warps)
PYEOF

TORCHINDUCTOR_CACHE_DIR="$TMP/inductor" "$PY" - <<'PYEOF'
import torch


def gelu_sum(x):
    return torch.nn.functional.gelu(x).sum(dim=1)


torch.compile(gelu_sum)(torch.randn(64, 128))
print("torch", torch.__version__)
PYEOF

mkdir -p "$D/triton" "$D/inductor"
cp -r "$TMP"/triton/* "$D/triton/"
# Inductor's output code only (the module `call` runs): not its .so, .cpp builds or pickled caches
for f in $(grep -rl "async_compile" "$TMP/inductor" --include=*.py); do
  rel=${f#"$TMP/inductor/"}
  mkdir -p "$D/inductor/$(dirname "$rel")"
  cp "$f" "$D/inductor/$rel"
done
# the absolute paths Triton wrote into its group file would name this machine's temp folder
find "$D/triton" -name '__grp__*.json' -exec sed -i "s#$TMP/triton#TRITON_CACHE_DIR#g" {} +
find "$D" -type f | sort
