"""The chapter 9 pairs beyond fused_l2norm, and aisp_prof.parse.code.ptx, on a CPU.

For every pair: it is discovered with its contract (that it imports with no side effects is
test_every_pair.py's check), its analytic FLOP and byte formulas match hand-computed numbers,
and its variants that can run on a CPU pass `check_pair` at a tiny size (Triton ones under
TRITON_INTERPRET=1 in a fresh interpreter).
Variants that only exist on a GPU (cuSPARSELt/CUTLASS 2:4, NVFP4 _scaled_mm) are checked to
refuse CPU tensors with a RequirementError; ch09.nvfp4_gemm must be skipped on Hopper.
GPU tests (marked `gpu`) skip cleanly without one.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import FIXTURES, ROOT
from pair_testing import hide_package, import_fresh, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.parse.code import ptx  # noqa: E402
from aisp_prof.pairs.capabilities import Machine, runnable  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

KERNELS = ROOT / "kernels" / "ch09"
PTX_FIXTURES = FIXTURES / "ch09_ptx"
requires_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton")

NEW_PAIRS = ["memory_bound", "compute_bound", "triton", "sdpa_attention", "structured_sparsity",
             "structured_sparsity_ffn", "nvfp4_gemm"]

# pair -> (tiny sizes, variants that run on a CPU without triton)
CPU_CHECKS = {
    "memory_bound": ({"n": 1000}, ["baseline"]),
    "compute_bound": ({"m": 64, "n": 48, "k": 96}, ["baseline", "tf32", "bf16"]),
    "triton": ({"rows": 16, "cols": 100}, ["baseline", "torch_softmax"]),
    "sdpa_attention": ({"batch": 2, "heads": 2, "seq": 64, "head_dim": 32}, ["baseline", "flash"]),
    "structured_sparsity": ({"m": 64, "n": 32, "k": 128}, ["baseline"]),
    "structured_sparsity_ffn": ({"tokens": 64, "hidden": 32, "ffn": 128}, ["baseline"]),
    "nvfp4_gemm": ({"m": 64, "n": 32, "k": 128}, ["baseline"]),
}

CONTRACTS = {   # variants, default sizes, min_cc, variant_needs
    "memory_bound": (["baseline", "triton"], {"n": 268_435_456}, (9, 0), {"triton": ("triton",)}),
    "compute_bound": (["baseline", "tf32", "bf16"], {"m": 8192, "n": 8192, "k": 8192}, (9, 0),
                      {"tf32": ("gpu",), "bf16": ("gpu",)}),
    "triton": (["baseline", "torch_softmax", "triton"], {"rows": 8192, "cols": 8192}, (9, 0),
               {"triton": ("triton",)}),
    "sdpa_attention": (["baseline", "flash", "cudnn"], {"batch": 8, "heads": 16, "seq": 4096, "head_dim": 128},
                       (9, 0), {"flash": ("gpu",), "cudnn": ("gpu",)}),
    "structured_sparsity": (["baseline", "sparse24", "sparse24_tuned"], {"m": 16384, "n": 16384, "k": 16384},
                            (9, 0), {"sparse24": ("gpu",), "sparse24_tuned": ("gpu",)}),
    "structured_sparsity_ffn": (["baseline", "sparse24", "sparse24_tuned"],
                                {"tokens": 65536, "hidden": 6144, "ffn": 24576},
                                (9, 0), {"sparse24": ("gpu",), "sparse24_tuned": ("gpu",)}),
    "nvfp4_gemm": (["baseline", "nvfp4"], {"m": 16384, "n": 16384, "k": 16384}, (10, 0),
                   {"nvfp4": ("gpu",)}),
}


def _load(name: str, module_name: str | None = None):
    return import_fresh(KERNELS / f"{name}.py", module_name or f"ch09_{name}_under_test")


@pytest.fixture(scope="module")
def mods():
    return {name: _load(name) for name in NEW_PAIRS}


# --- import, discovery, contract ------------------------------------------------------------

@pytest.mark.parametrize("name", ["memory_bound", "triton"])
def test_triton_pairs_import_without_triton(monkeypatch, name):
    hide_package(monkeypatch, "triton")                        # makes `import triton` fail
    module = _load(name, f"ch09_{name}_no_triton")
    sizes, _ = CPU_CHECKS[name]
    inputs = module.make_inputs(sizes, "cpu", 0)
    with pytest.raises(RequirementError, match="needs triton"):
        module.optimized_triton(inputs)


@pytest.mark.slow
@pytest.mark.parametrize("name", NEW_PAIRS)
def test_pair_is_discovered_with_its_contract(name):
    pair = pairs.find(f"ch09.{name}")
    variants, sizes, min_cc, needs = CONTRACTS[name]
    assert pair.chapter == 9
    assert list(pair.variants) == variants and variants[0] == "baseline"
    assert dict(pair.sizes) == sizes
    assert pair.requires.min_cc == min_cc
    assert dict(pair.variant_needs) == needs
    assert pair.lesson and "\n" not in pair.lesson
    assert pair.source.endswith(f"kernels/ch09/{name}.py")
    assert 1e-7 < pair.tolerance <= 1e-2


# --- analytic FLOPs and bytes ---------------------------------------------------------------

def test_memory_bound_formulas(mods):
    m = mods["memory_bound"]
    assert m.flops({"n": 1000}) == 3000 and m.bytes({"n": 1000}) == 8000
    n = 256 * 2**20
    assert m.flops({"n": n}) == 805_306_368
    assert m.bytes({"n": n}) == 2_147_483_648                       # 2 GiB: x in, y out
    assert m.flops({"n": n}) / m.bytes({"n": n}) == 0.375           # < 1 FLOP/byte


def test_compute_bound_formulas(mods):
    m = mods["compute_bound"]
    assert m.flops({"m": 2, "n": 3, "k": 4}) == 48
    assert m.bytes({"m": 2, "n": 3, "k": 4}) == 4 * (8 + 12 + 6) == 104
    d = {"m": 8192, "n": 8192, "k": 8192}
    assert m.flops(d) == 1_099_511_627_776
    assert m.bytes(d) == 805_306_368
    assert m.flops(d) / m.bytes(d) > 1000                            # far right of any ridge
    mem = mods["memory_bound"]
    assert m.flops(d) / m.bytes(d) > 1000 * mem.flops({"n": 1}) / mem.bytes({"n": 1})


def test_triton_formulas(mods):
    m = mods["triton"]
    assert m.flops({"rows": 3, "cols": 10}) == 5 * 30 + 3 == 153
    assert m.bytes({"rows": 3, "cols": 10}) == 240
    assert m.bytes({"rows": 8192, "cols": 8192}) == 536_870_912


def test_sdpa_formulas(mods):
    m = mods["sdpa_attention"]
    s = {"batch": 1, "heads": 2, "seq": 3, "head_dim": 4}
    assert m.flops(s) == 4 * 1 * 2 * 9 * 4 == 288
    assert m.bytes(s) == 4 * 1 * 2 * 3 * 4 * 2 == 192
    assert m.baseline_bytes(s) == 192 + 4 * 2 * 9 * 2 == 336
    d = {"batch": 8, "heads": 16, "seq": 4096, "head_dim": 128}
    assert m.flops(d) == 1_099_511_627_776
    assert m.bytes(d) == 536_870_912
    assert m.baseline_bytes(d) == 536_870_912 + 17_179_869_184
    assert m.flops(d) / m.baseline_bytes(d) < 100 < m.flops(d) / m.bytes(d)


def test_structured_sparsity_formulas(mods):
    m = mods["structured_sparsity"]
    assert m.flops({"m": 2, "n": 3, "k": 4}) == 48
    assert m.bytes({"m": 2, "n": 3, "k": 4}) == 2 * (8 + 12 + 6) == 52
    d = {"m": 16384, "n": 16384, "k": 16384}
    assert m.flops(d) == 8_796_093_022_208 and m.bytes(d) == 1_610_612_736


def test_structured_sparsity_ffn_formulas(mods):
    m = mods["structured_sparsity_ffn"]
    s = {"tokens": 2, "hidden": 3, "ffn": 4}
    assert m.flops(s) == 6 * 24 + 4 * 8 == 176
    assert m.bytes(s) == 2 * (2 * 6 + 3 * 12) == 96
    d = {"tokens": 65536, "hidden": 6144, "ffn": 24576}
    assert m.flops(d) == 59_373_627_899_904 + 6_442_450_944
    assert m.bytes(d) == 2 * (2 * 65536 * 6144 + 3 * 6144 * 24576) == 2_516_582_400


def test_nvfp4_formulas(mods):
    m = mods["nvfp4_gemm"]
    s = {"m": 32, "n": 64, "k": 128}
    assert m.flops(s) == 2 * 32 * 64 * 128
    assert m.bytes(s) == (32 * 128 + 64 * 128) // 2 + (32 * 128 + 64 * 128) // 16 + 2 * 32 * 64 == 11_008


# --- correctness on a CPU -------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", NEW_PAIRS)
def test_cpu_variants_pass_check(name):
    sizes, variants = CPU_CHECKS[name]
    result = check.check_pair(pairs.find(f"ch09.{name}"), sizes, device="cpu", variants=variants)
    check.raise_if_failed(result)
    assert {c.variant for c in result.checks} == set(variants)
    assert all(c.poisoned and c.unwritten_elements == 0 for c in result.checks)


@pytest.mark.parametrize("name", NEW_PAIRS)
def test_variants_reuse_their_output(mods, name):
    sizes, variants = CPU_CHECKS[name]
    inputs = mods[name].make_inputs(sizes, "cpu", 0)
    for v in variants:
        launch = mods[name].PAIR.variants[v](inputs)
        assert launch() is launch()


@pytest.mark.parametrize("name", NEW_PAIRS)
def test_make_inputs_is_seeded(mods, name):
    sizes, _ = CPU_CHECKS[name]
    a, b, c = (mods[name].make_inputs(sizes, "cpu", s) for s in (7, 7, 8))
    tensors = [k for k, v in a.items() if isinstance(v, torch.Tensor)]
    assert tensors
    for k in tensors:
        assert torch.equal(a[k].view(torch.uint8), b[k].view(torch.uint8)), k
    assert any(not torch.equal(a[k].view(torch.uint8), c[k].view(torch.uint8)) for k in tensors)


def test_a_wrong_optimized_variant_is_rejected():
    """The tolerances are loose enough for bf16 and tight enough to catch real mistakes."""
    from dataclasses import replace

    pair = pairs.find("ch09.sdpa_attention")
    mod = _load("sdpa_attention")

    def wrong_scale(inputs):            # 1/D instead of 1/sqrt(D)
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        out = torch.empty_like(q)

        def launch():
            out.copy_(torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=1.0 / q.shape[-1]))
            return out
        return launch

    bad = replace(pair, variants={"baseline": mod.baseline, "wrong": wrong_scale})
    result = check.check_pair(bad, CPU_CHECKS["sdpa_attention"][0], device="cpu")
    assert result.failed_variants == ["wrong"]


@pytest.mark.parametrize("name,factory", [("structured_sparsity", "optimized_sparse24"),
                                          ("structured_sparsity_ffn", "optimized_sparse24"),
                                          ("structured_sparsity", "optimized_sparse24_tuned"),
                                          ("structured_sparsity_ffn", "optimized_sparse24_tuned"),
                                          ("sdpa_attention", "optimized_cudnn")])
def test_gpu_only_variants_refuse_cpu_tensors(mods, name, factory):
    inputs = mods[name].make_inputs(CPU_CHECKS[name][0], "cpu", 0)
    with pytest.raises(RequirementError, match="CUDA"):
        getattr(mods[name], factory)(inputs)


@pytest.mark.parametrize("n", [1, 4, 29, 2049, 8594])
def test_tuned_sparse_off_cusparselt_alignment_is_no_kernel(mods, n):
    """cuSPARSELt has no kernel for a row-major dense operand whose rows are not 16-byte multiples
    (on an H200, `check --fuzz 20` saw 'CUDA error: operation not supported' from
    cusparseLtDenseDescriptorInit at n = 1, 3, 4, 29, 2049, 8594, ... and every n that was a
    multiple of 8 pass): the tuned helper both sparsity pairs use says so before asking
    (NoKernelError), and the check records the variant as skipped there, never as wrong."""
    from aisp_kernels import sparse
    from aisp_prof.errors import NoKernelError

    inputs = mods["structured_sparsity"].make_inputs({"m": 64, "n": n, "k": 128}, "cpu", 0)
    with pytest.raises(NoKernelError, match="multiple of 16 bytes") as caught:
        mods["structured_sparsity"].optimized_sparse24_tuned(inputs)
    assert check.no_kernel_reason(caught.value).startswith("skipped: the backend has no kernel for these sizes")
    w, x = torch.zeros(64, 128, dtype=torch.float16), torch.zeros(128, n + 8 - n % 8, dtype=torch.float16)
    with pytest.raises(RequirementError, match="CUDA"):      # aligned: past the shape, on to the device
        sparse.tuned_sparse_matmul(w, x)


def test_compute_bound_restores_matmul_precision(mods):
    m = mods["compute_bound"]
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision if hasattr(matmul, "fp32_precision") else matmul.allow_tf32
    inputs = m.make_inputs({"m": 8, "n": 8, "k": 8}, "cpu", 0)
    for factory in (m.baseline, m.optimized_tf32):
        factory(inputs)()
    after = matmul.fp32_precision if hasattr(matmul, "fp32_precision") else matmul.allow_tf32
    assert after == before
    with pytest.raises(ZeroDivisionError):
        with m.fp32_matmul_precision("tf32"):
            1 / 0
    assert (matmul.fp32_precision if hasattr(matmul, "fp32_precision") else matmul.allow_tf32) == before


def test_compute_bound_operands_are_exact_in_bf16(mods):
    inputs = mods["compute_bound"].make_inputs({"m": 16, "n": 16, "k": 16}, "cpu", 0)
    for t in (inputs["a"], inputs["b"]):
        assert t.dtype == torch.float32 and torch.equal(t.to(torch.bfloat16).float(), t)


# --- 2:4 pruning ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["structured_sparsity", "structured_sparsity_ffn"])
def test_prune_2_4_keeps_the_two_largest(mods, name):
    prune = mods[name].prune_2_4
    w = torch.tensor([[1.0, -4.0, 3.0, 2.0, 0.5, 0.25, -0.75, 0.1]])
    assert prune(w).tolist() == [[0.0, -4.0, 3.0, 0.0, 0.5, 0.0, -0.75, 0.0]]
    ties = torch.tensor([[2.0, -2.0, 2.0, 1.0]])                 # ties keep the lower indices
    assert prune(ties).tolist() == [[2.0, -2.0, 0.0, 0.0]]
    big = torch.randn(64, 256, generator=torch.Generator().manual_seed(0))
    pruned = prune(big)
    assert ((pruned.reshape(-1, 4) != 0).sum(dim=1) == 2).all()
    kept_min = pruned.reshape(-1, 4).abs().where(pruned.reshape(-1, 4) != 0, torch.tensor(float("inf"))).amin(1)
    dropped_max = big.reshape(-1, 4).abs().where(pruned.reshape(-1, 4) == 0, torch.tensor(0.0)).amax(1)
    assert (kept_min >= dropped_max).all()
    with pytest.raises(ValueError, match="multiple of 4"):
        prune(torch.ones(2, 6))


def test_sparse_inputs_are_2_4(mods):
    s = mods["structured_sparsity"]
    inputs = s.make_inputs(CPU_CHECKS["structured_sparsity"][0], "cpu", 0)
    assert s.is_2_4_sparse(inputs["w"]) and not s.is_2_4_sparse(inputs["x"])
    ffn = mods["structured_sparsity_ffn"].make_inputs(CPU_CHECKS["structured_sparsity_ffn"][0], "cpu", 0)
    for k in ("w1", "w3", "w2"):
        assert s.is_2_4_sparse(ffn[k]) and ffn[k].dtype == torch.bfloat16


# --- NVFP4: quantization, layout, skipped on Hopper ------------------------------------------

def test_nvfp4_quantization_round_trips(mods):
    m = mods["nvfp4_gemm"]
    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(1))
    packed, scale, deq = m.quantize_nvfp4(x)
    assert packed.dtype == torch.uint8 and packed.shape == (8, 32)
    assert scale.dtype == torch.float8_e4m3fn and scale.shape == (8, 4)
    assert torch.equal(m.dequantize_nvfp4(packed, scale), deq)
    assert torch.equal(deq.to(torch.bfloat16).float(), deq)          # exact in bf16
    # every value is an e2m1 grid point times its block's scale, within 1/2 step of the input
    grid = torch.tensor(m.E2M1_VALUES)
    q = (deq.reshape(8, 4, 16) / scale.float().unsqueeze(-1)).abs()
    assert torch.isin(q, grid).all()
    blocks = x.reshape(8, 4, 16) / scale.float().unsqueeze(-1)
    assert ((blocks.clamp(-6, 6) - deq.reshape(8, 4, 16) / scale.float().unsqueeze(-1)).abs() <= 1.0 + 1e-6).all()
    # packing order: element 2i in the low nibble
    one = torch.zeros(1, 32)
    one[0, 0], one[0, 1] = 1.0, -6.0
    p, _, _ = m.quantize_nvfp4(one)
    assert p[0, 0].item() == (0b1111 << 4) | 0b0010                # -6 high, +1 low (scale 1)


def _torch_fp4_helpers() -> dict:
    """torch's own fp4 test helpers (to_blocked, pack_uint4, _f32_to_floatx_unpacked), taken from
    the source of torch/testing/_internal/common_quantized.py without importing it (its module
    imports common_utils, which needs expecttest). Skips if torch moved them."""
    import ast

    spec = importlib.util.find_spec("torch")
    path = Path(spec.submodule_search_locations[0]) / "testing" / "_internal" / "common_quantized.py"
    if not path.exists():
        pytest.skip("torch has no common_quantized.py")
    wanted = {"to_blocked", "ceil_div", "pack_uint4", "down_size", "_f32_to_floatx_unpacked", "_n_ones"}

    def names(target):
        if isinstance(target, ast.Name):
            return [target.id]
        return [n for e in getattr(target, "elts", []) for n in names(e)] or [""]

    nodes = [n for n in ast.parse(path.read_text()).body
             if (isinstance(n, ast.FunctionDef) and n.name in wanted)
             or (isinstance(n, ast.Assign) and all(x.isupper() for t in n.targets for x in names(t)))]
    namespace = {"torch": torch, "Tensor": torch.Tensor}
    try:
        exec(compile(ast.Module(body=nodes, type_ignores=[]), str(path), "exec"), namespace)
    except Exception as exc:  # pragma: no cover - depends on torch's private test code
        pytest.skip(f"torch's fp4 helpers changed: {exc}")
    if not {"to_blocked", "pack_uint4", "_f32_to_floatx_unpacked"} <= set(namespace):
        pytest.skip("torch's fp4 test helpers moved")
    return namespace


def test_nvfp4_matches_torch_helpers(mods):
    """The same bits as torch's own reference encoder and scale swizzle."""
    ref = _torch_fp4_helpers()
    m = mods["nvfp4_gemm"]
    x = torch.randn(130, 96, generator=torch.Generator().manual_seed(2))   # pads to 256 x 8
    packed, scale, _ = m.quantize_nvfp4(x)
    assert torch.equal(m.to_blocked(scale).view(torch.uint8), ref["to_blocked"](scale.view(torch.uint8)))
    q = (x.reshape(130, 6, 16) / scale.float().unsqueeze(-1)).reshape(130, 96)
    assert torch.equal(packed, ref["pack_uint4"](ref["_f32_to_floatx_unpacked"](q.contiguous(), 2, 1)))
    # exact midpoints round to the even code, -0 keeps its sign (amax 6: scale 1)
    block = [6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.3, 1.1, 2.9, 4.4, -0.0, 0.0, 5.9, 0.74]
    x = torch.tensor([block + [-v for v in block]])
    packed, scale, _ = m.quantize_nvfp4(x)
    assert scale.float().tolist() == [[1.0, 1.0]]
    assert torch.equal(packed, ref["pack_uint4"](ref["_f32_to_floatx_unpacked"](x, 2, 1)))


