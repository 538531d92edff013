"""Check and timing processes forked from one that imported torch (`collect.process.preload`): a forked
child must be what a fresh `python -m aisp_prof.collect.process.child` is, as far as its work can tell (its
report, exit code, environment, folder, signals, process group, random draws), and nothing it starts may
outlive the command. Real processes throughout: the real server, the real child (here without a GPU: it
reports NoGpuError, exit 3, as it does fresh), and a stand-in pair module that writes what its process looks
like (tests/fixtures/preload/probe_pair.py)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from interrupts import python_ctrl_c
from repo_paths import FIXTURES, ROOT

from aisp_prof.collect.process import preload
from aisp_prof.collect.process.agents import run_logged
from aisp_prof.collect.process.runner import child_command
from aisp_prof.collect.process.steps import StepContext, child_env
from aisp_prof.pairs import find

PROBE = FIXTURES / "preload" / "probe_pair.py"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and PR_SET_PDEATHSIG: Linux")


def probe_command(out: Path) -> list[str]:
    """A child that loads the probe (which writes `out`) before any CUDA call (--wait-for: as a profiler's
    child does); the child's own report beside it."""
    return child_command("mine.probe", ["baseline"], {}, "check", out.with_suffix(".report.json"),
                         "--pair-file", str(PROBE),
                         "--wait-for", str(out.parent / "never"))


def probe_env(out: Path, **extra: str) -> dict[str, str]:
    """A child's environment without the compile-cache variables an earlier test's Inductor may have left in
    this process's (Inductor sets TORCHINDUCTOR_CACHE_DIR for its subprocesses), plus `extra`."""
    env = {k: v for k, v in child_env().items() if not k.startswith(("TRITON_", "TORCHINDUCTOR_"))}
    return {**env, "AISP_PROBE_OUT": str(out), **extra}


def wait_for(path: Path, seconds: float = 30) -> dict:
    end = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.02)
    return json.loads(path.read_text())


def gone(pid: int, seconds: float = 10) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return True                  # dead, its parent not yet told
        time.sleep(0.05)
    return False


def test_a_forked_child_reports_what_a_fresh_one_does(tmp_path):
    pair = find("ch09.fused_l2norm")
    env, cmd = child_env(), child_command(pair, ["baseline"], dict(pair.sizes), "check", tmp_path / "check.json")
    rc_fresh, text_fresh, _ = run_logged(cmd, tmp_path / "fresh.log", env)
    fresh = json.loads((tmp_path / "check.json").read_text())
    with preload.serving(env) as server:
        assert server.serves(cmd, env), server.broken
        rc, text, _ = server.run_logged(cmd, tmp_path / "forked.log", env)
        assert server.forked == 1 and server.ready["torch"]
    forked = json.loads((tmp_path / "check.json").read_text())
    assert (rc, forked) == (rc_fresh, fresh) == (3, {"ok": False, "error_type": "NoGpuError",
                                                     "error": "no CUDA GPU visible to torch in the profiled process"})
    assert text.splitlines()[0] == text_fresh.splitlines()[0] == "$ " + " ".join(cmd)


