"""ch14.triton_persistent: imports cleanly (also without triton), formulas and tile counts add up,
the integer inputs make every variant exact, the variants refuse what they cannot take, all three
match the float64 reference exactly under TRITON_INTERPRET=1 at ragged sizes (and a small config
with several GROUP_M bands), a persistent launch that leaves tiles unwritten or drops a k block is
rejected, and, compiled ahead of time for sm_90 (no GPU), the baseline is a 2-D grid of one tile
per program while the persistent kernels loop over tiles with a stride of #SMs around the k loop;
the book's 32 x 32 tiles run mma.sync (HMMA) on cp.async loads, the 128 x 128 retune wgmma (HGMMA).
GPU tests: every variant matches at the small and the book's size; 64 kernels per call against 1.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import replace

import pytest
from repo_paths import ROOT
from pair_testing import (assert_every_variant_needs_triton_when_missing, check_on_gpu, device_events_per_call,
                          runnable_variants, triton_sass_opcodes)

torch = pytest.importorskip("torch")

from aisp_prof import pairs  # noqa: E402
from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.errors import RequirementError  # noqa: E402

PAIR_PATH = ROOT / "kernels" / "ch14" / "triton_persistent.py"
NAME = "ch14.triton_persistent"
VARIANTS = ["baseline", "persistent", "persistent_128"]
TINY = {"batch": 2, "m": 40, "n": 24, "k": 16}
requires_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton")
interpreting = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def test_imports_without_triton(monkeypatch):
    assert_every_variant_needs_triton_when_missing(monkeypatch, PAIR_PATH, "ch14_triton_persistent_no_triton", TINY)


@pytest.mark.slow
def test_pair_is_discovered_with_its_contract(mod):
    pair = pairs.find(NAME)
    assert pair.chapter == 14 and list(pair.variants) == VARIANTS
    assert dict(pair.sizes) == {"batch": 64, "m": 256, "n": 256, "k": 256}            # the book's
    assert pair.requires.min_cc == (9, 0) and pair.requires.needs == ("triton",)
    assert pair.tolerance == 1e-6 and pair.lesson and "\n" not in pair.lesson
    assert runnable_variants(pair, have_gpu=True, have_nvcc=False, have_triton=True) == VARIANTS
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == []
    for text in ("6.088x", "64 -> 1", "float(out.sum())", "HMMA", "HGMMA", "Predicted profile"):
        assert text in mod.__doc__
    small = pair.small_sizes
    assert all(small[d] % 32 for d in ("m", "n", "k"))                                  # ragged everywhere


def test_configs_and_tile_counts(mod):
    assert mod.BOOK == (32, 32, 32, 4, 2, 8)                       # the spec's commit, both sides
    assert mod.LATER_TUNE == (128, 128, 64, 8, 3, 8)               # upstream's later GB300 tune
    d = dict(mod.DEFAULT_SIZES)
    assert mod.tiles(d, mod.BOOK) == 64 * 8 * 8 == 4096 and mod.tiles(d, mod.LATER_TUNE) == 256
    a = torch.empty(1)
    assert mod.programs(a, 4096) == mod.INTERPRETER_PROGRAMS == 3 and mod.programs(a, 2) == 2


def test_flops_and_bytes_formulas(mod):
    assert mod.flops({"batch": 2, "m": 2, "n": 3, "k": 4}) == 96
    assert mod.bytes({"batch": 2, "m": 2, "n": 3, "k": 4}) == 2 * 2 * (8 + 12 + 6) == 104
    d = dict(mod.DEFAULT_SIZES)
    assert mod.flops(d) == 2_147_483_648 and mod.bytes(d) == 25_165_824


def test_inputs_are_small_integers_and_the_reference_is_exact(mod):
    a, b, c = (mod.make_inputs(TINY, "cpu", s) for s in (7, 7, 8))
    assert a["a"].shape == (2, 40, 16) and a["b"].shape == (2, 16, 24) and a["a"].dtype == torch.float16
    for key in ("a", "b"):
        assert torch.equal(a[key], b[key]) and not torch.equal(a[key], c[key])
        assert set(a[key].unique().tolist()) == {-2.0, -1.0, 0.0, 1.0, 2.0}
    ref = mod.PAIR.reference(a)
    assert ref.dtype == torch.float64 and torch.equal(ref, torch.bmm(a["a"].double(), a["b"].double()))
    big = mod.make_inputs({"batch": 1, "m": 64, "n": 64, "k": 512}, "cpu", 0)
    c16 = torch.bmm(big["a"].float(), big["b"].float()).half()            # fp32 sums, fp16 C: exact
    assert torch.equal(c16.double(), mod.PAIR.reference(big))
    with pytest.raises(ValueError, match="k <= 512"):
        mod.make_inputs({**TINY, "k": 520}, "cpu", 0)


@requires_triton
def test_variants_refuse_what_they_cannot_take(mod):
    inputs = mod.make_inputs(TINY, "cpu", 0)
    if not interpreting:
        for factory in mod.PAIR.variants.values():
            with pytest.raises(RequirementError, match="TRITON_INTERPRET"):
                factory(inputs)
    with pytest.raises(ValueError, match="inner dimensions"):
        mod.baseline({"a": inputs["a"], "b": inputs["b"][:, :8].contiguous()})
    with pytest.raises(ValueError, match="contiguous 3-D float16"):
        mod.optimized_persistent({"a": inputs["a"].float(), "b": inputs["b"]})


_INTERPRETER_SCRIPT = """
import json, sys
from dataclasses import replace
from aisp_prof import pairs
from aisp_prof.collect.correctness import check
from aisp_prof.pairs.discovery import _load_module
pair = pairs.find("ch14.triton_persistent")
mod = _load_module(__import__("pathlib").Path(pair.source))
banded = mod._persistent(mod.TileConfig(16, 16, 16, 4, 1, group_m=2), "banded")
def skips_last_program(inputs):            # one program short: its tiles are never written
    launch = mod.optimized_persistent(inputs)
    kernel = mod.triton_helpers.jit(mod._persistent_kernel, True)
    a, b = inputs["a"], inputs["b"]
    (batch, m, k), n = a.shape, b.shape[2]
    c = launch()
    def short():
        kernel[(launch.programs - 1,)](a, b, c, batch, m, n, k, m * k, k, k * n, n, m * n, n, BLOCK_M=32,
                                        BLOCK_N=32, BLOCK_K=32, GROUP_M=8, PROGRAMS=launch.programs)
        return c
    return short
