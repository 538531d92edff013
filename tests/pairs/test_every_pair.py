"""What every shipped kernel pair must satisfy, checked once per discovered pair (the per-pair
test files check what is particular to their pair): its declaration names it after its file and
chapter, starts with the baseline and says its lesson in one line, and importing its module does
no work (no build, no tool run, no CUDA, no jit, no torch.compile, no CUTLASS header lookup, and
no cuda-python needed). The list of pairs is read from the sources, so collecting needs no torch."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pair_testing import forbid_import_side_effects, import_fresh

from aisp_prof.pairs.static import PairInfo, pair_infos

PAIRS = pair_infos()


def test_every_chapter_has_its_pairs():
    """The parametrisation below is over something: the pairs of chapters 9, 10 and 14."""
    chapters = {info.chapter for info in PAIRS}
    assert chapters == {9, 10, 14} and len(PAIRS) > 40


@pytest.mark.parametrize("info", PAIRS, ids=lambda info: info.name)
def test_the_declaration_names_the_pair_after_its_file(info: PairInfo):
    source = Path(info.source)
    assert source.parent.name == info.chapter_key and info.name == f"{info.chapter_key}.{source.stem}"
    assert info.variants[0] == "baseline" and len(info.variants) >= 2
    assert len(set(info.variants)) == len(info.variants)
    assert info.lesson and "\n" not in info.lesson


@pytest.mark.parametrize("info", PAIRS, ids=lambda info: info.name)
def test_importing_the_pair_does_no_work(monkeypatch, info: PairInfo):
    torch = pytest.importorskip("torch")
    from aisp_prof import tools

    def forbidden(*args, **kwargs):
        raise AssertionError("importing a pair must not compile, look for headers or need cuda-python")

    forbid_import_side_effects(monkeypatch)
    monkeypatch.setattr(torch, "compile", forbidden)
    monkeypatch.setattr(tools, "find_cutlass_include", forbidden)
    for name in ("cuda", "cuda.bindings"):          # makes `import cuda` fail: cuda-python is a runtime need
        monkeypatch.setitem(sys.modules, name, None)
    module = import_fresh(Path(info.source), f"{info.name.replace('.', '_')}_no_side_effects")
    assert module.PAIR.name == info.name
    assert tuple(module.PAIR.variants) == info.variants
