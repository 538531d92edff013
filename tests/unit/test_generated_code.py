"""Issue 14, generated code: the compile cache a run's children share is indexed into the run
folder (Triton kernels' TTGIR/PTX/SASS with summaries, Inductor's output code), per kernel name,
and `aisp-prof code` prints it, narrowed to a variant's launches through the ncu/nsys tables.

tests/fixtures/compile_cache/ is a real cache (0f4424e:scripts/compile_cache_fixture.sh, no GPU needed):
two Triton kernels compiled for sm_90 by Triton 3.9 (a plain add+relu, and ch09.triton's
_softmax_rows, the kernel the shipped ch09.triton sample launched), and Inductor's output code
of a torch.compile'd CPU function (torch 2.13). SASS needs cuobjdump (Triton bundles one); the
assertions on it skip where there is none.
"""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from aisp_prof.analyze.code.generated_code import base_name, launched_names, select_kernels
from aisp_prof.parse.code.ptx import kernel_code_summary, summarize_ptx, summarize_sass
from aisp_prof.cli import cli
from aisp_prof.collect.code.generated import cache_env, find_cuobjdump, index_generated, keep_generated
from aisp_prof.naming import COMPILE_CACHE_DIR, GENERATED_DIR
from aisp_prof.parse.code.generated_code import extern_calls, is_output_code, output_code_kernels, triton_kernel_dirs
from aisp_prof.store.ingest import load_run_dir, sample_run_dirs

CH09_TRITON = "20261126T015421Z-ch09.triton-5eae"


@pytest.fixture
def cache(fixtures_dir):
    return fixtures_dir / "compile_cache"


def test_output_code_names_its_kernels_and_launches(cache):
    [path] = list((cache / "inductor").rglob("*.py"))
    text = path.read_text()
    assert is_output_code(text)
    assert output_code_kernels(text) == [{"name": "cpp_fused_gelu_sum_0", "kind": "cpp_pybinding", "aten": [],
                                          "launches_per_call": 1}]
    assert extern_calls(text) == {}
    # GPU output code (torch <= 2.9 layout): the fused ATen ops from the comment, .run() launches,
    # cuBLAS calls; the shape Inductor writes, cut to its skeleton
    gpu = ("# Topologically Sorted Source Nodes: [y], Original ATen: [aten.add, aten.relu]\n"
           "triton_poi_fused_add_relu_0 = async_compile.triton('triton_poi_fused_add_relu_0', '''\n"
           "@triton.jit\ndef triton_poi_fused_add_relu_0(in_ptr0, xnumel):\n    pass\n''', device_str='cuda')\n"
           "async_compile.wait(globals())\n\ndef call(args):\n    arg0_1, = args\n"
           "    extern_kernels.mm(arg0_1, arg0_1, out=buf0)\n"
           "    triton_poi_fused_add_relu_0.run(buf0, 16, stream=stream0)\n    return (buf0, )\n\n\ndef get_args():\n    pass\n")
    assert output_code_kernels(gpu) == [{"name": "triton_poi_fused_add_relu_0", "kind": "triton",
                                         "aten": ["aten.add", "aten.relu"], "launches_per_call": 1}]
    assert extern_calls(gpu) == {"mm": 1}


def test_triton_cache_folders_are_found_by_their_metadata(cache):
    found = triton_kernel_dirs(cache / "triton")
    assert [m["name"] for _, m in found] == ["_softmax_rows", "add_relu_kernel"]
    assert all((folder / f"{m['name']}.ptx").is_file() for folder, m in found)


@pytest.mark.slow
def test_index_keeps_stages_summaries_and_links_to_output_code(cache, tmp_path):
    tool = find_cuobjdump()
    index = index_generated(cache, tmp_path / "generated", tool)
    kernels = {k["name"]: k for k in index["kernels"]}
    add = kernels["add_relu_kernel"]
    assert (add["num_warps"], add["num_stages"], add["shared_bytes"], add["arch"]) == (4, 3, 0, "sm90")
    assert add["ptx"]["entries"] == ["add_relu_kernel"] and add["ptx"]["reqntid"] == [128]
    # 1024 elements over 128 threads, two inputs: 16 scalar 4-byte loads a thread, 8 stores (no
    # alignment was promised to the compiler, so nothing is vectorized)
    assert add["ptx"]["global_loads_by_bytes"] == {"4": 16}
    assert add["ptx"]["st_global_scalar"] == 8 and "opcodes" not in add["ptx"]
    for stage in ("ptx", "ttgir", "source", "json"):
        assert (tmp_path / "generated" / add["files"][stage]).is_file()
    assert [m["kernels"][0]["name"] for m in index["output_code"]] == ["cpp_fused_gelu_sum_0"]
    assert (tmp_path / "generated" / index["output_code"][0]["file"]).is_file()
    assert json.loads((tmp_path / "generated" / "index.json").read_text()) == index
    if tool is None:
        pytest.skip("no cuobjdump here: SASS and registers are not read")
    assert add["registers"] == 30 and add["local_bytes"] == 0
    assert add["sass"]["ldg_by_bytes"] == {"4": 16} and add["sass"]["fmnmx"] == 8
    assert (tmp_path / "generated" / add["files"]["sass"]).read_text().count("LDG.E") == 16


