"""Issue 14, collection: the check child records each variant's first-call cost and what
torch.compile's Dynamo did (graphs, breaks with reasons, recompiles with guard reasons), and the
timing attributes any compile to the variant and phase (warm-up or timed) that caused it.

Dynamo's counters are read from real compiles of tiny CPU functions (backend="eager": Dynamo
captures graphs, breaks and recompiles exactly as with Inductor, without a C++ or GPU compiler).
`PAIR` and `checked_pair` are shared with test_compile_insight.py.
"""
from __future__ import annotations

import functools
import json

import pytest

torch = pytest.importorskip("torch")

from aisp_prof.collect.correctness import check  # noqa: E402
from aisp_prof.collect.code.dynamo import CallObserver, CompileWatch, compile_row, dynamo_loaded  # noqa: E402
from aisp_prof.pairs import KernelPair  # noqa: E402

SIZES = {"n": 64}


def _branchy(x):
    y = x.sin()
    if y.sum() > 0:          # data-dependent branch: Dynamo breaks the graph here
        return y + 1
    return y - 1


def test_watch_counts_graphs_and_a_data_dependent_break():
    f = torch.compile(_branchy, backend="eager")
    watch = CompileWatch()
    f(torch.rand(16))              # positive: one side of the branch
    events = watch.take()
    assert events.frames_compiled == 2          # _branchy, then the resume function after the break
    assert events.graphs == 2
    assert events.graph_breaks == 1 and events.recompiles == 0
    [reason] = events.graph_break_reasons
    assert reason["count"] == 1 and reason["reason"]
    assert "\n" not in reason["detail"]
    assert any("_branchy" in fr for fr in events.frames)
    assert events.dynamo_compile_time_ns > 0
    # compiled once: calling again down the same side compiles nothing; the other side resumes
    # in code Dynamo has not compiled yet
    f(torch.rand(16))
    assert watch.take().frames_compiled == 0
    f(-torch.rand(16))
    assert watch.take().frames_compiled == 1


def test_watch_names_a_recompile_and_its_guard():
    def scale(x):
        return x * 2 + 1

    f = torch.compile(scale, backend="eager")
    f(torch.randn(8))
    watch = CompileWatch()
    f(torch.randn(8, dtype=torch.float64))       # a dtype guard fails: a recompile
    events = watch.take()
    assert events.recompiles == 1 and events.graph_breaks == 0
    [r] = events.recompile_reasons
    assert "scale" in r["frame"] and "/1" in r["compile_id"]
    assert "dtype" in r["reason"].lower()


def test_a_break_on_an_untraceable_call_is_counted_with_its_reason():
    def noisy(x):
        y = x.cos()
        print("", end="")                    # print: Dynamo breaks the graph, resumes after it
        return y * 2

    watch = CompileWatch()
    torch.compile(noisy, backend="eager")(torch.randn(4))
    events = watch.take()
    assert events.graph_breaks == 1 and events.graphs == 2
    assert "print" in events.graph_break_reasons[0]["detail"]


def test_call_observer_attributes_compiles_to_the_variant_and_phase():
    def g(x):
        return x.relu() + 3

    f = torch.compile(g, backend="eager")
    observer = CallObserver()
    f(torch.randn(4)); observer("compiled", False)         # warm-up: compiles
    f(torch.randn(4)); observer("compiled", True)          # steady: nothing
    f(torch.randn(4, 2)); observer("compiled", True)       # a new shape inside the timed phase
    observer("eager", True)
    rows = {(r["variant"], r["phase"]): r for r in observer.rows(["eager", "compiled"], process=0)}
    assert rows[("compiled", "timing_warmup")]["frames_compiled"] == 1
    assert rows[("compiled", "timed")]["frames_compiled"] == 1
    assert rows[("compiled", "timed")]["recompiles"] == 1
    assert rows[("eager", "timed")]["frames_compiled"] == 0


# --- the check records each variant's first call and its compiles ---------------------------

