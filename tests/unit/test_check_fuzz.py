"""`aisp-prof check --fuzz N`: shapes drawn inside each pair's size rules (edges first, the same
seed the same shapes), each checked against float64; a table of shape -> pass/skip/fail, exit 7
on any wrong result. CPU only: a pair file checked with --device cpu, and the child's crash
handling with a fake child."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from interrupts import python_ctrl_c

torch = pytest.importorskip("torch")

from aisp_prof.cli import cli  # noqa: E402
from aisp_prof.collect.correctness import fuzz, shape_check  # noqa: E402
from aisp_prof.pairs import discover  # noqa: E402
from aisp_prof.pairs.size_rules import broken_rules  # noqa: E402

PAIRS = discover()
BUDGET = fuzz.Budget(256 << 20, 1e11)

PAIR_FILE = '''
import torch
from aisp_prof.pairs import KernelPair, SizeRule


def make_inputs(sizes, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(sizes["rows"], sizes["cols"], generator=gen, device=device)}


def _variant(wrong_when, no_kernel_when):
    def factory(inputs):
        x = inputs["x"]
        y = torch.empty_like(x)
        if no_kernel_when(x):
            raise RuntimeError("No available kernel. Aborting execution.")

        def launch():
            torch.mul(x, 3 if wrong_when(x) else 2, out=y)
            return y
        return launch
    return factory


PAIR = KernelPair(
    name="mine.doubles", chapter=1, lesson="x2", make_inputs=make_inputs,
    variants={"baseline": _variant(lambda x: False, lambda x: False),
              "odd_rows_wrong": _variant(lambda x: x.shape[0] % 2 == 1 and WRONG, lambda x: False),
              "wide_no_kernel": _variant(lambda x: False, lambda x: x.shape[1] > 64)},
    reference=lambda i: i["x"].double() * 2, flops=lambda s: s["rows"] * s["cols"],
    bytes=lambda s: 8 * s["rows"] * s["cols"], sizes={"rows": 64, "cols": 96},
    size_rules=(SizeRule("cols", step=4, why="float4 rows"),))
'''


def _pair_file(tmp_path: Path, wrong: bool) -> Path:
    path = tmp_path / "doubles.py"
    path.write_text(f"WRONG = {wrong}\n" + PAIR_FILE)
    return path


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_shapes_are_inside_the_rules_and_the_budget_and_reproducible(pair):
    shapes = fuzz.draw_shapes(pair, 8, seed=3, budget=BUDGET)
    assert shapes and shapes == fuzz.draw_shapes(pair, 8, seed=3, budget=BUDGET)
    assert len({fuzz.shape_text(s) for s in shapes}) == len(shapes)
    for s in shapes:
        assert set(s) == set(pair.sizes) and not broken_rules(pair.size_rules, s), s
        assert fuzz.fits(pair, s, BUDGET), s


def test_the_edges_come_first():
    pair = next(p for p in PAIRS if p.name == "ch10.cluster_pipeline")    # n, k: multiples of 8
    smallest, big, *_ = fuzz.draw_shapes(pair, 5, budget=BUDGET)
    assert smallest == {"m": 1, "n": 8, "k": 8}
    assert fuzz.fits(pair, big, BUDGET) and not all(fuzz.fits(pair, {**big, k: 2 * v}, BUDGET) for k, v in big.items())
    assert fuzz.draw_shapes(pair, 5, seed=1, budget=BUDGET)[2:] != fuzz.draw_shapes(pair, 5, seed=2, budget=BUDGET)[2:]


def test_check_fuzz_on_the_cpu_passes_a_right_pair_and_names_the_skips(tmp_path):
    res = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, False)), "--fuzz", "6", "--device", "cpu",
                                   "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["stopped"] is None and out["not_checked"] == 0
    rows = out["results"]
    assert len(rows) == 6 and {r["status"] for r in rows} == {"pass"}
    assert all(r["sizes"]["cols"] % 4 == 0 for r in rows)
    wide = [r for r in rows if r["sizes"]["cols"] > 64]
    assert wide and all("no kernel for these sizes" in r["skipped"]["wide_no_kernel"] for r in wide)


def test_a_wrong_shape_fails_with_exit_7_and_the_table_says_where(tmp_path):
    res = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, True)), "--fuzz", "8", "--seed", "5",
                                   "--device", "cpu"])
    assert res.exit_code == 7, res.output
    assert "odd_rows_wrong: rel_err_vs_reference" in res.stdout and " fail " in res.stdout
    assert "shape(s):" in res.stdout and res.output.count("aisp-prof: error") == 1


def test_shards_split_one_seeded_fuzz_exactly(tmp_path):
    def shapes(*extra):
        res = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, False)), "--fuzz", "7", "--seed", "4",
                                       "--device", "cpu", "--json", *extra])
        assert res.exit_code == 0, res.output
        return [r["shape"] for r in json.loads(res.stdout)["results"]]
    whole, first, second = shapes(), shapes("--shard", "1/2"), shapes("--shard", "2/2")
    assert len(whole) == 7 and first == whole[0::2] and second == whole[1::2]
    bad = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, False)), "--fuzz", "2", "--shard", "3/2"])
    assert bad.exit_code == 2 and "1 <= K <= N" in bad.output


@pytest.mark.parametrize("extra", [(), ("--sizes", "rows=8,cols=8"), ("--fuzz", "0")])
def test_a_shard_holding_none_of_a_pair_s_shapes_finishes_with_none_left(tmp_path, extra):
    """Without --fuzz (or --fuzz 0) a pair has one shape (its default or --sizes), which shard 1/2
    checks: shard 2/2 checks nothing and leaves nothing unchecked (it said "1 not checked", the
    count a skipped pair's one result stands for), exit 0; shard 1/2 checks that one shape."""
    def run(shard):
        res = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, False)), "--device", "cpu", "--json",
                                       "--shard", shard, *extra])
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)
    first, second = run("1/2"), run("2/2")
    assert len(first["results"]) == 1 and first["not_checked"] == 0
    given = {"rows": 8, "cols": 8} if extra[:1] == ("--sizes",) else {"rows": 64, "cols": 96}
    assert first["results"][0]["sizes"] == given
    assert second["results"] == [] and second["not_checked"] == 0 and second["stopped"] is None