def test_each_child_gets_its_requests_environment_folder_and_signals_and_its_own_random_draws(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "probe.json"
    with python_ctrl_c(), preload.serving(probe_env(out)) as server:     # (not a suite's `&`: SIGINT ignored)
        snaps = []
        for k in range(2):
            env = probe_env(out, TRITON_CACHE_DIR=str(tmp_path / f"triton{k}"))
            assert server.serves(probe_command(out), env)
            rc, text, _ = server.run_logged(probe_command(out), tmp_path / f"probe{k}.log", env)
            assert rc != 0 and "Traceback" not in text          # no pair in the probe: a one-line error report
            snaps.append(wait_for(out))
            out.unlink()
        server_pid = server.proc.pid
    for k, snap in enumerate(snaps):
        assert snap["env"] == {"AISP_PROBE_OUT": str(out), "TRITON_CACHE_DIR": str(tmp_path / f"triton{k}")}
        assert snap["cwd"] == str(tmp_path) and snap["ppid"] == server_pid and snap["pgrp"] == os.getpgrp()
        assert snap["sigint_default"] and snap["sigterm_default"] and snap["stdin_is_null"] is True
        assert snap["torch_loaded"] and snap["argv0"].endswith(os.path.join("process", "child.py"))
    assert snaps[0]["random"] != snaps[1]["random"]
    out.unlink(missing_ok=True)
    run_logged(probe_command(out), tmp_path / "fresh.log", probe_env(out))
    assert snaps[0]["fds"] == snaps[1]["fds"] == wait_for(out)["fds"]          # no fd a fresh one lacks


def test_numpys_global_generator_is_reseeded_in_a_forked_child():
    """Should the server's imports ever create numpy's global generator, two children draw apart."""
    import numpy.random

    from aisp_prof.collect.process import preload_server

    numpy.random.seed(1)
    draws = []
    for _ in range(2):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            preload_server._reseed()
            os.write(w, repr(float(numpy.random.random())).encode())
            os._exit(0)
        os.close(w)
        draws.append(os.read(r, 64))
        os.close(r)
        os.waitpid(pid, 0)
    assert draws[0] != draws[1]


def test_a_forked_child_ends_as_a_fresh_one_does_joined_threads_and_ctrl_c(tmp_path):
    out, joined = tmp_path / "p.json", tmp_path / "joined"
    env = probe_env(out, AISP_PROBE_THREAD=str(joined))
    with python_ctrl_c(), preload.serving(env) as server:       # (a suite started with `&` ignores SIGINT)
        assert server.serves(probe_command(out), env)
        server.run_logged(probe_command(out), tmp_path / "p.log", env)
        assert joined.read_text() == "joined"                  # the non-daemon thread finished first
        codes = []
        block = probe_env(out, AISP_PROBE_BLOCK="1")
        for run in (lambda: server.run_logged(probe_command(out), tmp_path / "b.log", block),
                    lambda: run_logged(probe_command(out), tmp_path / "f.log", block)):
            out.unlink(missing_ok=True)
            threading.Thread(target=lambda: os.kill(wait_for(out)["pid"], signal.SIGINT), daemon=True).start()
            codes.append(run()[0])
    assert codes == [-signal.SIGINT, -signal.SIGINT]            # an uncaught Ctrl-C: ended by SIGINT


def test_only_an_environment_import_torch_may_read_starts_another_server(tmp_path):
    out = tmp_path / "p.json"
    with preload.serving(probe_env(out)) as server:
        assert server.serves(probe_command(out), probe_env(out, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "i")))
        first = server.proc.pid
        assert server.serves(probe_command(out), probe_env(out, TRITON_CACHE_DIR=str(tmp_path / "t")))
        assert server.proc.pid == first                      # the per-run compile caches: read later
        assert server.serves(probe_command(out), probe_env(out, TORCH_LOGS="dynamo"))
        assert server.proc.pid != first and gone(first)      # read by `import torch`: a server of its own


def test_what_it_does_not_serve_is_never_sent_to_it(tmp_path):
    out = tmp_path / "p.json"
    with preload.serving(probe_env(out)) as server:
        nsys = ["/usr/local/bin/nsys", "profile", "-o", "x", *probe_command(out)]
        other = [sys.executable, "-m", "aisp_prof.collect.process.ab_child", "--help"]
        assert not server.serves(nsys, probe_env(out)) and not server.serves(other, probe_env(out))
        assert server.ready is None and server.forked == 0


def test_a_server_that_cannot_import_torch_leaves_each_step_to_a_fresh_process(tmp_path):
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('planted: no torch here')\n")
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(fake.parent), env.get("PYTHONPATH", ""), str(ROOT)])
    cmd = probe_command(tmp_path / "p.json")
    with preload.serving(env) as server:
        assert not server.serves(cmd, env)
        assert "import failed: ImportError: planted: no torch here" in server.broken
        ctx = StepContext(tmp_path, {}, env=dict(env))
        rc, text, _ = ctx.run("check", lambda rank: cmd, "check.log")
    assert rc == 1 and "planted: no torch here" in text and "forked_from_preload" not in ctx.info