@pytest.mark.slow
def test_nvfp4_scales_have_the_size_scaled_mm_checks(mods):
    meta = pytest.importorskip("torch._meta_registrations")
    fn = getattr(meta, "_check_scaled_mm_sizes", None)
    if fn is None:
        pytest.skip("torch moved its _scaled_mm size check")
    m = mods["nvfp4_gemm"]
    inputs = m.make_inputs({"m": 256, "n": 128, "k": 160}, "cpu", 0)   # k/16 = 10 pads to 12
    out = fn(inputs["a_fp4"], inputs["b_fp4"].t(), inputs["a_scale_blocked"], inputs["b_scale_blocked"],
             out_dtype=torch.bfloat16)
    assert tuple(out.shape) == (256, 128)
    with pytest.raises(RuntimeError, match="blockwise"):
        fn(inputs["a_fp4"], inputs["b_fp4"].t(), inputs["a_scale"].flatten(), inputs["b_scale"].flatten(),
           out_dtype=torch.bfloat16)


@pytest.mark.slow
def test_nvfp4_is_skipped_on_hopper(monkeypatch):
    pair = pairs.find("ch09.nvfp4_gemm")
    hopper = Machine.of("gpu", "triton", "nvcc", "cutlass", gpu_name="NVIDIA H100")
    reason = runnable(pair, hopper).reason
    assert reason.startswith("needs sm_100") and "no Hopper equivalent" in reason and "sm_90" in reason
    assert runnable(pair, Machine.of("gpu", "triton", "nvcc", cc=(10, 0))).reason == ""
    with pytest.raises(RequirementError, match="needs sm_100.*no Hopper equivalent.*this GPU is sm_90") as err:
        runnable(pair, hopper).require()
    assert err.value.exit_code == 9
    for name in NEW_PAIRS[:-1]:            # every other new pair runs on Hopper
        assert runnable(pairs.find(f"ch09.{name}"), hopper).reason == ""


