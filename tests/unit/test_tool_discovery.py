"""aisp_prof.tools: finding nvcc and the CUTLASS headers (the "nvcc" and "cutlass"
capabilities that `aisp-prof list` reports without importing torch)."""
from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import ROOT

from aisp_prof import tools
from aisp_prof.errors import ToolNotFoundError


def test_find_nvcc_honours_env(monkeypatch, tmp_path):
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("AISP_NVCC", str(fake))
    assert tools.find_nvcc() == fake
    monkeypatch.setenv("AISP_NVCC", str(tmp_path / "missing"))
    with pytest.raises(ToolNotFoundError, match="AISP_NVCC"):
        tools.find_nvcc()


def test_find_nvcc_missing_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv("AISP_NVCC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(tools, "_FALLBACK_NVCC", tmp_path / "no" / "nvcc")
    with pytest.raises(ToolNotFoundError, match="install the CUDA toolkit or set AISP_NVCC"):
        tools.find_nvcc()


def _fake_cutlass(root: Path) -> Path:
    (root / "cutlass").mkdir(parents=True)
    (root / "cute").mkdir()
    (root / "cutlass" / "cutlass.h").write_text("")
    (root / "cute" / "tensor.hpp").write_text("")
    return root


def test_find_cutlass_include_order(monkeypatch, tmp_path):
    env_dir, pkg_dir, repo_dir = (_fake_cutlass(tmp_path / d) for d in ("env", "pkg", "repo"))
    monkeypatch.setattr(tools, "REPO_CUTLASS_INCLUDE", repo_dir)
    monkeypatch.setattr(tools, "_package_cutlass_includes", lambda: [pkg_dir])
    monkeypatch.setenv("AISP_CUTLASS_INCLUDE", str(env_dir))
    assert tools.find_cutlass_include() == env_dir
    monkeypatch.delenv("AISP_CUTLASS_INCLUDE")
    assert tools.find_cutlass_include() == pkg_dir
    monkeypatch.setattr(tools, "_package_cutlass_includes", list)
    assert tools.find_cutlass_include() == repo_dir
    assert tools.have_cutlass()


def test_find_cutlass_include_missing_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setattr(tools, "REPO_CUTLASS_INCLUDE", tmp_path / "none")
    monkeypatch.setattr(tools, "_package_cutlass_includes", lambda: [tmp_path / "pkg"])
    monkeypatch.delenv("AISP_CUTLASS_INCLUDE", raising=False)
    with pytest.raises(ToolNotFoundError, match="pip install nvidia-cutlass.*AISP_CUTLASS_INCLUDE"):
        tools.find_cutlass_include()
    assert not tools.have_cutlass()
    monkeypatch.setenv("AISP_CUTLASS_INCLUDE", str(tmp_path))      # set, but no headers there
    with pytest.raises(ToolNotFoundError, match="AISP_CUTLASS_INCLUDE=.*fix or unset it"):
        tools.find_cutlass_include()


def test_cutlass_capability_is_reported(monkeypatch):
    from aisp_prof.pairs.capabilities import detect_machine

    for value in (True, False):
        monkeypatch.setattr(tools, "have_cutlass", lambda value=value: value)
        assert ("cutlass" in detect_machine().have) is value


def test_repo_cutlass_include_is_at_the_repository_root():
    repo_root = ROOT
    assert tools.REPO_CUTLASS_INCLUDE == repo_root / ".cutlass" / "include"


def test_cutlass_include_dirs_add_the_utility_headers(monkeypatch, tmp_path):
    """The nvidia-cutlass package and a CUTLASS checkout keep cutlass/util/ (packed_stride.hpp,
    which ch09.cutlass_gemm includes) in tools/util/include beside include/; a merged copy has both."""
    include = _fake_cutlass(tmp_path / "source" / "include")
    monkeypatch.setenv("AISP_CUTLASS_INCLUDE", str(include))
    assert tools.cutlass_include_dirs() == [include]
    util = tmp_path / "source" / "tools" / "util" / "include"
    (util / "cutlass" / "util").mkdir(parents=True)
    assert tools.cutlass_include_dirs() == [include, util]


def _wheel_layout(site: Path) -> tuple[Path, Path]:
    """A `cutlass_library` package laid out as the nvidia-cutlass 4.2 wheel ships it: the headers in
    source/include, the utility headers (cutlass/util/packed_stride.hpp) in source/tools/util/include."""
    package = site / "cutlass_library"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    include = _fake_cutlass(package / "source" / "include")
    util = package / "source" / "tools" / "util" / "include"
    (util / "cutlass" / "util").mkdir(parents=True)
    (util / "cutlass" / "util" / "packed_stride.hpp").write_text("")
    return include, util


def _only_the_package(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("AISP_CUTLASS_INCLUDE", raising=False)
    monkeypatch.setattr(tools, "REPO_CUTLASS_INCLUDE", tmp_path / "no-repo-copy")


def test_the_wheel_layout_is_found_through_the_package(monkeypatch, tmp_path):
    """Issue 13's defect: with only nvidia-cutlass installed, ch09.cutlass_gemm did not build because
    cutlass/util/packed_stride.hpp is not under source/include. Found through the package (not an
    environment variable), both folders must be on the include path."""
    import sys

    include, util = _wheel_layout(tmp_path / "site")
    _only_the_package(monkeypatch, tmp_path)
    monkeypatch.delitem(sys.modules, "cutlass_library", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert tools.find_cutlass_include() == include
    dirs = tools.cutlass_include_dirs()
    assert dirs == [include, util]
    assert [d for d in dirs if (d / "cutlass" / "util" / "packed_stride.hpp").is_file()] == [util]


def test_the_installed_wheel_has_every_header_the_cutlass_pairs_include(monkeypatch, tmp_path):
    """The real nvidia-cutlass wheel, if installed, alone: every quoted include of the CUTLASS pairs'
    sources resolves in cutlass_include_dirs() (nvcc then builds them: see their compile tests), but
    their local one (../common/build_parts.h, beside them in the repository)."""
    import importlib.util
    import re

    if importlib.util.find_spec("cutlass_library") is None:
        pytest.skip("nvidia-cutlass is not installed")
    _only_the_package(monkeypatch, tmp_path)
    dirs = tools.cutlass_include_dirs()
    kernels = ROOT / "kernels"
    sources = [kernels / "ch09" / "cutlass_gemm.cu", kernels / "ch10" / "warp_specialization_cutlass.cu",
               kernels / "ch14" / "cublas_vs_cutlass.cu"]
    headers = {h for s in sources for h in re.findall(r'^#include "([^"]+)"', s.read_text(), re.MULTILINE)
               if not (s.parent / h).is_file()}
    assert "cutlass/util/packed_stride.hpp" in headers
    missing = [h for h in sorted(headers) if not any((d / h).is_file() for d in dirs)]
    assert missing == [], f"not in {dirs}"