def test_chapter9_triton_summary_is_a_special_case(cache, fixtures_dir):
    """ch09.triton's compiled_artifacts() summarizes its softmax with parse.code.ptx; the same kernel
    compiled into a cache is summarized the same way by the index."""
    ch09 = fixtures_dir / "ch09_ptx"
    [(folder, meta)] = [(f, m) for f, m in triton_kernel_dirs(cache / "triton") if m["name"] == "_softmax_rows"]
    ptx = (folder / "_softmax_rows.ptx").read_text()
    mine = kernel_code_summary("_softmax_rows", ptx, (ch09 / "triton_softmax_sm90.sass").read_text(),
                               (ch09 / "triton_softmax_sm90.res_usage.txt").read_text())
    theirs = summarize_ptx((ch09 / "triton_softmax_sm90.ptx").read_text())
    assert {k: v for k, v in mine["ptx"].items() if k != "top_opcodes"} == {k: v for k, v in theirs.items()
                                                                           if k != "opcodes"}
    assert mine["sass"]["instructions"] == summarize_sass((ch09 / "triton_softmax_sm90.sass").read_text())["instructions"]
    assert mine["registers"] is not None


def test_cache_env_leaves_a_users_cache_alone(tmp_path):
    assert cache_env(tmp_path, {}) == {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / COMPILE_CACHE_DIR / "inductor"),
                                       "TRITON_CACHE_DIR": str(tmp_path / COMPILE_CACHE_DIR / "triton")}
    assert cache_env(tmp_path, {"TRITON_CACHE_DIR": "/mine"}) == {
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / COMPILE_CACHE_DIR / "inductor")}


@pytest.mark.slow
def test_keep_generated_indexes_then_drops_the_cache(cache, tmp_path):
    env = cache_env(tmp_path, {})
    assert keep_generated(tmp_path, env) is None                 # nothing compiled: nothing kept
    shutil.copytree(cache, tmp_path / COMPILE_CACHE_DIR)
    kept = keep_generated(tmp_path, env)
    assert kept["triton_kernels"] == 2 and kept["output_code_modules"] == 1
    assert not (tmp_path / COMPILE_CACHE_DIR).exists()
    assert (tmp_path / GENERATED_DIR / "index.json").is_file()
    assert not list((tmp_path / GENERATED_DIR).rglob("*.cubin"))


@pytest.mark.slow
def test_a_variants_launches_select_its_kernels():
    sample = {d.name: d for d in sample_run_dirs()}[CH09_TRITON]
    data = load_run_dir(sample)
    assert launched_names("triton", data.kernels, data.timeline) == {"_softmax_rows"}
    assert "cunn_SoftMaxForwardReg" in launched_names("torch_softmax", data.kernels, data.timeline)
    assert base_name("void at::native::reduce_kernel<512, 1>(float*)") == "reduce_kernel"
    index = {"kernels": [{"name": "_softmax_rows"}, {"name": "add_relu_kernel"}]}
    assert [k["name"] for k in select_kernels(index, launched={"_softmax_rows"})] == ["_softmax_rows"]
    assert [k["name"] for k in select_kernels(index, kernel="RELU")] == ["add_relu_kernel"]


@pytest.fixture
def ch09_run_with_code(cache, tmp_path):
    """The shipped ch09.triton sample, as if collected with its compile cache kept."""
    sample = {d.name: d for d in sample_run_dirs()}[CH09_TRITON]
    run_dir = tmp_path / CH09_TRITON
    shutil.copytree(sample, run_dir)
    index_generated(cache, run_dir / GENERATED_DIR, find_cuobjdump())
    db = tmp_path / "a.db"
    CliRunner().invoke(cli, ["import", str(run_dir), "--db", str(db)], catch_exceptions=False)
    return db