# --- Triton variants under the interpreter --------------------------------------------------

_TRITON_CPU_SCRIPT = """
import json, sys
from aisp_prof import pairs
from aisp_prof.collect.correctness import check
cases = json.loads(sys.argv[1])
print(json.dumps([check.check_pair(pairs.find(p), s, device="cpu", variants=["triton"]).to_dict()
                  for p, s in cases]))
"""


@pytest.mark.slow
@requires_triton
def test_triton_variants_pass_check_under_interpreter():
    # TRITON_INTERPRET must be set before triton is first imported: a fresh interpreter.
    cases = [("ch09.memory_bound", {"n": 10000}),            # partial last tile
             ("ch09.memory_bound", {"n": 8192}),             # exact tiles
             ("ch09.triton", {"rows": 8, "cols": 100}),      # one masked chunk
             ("ch09.triton", {"rows": 3, "cols": 20000})]    # > 16384: online-softmax chunks
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", _TRITON_CPU_SCRIPT, json.dumps(cases)], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for (name, sizes), result in zip(cases, results):
        assert result["passed"], (name, sizes, result)
        triton_checks = [c for c in result["checks"] if c["variant"] == "triton"]
        assert len(triton_checks) == 2
        assert all(c["poisoned"] and c["unwritten_elements"] == 0 for c in triton_checks)


