"""aisp_kernels.binding: a described library is built only on first use, its signatures are set,
and a non-zero cudaError return becomes a RuntimeError that names the function and the error.

The build tests compile a tiny real .cu with nvcc (no GPU: the library links cudart statically,
so it loads and cudaGetErrorString answers on a CPU-only machine) and skip without nvcc.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
from pair_testing import record_library_loads, requires_nvcc

from aisp_kernels import binding, build

TINY_CU = r"""
#include <cuda_runtime.h>

extern "C" int aisp_echo_error(int code) { return code; }          // a cudaError_t, as the pairs return
extern "C" double aisp_half(double x) { return x / 2; }            // needs argtypes and restype to work
extern "C" const char* aisp_cuda_error_string(int err) {
  return cudaGetErrorString(static_cast<cudaError_t>(err));
}
extern "C" const char* aisp_other_error_string(int err) { return err ? "custom failure" : "no error"; }
"""

FUNCTIONS = {"aisp_echo_error": ((ctypes.c_int,), ctypes.c_int),
             "aisp_half": ((ctypes.c_double,), ctypes.c_double)}


@pytest.fixture(scope="module")
def tiny_cu(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("binding")
    source = root / "tiny_binding.cu"
    source.write_text(TINY_CU)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AISP_BUILD_DIR", str(root / "build"))
        yield source


def test_describing_a_library_builds_nothing(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("describing a library must not build or load it")

    def include_dir() -> Path:
        raise AssertionError("include directories are looked up only when building")

    monkeypatch.setattr(build, "load_library", forbidden)
    monkeypatch.setattr(build, "build_shared_library", forbidden)
    lib = binding.CudaLibrary(Path("k.cu"), FUNCTIONS, include_dirs=(include_dir,))
    assert lib.source == Path("k.cu") and lib.error_string == "aisp_cuda_error_string"
    with pytest.raises(KeyError, match="aisp_missing is not declared for k.cu"):
        lib.fn("aisp_missing")                 # refused from the description, before any build


def test_include_dirs_resolve_at_build_time_and_flags_pass_through(monkeypatch, tmp_path):
    loads = record_library_loads(monkeypatch)
    lib = binding.CudaLibrary(Path("k.cu"), FUNCTIONS, arch="sm_90a",
                              include_dirs=(lambda: tmp_path, "/x"), extra_flags=("--expt-relaxed-constexpr",))
    assert lib.load() is lib.load()                                       # one handle
    assert loads == [{"source": Path("k.cu"), "arch": "sm_90a", "include_dirs": [tmp_path, "/x"],
                      "extra_flags": ["--expt-relaxed-constexpr"]}]
    assert list(lib.fn("aisp_half").argtypes) == [ctypes.c_double]
    assert lib.load().aisp_cuda_error_string.restype is ctypes.c_char_p


@pytest.mark.slow
@requires_nvcc
def test_signatures_are_set_and_the_library_is_loaded_once(tiny_cu, monkeypatch):
    loads = []
    real_load = build.load_library

    def counting_load(*args, **kwargs):
        loads.append(args)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(build, "load_library", counting_load)
    lib = binding.CudaLibrary(tiny_cu, FUNCTIONS, arch="sm_90")
    assert loads == []                                                  # lazy
    echo = lib.fn("aisp_echo_error")
    assert list(echo.argtypes) == [ctypes.c_int] and echo.restype is ctypes.c_int
    assert lib.fn("aisp_half")(3.0) == 1.5             # without argtypes/restype ctypes refuses a float
    errors = lib.load().aisp_cuda_error_string
    assert list(errors.argtypes) == [ctypes.c_int] and errors.restype is ctypes.c_char_p
    assert lib.load() is lib.load() and len(loads) == 1


@pytest.mark.slow
@requires_nvcc
def test_zero_passes_and_nonzero_raises_with_the_cuda_error_text(tiny_cu):
    lib = binding.CudaLibrary(tiny_cu, FUNCTIONS, arch="sm_90")
    assert lib.call("aisp_echo_error", 0) is None
    invalid_value = 1                                                   # cudaErrorInvalidValue
    with pytest.raises(RuntimeError) as info:
        lib.call("aisp_echo_error", invalid_value)
    assert str(info.value) == "aisp_echo_error failed: invalid argument (cudaError 1)"
    with pytest.raises(RuntimeError, match=r"^aisp_echo_error \(configuration 3\) failed: .* \(cudaError 2\)$"):
        lib.call("aisp_echo_error", 2, label="aisp_echo_error (configuration 3)")
    lib.check(0, "anything")


@requires_nvcc
def test_a_pair_may_name_its_own_error_string_function(tiny_cu):
    lib = binding.CudaLibrary(tiny_cu, FUNCTIONS, error_string="aisp_other_error_string", arch="sm_90")
    with pytest.raises(RuntimeError, match=r"^aisp_echo_error failed: custom failure \(cudaError 7\)$"):
        lib.call("aisp_echo_error", 7)
