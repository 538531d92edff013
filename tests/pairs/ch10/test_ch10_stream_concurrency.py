"""ch10.stream_concurrency: imports cleanly, its formulas, inputs and fp32 margin add up, its CUDA
C++ builds for sm_90a without local memory and refuses bad arguments before touching CUDA, and
(GPU only) both variants match the float64 reference, the pool joins back into the caller's
stream, and it is freed with its closure.
"""
from __future__ import annotations

import ctypes
import gc

import pytest
from repo_paths import ROOT
from pair_testing import (assert_cpu_tensors_refused_before_any_build, ptxas_entries, requires_nvcc,
                          runnable_variants, sass_opcodes)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch10" / "stream_concurrency.py"
CU_PATH = PAIR_PATH.with_suffix(".cu")
NAME = "ch10.stream_concurrency"
VARIANTS = ["baseline", "streams32"]


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 10 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"segments": 128, "seg_len": 65536, "streams": 32}
    assert pair.requires.min_cc == pair.requires.max_cc == (9, 0) and mod.LIBRARY.arch == "sm_90a"
    assert pair.tolerance == 1e-5 and pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == VARIANTS
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == []
    for text in ("pipeline_3stage", "1.436x", "segments=8,seg_len=4096", "cudaStreamWaitEvent"):
        assert text in mod.__doc__


def test_flops_and_bytes_formulas(mod):
    d = mod.DEFAULT_SIZES
    assert mod.bytes(d) == 8 * 128 * 65536 == 67_108_864            # 32 MiB in, 32 MiB out
    assert mod.flops(d) == 32 * 128 * 65536
    assert mod.bytes({"segments": 3, "seg_len": 5}) == 120


def test_make_inputs_are_seeded_and_sizes_checked(mod):
    a, b, c = (mod.make_inputs(mod.SMALL_SIZES, "cpu", s) for s in (1, 1, 2))
    assert a["x"].shape == (8, 4096) and a["x"].dtype == torch.float32 and a["streams"] == 32
    assert torch.equal(a["x"], b["x"]) and not torch.equal(a["x"], c["x"])
    assert mod.make_inputs({"segments": 2, "seg_len": 3}, "cpu", 0)["streams"] == 32
    for bad in ({"segments": 0, "seg_len": 8}, {"segments": 2, "seg_len": 0},
                {"segments": 2, "seg_len": 8, "streams": 0}):
        with pytest.raises(ValueError):
            mod.make_inputs(bad, "cpu", 0)


@pytest.mark.slow
def test_reference_and_fp32_margin(mod):
    inputs = mod.make_inputs({"segments": 4, "seg_len": 1 << 16}, "cpu", 0)
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (4, 1 << 16)
    v = inputs["x"].double()
    for _ in range(8):
        v = torch.sin(v) * torch.cos(v) + torch.tanh(v / 2)
    assert torch.allclose(ref, v, rtol=0, atol=1e-15)
    v32 = inputs["x"].clone()
    for _ in range(8):
        v32 = mod.step(v32)
    assert v32.dtype == torch.float32
    assert float((v32.double() - ref).norm() / ref.norm()) < mod.PAIR.tolerance / 20


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_refuse_cpu_tensors_before_building(monkeypatch, mod, variant):
    assert_cpu_tensors_refused_before_any_build(monkeypatch, mod, variant, mod.SMALL_SIZES, match="CUDA tensor")


# --- the CUDA source ----------------------------------------------------------------------------

@pytest.mark.slow
@requires_nvcc
def test_builds_for_sm90a_without_local_memory(built):
    library, report = built
    compiled, frame_count = ptxas_entries(report)
    assert len(compiled) == 1
    assert frame_count == 1
    (ops,) = sass_opcodes(library).values()
    # sincospif + tanhf: polynomial FFMAs and MUFU, one load and one store per element, no local memory
    assert ops["LDL"] == ops["STL"] == 0 and ops["LDG.E.CONSTANT"] == 1 and ops["STG.E"] == 1
    assert ops["FFMA"] > 0 and not any(op.startswith(("LDS", "STS", "BAR")) for op in ops)


@pytest.mark.slow
@requires_nvcc
def test_entry_points_refuse_bad_arguments_before_any_cuda_call(built, mod):
    lib = ctypes.CDLL(str(built[0]))
    for name, (argtypes, restype) in mod.LIBRARY.functions.items():
        getattr(lib, name).argtypes, getattr(lib, name).restype = list(argtypes), restype
    invalid_value = 1
    handle = ctypes.c_void_p(1234)
    assert lib.aisp_stream_pool_create(0, ctypes.byref(handle)) == invalid_value and handle.value is None
    assert lib.aisp_stream_pool_create(1025, ctypes.byref(handle)) == invalid_value
    assert lib.aisp_stream_pool_create(4, None) == invalid_value
    assert lib.aisp_stream_pool_launch(None, 256, 256, 1, 1, None) == invalid_value
    assert lib.aisp_stream_pool_destroy(None) == invalid_value
    assert lib.aisp_stream_serial(None, 256, 1, 1, None) == invalid_value
    assert lib.aisp_stream_serial(256, 256, 1, -1, None) == invalid_value
    assert lib.aisp_stream_serial(256, 256, 4, 0, None) == 0          # nothing to launch


# --- GPU only --------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_nvcc
@pytest.mark.parametrize("sizes", [{"segments": 8, "seg_len": 4096, "streams": 32},   # fewer segments than streams
                                   {"segments": 70, "seg_len": 1000, "streams": 32},  # partial block, uneven round-robin
                                   {"segments": 128, "seg_len": 65536, "streams": 32}])
def test_both_variants_pass_check_on_gpu(sizes):
    check.raise_if_failed(check.check_pair(pairs.find(NAME), sizes, device="cuda"))


@pytest.mark.gpu
@requires_nvcc
def test_pool_joins_into_the_callers_stream_and_is_freed_with_the_closure(mod):
    inputs = mod.make_inputs({"segments": 64, "seg_len": 65536}, "cuda", 0)
    ref = mod.reference(inputs)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):       # a non-default caller's stream
        launch = mod.streams32(inputs)
        out = launch()
        copy = out.clone()              # queued on `side` after the join: must see every segment
    side.synchronize()
    assert float((copy.double() - ref).norm() / ref.norm()) < 1e-5
    finalizer = launch.pool_finalizer
    assert finalizer.alive and not finalizer.atexit
    del launch, out
    gc.collect()
    assert not finalizer.alive          # the streams and events were destroyed with the closure