@requires_triton
def test_softmax_launch_config(mods):
    cfg = mods["triton"].launch_config
    assert cfg(8192) == (8192, 1, 8)
    assert cfg(100) == (128, 1, 1)
    assert cfg(20000) == (4096, 5, 4)


# --- compiled_artifacts: the Triton kernel compiled for sm_90 without a GPU -----------------

@pytest.mark.slow
@requires_triton
def test_compiled_artifacts_ahead_of_time(mods):
    import triton

    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        pytest.skip("needs the Triton compiler, not the interpreter")
    m = mods["triton"]
    try:
        art = m.compiled_artifacts(m.make_inputs({"rows": 4, "cols": 8192}, "cpu", 0))
    except Exception as exc:  # no bundled ptxas/LLVM for this platform
        pytest.skip(f"triton {triton.__version__} cannot compile for sm_90 here: {exc}")
    assert art["source"] == "aot_sm90" and art["constants"] == {"BLOCK": 8192, "NUM_CHUNKS": 1}
    s = art["ptx_summary"]
    assert s["entries"] == ["_softmax_rows"] and s["target"].startswith("sm_90")
    assert s["global_loads_by_bytes"] == {16: 8} and s["global_stores_by_bytes"] == {16: 8}
    assert s["shfl_sync"] > 0 and s["ex2_approx"] > 0
    assert s["ld_local"] == s["st_local"] == 0
    if art["sass_summary"] is not None:
        assert art["sass_summary"]["ldg_128"] == 8 and art["sass_summary"]["stl"] == 0
    if art["registers"] is not None:
        assert 0 < art["registers"] <= 255