@pytest.mark.slow
def test_code_command_prints_a_variants_kernels(ch09_run_with_code):
    db = str(ch09_run_with_code)
    out = CliRunner().invoke(cli, ["code", CH09_TRITON, "--db", db, "--variant", "triton"])
    assert out.exit_code == 0, out.output
    assert "_softmax_rows" in out.output and "add_relu_kernel" not in out.output
    # the cache was compiled on another machine by Triton 3.9 (50 registers); the sample's launch
    # ran Triton 3.6's build (ncu: 53): same name, not the build that ran
    assert "no build of this shape (1 of this name)" in out.output
    for args in ([], ["--all"]):
        fitted = CliRunner().invoke(cli, ["code", CH09_TRITON, "--db", db, *args], env={"COLUMNS": "120"}).stdout
        assert max(map(len, fitted.splitlines())) <= 120               # issue 18: fits a 120-column terminal
    wide = CliRunner().invoke(cli, ["--wide", "code", CH09_TRITON, "--db", db, "--all"], env={"COLUMNS": "120"}).stdout
    assert "global loads  SASS instr  matrix" in wide
    out = CliRunner().invoke(cli, ["code", CH09_TRITON, "--db", db, "--kernel", "softmax", "--show", "ptx"])
    assert ".entry _softmax_rows" not in out.output
    out = CliRunner().invoke(cli, ["code", CH09_TRITON, "--db", db, "--kernel", "softmax", "--show", "ptx", "--all"])
    assert ".entry _softmax_rows" in out.output
    out = CliRunner().invoke(cli, ["code", CH09_TRITON, "--db", db, "--show", "output"])
    assert "cpp_fused_gelu_sum_0 = async_compile.cpp_pybinding" in out.output
    doc = json.loads(CliRunner().invoke(cli, ["code", CH09_TRITON, "--db", db, "--variant", "baseline",
                                              "--json"]).output)
    assert doc["kernels"] == [] and "reduce_kernel" in doc["launched"]


@pytest.mark.slow
def test_code_command_says_when_a_run_has_no_generated_code(tmp_path):
    sample = {d.name: d for d in sample_run_dirs()}[CH09_TRITON]
    db = str(tmp_path / "a.db")
    CliRunner().invoke(cli, ["import", str(sample), "--db", db], catch_exceptions=False)
    out = CliRunner().invoke(cli, ["code", CH09_TRITON, "--db", db])
    assert out.exit_code == 6 and "kept no generated code here" in out.output


@pytest.mark.slow
def test_code_says_a_recording_keeps_no_generated_code(tmp_path):
    """A gate recording's processes each compile in an empty cache removed after (run.json `compile_cache`
    "fresh per process"), so it keeps no generated/: `code` says that, not "no variant compiled anything"
    (an H200 recording of ch09.fused_l2norm, 2026-11-30, was told the latter). The shipped sample's
    run.json edited to a recording's compile_cache, in a copy."""
    import shutil

    sample = {d.name: d for d in sample_run_dirs()}[CH09_TRITON]
    run = shutil.copytree(sample, tmp_path / sample.name)
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "compile_cache": "fresh per process", "generated": None}))
    db = str(tmp_path / "a.db")
    CliRunner().invoke(cli, ["import", str(run), "--db", db], catch_exceptions=False)
    out = CliRunner().invoke(cli, ["code", CH09_TRITON, "--db", db])
    assert out.exit_code == 6 and "each compiled in an empty cache of their own" in out.output


@pytest.mark.slow
def test_a_collection_runs_its_children_on_the_run_folders_caches_and_keeps_the_code(cache, tmp_path, monkeypatch):
    """runner.collect_into: the children's environment points Inductor and Triton into the run
    folder; what they compiled is indexed into generated/ and recorded in run.json."""
    from aisp_prof.collect.process import runner
    from aisp_prof.collect.process.steps import StepContext
    from aisp_prof.pairs import find

    for var in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)

    def child_that_compiled(ctx, child, report):
        shutil.copytree(cache / "triton", ctx.env["TRITON_CACHE_DIR"])
        shutil.copytree(cache / "inductor", ctx.env["TORCHINDUCTOR_CACHE_DIR"])
        return {"check": {"passed": True}, "env": {}, "timing": {}, "samples": []}

    monkeypatch.setattr(runner, "check_step", child_that_compiled)
    pair = find("ch09.fused_l2norm")
    ctx = StepContext(tmp_path, {"gpu": {}, "wall_s": {}})
    runner.collect_into(ctx, runner._Plan(pair, ["baseline"], dict(pair.sizes), None, None), runner.RunOptions(pair=pair))
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["generated"]["triton_kernels"] == 2 and info["generated"]["output_code_modules"] == 1
    assert ctx.env["TRITON_CACHE_DIR"] == str(tmp_path / COMPILE_CACHE_DIR / "triton")
    assert not (tmp_path / COMPILE_CACHE_DIR).exists() and (tmp_path / GENERATED_DIR / "index.json").is_file()


@pytest.mark.slow
def test_report_page_lists_the_generated_kernels_and_who_launched_them(ch09_run_with_code, tmp_path):
    from aisp_prof.api import open_db

    db = open_db(ch09_run_with_code)
    page = db.page(CH09_TRITON)
    rows = {g["name"]: g for g in page["generated_code"]}
    # the sample's launch ran another build of _softmax_rows (53 registers, not this cache's 50):
    # no variant ran this one (tests/unit/test_generated_h100.py has a run whose builds did run)
    assert rows["_softmax_rows"]["variants"] == [] and rows["add_relu_kernel"]["variants"] == []
    report = db.report(runs=[CH09_TRITON], out=tmp_path / "report")
    html = next(p for p in report.pages if "ch09.triton" in p.name).read_text()
    assert 'id="generated"' in html and "<code>_softmax_rows</code>" in html
