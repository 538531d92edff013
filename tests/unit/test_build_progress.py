"""The build cache, said in the progress lines: before a check, which CUDA sources nvcc must build
first (not in the content-hashed cache); after it, how long each build took (check.json `builds`)."""
from __future__ import annotations

from pathlib import Path


from aisp_kernels import build
from aisp_kernels.binding import CudaLibrary
from aisp_prof.collect.code.builds import build_lines, pending_builds, pending_line
from aisp_prof.pairs import KernelPair


LIBRARY = None      # set by the test: the pair's module global, as a pair module holds its CudaLibrary


def _variant(inputs):
    return LIBRARY


def test_a_library_not_in_the_cache_is_named_before_the_check_and_timed_after(fake_nvcc):
    global LIBRARY
    src = fake_nvcc / "k.cu"
    src.write_text('extern "C" int aisp_k() { return 1; }\n')
    LIBRARY = CudaLibrary(src, {}, arch="sm_90a")
    pair = KernelPair(name="t.build", chapter=0, lesson="", make_inputs=lambda s, d, seed: {},
                      variants={"baseline": _variant}, reference=lambda i: None, flops=lambda s: 0,
                      bytes=lambda s: 0)
    assert pending_builds(pair) == ["k.cu"] and "building k.cu first" in pending_line(pair)
    library = build.build_shared_library(src, "sm_90a")
    assert library == build.cached_target(src, "sm_90a") and pending_builds(pair) == [] and pending_line(pair) is None
    (built,) = build.BUILT
    assert built["source"] == "k.cu" and built["arch"] == "sm_90a" and built["seconds"] >= 0
    said = f"      built k.cu for sm_90a in {built['seconds']} s (cached for the next check)"
    assert build_lines(build.BUILT) == [said]
    build.build_shared_library(src, "sm_90a")                 # a cache hit is not a build
    assert len(build.BUILT) == 1 and Path(built["library"]) == library