# --- aisp_prof.parse.code.ptx on real compiler output (tests/fixtures/ch09_ptx) ----------------

def test_summarize_triton_ptx():
    s = ptx.summarize_ptx((PTX_FIXTURES / "triton_softmax_sm90.ptx").read_text())
    assert s["entries"] == ["_softmax_rows"] and s["target"] == "sm_90a" and s["reqntid"] == [256]
    assert (s["ld_global_v4"], s["ld_global_v2"], s["ld_global_scalar"]) == (8, 0, 0)
    assert (s["st_global_v4"], s["st_global_scalar"]) == (8, 0)
    assert s["global_loads_by_bytes"] == {16: 8} and s["global_stores_by_bytes"] == {16: 8}
    assert s["shfl_sync"] == 16 and s["ex2_approx"] == 32 and s["bar_sync"] == 3
    assert (s["ld_shared"], s["st_shared"], s["ld_local"], s["st_local"]) == (2, 2, 0, 0)
    assert s["dynamic_shared"] and s["static_shared_bytes"] == 0
    assert s["wgmma"] == s["mma_sync"] == 0
    assert s["opcodes"]["ld.global.v4.b32"] == 8 and s["opcodes"]["shfl.sync.bfly.b32"] == 16
    assert s["instructions"] == sum(s["opcodes"].values())


