"""ch14.cuda_python: imports cleanly (without cuda-python too), formulas add up, launch_shape picks
the widest load the row and the pointers allow, the baseline matches the float64 reference on a
CPU (with the book's weight = 1, bias = 0 and with random ones) and the tolerance rejects a mask
applied the wrong way, a missing residual or a dropped bias; the GPU variants refuse CPU tensors
before compiling, a missing cuda-python or libnvrtc is a RequirementError with the pip command.
Where cuda-python and libnvrtc are installed (no GPU needed), NVRTC compiles cuda_python.cu for
sm_90 and the CUBIN's SASS is read back: one kernel, 16-byte loads and stores (LDG.E.128 /
STG.E.128) for rows of 8k values and 2-byte ones for odd rows, warp-shuffle reductions, no local
memory, and no flush-to-zero (no --use_fast_math; the fast-math build has it, so the check can
fail). GPU tests: every variant matches at the small, the book's and ragged sizes; 4 kernels -> 1.
"""
from __future__ import annotations

import importlib.util
import sys
import types
from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, device_events_per_call, runnable_variants, sass_opcodes

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import BuildError, RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch14" / "cuda_python.py"
NAME = "ch14.cuda_python"
TINY = {"batch": 2, "seq": 7, "hidden": 72}


def _have_nvrtc() -> bool:
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
        return False
    try:
        from cuda.bindings import nvrtc

        nvrtc.nvrtcVersion()
    except Exception:
        return False
    return True


requires_nvrtc = pytest.mark.skipif(not _have_nvrtc(), reason="needs cuda-python and libnvrtc "
                                    "(pip install cuda-python nvidia-cuda-nvrtc)")


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == ["baseline", "nvrtc", "inductor"]
    assert dict(pair.sizes) == {"batch": 64, "seq": 2048, "hidden": 4096}       # the book's
    assert dict(pair.small_sizes) == {"batch": 2, "seq": 45, "hidden": 1000}
    assert pair.requires.min_cc == (9, 0) and pair.tolerance == 1e-3
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=True) == ["baseline", "nvrtc", "inductor"]
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == ["baseline"]
    for text in ("2.184x", "--use_fast_math", "Predicted profile", "LDG.E.128", "cuLaunchKernel",
                 "pip install cuda-python", "tanh", "launch.cubin"):
        assert text in mod.__doc__
    assert mod.SOURCE.is_file() and mod.SOURCE.name == "cuda_python.cu"


def test_flops_and_bytes_formulas(mod):
    s = {"batch": 2, "seq": 3, "hidden": 4}
    assert mod.flops(s) == 15 * 24 == 360
    assert mod.bytes(s) == 4 * 24 + 6 + 16 == 118
    assert mod.baseline_bytes(s) == 18 * 24 + 6 + 16 == 454
    d = dict(mod.DEFAULT_SIZES)
    assert mod.bytes(d) == 2_147_631_104                                  # x and y: 2 x 1 GiB
    assert round(mod.baseline_bytes(d) / mod.bytes(d), 2) == 4.5


@pytest.mark.parametrize("hidden,alignment,shape", [
    (4096, 16, (8, 256, 2)), (1000, 16, (8, 128, 1)), (999, 16, (1, 256, 4)), (4096, 4, (2, 256, 8)),
    (6, 16, (2, 32, 1)), (32768, 16, (8, 256, 16)), (72, 16, (8, 32, 1))])
def test_launch_shape(mod, hidden, alignment, shape):
    assert mod.launch_shape(hidden, alignment) == shape


def test_launch_shape_refuses_rows_that_do_not_fit(mod):
    for hidden in (32776, 4097 * 2 + 1, 0):
        with pytest.raises(ValueError, match="hidden"):
            mod.launch_shape(hidden)
    with pytest.raises(ValueError, match="hidden"):
        mod.make_inputs({"batch": 1, "seq": 1, "hidden": 40000}, "cpu", 0)