def test_a_step_forked_from_the_server_says_so_in_run_json(tmp_path):
    pair = find("ch09.fused_l2norm")
    cmd = child_command(pair, ["baseline"], dict(pair.sizes), "check", tmp_path / "check.json")
    ctx = StepContext(tmp_path, {})
    with preload.serving(ctx.env):
        assert ctx.run("check", lambda rank: cmd, "check.log")[0] == 3
        ctx.run("timing_p1", lambda rank: cmd, "timing_p1.log")
    ctx.run("timing_p2", lambda rank: cmd, "timing_p2.log")            # no server: a fresh process
    assert ctx.info["forked_from_preload"] == ["check", "timing_p1"]
    assert set(ctx.info["commands"]) == {"check", "timing_p1", "timing_p2"}


def test_a_server_that_died_leaves_the_next_steps_to_fresh_processes(tmp_path):
    pair = find("ch09.fused_l2norm")
    cmd = child_command(pair, ["baseline"], dict(pair.sizes), "check", tmp_path / "check.json")
    ctx = StepContext(tmp_path, {})
    with preload.serving(ctx.env) as server:
        assert ctx.run("check", lambda rank: cmd, "check.log")[0] == 3
        server.proc.kill()
        server.proc.wait()
        assert ctx.run("timing_p1", lambda rank: cmd, "timing_p1.log")[0] == 3     # fresh, no BrokenPipeError
        assert "ended (exit -9)" in server.broken
    assert ctx.info["forked_from_preload"] == ["check"]


def test_a_server_that_never_says_ready_is_given_up(tmp_path, monkeypatch):
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(fake.parent), env.get("PYTHONPATH", ""), str(ROOT)])
    monkeypatch.setattr(preload, "READY_TIMEOUT_S", 1.0)
    began = time.monotonic()
    with preload.serving(env) as server:
        assert not server.serves(probe_command(tmp_path / "p.json"), env)
        assert "did not import torch within 1 s" in server.broken
        pid = server.proc.pid
    assert time.monotonic() - began < 20 and gone(pid)