def test_sizes_off_the_rules_are_refused_before_anything_runs(tmp_path):
    res = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, False)), "--sizes", "cols=30", "--device", "cpu"])
    assert res.exit_code == 12 and "nearest valid: cols=28 or cols=32" in res.output


def test_a_dead_check_process_costs_only_its_shape(monkeypatch, tmp_path):
    """A child that dies at its second shape: that shape fails, a new child takes the rest."""
    from aisp_prof.pairs.files import load_file

    pair, calls = load_file(_pair_file(tmp_path, False)), []

    def fake_child(pair, shapes, variants, trials, tmp, seen, tick):
        calls.append(len(shapes))
        for s in shapes[:1] if len(calls) == 1 else shapes:
            seen(shape_check.check_line(pair, s, "cpu", variants, trials))
        return None, 1 if len(calls) == 1 else 0, "Segmentation fault"

    monkeypatch.setattr(shape_check, "_child", fake_child)
    shapes = [{"rows": r, "cols": 8} for r in (2, 4, 6, 8)]
    results = shape_check.check_in_children(pair, shapes, ["baseline"])
    assert calls == [4, 2] and [r.status for r in results] == ["pass", "fail", "pass", "pass"]
    assert "the check process died (exit 1): Segmentation fault" in results[1].detail


def test_a_child_that_hangs_is_killed_and_costs_its_shape(monkeypatch, tmp_path):
    import sys

    out = tmp_path / "lines.jsonl"
    script = f"import time; open({str(out)!r}, 'a').write('{{}}\\n'); time.sleep(60)"
    monkeypatch.setattr(shape_check, "POLL_S", 0.05)
    rc, why = shape_check._run_watched([sys.executable, "-c", script], out, timeout_s=1.0)
    assert rc != 0 and "no result for 1 s: killed" in why and out.read_text() == "{}\n"


def test_the_real_child_without_a_gpu_skips_every_shape_with_the_reason(tmp_path):
    from aisp_prof.pairs.files import load_file

    if torch.cuda.is_available():
        pytest.skip("the child runs the shapes on a GPU here")
    pair = load_file(_pair_file(tmp_path, False))
    results = shape_check.check_in_children(pair, [{"rows": 2, "cols": 8}, {"rows": 3, "cols": 4}], ["baseline"])
    assert [r.status for r in results] == ["skip", "skip"] and all("no CUDA GPU" in r.detail for r in results)


# ---------------------------------------------------------------------------- stopped part way

SLOW_PAIR = PAIR_FILE.replace("def make_inputs(sizes, device, seed):\n",
                              "def make_inputs(sizes, device, seed):\n    import time; time.sleep(0.5)\n")
LOST_SIGINT_S = 20.0        # the shape in progress (~0.5 s) and the table; generous on 2 shared cores


