"""ch10.persistent_matmul_tma: imports cleanly (also without triton), formulas add up, the variants
refuse what they cannot take (no make_tensor_descriptor, CPU tensors without the interpreter,
TMA-misaligned rows), all three match the float64 reference under TRITON_INTERPRET=1 at ragged
sizes with several tiles per persistent program, and, compiled ahead of time for sm_90 (no GPU),
the baseline's PTX/SASS loads with cp.async (LDGSTS) while the persistent kernels build three
TMA descriptors on the device (384 bytes of global scratch) and move tiles with
cp.async.bulk.tensor (UTMALDG/UTMASTG), all on wgmma (HGMMA). GPU tests: every variant matches
at the small and the book's size, one kernel per call, grid = min(#SMs, tiles).
"""
from __future__ import annotations

import collections
import importlib.util
import json
import os
import re
import subprocess
import sys
import types
from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import (assert_every_variant_needs_triton_when_missing, check_on_gpu, device_events_per_call,
                          runnable_variants, triton_sass_opcodes)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "persistent_matmul_tma.py"
NAME = "ch10.persistent_matmul_tma"
VARIANTS = ["baseline", "persistent_tma", "persistent_tma_b200"]
TINY = {"m": 40, "n": 24, "k": 16}
requires_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton")
interpreting = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def test_imports_without_triton(monkeypatch):
    assert_every_variant_needs_triton_when_missing(monkeypatch, PAIR_PATH, "ch10_persistent_matmul_no_triton", TINY)


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"m": 4096, "n": 4096, "k": 4096}
    assert dict(pair.small_sizes) == {"m": 3000, "n": 2056, "k": 264}
    assert pair.requires.min_cc == (9, 0) and pair.requires.needs == ("triton",)
    assert pair.tolerance == 2e-3 and pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=True) == VARIANTS
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == []
    for text in ("1.275x", "set_allocator", "UTMALDG", "LDGSTS", "min(#SMs, tiles)", "Predicted profile"):
        assert text in mod.__doc__
    # the small size has more tiles than an H100 has SMs, so programs loop
    small = pair.small_sizes
    h = mod.HOPPER_PERSISTENT
    assert -(-small["m"] // h.block_m) * -(-small["n"] // h.block_n) > 132
    assert small["k"] % mod.TMA_ALIGN == small["n"] % mod.TMA_ALIGN == 0


def test_configs(mod):
    assert mod.BOOK_BASELINE == (128, 128, 64, 4, 3, 1)
    assert mod.B200_PERSISTENT == (128, 128, 64, 4, 5, 2)                 # the spec's B200 tune
    h = mod.HOPPER_PERSISTENT
    assert (h.block_m, h.block_n, h.num_warps) == (128, 256, 8)          # two 64 x 256 warpgroups
    smem = h.num_stages * (h.block_m + h.block_n) * h.block_k * 2 + h.block_m * h.block_n * 2
    assert smem <= 227 * 1024


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"m": 2, "n": 3, "k": 4}) == 48
    assert mod.bytes({"m": 2, "n": 3, "k": 4}) == 2 * (8 + 12 + 6) == 52
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == 137_438_953_472 and mod.bytes(d) == 100_663_296


def test_make_inputs_and_reference(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    assert a["a"].shape == (40, 16) and a["b"].shape == (16, 24) and a["a"].dtype == torch.float16
    for key in ("a", "b"):
        assert torch.equal(a[key], b[key]) and not torch.equal(a[key], c[key])
    ref = mod.PAIR.reference(a)
    assert ref.dtype == torch.float64 and torch.equal(ref, a["a"].double() @ a["b"].double())
    big = mod.make_inputs({"m": 64, "n": 64, "k": 4096}, "cpu", 0)
    assert 0.8 < float(mod.PAIR.reference(big).std()) < 1.2                 # C ~ N(0, 1) at any k


def test_programs_is_min_of_sms_and_tiles(mod):
    a = torch.empty(1, 1)
    assert mod.programs(a, 100) == mod.INTERPRETER_PROGRAMS == 3
    assert mod.programs(a, 2) == 2 and mod.programs(a, 0) == 1


@requires_triton
def test_variants_refuse_what_they_cannot_take(mod, monkeypatch):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    if not interpreting:
        for factory in mod.PAIR.variants.values():
            with pytest.raises(RequirementError, match="TRITON_INTERPRET"):
                factory(inputs)
    with pytest.raises(ValueError, match="multiples of 8"):
        mod.optimized_persistent_tma(mod.make_inputs({"m": 16, "n": 16, "k": 12}, "cpu", 0))
    monkeypatch.setattr(mod, "tl", types.SimpleNamespace())             # a triton without it
    for factory in (mod.optimized_persistent_tma, mod.optimized_persistent_tma_b200):
        with pytest.raises(RequirementError, match="make_tensor_descriptor"):
            factory(inputs)


@pytest.mark.slow
def test_a_wrong_variant_is_rejected(mod):
    def torch_gemm(inputs):
        a, b = inputs["a"], inputs["b"]
        c = torch.empty(a.shape[0], b.shape[1], dtype=torch.float16)
        return lambda: torch.mm(a, b, out=c)

    def drops_last_k_block(inputs):
        a, b = inputs["a"], inputs["b"]
        c = torch.empty(a.shape[0], b.shape[1], dtype=torch.float16)
        return lambda: torch.mm(a[:, :-64], b[:-64], out=c)

    bad = replace(pairs.find(NAME), variants={"baseline": torch_gemm, "wrong": drops_last_k_block})
    result = check.check_pair(bad, {"m": 64, "n": 64, "k": 4096}, device="cpu")
    assert result.failed_variants == ["wrong"]                       # error ~0.125 vs 2e-3


_INTERPRETER_SCRIPT = """
import json, sys
from aisp_prof import pairs
from aisp_prof.collect.correctness import check
pair = pairs.find("ch10.persistent_matmul_tma")
print(json.dumps([check.check_pair(pair, s, device="cpu").to_dict() for s in json.loads(sys.argv[1])]))
"""


@pytest.mark.slow
@requires_triton
def test_every_variant_passes_check_under_the_interpreter():
    # ragged m, n and k (out-of-bounds TMA boxes zero-filled, stores clipped); 5 and 9 tile rows
    # over 3 persistent programs; the second size spans several GROUP_M bands of the B200 tune
    sizes = [{"m": 600, "n": 136, "k": 72}, {"m": 1100, "n": 264, "k": 64}]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", _INTERPRETER_SCRIPT, json.dumps(sizes)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for result in json.loads(proc.stdout.strip().splitlines()[-1]):
        assert result["passed"], result
        assert {c["variant"] for c in result["checks"]} == set(VARIANTS)
        assert all(c["rel_err_vs_reference"] < 1e-3 for c in result["checks"])


# --- what the compiler makes of the kernels: sm_90, ahead of time, no GPU --------------------

_POINTERS = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}


