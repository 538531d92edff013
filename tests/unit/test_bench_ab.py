"""`aisp-prof bench ab` (issue 28): a pair's candidate against a base version of its code, timed
side by side in the same processes. On CPU: the verdict on real recorded samples (the H200
expectations hold each process's raw samples in time order; alternate samples of one variant
are an A/A of real data, and a copy of one side scaled by 1.10, or another variant's real
session, is a real slowdown), the timer's interleaving on a simulated device, the base version
from a git revision or a folder (the work tree untouched), both versions loaded side by side,
and the command's orchestration, exit codes and table. The GPU run is the lead's (dev/gpu_visit.sh ab).
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from repo_paths import FIXTURES, KERNELS, ROOT
from sim_device import SimDevice

from aisp_prof.analyze.gate.ab import AB_FLOOR, judge_ab, round_ratios, side_names, undecided_ab
from aisp_prof.cli import cli
from aisp_prof.errors import UnknownTargetError

CH14 = json.loads((KERNELS / "ch14" / "expectations_h200.json").read_text())["pairs"]
CH09 = json.loads((KERNELS / "ch09" / "expectations_h200.json").read_text())["pairs"]
US = 1_000.0


def split_session(entry, variant, scale=1.0, other=None):
    """Samples of `variant`'s recorded processes as an A/B run. The recording's sample i is from
    round i, whose ABBA order put the variant in one position on even rounds and another on odd
    ones; so, as `bench ab` alternates which side goes first, each block of four samples gives
    base:x the positions (even, odd) over rounds 2k, 2k+1 and cand:x the others. `scale`
    multiplies the candidate's (a copy labelled as scaled); with `other`, the candidate's times are
    that variant's recorded samples of the same process instead (a real recording)."""
    rows, session = [], entry["sessions"][0]
    for p, times in enumerate(session["samples"][variant]["time_ns"]):
        theirs = session["samples"][other]["time_ns"][p] if other else None
        for k in range(len(times) // 4):
            a, b, c, d = times[4 * k: 4 * k + 4]
            if other:
                if 2 * k + 1 >= len(theirs):
                    break
                b, c = theirs[2 * k], theirs[2 * k + 1]
            rows += [{"process": p, "round": 2 * k, "variant": "base:x", "time_ns": a},
                     {"process": p, "round": 2 * k, "variant": "cand:x", "time_ns": b * scale},
                     {"process": p, "round": 2 * k + 1, "variant": "cand:x", "time_ns": c * scale},
                     {"process": p, "round": 2 * k + 1, "variant": "base:x", "time_ns": d}]
    return pd.DataFrame(rows)


def fixed_positions(entry, variant):
    """The same samples split without alternating: base:x always the even rounds' position."""
    rows = []
    for p, times in enumerate(entry["sessions"][0]["samples"][variant]["time_ns"]):
        for r in range(len(times) // 2):
            rows += [{"process": p, "round": r, "variant": "base:x", "time_ns": times[2 * r]},
                     {"process": p, "round": r, "variant": "cand:x", "time_ns": times[2 * r + 1]}]
    return pd.DataFrame(rows)


EVIDENCE = {f"{path.parent.name}/{name}": entry for path in sorted(KERNELS.glob("ch*/expectations_*.json"))
            for name, entry in (json.loads(path.read_text()).get("pairs") or {}).items()
            if json.loads(path.read_text()).get("format") == 3}
EVERY_VARIANT = [(key, v) for key, e in EVIDENCE.items() for v in e["sessions"][0]["samples"] if not v.startswith("ref:")]
POWER_CAPPED = {"ch09.structured_sparsity", "ch09.structured_sparsity_ffn"}   # 2:4 GEMMs at the 700 W cap


@pytest.mark.slow
@pytest.mark.parametrize("key,variant", EVERY_VARIANT)
def test_every_recorded_variants_aa_is_never_a_change_and_its_scaled_copy_is_slower(key, variant):
    """All 150 variants of the recorded format-3 evidence (the H200 files of ch09, ch10, ch14): the
    A/A of real samples is SAME (AMBIGUOUS only for the power-capped 2:4 sparse GEMMs, whose clock wanders), never FASTER
    or SLOWER; the candidate's side scaled by 1.10 is SLOWER for every one."""
    entry = EVIDENCE[key]
    kind, name = entry["sessions"][0]["kind"], key.split("/", 1)[1]
    aa = judge_ab(name, split_session(entry, variant), kind, ["x"], ["x"])[0]
    assert aa.verdict == ("AMBIGUOUS" if name in POWER_CAPPED and aa.verdict != "SAME" else "SAME"), aa.to_dict()
    slower = judge_ab(name, split_session(entry, variant, 1.10), kind, ["x"], ["x"])[0]
    assert slower.verdict == "SLOWER", slower.to_dict()


@pytest.mark.parametrize("key,variant,kind,fixed", [("ch10/ch10.matmul_wgmma_epilogue", "fused_epilogue", "gpu", "SLOWER"),
                                                     ("ch14/ch14.gpu_quantization", "gpu_compiled", "latency", "FASTER")])
def test_a_cost_of_position_cancels_in_abba_blocks(key, variant, kind, fixed):
    """Recorded with the same code, these two ran differently in their two ABBA positions (GPU time
    +3.5%, latency -9.6%): split by position they read as a change; split as `bench ab` alternates
    the sides, each block's ratio holds one of each position and the A/A is SAME."""
    entry = EVIDENCE[key]
    assert judge_ab("p", fixed_positions(entry, variant), kind, ["x"], ["x"])[0].verdict == fixed
    assert judge_ab("p", split_session(entry, variant), kind, ["x"], ["x"])[0].verdict == "SAME"


HOST_CASES = [(name, v) for name, e in CH14.items() if e["sessions"][0]["kind"] == "steady"
              for v in e["sessions"][0]["samples"] if not v.startswith("ref:")]


@pytest.mark.parametrize("name,variant", HOST_CASES)
def test_a_real_host_side_aa_is_same_and_a_10_percent_slower_copy_is_slower(name, variant):
    """Every steady-timed variant the H200 recorded (attention_eager_sdpa, graph_break_control_flow,
    triton_persistent): its own alternate samples are SAME within the 5% floor; the same data with
    the candidate's side scaled by 1.10 is SLOWER, the interval wholly above the margin."""
    entry = CH14[name]
    same = judge_ab(name, split_session(entry, variant), "steady", ["x"], ["x"])[0]
    assert same.verdict == "SAME", same.to_dict()
    assert same.metric("cand_vs_base").margin == pytest.approx(AB_FLOOR["steady"])
    slower = judge_ab(name, split_session(entry, variant, scale=1.10), "steady", ["x"], ["x"])[0]
    assert slower.verdict == "SLOWER", slower.to_dict()
    assert slower.metric("cand_vs_base").change.low > 1.05 and "beyond the +-5.0% margin" in slower.cause


def test_the_planted_pair_on_real_data_slower_only_where_planted():
    """attention_eager_sdpa as the host plant leaves it: sdpa_flash's candidate side +10% (a scaled
    copy of real samples), the baseline untouched: SLOWER for sdpa_flash, SAME for the baseline."""
    entry = CH14["ch14.attention_eager_sdpa"]
    frames = [split_session(entry, "baseline").replace({"base:x": "base:baseline", "cand:x": "cand:baseline"}),
              split_session(entry, "sdpa_flash", 1.10).replace({"base:x": "base:sdpa_flash", "cand:x": "cand:sdpa_flash"})]
    variants = ["baseline", "sdpa_flash"]
    verdicts = {v.variant: v.verdict for v in judge_ab("p", pd.concat(frames), "steady", variants, variants)}
    assert verdicts == {"baseline": "SAME", "sdpa_flash": "SLOWER"}


def test_another_variants_real_session_is_slower_and_the_reverse_faster():
    entry = CH14["ch14.attention_eager_sdpa"]
    slower = judge_ab("p", split_session(entry, "sdpa_flash", other="baseline"), "steady", ["x"], ["x"])[0]
    assert slower.verdict == "SLOWER" and slower.metric("cand_vs_base").change.value > 5
    faster = judge_ab("p", split_session(entry, "baseline", other="sdpa_flash"), "steady", ["x"], ["x"])[0]
    assert faster.verdict == "FASTER"


def test_a_real_gpu_time_aa_is_same_at_the_2_percent_floor():
    entry = CH09["ch09.fused_l2norm"]
    for v in ("baseline", "cuda", "triton"):
        assert judge_ab("p", split_session(entry, v), "gpu", ["x"], ["x"])[0].verdict == "SAME"
        assert judge_ab("p", split_session(entry, v, 1.10), "gpu", ["x"], ["x"])[0].verdict == "SLOWER"


def test_new_missing_and_incomplete_blocks():
    row = lambda r, side, t: {"process": 0, "round": r, "variant": f"{side}:a", "time_ns": t}  # noqa: E731
    df = pd.DataFrame([row(0, "base", 10.0), row(1, "cand", 11.0)])
    assert round_ratios(df, "a") == []
    whole = pd.DataFrame([row(0, "base", 10.0), row(0, "cand", 11.0), row(1, "cand", 9.0), row(1, "base", 12.0),
                          row(2, "base", 10.0), row(2, "cand", 11.0)])       # round 3 missing: block 1 is left out
    assert [list(g) for g in round_ratios(whole, "a")] == [[20.0 / 22.0]]
    out = {v.variant: v.verdict for v in judge_ab("p", df, "gpu", ["a", "gone"], ["a", "new"])}
    assert out == {"a": "AMBIGUOUS", "new": "NEW", "gone": "MISSING"}


def test_the_timer_interleaves_both_versions_in_every_round_and_a_host_cost_shows():
    """The gate's timer on a simulated GPU: base:X and cand:X in every round (ABBA: each first in
    every other round); a candidate with +10% host cost per call of a host-bound variant is SLOWER
    by steady time, the GPU-bound variant SAME; identical code is SAME."""
    from aisp_prof.collect.timing.timer import SamplingPlan, time_rounds

    dev = SimDevice(issue_ns=2 * US)
    calls = {"base:baseline": dev.variant(5 * US, 400 * US), "cand:baseline": dev.variant(5 * US, 400 * US),
             "base:host": dev.variant(100 * US, 10 * US), "cand:host": dev.variant(110 * US, 10 * US)}
    names = side_names(["baseline", "host"])
    assert names == ["base:baseline", "cand:baseline", "base:host", "cand:host"]
    plan = SamplingPlan(min_rounds=12, max_rounds=12, warmup=2, budget_s=60.0, kinds=("steady",))
    samples = [s for p in range(2) for s in time_rounds({n: [calls[n]] for n in names}, plan, process=p, device=dev)]
    firsts = {s["variant"] for s in samples if s["slot"] == 0}
    assert firsts == {"base:baseline", "cand:host"}
    verdicts = {v.variant: v.verdict for v in judge_ab("p", pd.DataFrame(samples), "steady", ["baseline", "host"],
                                                       ["baseline", "host"])}
    assert verdicts == {"baseline": "SAME", "host": "SLOWER"}
    assert not undecided_ab(samples, "steady", ["baseline", "host"], 2)
    assert undecided_ab([s for s in samples if s["process"] == 0], "steady", ["baseline", "host"], 2)


# ------------------------------------------------------------------ the base version

def _status() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True).stdout


def test_a_revision_is_extracted_aside_and_the_work_tree_is_untouched():
    pytest.importorskip("torch")
    from aisp_prof import pairs
    from aisp_prof.bench.base import base_version

    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    pair, before = pairs.find("ch09.fused_l2norm"), _status()
    shown = subprocess.run(["git", "-C", str(ROOT), "show", "HEAD:kernels/ch09/fused_l2norm.py"],
                           capture_output=True, text=True, check=True).stdout
    with base_version("HEAD", pair) as (path, label):
        assert path.read_text() == shown and label.startswith("HEAD (")
        assert (path.parent / "fused_l2norm.cu").is_file() and ROOT not in path.parents
        extracted = path
    assert not extracted.exists() and _status() == before
    with base_version(str(KERNELS), pair) as (path, label):
        assert path == KERNELS / "ch09" / "fused_l2norm.py"
    for bad in ("no-such-revision", "--output=x"):
        with pytest.raises(UnknownTargetError, match="neither a folder nor a git revision"):
            with base_version(bad, pair):
                pass


def test_a_pair_file_outside_the_repository_takes_its_own_repositorys_revision(tmp_path):
    """A pair file's base is its own file at the revision of the repository it lives in; a
    revision without it, and a folder without it, are one-line errors (exit 2)."""
    from aisp_prof.bench.base import base_version
    from aisp_prof.pairs import KernelPair

    repo = tmp_path / "mine"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], capture_output=True, check=True)  # noqa: E731
    git("init", "-q")
    (repo / "other.py").write_text("x = 0\n")
    git("add", "."), git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "one")
    (repo / "pair_a.py").write_text("VERSION = 1\n")
    git("add", "."), git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "two")
    (repo / "pair_a.py").write_text("VERSION = 2\n")
    pair = replace(_tiny_pair(), source=str(repo / "pair_a.py"))
    assert isinstance(pair, KernelPair)
    with base_version("HEAD", pair) as (path, _):
        assert path.read_text() == "VERSION = 1\n"
    assert (repo / "pair_a.py").read_text() == "VERSION = 2\n"
    with pytest.raises(UnknownTargetError, match="is not in"):
        with base_version("HEAD~1", pair):
            pass
    with pytest.raises(UnknownTargetError, match="no pair_a.py there"):
        with base_version(str(tmp_path), pair):
            pass