def test_make_inputs_is_seeded(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    assert a["x"].dtype == torch.float16 and a["x"].shape == (2, 7, 72) and a["mask"].dtype == torch.bool
    assert torch.equal(a["x"], b["x"]) and torch.equal(a["mask"], b["mask"]) and not torch.equal(a["x"], c["x"])
    assert torch.equal(a["weight"], torch.ones(72, dtype=torch.float16)) and not a["bias"].any()
    big = mod.make_inputs({"batch": 4, "seq": 1000, "hidden": 8}, "cpu", 0)["mask"]
    assert 0.65 < float(big.float().mean()) < 0.75                       # rand > 0.3


def _affine(make_inputs):
    """make_inputs with random weight ~ 1 + N(0, 0.1^2) and bias ~ N(0, 0.1^2) (fp16)."""
    def wrapped(sizes, device, seed):
        inputs = make_inputs(sizes, device, seed)
        gen = torch.Generator(device=device).manual_seed(seed + 1000)
        hidden = sizes["hidden"]
        inputs["weight"] = (1 + 0.1 * torch.randn(hidden, generator=gen, device=device)).half()
        inputs["bias"] = (0.1 * torch.randn(hidden, generator=gen, device=device)).half()
        return inputs
    return wrapped


def test_reference_is_layernorm_erf_gelu_mask_residual(mod):
    inputs = _affine(mod.make_inputs)(TINY, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (2, 7, 72)
    x = inputs["x"].double()
    n = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
    n = n * inputs["weight"].double() + inputs["bias"].double()
    gelu = 0.5 * n * (1 + torch.erf(n / 2 ** 0.5))
    keep = inputs["mask"].unsqueeze(-1)
    assert torch.allclose(ref, torch.where(keep, gelu, 0.0) + x, rtol=0, atol=1e-12)
    assert torch.equal(ref[~inputs["mask"]], x[~inputs["mask"]])          # dropped rows: x itself


@pytest.mark.slow
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("sizes", [TINY, {"batch": 2, "seq": 45, "hidden": 1000}])
def test_baseline_passes_check_on_cpu(mod, sizes, affine):
    pair = replace(pairs.find(NAME), variants={"baseline": mod.baseline},
                   make_inputs=_affine(mod.make_inputs) if affine else mod.make_inputs)
    result = check.check_pair(pair, sizes, device="cpu")
    check.raise_if_failed(result)
    assert max(c.rel_err_vs_reference for c in result.checks) < 4e-4     # the docstring's 2.5e-4


def _wrong(kind):
    F = torch.nn.functional

    def factory(inputs):
        x, w, b, mask = inputs["x"], inputs["weight"], inputs["bias"], inputs["mask"]
        out = torch.empty_like(x)

        def launch():
            n = F.layer_norm(x.float(), (x.shape[-1],), w.float(), None if kind == "no_bias" else b.float(), 1e-5)
            keep = (~mask if kind == "mask_inverted" else mask).unsqueeze(-1)
            y = torch.where(keep, F.gelu(n), 0.0)
            out.copy_(y if kind == "no_residual" else y + x.float())
            return out
        return launch
    return factory


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mask_inverted", "no_residual", "no_bias"])
def test_a_wrong_variant_is_rejected(mod, kind):
    bad = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": _wrong(kind)},
                  make_inputs=_affine(mod.make_inputs))
    result = check.check_pair(bad, TINY, device="cpu")
    assert result.failed_variants == ["wrong"]


def test_gpu_variants_refuse_cpu_tensors_before_compiling(mod, monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiled before checking the device"))
    monkeypatch.setattr(mod, "compile_cubin", lambda *a, **k: pytest.fail("NVRTC ran before checking the device"))
    monkeypatch.setattr(mod, "_bindings", lambda: pytest.fail("looked for cuda-python before checking the device"))
    inputs = mod.make_inputs(TINY, "cpu", 0)
    for name in ("nvrtc", "inductor"):
        with pytest.raises(RequirementError, match="CUDA tensors"):
            mod.PAIR.variants[name](inputs)


def test_missing_bindings_are_a_requirement_with_the_pip_command(mod, monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    with pytest.raises(RequirementError, match="pip install cuda-python"):
        mod._bindings()


def test_missing_libnvrtc_is_a_requirement_with_the_pip_command(mod, monkeypatch):
    def not_found():
        raise RuntimeError('Failure finding "libnvrtc.so.13"')

    cuda = types.ModuleType("cuda")
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = types.SimpleNamespace()
    bindings.nvrtc = types.SimpleNamespace(nvrtcVersion=not_found)
    cuda.bindings = bindings
    monkeypatch.setitem(sys.modules, "cuda", cuda)
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    with pytest.raises(RequirementError, match="pip install nvidia-cuda-nvrtc"):
        mod._bindings()


def test_nvrtc_options_carry_the_shape_and_no_fast_math(mod):
    opts = mod.nvrtc_options(4096, "sm_90")
    assert opts[0] == "--gpu-architecture=sm_90"
    assert {"-DHIDDEN=4096", "-DVEC=8", "-DTHREADS=256", "-DITEMS=2", "-lineinfo"} <= set(opts)
    assert not any("fast_math" in o or "fast-math" in o for o in opts)
    assert "-DVEC=1" in mod.nvrtc_options(999, "sm_90")


# --- the CUBIN NVRTC makes (no GPU needed) ------------------------------------------------------

@pytest.fixture(scope="module")
def sass(mod, tmp_path_factory):
    """{(hidden, fast_math): Counter of the kernel's SASS opcodes} for sm_90."""
    if not _have_nvrtc():
        pytest.skip("needs cuda-python and libnvrtc (pip install cuda-python nvidia-cuda-nvrtc)")
    out = {}
    for hidden, fast in ((4096, False), (999, False), (4096, True)):
        path = tmp_path_factory.mktemp("cubin") / f"k{hidden}_{int(fast)}.cubin"
        path.write_bytes(mod.compile_cubin(mod.nvrtc_options(hidden, "sm_90") + (["--use_fast_math"] if fast else [])))
        functions = sass_opcodes(path)
        assert list(functions) == [mod.KERNEL]                          # one kernel, the exported name
        out[hidden, fast] = functions[mod.KERNEL]
    return out


@requires_nvrtc
def test_rows_of_8k_values_move_in_16_byte_loads_and_stores(sass):
    ops = sass[4096, False]
    assert ops["LDG.E.128.CONSTANT"] == 6                               # x, weight, bias: 2 per thread each
    assert ops["STG.E.128"] >= 2 and ops["LDG.E.U8.CONSTANT"] == 1        # y; the row's keep byte
    assert not [op for op in ops if op.startswith(("LDG.E.U16", "STG.E.U16"))]
    assert ops["SHFL.BFLY"] == 10 and ops["BAR.SYNC.DEFER_BLOCKING"] == 4 and ops["MUFU.RSQ"] == 1


@requires_nvrtc
def test_odd_rows_fall_back_to_2_byte_accesses(sass):
    ops = sass[999, False]
    assert not [op for op in ops if op.startswith(("LDG", "STG")) and ".128" in op]
    assert ops["LDG.E.U16.CONSTANT"] >= 3 * 4 and ops["STG.E.U16"] >= 4


@requires_nvrtc
def test_no_local_memory_and_no_fast_math(sass):
    for key, ops in sass.items():
        assert not [op for op in ops if op.startswith(("LDL", "STL"))], key     # no spills
    assert not [op for op in sass[4096, False] if ".FTZ" in op]
    assert [op for op in sass[4096, True] if ".FTZ" in op]                   # what --use_fast_math adds


@requires_nvrtc
def test_an_nvrtc_error_is_a_build_error_with_the_log(mod):
    with pytest.raises(BuildError, match="HIDDEN|identifier"):
        mod.compile_cubin(["--gpu-architecture=sm_90", "-DVEC=8", "-DTHREADS=32", "-DITEMS=1"])


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(mod, which):
    result = check_on_gpu(NAME, which)
    assert len(result.checks) == 6


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [{"batch": 3, "seq": 5, "hidden": 999}, {"batch": 1, "seq": 300, "hidden": 6},
                                   {"batch": 2, "seq": 33, "hidden": 32768}])
def test_ragged_rows_and_random_affine_match_on_gpu(mod, sizes):
    pair = replace(pairs.find(NAME), make_inputs=_affine(mod.make_inputs))
    check.raise_if_failed(check.check_pair(pair, sizes, device="cuda", variants=["nvrtc"]))


@pytest.mark.gpu
def test_misaligned_rows_take_narrower_loads(mod):
    inputs = mod.make_inputs({"batch": 2, "seq": 9, "hidden": 4096}, "cuda", 0)
    storage = torch.empty(inputs["x"].numel() + 1, device="cuda", dtype=torch.float16)
    inputs["x"] = storage[1:].view_as(inputs["x"]).copy_(inputs["x"])          # 2-byte aligned
    launch = mod.optimized_nvrtc(inputs)
    assert "-DVEC=1" in launch.nvrtc_options
    y = launch().double()
    ref = mod.reference(inputs)
    assert float((y - ref).norm() / ref.norm()) < 1e-3


@pytest.mark.gpu
def test_four_kernels_become_one(mod):
    inputs = mod.make_inputs(mod.SMALL_SIZES, "cuda", 0)
    base, fused, inductor = (mod.PAIR.variants[v](inputs) for v in ("baseline", "nvrtc", "inductor"))
    print(f"NVRTC compile + load: {fused.compile_seconds:.2f} s, inductor compile: {inductor.compile_seconds:.1f} s")
    kernels = {name: device_events_per_call(f) for name, f in (("baseline", base), ("nvrtc", fused), ("inductor", inductor))}
    print(kernels)
    assert len(kernels["baseline"]) == 4
    assert kernels["nvrtc"] == [mod.KERNEL]
    assert 1 <= len(kernels["inductor"]) <= 2