def _gone(pid: int, wait_s: float = 5.0) -> bool:
    """Whether `pid` has exited (a zombie waiting for init to reap it counts as gone)."""
    import time

    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("wrong", [False, True], ids=["all_pass_exits_130", "a_failed_shape_exits_7"])
def test_sigint_to_a_real_fuzz_keeps_the_shapes_finished(tmp_path, wrong):
    """SIGINT to a real `aisp-prof check --fuzz` after its first shape's progress line: the shapes
    finished are printed (the table, or --json with "stopped" and "not_checked"), then exit 130,
    or 7 when a finished shape failed (the smallest shape, rows=1, is odd: wrong there); nothing
    of it is left running (it leads its own session: every descendant would still be in it)."""
    import os
    import signal
    import subprocess
    import sys

    (tmp_path / "slow.py").write_text(f"WRONG = {wrong}\n" + SLOW_PAIR)
    args = ["check", str(tmp_path / "slow.py"), "--fuzz", "20", "--device", "cpu", *(["--json"] if wrong else [])]
    proc = subprocess.Popen([sys.executable, "-m", "aisp_prof", *args], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # see test_faults
    said = [proc.stderr.readline() for _ in range(2)]
    assert said[0].startswith("== mine.doubles (1/1): 20 shape(s)"), said
    assert said[1].startswith("   [1/20] rows=1,cols=4: " + ("fail" if wrong else "pass")), said
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=LOST_SIGINT_S)
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
    assert "Traceback" not in err
    if wrong:
        assert proc.returncode == 7, err
        got = json.loads(out)
        rows = got["results"]
        assert got["stopped"] == "interrupted" and got["not_checked"] == 20 - len(rows) > 0
        assert rows[0]["status"] == "fail" and rows[0]["wall_s"] >= 0.5
        assert err.strip().splitlines()[-1].endswith(f"(interrupted: {20 - len(rows)} shape(s) not checked)")
    else:
        assert proc.returncode == 130, err
        assert "rows=1,cols=4  pass" in out and out.rstrip().endswith("not checked (interrupted)")
        checked = int(out.rstrip().splitlines()[-1].split()[0])
        assert 1 <= checked < 20 and f"{20 - checked} not checked" in out
        assert err.strip().splitlines()[-1] == f"aisp-prof: interrupted: {checked} shape(s) checked, " \
                                               f"{20 - checked} not checked"
    progress = [ln for ln in "".join(said + [err]).splitlines() if ln.startswith("   [")]
    assert progress and all(len(ln) <= 120 for ln in progress)


def test_the_time_limit_stops_after_the_shape_in_progress(tmp_path):
    path = tmp_path / "slow.py"
    path.write_text("WRONG = False\n" + SLOW_PAIR)
    res = CliRunner().invoke(cli, ["check", str(path), "--fuzz", "6", "--device", "cpu", "--time-limit-s", "0.1",
                                   "--json"])
    assert res.exit_code == 130, res.output
    got = json.loads(res.stdout)
    assert [r["status"] for r in got["results"]] == ["pass"] and got == {**got, "stopped": "time limit",
                                                                         "not_checked": 5}
    assert "[1/6] rows=1,cols=4: pass (" in res.stderr
    assert res.stderr.strip().splitlines()[-1] == "aisp-prof: time limit: 1 shape(s) checked, 5 not checked"


def test_a_time_limit_passing_before_a_pair_with_no_shapes_left_is_no_stop(tmp_path):
    """A shard can hold none of a later pair's shapes (here a pair of one possible shape, shard 2/2):
    the time limit passing after the last shape of the earlier pair leaves nothing unchecked, so the
    check finishes (exit 0), not "time limit: 0 not checked" (exit 130), which it said before."""
    fixed = tmp_path / "fixed.py"
    fixed.write_text("WRONG = False\n" + PAIR_FILE.replace('"mine.doubles"', '"mine.fixed"').replace(
        'size_rules=(SizeRule("cols", step=4, why="float4 rows"),)',
        'size_rules=(SizeRule("rows", choices=(64,)), SizeRule("cols", choices=(96,)))'))
    res = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, False)), str(fixed), "--fuzz", "2",
                                   "--shard", "2/2", "--device", "cpu", "--time-limit-s", "0.000001", "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert [r["pair"] for r in got["results"]] == ["mine.doubles"]
    assert got["stopped"] is None and got["not_checked"] == 0
    assert "== mine.fixed (2/2): 0 shape(s)" in res.stderr


