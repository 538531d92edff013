"""ch14.gpu_quantization: imports cleanly, formulas add up, make_inputs puts every row on a 1/8 grid
scaled by a power of two (exact scales, one element in eight on a .5 tie), the reference rounds
ties to even, the host round trip and the eager GPU ops match it bit for bit on a CPU (tolerance
0), the check rejects rounding half away from zero, a global scale and a scale one ulp low (what
Triton's approximate division can give), the compiled function is one graph and asks Inductor for
IEEE division, and gpu_compiled refuses CPU tensors before compiling. GPU tests: every variant is
exact at the small and the book's size; the baseline copies 2 x rows times and launches no
kernel, gpu launches 11 kernels and copies nothing, gpu_compiled at most 3 kernels.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import check_on_gpu, device_events_per_call, runnable_variants

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch14" / "gpu_quantization.py"
NAME = "ch14.gpu_quantization"
TINY = {"rows": 9, "cols": 333}


def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == ["baseline", "gpu", "gpu_compiled"]
    assert dict(pair.sizes) == {"rows": 16, "cols": 16384}                     # the book's
    assert dict(pair.small_sizes) == {"rows": 5, "cols": 1000}
    assert pair.requires.min_cc == (9, 0) and pair.tolerance == 0.0
    assert pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=True) == ["baseline", "gpu", "gpu_compiled"]
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=False) == ["baseline", "gpu"]
    for text in ("nccl_quantization", "11.334x", "Predicted profile", "Device-to-Host", "roundTiesToEven",
                 "div.full.f32", "launch.compiled"):
        assert text in mod.__doc__
    assert mod.COMPILE_OPTIONS["options"] == {"eager_numerics.division_rounding": True}
    assert mod.COMPILE_OPTIONS["fullgraph"] is True


def test_flops_and_bytes_formulas(mod):
    s = {"rows": 2, "cols": 3}
    assert mod.flops(s) == 24 and mod.bytes(s) == 9 * 6 + 8 == 62 and mod.pcie_bytes(s) == 48
    d = dict(mod.DEFAULT_SIZES)
    assert mod.bytes(d) == 9 * 262_144 + 64 == 2_359_360
    assert mod.pcie_bytes(d) == 2 * 16 * 16384 * 4 == 2_097_152               # 32 copies of 64 KB


def test_make_inputs_is_seeded_and_exactly_scaled(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    x = a["x"]
    assert x.dtype == torch.float32 and x.shape == (9, 333) and x.is_contiguous()
    assert torch.equal(x, b["x"]) and not torch.equal(x, c["x"])
    k = torch.arange(9, dtype=torch.float64) % 7 - 3
    amax = x.double().abs().amax(dim=1)
    assert torch.equal(amax, 127 * torch.exp2(k))                           # scales 2^-3 .. 2^3
    m = x.double() * 8 / torch.exp2(k).unsqueeze(1)
    assert torch.equal(m, m.round()) and float(m.abs().max()) == 1016
    ties = (m.remainder(8) == 4).double().mean()
    assert 0.08 < float(ties) < 0.17                                         # ~1 in 8 on a .5 tie
    with pytest.raises(ValueError, match="rows and cols"):
        mod.make_inputs({"rows": 0, "cols": 3}, "cpu", 0)


def test_reference_rounds_ties_to_even_with_a_per_row_scale(mod):
    x = torch.tensor([[127.0, 2.5, 3.5, -2.5, -0.5, 0.5, 1.5, -126.4],
                      [254.0, 5.0, 7.0, -1.0, 1.0, 3.0, 0.0, 253.0]])
    ref = mod.reference({"x": x})
    assert ref.dtype == torch.float64
    assert ref[0].tolist() == [127, 2, 4, -2, 0, 0, 2, -126]                 # scale 1: ties to even
    assert ref[1].tolist() == [254, 4, 8, 0, 0, 4, 0, 252]     # scale 1/2: 2.5 -> 2, 3.5 -> 4, 126.5 -> 126
    assert mod.reference({"x": torch.zeros(1, 4)}).abs().sum() == 0           # the amax floor: no NaN


@pytest.mark.slow
def test_the_compiled_function_writes_q_scales_and_y(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    x = inputs["x"]
    q, dscale, y = torch.empty_like(x, dtype=torch.int8), torch.empty(9, 1), torch.empty_like(x)
    mod._quantize_into(x, q, dscale, y)
    assert torch.equal(y.double(), mod.reference(inputs))
    assert torch.equal(dscale.squeeze(1).double(), torch.exp2(torch.arange(9.0) % 7 - 3).double())
    assert int(q.abs().max()) == 127 and torch.equal(q.float() * dscale, y)
    explained = torch._dynamo.explain(mod._quantize_into)(x, q, dscale, y)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [TINY, {"rows": 16, "cols": 16384}, {"rows": 1, "cols": 1}])
def test_host_and_eager_variants_are_exact_on_cpu(mod, sizes):
    pair = replace(pairs.find(NAME), variants={k: v for k, v in mod.PAIR.variants.items() if k != "gpu_compiled"})
    result = check.check_pair(pair, sizes, device="cpu")
    check.raise_if_failed(result)
    assert all(c.rel_err_vs_reference == 0.0 and c.poisoned for c in result.checks)


def test_gpu_variant_keeps_the_payload(mod):
    inputs = mod.make_inputs(TINY, "cpu", 1)
    launch = mod.optimized_gpu(inputs)
    y = launch()
    assert launch.quantized.dtype == torch.int8 and torch.equal(launch.quantized.float() * launch.scales, y)


def _wrong(kind):
    def factory(inputs):
        x = inputs["x"]
        y = torch.empty_like(x)

        def launch():
            amax = x.abs().amax(dim=1, keepdim=True)
            if kind == "global_scale":
                amax = amax.amax().expand_as(amax)
            scale = 127.0 / amax
            if kind == "scale_one_ulp_low":                  # what div.full.f32 may return
                scale = torch.nextafter(scale, torch.zeros_like(scale))
            v = x * scale
            q = torch.sign(v) * torch.floor(v.abs() + 0.5) if kind == "half_away" else torch.round(v)
            y.copy_(q.clamp(-127, 127) * (amax / 127.0))
            return y
        return launch
    return factory


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["half_away", "global_scale", "scale_one_ulp_low"])
def test_a_wrong_variant_is_rejected(mod, kind):
    bad = replace(pairs.find(NAME), variants={"baseline": mod.baseline, "wrong": _wrong(kind)})
    result = check.check_pair(bad, TINY, device="cpu")
    assert result.failed_variants == ["wrong"]


def test_gpu_compiled_refuses_cpu_tensors_before_compiling(mod, monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiled before checking the device"))
    with pytest.raises(RequirementError, match="CUDA tensors"):
        mod.optimized_gpu_compiled(mod.make_inputs(TINY, "cpu", 0))


# --- GPU ------------------------------------------------------------------------------------

def _activity(launch) -> tuple[list[str], list[str]]:
    """(kernel names, memcpy names) of one call, from torch.profiler's CUDA activities."""
    names = device_events_per_call(launch)
    copies = [n for n in names if "Memcpy" in n or "memcpy" in n]
    return [n for n in names if n not in copies and "Memset" not in n], copies


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_is_exact_on_gpu(mod, which):
    result = check_on_gpu(NAME, which)
    assert len(result.checks) == 6 and all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
def test_copies_and_kernels_per_call(mod):
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    compiled = mod.optimized_gpu_compiled(inputs)
    print(f"gpu_compiled compile + warm-up: {compiled.compile_seconds:.1f} s")
    (bk, bc), (gk, gc), (ck, cc) = (_activity(f) for f in (mod.baseline(inputs), mod.optimized_gpu(inputs), compiled))
    print("baseline:", bk, bc, "\ngpu:", gk, "\ngpu_compiled:", ck)
    assert len(bc) == 2 * 16 and bk == []
    assert 10 <= len(gk) <= 12 and gc == []                    # 11 ops; a scalar-tensor div may add or fuse one
    assert 1 <= len(ck) <= 3 and cc == []