def _tiny_pair():
    from aisp_prof.pairs import KernelPair

    return KernelPair(name="mine.a", chapter=0, lesson="", make_inputs=lambda s, d, seed: {}, variants={"baseline": None},
                      reference=lambda i: 0, flops=lambda s: 0, bytes=lambda s: 0)


def test_both_versions_load_side_by_side_and_each_calls_its_own_code():
    """The candidate and the base (HEAD's copy, extracted) are two modules in one process; the
    combined pair's base:X runs the base module's factory on the base's inputs, and both pass
    their check on CPU."""
    pytest.importorskip("torch")
    from aisp_prof import pairs
    from aisp_prof.bench.base import base_version
    from aisp_prof.collect.process.ab_child import check_both, load_versions, side_by_side

    name = "ch14.attention_eager_sdpa"
    cand_file = Path(pairs.find(name).source)
    with base_version("HEAD", pairs.find(name)) as (base_file, _):
        base, cand = load_versions(name, base_file, cand_file)
        assert base.variants["baseline"].__module__ != cand.variants["baseline"].__module__
        sizes = dict(cand.small_sizes or cand.sizes)
        both = side_by_side(base, cand, ["baseline"])
        assert list(both.variants) == ["base:baseline", "cand:baseline"]
        inputs = both.make_inputs(sizes, "cpu", 0)
        assert set(inputs) == {"base", "cand"} and inputs["base"]["q"] is not inputs["cand"]["q"]
        out_base, out_cand = both.variants["base:baseline"](inputs)(), both.variants["cand:baseline"](inputs)()
        assert out_base.equal(out_cand)
        assert both.bytes(sizes) == 2 * cand.bytes(sizes)
        checks = check_both(base, cand, sizes, ["baseline"], device="cpu")
        assert checks["base"]["passed"] and checks["cand"]["passed"]
        with pytest.raises(UnknownTargetError, match="defines pair"):
            load_versions("ch14.other", base_file, cand_file)