def drops_a_k_block(inputs):
    return mod.optimized_persistent({"a": inputs["a"][:, :, :-32].contiguous(), "b": inputs["b"][:, :-32].contiguous()})
out = [check.check_pair(pair, s, device="cpu").to_dict() for s in json.loads(sys.argv[1])]
extra = replace(pair, variants={"baseline": pair.baseline, "banded": banded, "short": skips_last_program,
                                "drops_k": drops_a_k_block})
out.append(check.check_pair(extra, {"batch": 2, "m": 72, "n": 40, "k": 40}, device="cpu", trials=1).to_dict())
print(json.dumps(out))
"""


@pytest.mark.slow
@requires_triton
def test_every_variant_is_exact_under_the_interpreter_and_wrong_ones_fail():
    # ragged m, n, k; 3 x 3 x 2 = 18 tiles of 32 over 3 persistent programs; the extra check runs a
    # 16 x 16 config with GROUP_M 2 over 5 tile rows (bands of 2, 2, 1) and two broken launches
    sizes = [{"batch": 3, "m": 72, "n": 40, "k": 40}]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", _INTERPRETER_SCRIPT, json.dumps(sizes)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    *results, extra = json.loads(proc.stdout.strip().splitlines()[-1])
    for result in results:
        assert result["passed"], result
        assert {c["variant"] for c in result["checks"]} == set(VARIANTS)
        assert all(c["rel_err_vs_reference"] == 0.0 for c in result["checks"])
    assert extra["failed_variants"] == ["short", "drops_k"], extra
    short = next(c for c in extra["checks"] if c["variant"] == "short")
    assert short["unwritten_elements"] > 0                               # the NaN poison shows the gap
    banded = next(c for c in extra["checks"] if c["variant"] == "banded")
    assert banded["rel_err_vs_reference"] == 0.0


# --- what the compiler makes of the kernels: sm_90, ahead of time, no GPU --------------------

def _compile(mod, persistent: bool, cfg, programs: int = 132):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if persistent:
        fn, extra = mod._persistent_kernel, {"GROUP_M": cfg.group_m, "PROGRAMS": programs}
        ints = ["BATCH", "M", "N", "K", "stride_ab", "stride_am", "stride_bb", "stride_bk", "stride_cb", "stride_cm"]
    else:
        fn, extra, ints = mod._tile_kernel, {}, ["M", "N", "K", "stride_am", "stride_bk", "stride_cm"]
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **{i: "i32" for i in ints}}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(signature))}     # what 256^3 launches get
    constants = {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k, **extra}
    src = ASTSource(fn=triton.jit(fn), signature={**signature, **{c: "constexpr" for c in constants}},
                    constexprs=constants, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})


@pytest.fixture(scope="module")
def compiled(mod):
    pytest.importorskip("triton")
    if interpreting:
        pytest.skip("needs the Triton compiler, not the interpreter")
    try:
        return {"baseline": _compile(mod, False, mod.BOOK), "persistent": _compile(mod, True, mod.BOOK),
                "persistent_128": _compile(mod, True, mod.LATER_TUNE)}
    except Exception as exc:  # no bundled ptxas for this platform
        pytest.skip(f"triton cannot compile for sm_90 here: {exc}")


def _loops(kernel) -> list[str]:
    return re.findall(r"scf\.for %\w+ = %\w+ to %\w+ step %(\w+)", kernel.asm["ttir"])


def test_baseline_is_one_tile_per_program_on_a_2d_grid(compiled):
    kernel = compiled["baseline"]
    assert _loops(kernel) == ["c32_i32"]                             # the k loop only
    assert "%ctaid.y" in kernel.asm["ptx"]


@pytest.mark.parametrize("variant", ["persistent", "persistent_128"])
def test_persistent_kernels_loop_over_tiles_with_a_stride_of_the_grid(compiled, variant):
    kernel = compiled[variant]
    loops = _loops(kernel)
    assert loops[0] == "c132_i32" and len(loops) == 2               # tile loop (step = programs) around k
    assert "%ctaid.y" not in kernel.asm["ptx"]


@pytest.mark.slow
def test_book_tiles_run_mma_sync_and_the_retune_runs_wgmma(compiled):
    sass = {name: triton_sass_opcodes(kernel) for name, kernel in compiled.items()}
    if sass["baseline"] is None:
        pytest.skip("needs triton's cuobjdump to read the SASS")
    for name in ("baseline", "persistent"):
        ops = sass[name]
        assert ops["HMMA.16816.F32"] == 4 and not any(o.startswith("HGMMA") for o in ops)   # one 32-deep k step
        assert any(o.startswith("LDGSTS") for o in ops)                                      # cp.async, 2 stages
    big = sass["persistent_128"]
    assert any(o.startswith("HGMMA.64") for o in big) and big["WARPGROUP.ARRIVE"] >= 1
    assert not any(o.startswith("HMMA") for o in big)
    for name, ops in sass.items():
        assert ops["STL"] == ops["LDL"] == 0, name                                           # no spills
    assert compiled["persistent_128"].metadata.shared <= 227 * 1024


# --- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("which", ["small", "default"])
def test_every_variant_matches_the_reference_on_gpu(which):
    result = check_on_gpu(NAME, which)
    assert {c.variant for c in result.checks} == set(VARIANTS)
    assert all(c.rel_err_vs_reference == 0.0 for c in result.checks)


@pytest.mark.gpu
def test_64_kernels_per_call_against_one(mod):
    inputs = mod.make_inputs(mod.DEFAULT_SIZES, "cuda", 0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    counts = {}
    for name, factory in mod.PAIR.variants.items():
        launch = factory(inputs)
        kernels = device_events_per_call(launch)
        counts[name] = len(kernels)
        if name != "baseline":
            assert launch.programs == min(sms, mod.tiles(mod.DEFAULT_SIZES, mod.BOOK if name == "persistent"
                                                           else mod.LATER_TUNE))
    print(torch.cuda.get_device_name(), counts)
    assert counts == {"baseline": 64, "persistent": 1, "persistent_128": 1}


def test_a_variant_that_skips_a_matrix_is_rejected(mod):
    def torch_bmm(inputs):
        c = torch.empty(inputs["a"].shape[0], inputs["a"].shape[1], inputs["b"].shape[2], dtype=torch.float16)
        return lambda: torch.bmm(inputs["a"], inputs["b"], out=c)

    def skips_last(inputs):
        c = torch.empty(inputs["a"].shape[0], inputs["a"].shape[1], inputs["b"].shape[2], dtype=torch.float16)
        return lambda: (torch.bmm(inputs["a"][:-1], inputs["b"][:-1], out=c[:-1]), c)[1]

    bad = replace(pairs.find(NAME), variants={"baseline": torch_bmm, "wrong": skips_last})
    result = check.check_pair(bad, {"batch": 3, "m": 16, "n": 16, "k": 16}, device="cpu")
    assert result.failed_variants == ["wrong"]
    assert all(c.unwritten_elements == 16 * 16 for c in result.checks if c.variant == "wrong")