def test_summarize_nvcc_ptx():
    s = ptx.summarize_ptx((PTX_FIXTURES / "tiny_sm90.ptx").read_text())
    assert s["entries"] == ["scale_v4", "warp_sum", "dynamic_index"] and s["target"] == "sm_90"
    assert s["opcodes"]["ld.global.nc.v4.f32"] == 1 and s["opcodes"]["st.global.v4.f32"] == 1
    assert s["global_loads_by_bytes"] == {4: 65, 16: 1}
    assert s["shfl_sync"] == 5                        # offsets 16, 8, 4, 2, 1
    assert s["ld_local"] == 2 and s["st_local"] == 17


def test_summarize_sass_both_formats():
    triton_fmt = ptx.summarize_sass((PTX_FIXTURES / "triton_softmax_sm90.sass").read_text())
    assert triton_fmt["ldg_by_bytes"] == {16: 8} and triton_fmt["stg_by_bytes"] == {16: 8}
    assert triton_fmt["shfl"] == 16 and triton_fmt["mufu_ex2"] == 32 and triton_fmt["mufu_rcp"] == 1
    assert triton_fmt["ldl"] == triton_fmt["stl"] == 0 and triton_fmt["hgmma"] == 0
    assert triton_fmt["instructions"] == 456
    cuobjdump_fmt = ptx.summarize_sass((PTX_FIXTURES / "tiny_sm90.sass").read_text())
    assert cuobjdump_fmt["ldg_by_bytes"] == {4: 65, 16: 1} and cuobjdump_fmt["stg_128"] == 1
    assert cuobjdump_fmt["opcodes"]["LDG.E.128.CONSTANT"] == 1
    assert cuobjdump_fmt["shfl"] == 5 and cuobjdump_fmt["stl"] == 17 and cuobjdump_fmt["ldl"] == 2


