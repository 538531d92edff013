"""Local headers are part of a pair's code: the CUDA build cache key and the pair's source digest
follow quoted `#include`s (recursively, cycle-safe), so a shared header such as
kernels/common/wgmma_tma.cuh cannot change without a rebuild and without the gate noticing; a
source without local headers keeps exactly the digest and key it had before (recorded evidence
stays valid)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from repo_paths import ROOT

from aisp_kernels import build
from aisp_prof.pairs import discover
from aisp_prof.pairs.source import MISSING, local_includes, pair_files, sibling_files, source_digest



def _old_digest(module: Path) -> str:
    """The digest's formula before headers were followed: the pair's own files only."""
    digest = hashlib.sha256()
    for f in pair_files(module):
        digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()


@pytest.fixture
def tree(tmp_path):
    """kernels/chXX/k.py + k.cu including ../common/a.cuh, which includes b.cuh (which includes a.cuh back)."""
    chapter, common = tmp_path / "chXX", tmp_path / "common"
    chapter.mkdir()
    common.mkdir()
    (chapter / "k.py").write_text("PAIR = None\n")
    (chapter / "k.cu").write_text('#include <cuda.h>\n#include "../common/a.cuh"\n'
                                  'extern "C" int aisp_k() { return A + B; }\n')
    (common / "a.cuh").write_text('#pragma once\n#include "b.cuh"\n#define A 1\n')
    (common / "b.cuh").write_text('#pragma once\n  #  include "a.cuh"\n#define B 2\n')
    return chapter, common


def test_includes_are_followed_recursively_and_cycles_end(tree):
    chapter, common = tree
    found = local_includes(chapter / "k.cu")
    assert [name for name, _ in found] == ["../common/a.cuh", "../common/b.cuh"]   # each once, a<->b ends
    assert found[1][1] == (common / "b.cuh").read_bytes()
    (common / "b.cuh").write_text('#include "../chXX/k.cu"\n')                   # back to the includer
    assert [name for name, _ in local_includes(chapter / "k.cu")] == ["../common/a.cuh", "../common/b.cuh"]


def test_system_and_library_includes_are_not_hashed_a_missing_relative_one_is_marked(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text('#include <cuda/barrier>\n#include "cutlass/cutlass.h"\n#include "./gone.cuh"\n'
                   '// #include "commented.cuh"\n')
    assert local_includes(src) == [("gone.cuh", MISSING)]
    module = tmp_path / "k.py"
    module.write_text("")
    digest = source_digest(module)                                               # no crash
    assert digest["files"] == ["k.cu", "k.py", "gone.cuh"] and digest["sha256"] != _old_digest(module)


def test_a_header_change_changes_the_digest(tree):
    chapter, common = tree
    before = source_digest(chapter / "k.py")
    assert before["files"] == ["k.cu", "k.py", "../common/a.cuh", "../common/b.cuh"]
    assert before["sha256"] != _old_digest(chapter / "k.py")
    (common / "b.cuh").write_text('#pragma once\n#include "a.cuh"\n#define B 3\n')
    assert source_digest(chapter / "k.py")["sha256"] != before["sha256"]


def test_python_files_are_not_scanned_for_includes(tmp_path):
    (tmp_path / "header.cuh").write_text("#define X 1\n")
    module = tmp_path / "k.py"
    module.write_text('SOURCE = """\n#include "header.cuh"\n"""\n')
    assert source_digest(module)["sha256"] == _old_digest(module)


def test_sources_without_local_includes_keep_their_digest():
    """Every pair whose files include no local header digests exactly as before (recorded
    expectations of ch09/ch10 stay valid); a quoted include of a library header (cuBLASLt's, CUTLASS's)
    is not a local one."""
    modules = sorted((ROOT / "kernels").glob("ch*/*.py"))
    plain = [m for m in modules if not local_includes(*pair_files(m)) and not sibling_files(pair_files(m))]
    assert len(plain) >= 30 and ROOT / "kernels/ch09/cublaslt_gemm.py" in plain
    for module in plain:
        assert source_digest(module)["sha256"] == _old_digest(module), module