def _make_inputs(sizes, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(sizes["n"], sizes["n"], generator=gen, device=device)}


def _reference(inputs):
    return (inputs["x"].double().sin() * 2).relu()


def _eager(inputs):
    x, y = inputs["x"], torch.empty_like(inputs["x"])

    def launch():
        torch.clamp_min(x.sin() * 2, 0, out=y)
        return y
    return launch


def _fused(x, y):
    y.copy_((x.sin() * 2).relu())
    return y


def _compiled(inputs):
    x, y = inputs["x"], torch.empty_like(inputs["x"])
    compiled = torch.compile(_fused, backend="eager")

    def launch():
        return compiled(x, y)
    launch.compiled = compiled
    return launch


PAIR = KernelPair(name="test.compiled", chapter=14, lesson="t", make_inputs=_make_inputs, reference=_reference,
                  variants={"baseline": _eager, "compiled": _compiled}, flops=lambda s: 0, bytes=lambda s: 0,
                  sizes=SIZES, tolerance=1e-5)


@functools.lru_cache(maxsize=None)
def checked_pair():
    """Once per process: Dynamo caches compiled code per function, so a second check in the
    same process would find `_fused` compiled already (0 frames)."""
    return check.check_pair(PAIR, device="cpu")


@pytest.fixture(scope="module")
def checked():
    return checked_pair()


def test_check_records_first_call_and_compiles_per_variant_and_trial(checked):
    assert checked.passed
    rows = {(r["variant"], r["trial"]): r for r in checked.compiles}
    assert set(rows) == {("baseline", 0), ("compiled", 0), ("baseline", 1), ("compiled", 1)}
    first = rows[("compiled", 0)]
    assert first["phase"] == "check" and first["frames_compiled"] == 1 and first["graphs"] == 1
    assert first["first_call_wall_ns"] > first["second_call_wall_ns"] > 0   # the first call compiled
    assert first["factory_wall_ns"] >= 0
    assert rows[("compiled", 1)]["frames_compiled"] == 0       # a second factory reuses the compiled code
    assert rows[("baseline", 0)]["frames_compiled"] == 0 and rows[("compiled", 0)]["dynamo_loaded"]
    assert json.loads(json.dumps(checked.to_dict()))["compiles"] == checked.compiles


def test_a_row_without_events_is_all_zero():
    row = compile_row("v", 0, "check", None)
    assert row["frames_compiled"] == 0 and row["graph_break_reasons"] == [] and row["first_call_wall_ns"] is None
    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
    assert dynamo_loaded()


def test_time_rounds_hands_every_call_to_the_observer():
    """A closure that meets a new shape on its 9th call recompiles inside the timed phase (5
    warm-up calls, the probe of whether it waits for the GPU, the round that estimates its latency
    (a call of itself, then the estimate), then timed calls): the observer puts that compile under
    (variant, timed)."""
    from aisp_prof.collect.timing.timer import SamplingPlan, time_rounds
    from sim_device import SimDevice

    def shift(x):
        return x - 1

    f = torch.compile(shift, backend="eager")
    calls = {"n": 0}

    def launch():
        calls["n"] += 1
        return f(torch.randn(3) if calls["n"] < 9 else torch.randn(3, 2))

    observer = CallObserver()
    plan = SamplingPlan(min_rounds=4, max_rounds=4, warmup=5, budget_s=10.0)
    samples = time_rounds({"compiled": [launch], "eager": [lambda: None]}, plan, observer=observer,
                          device=SimDevice())
    assert len(samples) == 4 * 2 * 3       # rounds x variants x kinds
    rows = {(r["variant"], r["phase"]): r for r in observer.rows(["compiled", "eager"], process=0)}
    assert rows[("compiled", "timing_warmup")]["frames_compiled"] == 1
    assert rows[("compiled", "timed")]["frames_compiled"] == 1 and rows[("compiled", "timed")]["recompiles"] == 1
    assert rows[("eager", "timed")]["frames_compiled"] == 0