def test_parse_res_usage_both_tools():
    cu = ptx.parse_res_usage((PTX_FIXTURES / "triton_softmax_sm90.res_usage.txt").read_text())
    assert cu == {"_softmax_rows": {"registers": 50, "stack_bytes": 0, "shared_bytes": 1024,
                                    "local_bytes": 0, "constant0_bytes": 576}}
    v = ptx.parse_res_usage((PTX_FIXTURES / "tiny_sm90.ptxas.txt").read_text())
    assert set(v) == {"scale_v4", "warp_sum", "dynamic_index"}
    assert v["dynamic_index"]["stack_bytes"] == 256 and v["dynamic_index"]["registers"] == 32
    assert v["scale_v4"] == {"stack_bytes": 0, "spill_store_bytes": 0, "spill_load_bytes": 0, "registers": 14}


def test_ptx_parsing_edge_cases():
    text = """
    .version 8.0
    .target sm_90a
    .shared .align 16 .b8 tile[4096];
    .visible .entry k(.param .u64 p) .maxntid 128, 1, 1
    {
        /* block comment ld.global.f32 %f9, [%rd9]; */
        @!%p1 ld.global.v2.f32 {%f1, %f2}, [%rd1];   // trailing comment st.global.f32
        ld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2]; add.f32 %f3, %f1, %f2;
        wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f4}, %rd3, %rd4, 1, 1, 1, 0, 0;
    $L__BB0_1:
        ret;
    }
    """
    s = ptx.summarize_ptx(text)
    assert s["ld_global_v2"] == 1 and s["ld_global_v4"] == 1 and s["ld_global_scalar"] == 0
    assert s["global_loads_by_bytes"] == {8: 1, 16: 1}
    assert s["st_global_scalar"] == 0 and s["wgmma"] == 1 and s["instructions"] == 5
    assert s["maxntid"] == [128, 1, 1] and s["static_shared_bytes"] == 4096 and not s["dynamic_shared"]
    assert ptx.summarize_sass("")["instructions"] == 0