# ------------------------------------------------------------------ the command

def _recorded_child(scale: float, failed: bool = False):
    """A stand-in for the timing process that answers with real recorded samples: process p of
    attention_eager_sdpa's H200 session split into base and candidate (sdpa_flash's candidate
    scaled by `scale`), the check as `failed` says. It records the command lines it was given."""
    entry, seen = CH14["ch14.attention_eager_sdpa"], []

    def child(command, report, log):
        seen.append(command)
        p = int(command[command.index("--process") + 1])
        assert Path(command[command.index("--base-file") + 1]).is_file()
        df = pd.concat([split_session(entry, v, scale if v == "sdpa_flash" else 1.0)
                        .replace({"base:x": f"base:{v}", "cand:x": f"cand:{v}"}) for v in ("baseline", "sdpa_flash")])
        df = df[df["process"] == p % 2].assign(process=p, kind="steady")
        checks = {"base": {"passed": True}, "cand": {"passed": not failed, "failed_variants": ["sdpa_flash"]}}
        return {"ok": True, "samples": df.to_dict("records"), "sensor": {}, **({"checks": checks} if p == 0 else {})}
    return child, seen


@pytest.fixture
def gpu_here(monkeypatch):
    pytest.importorskip("torch")
    from aisp_prof.pairs import capabilities

    machine = capabilities.Machine(have=frozenset(capabilities.KNOWN_NEEDS), cc=(9, 0), gpu_name="NVIDIA H200",
                                   gpu_count=1)
    monkeypatch.setattr(capabilities, "detect_machine", lambda *a, **k: machine)
    return machine


