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

from aisp_prof.collect.code.generated import in_inductor_cache, index_generated, unused_candidate
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
    # a kernel found in the binary store keeps the path of the process that compiled it first: a gate's
    # further process, in an empty cache of its own (collect.code.compile_cache.fresh_compile_cache)
    assert in_inductor_cache("/p/run_x/aisp-compile-k2j3/inductor/ab/cab.py", inductor)
    assert not in_inductor_cache("/p/run_x/aisp-compile-k2j3/triton/ab/cab.py", inductor)
    # ... or under a cache a user kept: found by its content-hashed name in this run's own
    (inductor / "xy").mkdir(parents=True)
    (inductor / "xy" / "cxyhash.py").write_text("# a kernel")
    assert in_inductor_cache("/home/u/.cache/gate/inductor/xy/cxyhash.py", inductor)
    assert not in_inductor_cache("/home/u/.cache/gate/inductor/xy/other.py", inductor)
    assert unused_candidate("triton_mm", run_cache, {"triton_poi_fused_mul_0"}, inductor)
    assert not unused_candidate("triton_poi_fused_mul_0", run_cache, {"triton_poi_fused_mul_0"}, inductor)
    assert not unused_candidate("triton_matmul", "/work/kernels/ch14/x.py", {"triton_poi_fused_mul_0"}, inductor)
    assert not unused_candidate("triton_mm", run_cache, set(), inductor)       # no output code found
    assert not unused_candidate("triton_mm", None, {"triton_poi_fused_mul_0"}, inductor)


# ------------------------------------------------------------------ joining ncu launches to builds
from click.testing import CliRunner  # noqa: E402

from aisp_prof.analyze.code.generated_code import MATCHED, NOT_GENERATED, match_launch, match_launches  # noqa: E402
from aisp_prof.cli import cli  # noqa: E402
from aisp_prof.store.ingest import load_run_dir  # noqa: E402

# the build each Triton launch of the run ran, by launch id (ncu's order): name + block threads +
# registers + dynamic shared memory leave exactly one of the index's 76
RAN = {1: "96c929d2", 2: "215f0464", 3: "efd75ad1", 4: "f8e51c98", 5: "efd75ad1", 6: "f8e51c98", 7: "cee68c30",
       9: "53f06d23", 11: "6e4fda78", 13: "61a17a92", 14: "d0af4d10", 16: "92b7976f"}
# two launches stay ambiguous: ncu reads 16 registers for any kernel of 16 or fewer, and
# - triton_poi_fused_gelu_1 has two 16-warp builds of 13 and 12 registers, XBLOCK 256 and 512
#   (their TTGIR): only the grid tells them apart (4096 blocks x 512 = the 2097152 elements the
#   output code passes: cd539780), which the join does not read;
# - triton_per_fused_sum_4 has two 2-warp builds with identical TTGIR, 12 registers, 8 B shared:
#   the same kernel compiled twice, nothing in a launch can tell them apart.
AMBIGUOUS = {12: ("170ba3a2", "cd539780"), 15: ("3f46aeaa", "5ec91ad9")}


@pytest.fixture
def h100_launches(h100, h100_index):
    return match_launches(load_run_dir(h100 / H100_RUN).kernels, h100_index)


def test_every_triton_launch_matches_one_build_or_says_which_are_ambiguous(h100_launches):
    triton = h100_launches[h100_launches["kernel"].str.startswith("triton_")]
    assert len(triton) == 14
    matched = triton[triton["match"] == MATCHED]
    assert {int(i): h[:8] for i, h in zip(matched["launch_id"], matched["hash"])} == RAN
    rest = triton[triton["match"] != MATCHED]
    assert set(rest["match"]) == {"ambiguous (2 candidates)"} and rest["hash"].isna().all()
    assert {int(i): tuple(h[:8] for h in c) for i, c in zip(rest["launch_id"], rest["candidates"])} == AMBIGUOUS
    assert list(h100_launches.columns[:4]) == ["variant", "launch_id", "kernel", "duration_ns"]


def test_a_name_collision_is_resolved_by_registers(h100_index):
    """triton_red_fused_sum_0: 12 builds of one name, 6 of them with 16 warps (512 threads) and
    64 B shared; the launch's 24 registers leave one."""
    name = "triton_red_fused_sum_0"
    status, by_name = match_launch(h100_index, name)
    assert status == "ambiguous (12 candidates)"
    status, by_shape = match_launch(h100_index, name, block_threads=512, dynamic_shared_bytes=64)
    assert status == "ambiguous (5 candidates)" and {k["registers"] for k in by_shape} == {19, 24, 29}
    status, [one] = match_launch(h100_index, name, block_threads=512, registers=24, dynamic_shared_bytes=64)
    assert status == MATCHED and one["hash"].startswith("96c929d2")
    # fewer than 16 registers read as 16: the only 1-warp build of triton_per_fused_lt_sum_1 has 14
    status, [one] = match_launch(h100_index, "triton_per_fused_lt_sum_1", block_threads=32, registers=16)
    assert status == MATCHED and one["registers"] == 14
    status, none = match_launch(h100_index, name, block_threads=512, registers=25, dynamic_shared_bytes=64)
    assert status == "no build of this shape (12 of this name)" and none == []


