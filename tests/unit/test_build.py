"""aisp_kernels.build: the nvcc command line, the build cache, and readable build errors.

The compile tests need nvcc (no GPU) and skip cleanly without it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from repo_paths import ROOT
from pair_testing import requires_nvcc

from aisp_kernels import build, compiles
from aisp_prof.errors import BuildError, ToolNotFoundError

L2NORM_CU = ROOT / "kernels" / "ch09" / "fused_l2norm.cu"


def test_nvcc_command_sm90():
    assert build.nvcc_command("k.cu", "k.so", "sm_90") == [
        "nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-lineinfo",
        "-gencode=arch=compute_90,code=sm_90", "-o", "k.so", "k.cu",
    ]


def test_nvcc_command_arch_specific_and_explicit_nvcc():
    cmd = build.nvcc_command(Path("/src/k.cu"), Path("/out/k.so"), "sm_90a", nvcc="/opt/cuda/bin/nvcc")
    assert cmd[0] == "/opt/cuda/bin/nvcc"
    assert "-gencode=arch=compute_90a,code=sm_90a" in cmd
    assert cmd[-3:] == ["-o", "/out/k.so", "/src/k.cu"]
    assert "-gencode=arch=compute_100,code=sm_100" in build.nvcc_command("a", "b", "sm_100")


@pytest.mark.parametrize("arch", ["90", "sm90", "compute_90", "sm_90ab", ""])
def test_nvcc_command_rejects_bad_arch(arch):
    with pytest.raises(ValueError, match="sm_90"):
        build.nvcc_command("k.cu", "k.so", arch)


def test_build_dir_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("AISP_BUILD_DIR", str(tmp_path))
    assert build.build_dir() == tmp_path
    monkeypatch.delenv("AISP_BUILD_DIR")
    assert build.build_dir() == Path.home() / ".cache" / "aisp-prof" / "build"


@pytest.fixture
def build_dir(monkeypatch, tmp_path):
    out = tmp_path / "build"
    monkeypatch.setenv("AISP_BUILD_DIR", str(out))
    return out


def _exported_symbols(library: Path) -> str:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("needs nm (binutils) to list the library's symbols")
    return subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.slow
@requires_nvcc
def test_fused_l2norm_compiles_for_sm90_and_is_cached(build_dir, monkeypatch):
    library = build.build_shared_library(L2NORM_CU, arch="sm_90")
    assert library.parent == build_dir
    assert library.name.startswith("fused_l2norm-") and library.suffix == ".so"
    assert len(library.stem.split("-")[-1]) == 16
    symbols = _exported_symbols(library)
    assert " T aisp_fused_l2norm" in symbols and " T aisp_cuda_error_string" in symbols
    assert [p.name for p in build_dir.iterdir()] == [library.name]      # no temp files left

    mtime_ns = library.stat().st_mtime_ns

    def no_compile(*args, **kwargs):
        raise AssertionError("a cache hit must not run nvcc")

    # `nvcc --version` is cached per process, so a hit runs no subprocess at all.
    monkeypatch.setattr(build.subprocess, "run", no_compile)
    monkeypatch.setattr(compiles, "run_all", no_compile)
    again = build.build_shared_library(L2NORM_CU, arch="sm_90")
    assert again == library and again.stat().st_mtime_ns == mtime_ns


def test_cache_key_follows_source_and_arch(build_dir, nvcc_log, tmp_path):
    src = tmp_path / "k.cu"
    src.write_text('extern "C" int aisp_k() { return 1; }\n')
    first = build.build_shared_library(src, arch="sm_90")
    assert build.build_shared_library(src, arch="sm_90") == first
    assert len(nvcc_log.read_text().splitlines()) == 1                # second call: cache hit
    other_arch = build.build_shared_library(src, arch="sm_90a")
    src.write_text('extern "C" int aisp_k() { return 2; }\n')
    edited = build.build_shared_library(src, arch="sm_90")
    assert len({first, other_arch, edited}) == 3
    assert len(nvcc_log.read_text().splitlines()) == 3
    assert sorted(p.name for p in build_dir.iterdir()) == sorted(p.name for p in (first, other_arch, edited))


@pytest.mark.slow
@requires_nvcc
def test_broken_source_raises_build_error_with_the_error_line(build_dir, tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text("__global__ void k(float* y) { y[0] = undefined_name; }\n")
    with pytest.raises(BuildError) as info:
        build.build_shared_library(src, arch="sm_90")
    message = str(info.value)
    assert "error" in message and "undefined_name" in message
    assert "-gencode=arch=compute_90,code=sm_90" in message and str(src) in message
    assert "\n" not in message
    assert not list(build_dir.glob("*.so")) and not list(build_dir.glob(".*.tmp"))


def test_build_without_nvcc_is_tool_not_found(monkeypatch, tmp_path):
    monkeypatch.setenv("AISP_NVCC", str(tmp_path / "missing-nvcc"))
    with pytest.raises(ToolNotFoundError):
        build.build_shared_library(L2NORM_CU, arch="sm_90")


def test_default_arch_without_gpu(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert build.default_arch() == "sm_90"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (10, 0))
    assert build.default_arch() == "sm_100"


def test_first_error_line():
    out = "k.cu(3): warning: unused\nk.cu(4): error: identifier \"q\" is undefined\n1 error detected"
    assert compiles.first_error_line(out) == 'k.cu(4): error: identifier "q" is undefined'
    assert compiles.first_error_line("nvcc fatal   : Unsupported gpu architecture 'compute_1'") \
        .startswith("nvcc fatal")
    assert os.linesep not in compiles.first_error_line("")


# --- include directories and extra flags (CUTLASS) -------------------------------------------

def test_nvcc_command_include_dirs_and_extra_flags():
    base = build.nvcc_command("k.cu", "k.so", "sm_90a")
    assert build.nvcc_command("k.cu", "k.so", "sm_90a", include_dirs=(), extra_flags=()) == base
    cmd = build.nvcc_command("k.cu", "k.so", "sm_90a", include_dirs=[Path("/opt/cutlass/include"), "/x"],
                                  extra_flags=["--expt-relaxed-constexpr"])
    assert cmd == base[:-3] + ["-I/opt/cutlass/include", "-I/x", "--expt-relaxed-constexpr"] + base[-3:]
    with pytest.raises(TypeError, match="sequences"):
        build.nvcc_command("k.cu", "k.so", "sm_90", extra_flags="--expt-relaxed-constexpr")
    with pytest.raises(TypeError, match="sequences"):
        build.nvcc_command("k.cu", "k.so", "sm_90", include_dirs="/opt/cutlass/include")


def test_cache_key_follows_include_dirs_and_flags(build_dir, nvcc_log, tmp_path):
    src = tmp_path / "k.cu"
    src.write_text('extern "C" int aisp_k() { return 1; }\n')
    plain = build.build_shared_library(src, arch="sm_90a")
    assert build.build_shared_library(src, arch="sm_90a", include_dirs=(), extra_flags=()) == plain
    with_inc = build.build_shared_library(src, arch="sm_90a", include_dirs=[tmp_path])
    with_flag = build.build_shared_library(src, arch="sm_90a", include_dirs=[tmp_path],
                                                extra_flags=["--expt-relaxed-constexpr"])
    assert build.build_shared_library(src, arch="sm_90a", include_dirs=[str(tmp_path)],
                                           extra_flags=("--expt-relaxed-constexpr",)) == with_flag
    assert len({plain, with_inc, with_flag}) == 3
    lines = nvcc_log.read_text().splitlines()
    assert len(lines) == 3
    assert f"-I{tmp_path}" in lines[1] and f"-I{tmp_path} --expt-relaxed-constexpr" in lines[2]