@pytest.mark.parametrize("scale,code,verdict", [(1.0, 0, "SAME"), (1.10, 11, "SLOWER")])
def test_the_command_judges_recorded_processes(monkeypatch, gpu_here, scale, code, verdict):
    from aisp_prof.bench import ab

    child, seen = _recorded_child(scale)
    monkeypatch.setattr(ab, "run_child", child)
    res = CliRunner().invoke(cli, ["bench", "ab", "--targets", "ch14.attention_eager_sdpa", "--base", "HEAD"])
    assert res.exit_code == code, res.output
    lines = res.stdout.splitlines()
    assert "candidate vs base HEAD (" in lines[0] and "steady time" in lines[0] and "+-5%" in lines[0]
    row = next(line for line in lines if line.split()[1:2] == ["sdpa_flash"])
    assert verdict in row and max(map(len, lines)) <= 120
    assert ["--check" in c for c in seen] == [True] + [False] * (len(seen) - 1) and len(seen) == 2
    if code:
        assert "ch14.attention_eager_sdpa:sdpa_flash" in res.stderr


def test_the_command_json_and_a_failed_check(monkeypatch, gpu_here):
    from aisp_prof.bench import ab

    child, _ = _recorded_child(1.10)
    monkeypatch.setattr(ab, "run_child", child)
    res = CliRunner().invoke(cli, ["bench", "ab", "--targets", "ch14.attention_eager_sdpa", "--base", "HEAD", "--json"])
    out = json.loads(res.stdout)
    pair = out["pairs"][0]
    assert out["fails"] and pair["kind"] == "steady" and pair["floor"] == 0.05 and pair["processes"] == 2
    flash = next(v for v in pair["verdicts"] if v["variant"] == "sdpa_flash")
    metric = flash["metrics"][0]
    assert flash["verdict"] == "SLOWER" and metric["metric"] == "cand_vs_base" and metric["change"]["low"] > 1.05
    assert flash["base_ns"] < flash["cand_ns"]
    child, _ = _recorded_child(1.0, failed=True)
    monkeypatch.setattr(ab, "run_child", child)
    res = CliRunner().invoke(cli, ["bench", "ab", "--targets", "ch14.attention_eager_sdpa", "--base", "HEAD"])
    assert res.exit_code == 7 and "cand: sdpa_flash" in res.stderr and "Traceback" not in res.output