def test_an_aten_kernel_is_not_generated_here(h100_launches):
    aten = h100_launches[h100_launches["kernel"] == "multi_tensor_apply_kernel"]
    assert len(aten) == 3 and set(aten["match"]) == {NOT_GENERATED} and aten["hash"].isna().all()


@pytest.fixture
def h100_db(h100, tmp_path):
    """The cut fixture stored as it is: `aisp-prof import` refuses it (its run.json says check.json
    and nsys.sqlite were made; the fixture keeps ncu_raw.csv and generated/ only), so it is
    parsed and written through the store directly."""
    from aisp_prof.store.db import write_run

    db = str(tmp_path / "a.db")
    write_run(Path(db), load_run_dir(h100 / H100_RUN))
    return db


@pytest.mark.slow
def test_code_command_lists_the_kernels_that_ran(h100_db):
    out = CliRunner().invoke(cli, ["code", H100_RUN, "--db", h100_db])
    assert out.exit_code == 0, out.output
    assert "17 ncu launch(es), 14 generated kernel(s) that ran" in out.output
    assert "45 autotune candidate(s) not kept" in out.output
    launch_14 = next(line for line in out.output.splitlines() if line.split()[:2] == ["tensor_branch", "14"])
    assert launch_14.split()[2:4] == ["triton_red_fused_sum_3", "4.29"] and launch_14.endswith("d0af4d10")
    assert "not generated here" in out.output and "builds 170ba3a2, cd539780 all fit" in out.output
    # one build of triton_red_fused_sum_3 ran; --all shows its 14
    assert out.output.count("triton_red_fused_sum_3  ") == 1 + 1
    out = CliRunner().invoke(cli, ["code", H100_RUN, "--db", h100_db, "--all", "--kernel", "triton_red_fused_sum_3"])
    assert "14 kept Triton kernel(s)" in out.output


def test_code_command_prints_the_build_that_ran(h100_db):
    out = CliRunner().invoke(cli, ["code", H100_RUN, "--db", h100_db, "--kernel", "triton_red_fused_sum_3",
                                   "--show", "ptx"])
    assert out.exit_code == 0, out.output
    assert out.output.count("=== ") == 1 and "=== triton_red_fused_sum_3 (d0af4d10): ptx ===" in out.output
    assert ".entry triton_red_fused_sum_3" in out.output
    out = CliRunner().invoke(cli, ["code", H100_RUN, "--db", h100_db, "--kernel", "per_fused_sum_4", "--show", "ptx"])
    assert out.output.count("(one of 2 builds that fit launch 15) ===") == 2
    out = CliRunner().invoke(cli, ["code", H100_RUN, "--db", h100_db, "--kernel", "fused_mul_0", "--show", "ptx"])
    assert "no launch ncu saw ran a kept build named like 'fused_mul_0'" in out.output     # compiled, never profiled
    doc = json.loads(CliRunner().invoke(cli, ["code", H100_RUN, "--db", h100_db, "--variant", "baseline",
                                              "--json"]).output)
    assert len(doc["launches"]) == 10 and {k["name"] for k in doc["kernels"]} == {
        "triton_red_fused_sum_0", "triton_per_fused_lt_sum_1", "triton_tem_fused_addmm_t_2", "triton_poi_fused_gelu_3",
        "triton_tem_fused_addmm_gelu_t_4", "triton_poi_fused_mul_neg_0"}
    assert [m["file"].split("/")[-1][:6] for m in doc["output_code"]] == ["c2m7rp", "ccgbmf"]


@pytest.mark.slow
def test_report_links_each_kernel_row_to_the_build_that_ran(h100_db, tmp_path):
    from aisp_prof.api import open_db

    db = open_db(h100_db)
    page = db.page(H100_RUN)
    rows = {(k["variant"], k["kernel"]): k for k in page["kernels"]}
    assert rows[("tensor_branch", "triton_red_fused_sum_3")]["generated"] == "d0af4d10"
    assert rows[("tensor_branch", "triton_per_fused_sum_4")]["generated_match"] == "ambiguous (2 candidates)"
    aten = next(k for (v, name), k in rows.items() if "multi_tensor_apply_kernel" in name)
    assert aten["generated"] is None and aten["generated_match"] is None
    gen = {g["hash"]: g for g in page["generated_code"]}
    assert gen["d0af4d10"]["variants"] == ["tensor_branch"]
    assert sum(g["variants"] == ["tensor_branch"] for g in gen.values() if g["name"] == "triton_red_fused_sum_3") == 1
    assert gen["cd539780"]["variants"] == [] and gen["cd539780"]["maybe_variants"] == ["tensor_branch"]
    assert [bool(g["variants"]) for g in page["generated_code"][:11]] == [True] * 10 + [False]   # ran: first
    report = db.report(runs=[H100_RUN], out=tmp_path / "report")
    html = next(p for p in report.pages if "graph_break" in p.name).read_text()
    assert '<a href="#gen-d0af4d10"' in html and 'id="gen-d0af4d10"' in html
