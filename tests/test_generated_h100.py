"""Issue 14, generated code on a real H100 run of ch14.graph_break_control_flow (torch 2.11,
Triton 3.6, max-autotune): only the kernels a profile can link to are kept, and each ncu launch
is joined to the one compiled configuration that ran.

tests/fixtures/generated_h100/ (see tests/fixtures/README.md): the run's run.json, ncu_raw.csv,
Inductor output code, its generated/index.json in today's shape (76 kernels kept, 45 autotune
candidates dropped; registers and launch configuration as that run's cuobjdump and Triton
metadata gave them) and each kernel's defining file (kernel_sources.json), from which a Triton
cache with the run's 121 kernels is rebuilt here.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from aisp_prof.collect.generated import in_inductor_cache, index_generated, unused_candidate
from aisp_prof.naming import COMPILE_CACHE_DIR

H100_RUN = "20261126T144407Z-ch14.graph_break_control_flow-65b4"


@pytest.fixture
def h100(fixtures_dir) -> Path:
    return fixtures_dir / "generated_h100"


@pytest.fixture
def h100_index(h100) -> dict:
    return json.loads((h100 / H100_RUN / "generated" / "index.json").read_text())


def _rebuild_cache(h100: Path, index: dict, cache: Path) -> None:
    """The run's compile cache as the children left it, minus the compiled stages: per kernel
    `<hash>/<name>.json` (metadata) and `<name>.source` (its TTIR's first line, naming the file
    that defined it); the output code under inductor/."""
    sources = json.loads((h100 / "kernel_sources.json").read_text())
    for k in index["kernels"] + index["dropped"]:
        folder = cache / "triton" / k["hash"]
        folder.mkdir(parents=True)
        meta = {"name": k["name"], "hash": k["hash"], "num_warps": k["num_warps"], "num_stages": k["num_stages"]}
        (folder / f"{k['name']}.json").write_text(json.dumps(meta))
        (folder / f"{k['name']}.source").write_text(f'#loc = loc("{sources[k["hash"]]}":18:0)\nmodule {{\n}}\n')
    (cache / "inductor" / "oc").mkdir(parents=True)
    for path in (h100 / H100_RUN / "generated" / "output_code").glob("*.py"):
        (cache / "inductor" / "oc" / path.name).write_text(path.read_text())


def test_only_kernels_the_output_code_defines_are_kept(h100, h100_index, tmp_path):
    cache = tmp_path / COMPILE_CACHE_DIR
    _rebuild_cache(h100, h100_index, cache)
    index = index_generated(cache, tmp_path / "generated", None)
    defined = {d["name"] for m in index["output_code"] for d in m["kernels"]}
    assert len(defined) == 13
    assert {k["name"] for k in index["kernels"]} == defined
    # every configuration of a defined kernel stays (runtime autotuning: up to 14 of one reduction)
    assert sorted(k["hash"] for k in index["kernels"]) == sorted(k["hash"] for k in h100_index["kernels"])
    assert len(index["kernels"]) == 76 and index["dropped_kernels"] == 45 == len(index["dropped"])
    assert {k["name"] for k in index["dropped"]} == {"triton_", "triton_mm"}
    assert all(set(d) == {"name", "hash", "num_warps", "num_stages", "kept"} and d["kept"] is False
               for d in index["dropped"])
    kept_dirs = {p.name for p in (tmp_path / "generated" / "triton").iterdir()}
    assert len(kept_dirs) == 76 and not any(d.startswith(("triton_-", "triton_mm-")) for d in kept_dirs)


def test_hand_written_kernels_and_runs_without_output_code_keep_everything(tmp_path):
    inductor = tmp_path / COMPILE_CACHE_DIR / "inductor"
    run_cache = "/tmp/p6/.partial-x/compile_cache/inductor/pu/cpuharu.py"
    assert in_inductor_cache(run_cache, inductor) and in_inductor_cache(str(inductor / "ab" / "c.py"), inductor)
    assert not in_inductor_cache("/work/main/kernels/ch14/triton_persistent.py", inductor)
    assert unused_candidate("triton_mm", run_cache, {"triton_poi_fused_mul_0"}, inductor)
    assert not unused_candidate("triton_poi_fused_mul_0", run_cache, {"triton_poi_fused_mul_0"}, inductor)
    assert not unused_candidate("triton_matmul", "/work/kernels/ch14/x.py", {"triton_poi_fused_mul_0"}, inductor)
    assert not unused_candidate("triton_mm", run_cache, set(), inductor)       # no output code found
    assert not unused_candidate("triton_mm", None, {"triton_poi_fused_mul_0"}, inductor)