def test_a_bad_base_is_one_line_and_exit_2(tmp_path):
    pytest.importorskip("torch")
    res = CliRunner().invoke(cli, ["bench", "ab", "--targets", "ch14.attention_eager_sdpa", "--base", "no-such-rev"])
    assert res.exit_code == 2 and "neither a folder nor a git revision" in res.stderr
    res = CliRunner().invoke(cli, ["bench", "ab", "--targets", "ch14.attention_eager_sdpa", "--base", str(tmp_path)])
    assert res.exit_code == 2 and "ch14/attention_eager_sdpa.py" in res.stderr


def test_the_timing_process_times_both_versions_in_one_plan(monkeypatch, tmp_path):
    """ab_child's main on CPU with the GPU's parts stood in for: the first process checks both
    versions, then hands the timer one pair whose variants are base:X, cand:X for each variant,
    the pair's one kind of time, no reference kernels; a failed check stops before any timing."""
    torch = pytest.importorskip("torch")
    from aisp_prof.collect.process import ab_child, child
    from aisp_prof.collect.timing import timer

    seen = {}

    def fake_timing(pair, sizes, variants, plan, references, process):
        seen.update(variants=variants, kinds=plan.kinds, references=references, process=process)
        return {"samples": [{"process": process, "round": 0, "variant": variants[0], "time_ns": 1.0}]}

    checks = {"base": {"passed": True}, "cand": {"passed": True}}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(timer, "l2_flush_bytes", lambda: 0)
    monkeypatch.setattr(child, "run_timing", fake_timing)
    monkeypatch.setattr(ab_child, "check_both", lambda *a, **k: checks)
    source = str(KERNELS / "ch14" / "attention_eager_sdpa.py")
    args = ["--pair", "ch14.attention_eager_sdpa", "--base-file", source, "--cand-file", source, "--variants",
            "baseline,sdpa_flash", "--kind", "steady", "--process", "0", "--check", "--out", str(tmp_path / "r.json")]
    assert ab_child.main(args) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["ok"] and report["checks"] == checks and len(report["samples"]) == 1
    assert seen["variants"] == ["base:baseline", "cand:baseline", "base:sdpa_flash", "cand:sdpa_flash"]
    assert seen["kinds"] == ("steady",) and seen["references"] is False and seen["process"] == 0
    seen.clear()
    checks["cand"] = {"passed": False, "failed_variants": ["sdpa_flash"]}
    assert ab_child.main(args) == 0 and not seen
    assert "samples" not in json.loads((tmp_path / "r.json").read_text())
    bad = [*args[:-1], str(tmp_path / "r.json")]
    bad[1] = "ch14.other"
    assert ab_child.main(bad) == 2 and "defines pair" in json.loads((tmp_path / "r.json").read_text())["error"]