def test_ctrl_c_kills_the_child_in_progress_and_the_server(tmp_path):
    out = tmp_path / "p.json"
    env = probe_env(out, AISP_PROBE_BLOCK="1")
    with python_ctrl_c(), preload.serving(env) as server:
        assert server.serves(probe_command(out), env)
        threading.Thread(target=lambda: (wait_for(out), os.kill(os.getpid(), signal.SIGINT)), daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            server.run_logged(probe_command(out), tmp_path / "p.log", env)
        server_pid = server.proc.pid
        assert not server.serves(probe_command(out), env)          # stopped: what follows runs fresh
    assert gone(wait_for(out)["pid"]) and gone(server_pid)


CALLER = """
import json, sys, time
from pathlib import Path
from aisp_prof.collect.process import preload
out, cmd, env = Path(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
with preload.serving(env) as server:
    server.serves(cmd, env)
    (out.parent / "server.pid").write_text(str(server.proc.pid))
    server.run_logged(cmd, out.parent / "p.log", env)
"""


def test_nothing_outlives_a_caller_killed_with_sigkill(tmp_path):
    out = tmp_path / "p.json"
    env = probe_env(out, AISP_PROBE_BLOCK="1")
    caller = subprocess.Popen([sys.executable, "-c", CALLER, str(out), json.dumps(probe_command(out)), json.dumps(env)],
                              env=env)
    try:
        child_pid = wait_for(out)["pid"]
        server_pid = int((tmp_path / "server.pid").read_text())
    finally:
        caller.kill()
        caller.wait()
    assert gone(server_pid) and gone(child_pid)


def test_bench_run_fresh_processes_turns_the_server_off(monkeypatch):
    from aisp_prof.api.database import RunDatabase

    seen = {}

    def bench(self, targets, options, progress=None, tick=None):
        seen.update(options)
        raise KeyboardInterrupt
    monkeypatch.setattr(RunDatabase, "bench", bench)
    for args, preloaded in ((["--fresh-processes"], False), ([], True)):
        CliRunner().invoke(__import__("aisp_prof.cli", fromlist=["cli"]).cli,
                           ["bench", "run", "--targets", "ch09", *args])
        assert seen["preload"] is preloaded


@pytest.mark.parametrize("name, forked", [("ch09.fused_l2norm", True), ("ch14.triton_persistent", False),
                                          ("ch14.gpu_quantization", False)])
def test_the_gate_forks_only_the_processes_of_a_gpu_timed_pair(monkeypatch, name, forked):
    """GPU time only: on an H200 ch14.triton_persistent's steady (host-side) time was +13.5% in a forked
    process and -9.2% in a fresh one, one after the other."""
    from aisp_prof.bench import runner
    from aisp_prof.pairs.capabilities import Machine

    class Server:
        def close(self):
            pass

    class Runs:
        def profile(self, *args, **kwargs):
            seen.append(preload.current())
            raise LookupError("seen")
    seen: list = []
    monkeypatch.setattr(preload, "Preloaded", lambda env: Server())
    with preload.serving({}) as server, pytest.raises(LookupError):
        runner.bench_one(find(name), Runs(), "h200", runner.BenchOptions(),
                         machine=Machine.of("gpu", "triton", "nvcc", "cutlass", gpu_name="NVIDIA H200"))
    assert seen == [server if forked else None]


def test_without_fork_there_is_no_server(monkeypatch):
    monkeypatch.delattr(os, "fork")
    with preload.serving(child_env()) as server:
        assert server is None and preload.current() is None


@pytest.mark.gpu
def test_on_a_gpu_a_forked_check_passes_and_times_without_importing_torch_again(tmp_path):
    """The GPU machine's half: a real check and timing of ch09.fused_l2norm at a small size, forked, as the
    gate runs it (the timing flags of runner.timing_args), passes and reports the phases of a process that
    found torch imported."""
    from aisp_prof.collect.process.runner import TimingOptions, timing_args

    pair = find("ch09.fused_l2norm")
    cmd = child_command(pair, ["baseline", "cuda", "triton"], {"rows": 1024, "cols": 1024}, "check",
                        tmp_path / "check.json", *timing_args(TimingOptions(min_rounds=10, budget_s=0.5)))
    ctx = StepContext(tmp_path, {})
    with preload.serving(ctx.env):
        rc, text, _ = ctx.run("check", lambda rank: cmd, "check.log")
    report = json.loads((tmp_path / "check.json").read_text())
    assert rc == 0 and report["ok"] and report["check"]["passed"], text[-2000:]
    assert ctx.info["forked_from_preload"] == ["check"] and report["phases_s"]["import_torch"] < 0.5
    assert {s["variant"] for s in report["samples"]} >= {"baseline", "cuda", "triton"}


def test_a_session_says_how_its_processes_started():
    from aisp_prof.bench.runner import child_start

    commands = {"check": [], "timing_p1": [], "timing_p2": []}
    assert child_start({"commands": commands}) == "fresh"
    assert child_start({"commands": commands, "forked_from_preload": ["check", "timing_p1", "timing_p2"]}) == "forked"
    assert child_start({"commands": commands, "forked_from_preload": ["check"]}) == "mixed"


def test_a_signal_the_caller_ignores_stays_ignored_in_a_forked_child_as_in_a_fresh_one(tmp_path):
    """A gate started in the background (`cmd &`) ignores SIGINT; so does every fresh child it starts."""
    out = tmp_path / "p.json"
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with preload.serving(probe_env(out)) as server:
            assert server.serves(probe_command(out), probe_env(out))
            server.run_logged(probe_command(out), tmp_path / "forked.log", probe_env(out))
            forked = wait_for(out)
        out.unlink()
        run_logged(probe_command(out), tmp_path / "fresh.log", probe_env(out))
        fresh = wait_for(out)
    finally:
        signal.signal(signal.SIGINT, before)
    assert forked["sigint_ignored"] and fresh["sigint_ignored"] and not forked["sigint_default"]