# --- GPU only -------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name,sizes", [
    ("memory_bound", {"n": 1 << 20}),
    ("compute_bound", {"m": 512, "n": 256, "k": 1024}),
    ("triton", {"rows": 64, "cols": 8192}),
    ("sdpa_attention", {"batch": 2, "heads": 4, "seq": 512, "head_dim": 128}),
    ("structured_sparsity", {"m": 1024, "n": 512, "k": 2048}),
    ("structured_sparsity_ffn", {"tokens": 1024, "hidden": 512, "ffn": 2048}),
])
def test_all_variants_pass_check_on_gpu(name, sizes):
    pair = pairs.find(f"ch09.{name}")
    have_triton = importlib.util.find_spec("triton") is not None
    names = runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=have_triton)
    check.raise_if_failed(check.check_pair(pair, sizes, device="cuda", variants=names))


@pytest.mark.gpu
@requires_triton
def test_compiled_artifacts_on_gpu(mods):
    m = mods["triton"]
    art = m.compiled_artifacts(m.make_inputs({"rows": 64, "cols": 8192}, "cuda", 0))
    assert art["source"] == "launch" and art["ptx_summary"]["global_loads_by_bytes"].get(16, 0) > 0
    assert art["spills"] == 0 and art["ptx_summary"]["ld_local"] == 0