def test_a_variant_without_a_kernel_at_these_sizes_is_skipped_not_timed(gpu_here):
    """A variant either version's check skipped (no kernel at these sizes) is left out of the
    later processes' command lines and of the verdicts, and the reason is said."""
    from aisp_prof import pairs
    from aisp_prof.bench.ab import AbOptions, ab_one

    child, seen = _recorded_child(1.0)

    def skipping(command, report, log):
        out = child(command, report, log)
        if "checks" in out:
            out["checks"]["base"]["skipped_variants"] = {"sdpa_flash": "No available kernel"}
        out["samples"] = [s for s in out["samples"] if not s["variant"].endswith("sdpa_flash")]
        return out

    outcome = ab_one(pairs.find("ch14.attention_eager_sdpa"), "HEAD", AbOptions(), machine=gpu_here, child=skipping)
    assert [v.variant for v in outcome.verdicts] == ["baseline"] and outcome.verdicts[0].verdict == "SAME"
    assert "sdpa_flash skipped: No available kernel" in outcome.message
    assert [c[c.index("--variants") + 1] for c in seen] == ["baseline,sdpa_flash", "baseline"]


def test_a_timing_process_that_fails_keeps_its_exit_code_or_says_where_its_log_is(tmp_path):
    """run_child: a child's error report keeps the error's class (a wrong pair file: exit 2); a
    child that dies without a report is ProfilerFailedError (exit 8) with the log's last lines."""
    import sys

    from aisp_prof.bench.ab import run_child
    from aisp_prof.errors import ProfilerFailedError

    report = tmp_path / "r.json"
    write = ("import json,sys; json.dump({'ok': False, 'error': 'x.py defines pair a', "
             "'error_type': 'UnknownTargetError'}, open(sys.argv[1], 'w'))")
    with pytest.raises(UnknownTargetError, match="defines pair a"):
        run_child([sys.executable, "-c", write, str(report)], report, tmp_path / "a.log")
    report.unlink()
    with pytest.raises(ProfilerFailedError, match="exited 3 with no report: boom"):
        run_child([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], report, tmp_path / "b.log")


def test_a_chapter_skips_what_cannot_run_here_and_a_torchrun_pair_alone_fails(monkeypatch, gpu_here):
    from aisp_prof.api.profiling import bench_ab
    from aisp_prof.bench import ab
    from aisp_prof.errors import RequirementError

    judged = []
    monkeypatch.setattr(ab, "ab_one", lambda pair, *a, **k: judged.append(pair.name) or pair.name)
    said = []
    bench_ab(["ch14"], "HEAD", {}, progress=said.append)
    assert "ch14.quantized_allreduce" not in judged and "ch14.attention_eager_sdpa" in judged
    assert any(m.startswith("ch14.quantized_allreduce: skipped: ") for m in said)
    monkeypatch.undo()
    from aisp_prof.pairs import capabilities
    monkeypatch.setattr(capabilities, "detect_machine", lambda *a, **k: gpu_here)
    with pytest.raises(RequirementError, match="torchrun job"):
        bench_ab(["ch14.quantized_allreduce"], "HEAD", {})


