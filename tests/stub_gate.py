"""`bench run` from its command line with everything below the gate's set-up stubbed: a GPU machine said
to be there, no builds, no preloaded process, and each pair's work replaced by `probe` (which records the
environment its processes would get). For the tests of what the gate sets up for its processes and gives
back after (tests/unit/test_compile_cache_kept.py, test_binary_store.py). Runs nothing on a GPU."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from click.testing import CliRunner, Result

from aisp_prof.bench import runner
from aisp_prof.cli import cli
from aisp_prof.collect.process import preload
from aisp_prof.pairs.capabilities import Machine


def stubbed_bench_run(monkeypatch, folder: Path, args: list[str],
                      probe: Callable[[], dict[str, Any]]) -> tuple[Result, dict[str, Any]]:
    """(the CLI's result, what it saw): `probe()`'s dict from inside a pair, and `server_env`, the
    environment the preloaded process would have started with."""
    seen: dict[str, Any] = {}

    class Server:                  # preload.Preloaded's part the gate uses
        def close(self):
            pass

    def bench_one(pair, *a, **kw):
        seen.update(probe())
        return runner.PairOutcome(pair.name, None, "ok")
    monkeypatch.setattr("aisp_prof.pairs.capabilities.detect_machine",
                        lambda: Machine.of("gpu", "triton", "nvcc", gpu_name="NVIDIA H200"))
    monkeypatch.setattr(runner, "current_hardware_key", lambda *a: "h200")
    monkeypatch.setattr(runner, "bench_one", bench_one)
    monkeypatch.setattr("aisp_prof.collect.code.prebuild.prebuild", lambda pairs, say: None)
    monkeypatch.setattr(preload, "Preloaded", lambda env: (seen.__setitem__("server_env", env), Server())[1])
    monkeypatch.chdir(folder)
    res = CliRunner().invoke(cli, ["bench", "run", "--db", "g.db", "--profiles-dir", "p", *args])
    return res, seen