_FAKE_CHILD = """
import argparse, json, os, subprocess, sys, time
ap = argparse.ArgumentParser()
for a in ("--pair", "--pair-file", "--variants", "--shapes", "--out", "--trials"):
    ap.add_argument(a)
args = ap.parse_args()
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])   # as Inductor's compile workers
open(args.out + ".pids", "w").write(f"{os.getpid()} {worker.pid}")
with open(args.out, "a") as out:
    for sizes in json.load(open(args.shapes)):
        time.sleep(0.2)
        out.write(json.dumps({"sizes": sizes, "check": {"passed": True}, "wall_s": 0.2}) + "\\n")
        out.flush()
time.sleep(60)
"""


def test_an_interrupt_kills_the_check_process_and_its_children(monkeypatch, tmp_path):
    """The GPU path, with a stand-in child that starts a worker of its own: a real SIGINT in this
    process after the first shape's line keeps that shape, and leaves neither process running."""
    import os
    import signal
    import sys

    from aisp_prof.pairs.files import load_file

    (tmp_path / "child.py").write_text(_FAKE_CHILD)
    monkeypatch.setattr(shape_check, "python_module", lambda module, *a: [sys.executable, str(tmp_path / "child.py"), *a])
    monkeypatch.setattr(shape_check, "POLL_S", 0.05)
    monkeypatch.setattr(shape_check.tempfile, "tempdir", str(tmp_path))   # the child's out file, kept below
    pair, results, pids = load_file(_pair_file(tmp_path, False)), [], []

    def done(result):
        results.append(result)
        pids.extend(map(int, next(tmp_path.glob("aisp-check-*/results.jsonl.pids")).read_text().split()))
        os.kill(os.getpid(), signal.SIGINT)
    # Python's own Ctrl-C handler, as a fresh `aisp-prof` process has. In the whole suite this test once ran
    # on for 60 s (DID NOT RAISE): a SIGINT handler left by an earlier test kept it from becoming a KeyboardInterrupt
    with python_ctrl_c(), pytest.raises(KeyboardInterrupt):
        shape_check.check_in_children(pair, [{"rows": r, "cols": 8} for r in (1, 2, 3)], ["baseline"], done=done)
    assert [r.status for r in results] == ["pass"] and results[0].wall_s == 0.2
    assert len(pids) == 2 and all(_gone(pid) for pid in pids)


_BATCH_CHILD = """
import argparse, json, time
ap = argparse.ArgumentParser()
for a in ("--pair", "--pair-file", "--variants", "--shapes", "--out", "--trials"):
    ap.add_argument(a)
args = ap.parse_args()
wrong = {"passed": False, "checks": [{"variant": "baseline", "passed": False, "message": "max error 1.0"}]}
with open(args.out, "a") as out:     # every shape at once: the parent reads them in one poll
    out.write("".join(json.dumps({"sizes": s, "check": wrong if i == 1 else {"passed": True}}) + "\\n"
                      for i, s in enumerate(json.load(open(args.shapes)))))
time.sleep(60)
"""


def test_a_stop_at_one_shape_keeps_the_shapes_finished_beside_it(monkeypatch, tmp_path):
    """Shapes that finished within one poll are all kept when the first of them stops the check
    (an interrupt or the time limit raised from `done`): the failed one after it is not lost."""
    import sys

    from aisp_prof.pairs.files import load_file

    (tmp_path / "child.py").write_text(_BATCH_CHILD)
    monkeypatch.setattr(shape_check, "python_module", lambda module, *a: [sys.executable, str(tmp_path / "child.py"), *a])
    monkeypatch.setattr(shape_check, "POLL_S", 0.05)
    pair, results = load_file(_pair_file(tmp_path, False)), []

    def done(result):
        results.append(result)
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        shape_check.check_in_children(pair, [{"rows": r, "cols": 8} for r in (1, 2, 3)], ["baseline"], done=done)
    assert [r.status for r in results] == ["pass", "fail", "pass"]
    assert "max error 1.0" in results[1].detail


_ORPHAN = """
import os, subprocess, sys, threading, time
from aisp_prof.collect.process.shape_child import _orphaned
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
threading.Thread(target=_orphaned, args=(os.getppid(), 0.05), daemon=True).start()
print(os.getpid(), worker.pid, flush=True)
time.sleep(60)
"""


def test_a_check_process_whose_parent_was_killed_outright_kills_its_group(tmp_path):
    """SIGKILL leaves the parent no chance to stop its check process: the child sees it is orphaned
    and kills its own process group (itself and its workers) within a poll."""
    import os
    import signal
    import subprocess
    import sys

    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', "
                               f"{_ORPHAN!r}], start_new_session=True)"], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    pids = [int(p) for p in parent.stdout.readline().split()]
    parent.kill()
    parent.wait()
    assert len(pids) == 2 and all(_gone(pid) for pid in pids)