def test_a_later_timing_process_times_each_first_call(monkeypatch):
    """child.first_calls: phase "warm_process", the first call's wall time and its compiles."""
    from aisp_prof.collect.process.child import first_calls

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)

    def halve(x):
        return x / 2

    f = torch.compile(halve, backend="eager")
    x = torch.ones(5)
    rows = {r["variant"]: r for r in first_calls({"compiled": [lambda: f(x)], "eager": [lambda: x / 2]},
                                                 ["eager", "compiled"], process=1)}
    assert rows["compiled"]["phase"] == "warm_process" and rows["compiled"]["process"] == 1
    assert rows["compiled"]["frames_compiled"] == 1 and rows["eager"]["frames_compiled"] == 0
    assert rows["compiled"]["first_call_wall_ns"] > 0


def test_a_later_process_with_empty_caches_of_its_own_says_so_and_is_not_read_as_warm(monkeypatch, tmp_path):
    """A gate's further processes and a recording's compile anew: their first calls are "fresh_process",
    which the compile summary does not take for a warm-cache first call."""
    import pandas as pd

    from aisp_prof.analyze.code.compiled import variant_compiles
    from aisp_prof.collect.process.child import first_calls

    from aisp_prof.collect.code.compile_cache import FRESH_MARK, cache_dirs

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    mine = tmp_path / "aisp-compile-abc"
    for var, path in {**cache_dirs(mine), FRESH_MARK: str(mine)}.items():
        monkeypatch.setenv(var, path)
    rows = first_calls({"eager": [lambda: torch.ones(2)]}, ["eager"], process=1)
    assert rows[0]["phase"] == "fresh_process"
    assert variant_compiles(pd.DataFrame(rows), "eager").get("warm_process_first_call_ns") is None
    monkeypatch.delenv(FRESH_MARK)
    assert first_calls({"eager": [lambda: torch.ones(2)]}, ["eager"], process=1)[0]["phase"] == "warm_process"


def test_run_timing_processes_option_reaches_the_collection():
    from aisp_prof.api.profiling import RunRequest
    from aisp_prof.pairs import find

    timing = RunRequest(timing_processes=2).options(find("ch09.fused_l2norm")).timing
    assert (timing.processes, timing.max_processes) == (2, 2)


def test_the_check_process_says_where_its_time_went(monkeypatch, tmp_path):
    """child.main's report carries phases_s (torch's import, the pair's load, the check, the timing):
    the gate's cost (benchmarks/gate_cost_table.py --runs) splits a pair's seconds with it."""
    import json
    from types import SimpleNamespace

    from aisp_prof.collect.correctness import check
    from aisp_prof.collect.process import child
    from aisp_prof.collect.timing import timer

    passed = {"value": False}

    def fake_check(pair, sizes, device, variants):
        return SimpleNamespace(passed=passed["value"], skipped_variants={},
                               to_dict=lambda: {"passed": passed["value"], "skipped_variants": {}})

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(timer, "l2_flush_bytes", lambda: 0)
    monkeypatch.setattr(child, "software_env", lambda: {})
    monkeypatch.setattr(check, "check_pair", fake_check)
    monkeypatch.setattr(child, "run_timing", lambda *a, **k: {"timing": {"baseline": {}}})
    out = tmp_path / "check.json"
    args = ["--pair", "ch09.fused_l2norm", "--variants", "baseline,cuda", "--sizes", "rows=4,cols=8",
            "--mode", "check", "--out", str(out), "--nsys-iterations", "0"]
    assert child.main(args) == 0
    phases = json.loads(out.read_text())["phases_s"]
    assert set(phases) == {"import_torch", "load_pair", "check"} and all(v >= 0 for v in phases.values())
    passed["value"] = True                 # a passed check goes on to the timing, which is timed too
    assert child.main(args) == 0
    assert set(json.loads(out.read_text())["phases_s"]) == {"import_torch", "load_pair", "check", "timing"}