def test_the_host_plant_is_judged_against_the_real_pair(monkeypatch):
    """What the GPU visit's ab step runs: with AISP_KERNELS at the slowdown fixtures, the candidate
    is the fixture (sdpa_flash slowed on the host) and the base, from the kernels folder or from
    a revision, is the real pair: the two differ in that one variant only."""
    pytest.importorskip("torch")
    from aisp_prof import pairs
    from aisp_prof.bench.base import base_version
    from aisp_prof.collect.process.ab_child import load_versions

    monkeypatch.setenv("AISP_KERNELS", str(FIXTURES / "gate_kernels"))
    cand = pairs.find("ch14.attention_eager_sdpa")
    for base in (str(KERNELS), "HEAD"):
        with base_version(base, cand) as (base_file, _):
            assert base_file.parts[-3:] == ("kernels", "ch14", "attention_eager_sdpa.py")
            old, new = load_versions(cand.name, base_file, Path(cand.source))
            assert new.variants["sdpa_flash"].__name__ == "slowed_sdpa_flash"
            assert old.variants["sdpa_flash"].__name__ != "slowed_sdpa_flash"
            assert old.variants["baseline"].__name__ == new.variants["baseline"].__name__


def test_every_ab_process_compiles_in_empty_caches_of_its_own_beside_its_report(monkeypatch, tmp_path):
    """A confirming process is a new draw of the compiler's choices, and bench ab leaves the machine's
    compile caches alone: each process's caches are a fresh folder in the A/B's temporary folder."""
    torch = pytest.importorskip("torch")
    from aisp_prof.bench.ab import AbOptions, child_args
    from aisp_prof.collect.code.compile_cache import CACHE_VARS
    from aisp_prof.collect.process import ab_child, child
    from aisp_prof.collect.timing import timer
    from aisp_prof.pairs import find

    pair = find("ch14.attention_eager_sdpa")
    for p in (0, 1):
        assert "--fresh-compile-cache" in child_args(pair, Path(pair.source), ["baseline"], "steady", AbOptions(),
                                                     p, tmp_path / f"p{p}.json")
    for var in CACHE_VARS:                       # restored after the test: main() points them at its folder
        monkeypatch.setenv(var, "/nowhere")
    monkeypatch.delenv("AISP_FRESH_COMPILE_CACHE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(timer, "l2_flush_bytes", lambda: 0)
    monkeypatch.setattr(child, "run_timing", lambda *a, **k: {"samples": []})
    source = str(KERNELS / "ch14" / "attention_eager_sdpa.py")
    out = tmp_path / "ab" / "r.json"
    out.parent.mkdir()
    assert ab_child.main(["--pair", "ch14.attention_eager_sdpa", "--base-file", source, "--cand-file", source,
                          "--variants", "baseline", "--kind", "steady", "--out", str(out),
                          "--fresh-compile-cache"]) == 0
    folders = {Path(os.environ[var]).parent for var in CACHE_VARS}
    assert len(folders) == 1 and next(iter(folders)).parent == out.parent


def test_sigterm_stops_bench_ab_at_its_next_step_and_its_temporary_folder_goes(monkeypatch, tmp_path):
    """A CI job's time limit (SIGTERM) stops `bench ab` as Ctrl-C does (exit 130): its temporary folder,
    now holding every process's compile cache, is removed instead of left by a death by signal."""
    import signal

    from click.testing import CliRunner

    from aisp_prof.api import profiling
    from aisp_prof.cli import cli

    made = []

    def fake_ab(targets, base, options, progress=lambda m: None):
        import tempfile

        with tempfile.TemporaryDirectory(prefix="aisp-ab-", dir=tmp_path) as work:
            made.append(Path(work))
            (Path(work) / "aisp-compile-x").mkdir()
            os.kill(os.getpid(), signal.SIGTERM)
            progress("ch14.attention_eager_sdpa: timing base and candidate side by side, process 2")
            raise AssertionError("the SIGTERM did not stop bench ab at its next step")

    def ours(signum, frame):                 # without the command's own handler the SIGTERM lands here, not on pytest
        pass

    monkeypatch.setattr(profiling, "bench_ab", fake_ab)
    before = signal.signal(signal.SIGTERM, ours)
    try:
        res = CliRunner().invoke(cli, ["bench", "ab", "--targets", "ch14.attention_eager_sdpa", "--base", "kernels"])
        assert signal.getsignal(signal.SIGTERM) is ours          # the command put the caller's back
    finally:
        signal.signal(signal.SIGTERM, before)
    assert res.exit_code == 130 and "interrupted" in res.stderr, res.output
    assert made and not made[0].exists()
