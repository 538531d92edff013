"""Load another pair's module from the same chapter folder, when one pair reuses another's code.

A pair that compares its kernels with a sibling's (ch10.warpgroup_specialization runs
ch10.warp_specialization's kernel beside ch10.warp_specialization_cutlass's) loads that module by
path under its own alias, as discovery loads pairs: no package, nothing registered in
sys.modules, nothing built on import (the sibling's CUDA library builds on first use).

Spell the call literally, `load_sibling(__file__, "name.py", "alias")`: aisp_prof.pairs.source
finds it by that spelling, without importing anything, and hashes the sibling's files into the
pair's source digest, so a change to the reused code is a change to the pair.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_sibling(anchor: str | Path, filename: str, alias: str) -> ModuleType:
    """The module `filename` beside `anchor` (a pair's __file__), executed under `alias`."""
    path = Path(anchor).with_name(filename)
    spec = importlib.util.spec_from_file_location(alias, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