def test_recorded_source_digests_still_match():
    """The sha256 every recorded expectation session carries is the pair's digest today, for each
    pair whose recorded code has not changed since (the newest session of each pair)."""
    checked = 0
    for file in sorted((ROOT / "kernels").glob("ch*/expectations_*.json")):
        chapter = file.parent.name
        for name, entry in json.loads(file.read_text()).get("pairs", {}).items():
            sessions = [s for s in entry.get("sessions", []) if s.get("source_sha256")]
            if not sessions:
                continue
            module = ROOT / "kernels" / chapter / f"{name.partition('.')[2]}.py"
            if _old_digest(module) == sessions[-1]["source_sha256"]:       # recorded from today's files
                assert source_digest(module)["sha256"] == sessions[-1]["source_sha256"], name
                checked += 1
    assert checked >= 1


def _old_key_library(source: Path, arch: str) -> str:
    """The cached library's name under the key's formula before headers were followed."""
    nvcc = build.tools.find_nvcc()
    flags = build.nvcc_command("SOURCE", "OUTPUT", arch)[1:]
    key = hashlib.sha256()
    for part in (source.read_bytes(), "\0".join(flags).encode(), build._nvcc_version(nvcc).encode()):
        key.update(part)
        key.update(b"\0\0")
    return f"{source.stem}-{key.hexdigest()[:16]}.so"


def test_build_key_follows_headers_and_is_unchanged_without_them(tree, nvcc_log, tmp_path):
    chapter, common = tree
    first = build.build_shared_library(chapter / "k.cu", arch="sm_90a")
    assert build.build_shared_library(chapter / "k.cu", arch="sm_90a") == first       # cache hit
    assert first.name != _old_key_library((chapter / "k.cu").resolve(), "sm_90a")
    (common / "b.cuh").write_text('#pragma once\n#include "a.cuh"\n#define B 3\n')   # a nested header
    edited = build.build_shared_library(chapter / "k.cu", arch="sm_90a")
    assert edited != first
    assert len(nvcc_log.read_text().splitlines()) == 2

    plain = tmp_path / "plain.cu"
    plain.write_text('#include <cuda.h>\n#include "cutlass/cutlass.h"\nextern "C" int aisp_p() { return 1; }\n')
    assert build.build_shared_library(plain, arch="sm_90a").name == _old_key_library(plain.resolve(), "sm_90a")


_PAIR_MODULE = """from aisp_prof.pairs import KernelPair
PAIR = KernelPair(name="{name}", chapter=1, lesson="", make_inputs=None, variants={{}}, reference=None,
                  flops=None, bytes=None)
"""


def test_kernels_common_is_not_a_chapter(tmp_path):
    """kernels/common holds shared headers: discovery looks only in ch* folders, so even a module
    with a PAIR under common/ is not a pair (and the real tree's common/ yields none)."""
    assert (ROOT / "kernels" / "common" / "wgmma_tma.cuh").is_file()
    for folder, name in (("ch01", "ch01.real"), ("common", "common.stray")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "k.py").write_text(_PAIR_MODULE.format(name=name))
    assert [p.name for p in discover(tmp_path)] == ["ch01.real"]
    assert not [p for p in discover(ROOT / "kernels") if "/common/" in p.source]


def test_a_sibling_module_is_part_of_the_digest(tree):
    """A pair that runs a sibling pair's code (load_sibling) hashes that module, its .cu and the
    .cu's headers: changing the sibling's kernel changes the pair's digest; nothing loads twice."""
    chapter, common = tree
    (chapter / "w.py").write_text('from aisp_kernels.siblings import load_sibling\n'
                                  '_K = load_sibling(__file__, "k.py", "alias_k")\n'
                                  '_K2 = load_sibling( __file__ , "k.py", "alias_k2")\n')
    digest = source_digest(chapter / "w.py")
    assert digest["files"] == ["w.py", "../common/a.cuh", "../common/b.cuh", "k.cu", "k.py"]
    (chapter / "k.cu").write_text((chapter / "k.cu").read_text() + "// tuned\n")
    assert source_digest(chapter / "w.py")["sha256"] != digest["sha256"]
    (chapter / "k.cu").unlink()
    assert source_digest(chapter / "w.py")["files"] == ["w.py", "k.py"]


def test_a_missing_sibling_is_hashed_as_missing(tmp_path):
    (tmp_path / "w.py").write_text('_K = load_sibling(__file__, "gone.py", "alias")\n')
    digest = source_digest(tmp_path / "w.py")
    assert digest["files"] == ["w.py", "gone.py"] and digest["sha256"] != _old_digest(tmp_path / "w.py")


def test_the_chapter_pairs_that_reuse_a_sibling_hash_it():
    for name in ("ch14/sliding_window_causal.py", "ch14/flex_attention_sparse.py"):
        assert "sliding_window.py" in source_digest(ROOT / "kernels" / name)["files"], name