def _compile(mod, kernel: str, cfg, extra: dict, cc: int = 90):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if kernel == "baseline":
        fn, ints = mod._tile_per_program_kernel, ["M", "N", "K", "stride_am", "stride_bk", "stride_cm"]
    else:
        fn, ints = mod._persistent_tma_kernel, ["M", "N", "K"]
    signature = {**_POINTERS, **{i: "i32" for i in ints}}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(signature))}   # what 4096^3 launches get
    constants = {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k, **extra}
    src = ASTSource(fn=triton.jit(fn), signature={**signature, **{c: "constexpr" for c in constants}},
                    constexprs=constants, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", cc, 32),
                          options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})


def _ptx_ops(compiled) -> collections.Counter:
    return collections.Counter(re.findall(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.:]*)", compiled.asm["ptx"], re.MULTILINE))


@pytest.fixture(scope="module")
def compiled(mod):
    pytest.importorskip("triton")
    if interpreting:
        pytest.skip("needs the Triton compiler, not the interpreter")
    try:
        return {"baseline": _compile(mod, "baseline", mod.BOOK_BASELINE, {}),
                "persistent_tma": _compile(mod, "persistent", mod.HOPPER_PERSISTENT,
                                           {"GROUP_M": 8, "PROGRAMS": 132}),
                "persistent_tma_b200": _compile(mod, "persistent", mod.B200_PERSISTENT,
                                                {"GROUP_M": 2, "PROGRAMS": 132})}
    except Exception as exc:  # no bundled ptxas for this platform
        pytest.skip(f"triton cannot compile for sm_90 here: {exc}")


@pytest.mark.slow
def test_baseline_loads_with_cp_async_and_multiplies_with_wgmma(compiled):
    ops = _ptx_ops(compiled["baseline"])
    assert sum(n for op, n in ops.items() if op.startswith("cp.async.cg.shared.global")) > 0
    assert ops["wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"] > 0
    assert not [o for o in ops if "bulk" in o or "tensormap" in o]
    assert getattr(compiled["baseline"].metadata, "global_scratch_size", 0) == 0
    sass = triton_sass_opcodes(compiled["baseline"])
    if sass is not None:
        assert any(o.startswith("LDGSTS") for o in sass)
        assert any(o.startswith("HGMMA") for o in sass) and not any(o.startswith("UTMA") for o in sass)


@pytest.mark.slow
@pytest.mark.parametrize("variant,wgmma_n", [("persistent_tma", 256), ("persistent_tma_b200", 128)])
def test_persistent_kernels_build_descriptors_and_move_tiles_by_tma(compiled, variant, wgmma_n):
    kernel = compiled[variant]
    ops = _ptx_ops(kernel)

    def count(prefix: str) -> int:      # PTX spellings vary across triton versions after the prefix
        return sum(n for op, n in ops.items() if op.startswith(prefix))

    assert count("tensormap.replace.tile.global_address") == 3                  # A, B, C descriptors
    assert count("cp.async.bulk.tensor.2d.shared::") > 0                         # TMA loads
    assert count("cp.async.bulk.tensor.2d.global.shared::") > 0                  # TMA stores
    assert ops[f"wgmma.mma_async.sync.aligned.m64n{wgmma_n}k16.f32.f16.f16"] > 0
    assert count("cp.async.cg") == count("ld.global") == 0                       # no pointer loads
    assert kernel.metadata.global_scratch_size >= 3 * 128      # why triton.set_allocator is needed
    assert kernel.metadata.shared <= 227 * 1024
    sass = triton_sass_opcodes(kernel)
    if sass is not None:
        assert any(o.startswith("UTMALDG") for o in sass) and any(o.startswith("UTMASTG") for o in sass)
        assert any(o.startswith("HGMMA") for o in sass) and not any(o.startswith("LDGSTS") for o in sass)
        assert sass["STL"] == sass["LDL"] == 0                   # no spills


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(which):
    result = check_on_gpu(NAME, which)
    assert {c.variant for c in result.checks} == set(VARIANTS)


@pytest.mark.gpu
def test_one_kernel_per_call_and_one_program_per_sm(mod):
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert mod.programs(inputs["a"], 512) == min(sms, 512)
    for name, factory in mod.PAIR.variants.items():
        launch = factory(inputs)
        kernels = device_events_per_call(launch)
        print(name, kernels)
        assert len(kernels) == 1, (name, kernels)
