"""Triton's binaries kept between gates (collect.code.binary_store, issue 28's 10-minute book): a second
process with an empty Triton cache of its own finds a kernel the first compiled, copied whole into its own
cache (which the run folder's generated-code index reads); Triton's autotuner timings (choices) are never
kept; a torn or unwritable store is as if empty; the store is pruned least recently used first; a gate hands
it to its processes and gives the environment back. Real compiles: Triton's bundled ptxas targets sm_90 on
the CPU (tests/fixtures/triton_store/compile_one.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aisp_prof.collect.code.binary_store import (FOUND_MARK, KEPT_BINARIES, MANAGER, MANAGER_ENV, STORE_ENV,
                                                 binaries_kind, default_store, kept_binaries, prune, store_in_use)
from aisp_prof.errors import OutputError
from repo_paths import FIXTURES

COMPILE_ONE = FIXTURES / "triton_store" / "compile_one.py"


@pytest.fixture(autouse=True)
def no_manager(monkeypatch):
    monkeypatch.delenv(MANAGER_ENV, raising=False)


def _compile(cache: Path, store: Path | None, **extra: str) -> tuple[str, int]:
    """compile_one.py in a fresh process (`extra`: more environment): ("HIT" or "MISS", cubin bytes)."""
    pytest.importorskip("triton")
    env = {k: v for k, v in os.environ.items() if k not in (MANAGER_ENV, STORE_ENV, "TRITON_INTERPRET")} | extra
    env["TRITON_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    if store is not None:
        env.update({MANAGER_ENV: MANAGER, STORE_ENV: str(store)})
    proc = subprocess.run([sys.executable, str(COMPILE_ONE)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    word, size = proc.stdout.split()
    return word, int(size)


def _only_entry(cache: Path) -> Path:
    (entry,) = [p for p in cache.iterdir() if p.is_dir()]
    return entry


def test_a_second_process_finds_the_first_one_s_kernel_whole_in_its_own_cache(tmp_path):
    store = tmp_path / "store"
    assert _compile(tmp_path / "c1", store)[0] == "MISS"
    word, size = _compile(tmp_path / "c2", store)
    assert word == "HIT"                                 # without the store: an empty cache compiles (MISS)
    assert _compile(tmp_path / "c3", None)[0] == "MISS"
    first, second = _only_entry(tmp_path / "c1"), _only_entry(tmp_path / "c2")
    names = sorted(p.name for p in first.iterdir())
    assert sorted(p.name for p in second.iterdir() if p.name != FOUND_MARK) == names   # every stage, for the index
    assert (second / FOUND_MARK).is_file() and not (first / FOUND_MARK).exists()     # marked as found, for its count
    assert (second / "double.cubin").read_bytes() == (first / "double.cubin").read_bytes()
    assert size == len((first / "double.cubin").read_bytes())
    group = json.loads((second / "__grp__double.json").read_text())["child_paths"]
    assert all(Path(p).parent == second for p in group.values())     # the run's own cache, not the store
    kept = store / first.name
    assert sorted(p.name for p in kept.iterdir()) == names and not list(kept.glob(".*tmp"))


def test_a_torn_store_entry_is_compiled_again(tmp_path):
    store = tmp_path / "store"
    _compile(tmp_path / "c1", store)
    (store / _only_entry(tmp_path / "c1").name / "double.cubin").unlink()
    assert _compile(tmp_path / "c2", store)[0] == "MISS"
    assert _compile(tmp_path / "c3", store)[0] == "HIT"              # the compile made it whole again


def test_a_store_file_damaged_since_it_was_written_is_compiled_again_and_mended(tmp_path):
    """Same size, one byte flipped: the group's sha256 tells it (a damaged cubin would fail its load, and
    Inductor would drop that autotune candidate without a word)."""
    store = tmp_path / "store"
    _compile(tmp_path / "c1", store)
    cubin = store / _only_entry(tmp_path / "c1").name / "double.cubin"
    data = bytearray(cubin.read_bytes())
    data[len(data) // 2] ^= 0xFF
    cubin.write_bytes(bytes(data))
    assert _compile(tmp_path / "c2", store)[0] == "MISS"
    assert _compile(tmp_path / "c3", store)[0] == "HIT"
    assert cubin.read_bytes() == (_only_entry(tmp_path / "c1") / "double.cubin").read_bytes()


def test_a_store_that_cannot_be_written_compiles_as_without_one(tmp_path):
    (tmp_path / "store").write_text("a file, not a folder")
    assert _compile(tmp_path / "c1", tmp_path / "store") == _compile(tmp_path / "c2", tmp_path / "store")
    assert _compile(tmp_path / "c3", tmp_path / "store")[0] == "MISS"


def _manager(monkeypatch, cache: Path, store: Path, key: str = "KEY"):
    pytest.importorskip("triton")
    from aisp_prof.collect.code.binary_store_manager import StoreCacheManager

    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    monkeypatch.setenv(STORE_ENV, str(store))
    return StoreCacheManager(key)


def test_launchers_are_kept_and_autotuner_timings_are_not(monkeypatch, tmp_path):
    from aisp_prof.collect.code.binary_store_manager import MODULE_SUFFIX

    store = tmp_path / "store"
    first = _manager(monkeypatch, tmp_path / "c1", store)
    first.put(b"\x7fELF launcher", "cuda_utils" + MODULE_SUFFIX)
    first.put(json.dumps({"configs_timings": []}), "kernel.autotune.json", binary=False)
    assert sorted(p.name for p in (store / "KEY").iterdir()) == ["cuda_utils" + MODULE_SUFFIX]
    (store / "KEY" / "kernel.autotune.json").write_text("{}")       # even one put there by hand is not read
    second = _manager(monkeypatch, tmp_path / "c2", store)
    found = second.get_file("cuda_utils" + MODULE_SUFFIX)
    assert found is not None and Path(found).parent == tmp_path / "c2" / "KEY"
    assert Path(found).read_bytes() == b"\x7fELF launcher"
    assert second.get_file("kernel.autotune.json") is None


def test_override_and_dump_managers_never_touch_the_store(monkeypatch, tmp_path):
    manager = _manager(monkeypatch, tmp_path / "c", tmp_path / "store")
    monkeypatch.setenv("TRITON_DUMP_DIR", str(tmp_path / "dump"))
    from aisp_prof.collect.code.binary_store_manager import StoreCacheManager

    assert manager.store == tmp_path / "store" / "KEY"
    assert StoreCacheManager("KEY", dump=True).store is None
    assert StoreCacheManager("KEY", override=True).store is None


def _entry(store: Path, name: str, size: int, age_s: float) -> Path:
    entry = store / name
    entry.mkdir(parents=True)
    (entry / "k.cubin").write_bytes(b"x" * size)
    then = time.time() - age_s
    os.utime(entry, (then, then))
    return entry


def test_prune_removes_the_least_recently_used_first(tmp_path):
    old, mid, new = (_entry(tmp_path, n, 1000, age) for n, age in (("old", 300), ("mid", 200), ("new", 100)))
    assert prune(tmp_path, max_bytes=3000) == 0 and old.is_dir()
    assert prune(tmp_path, max_bytes=1500) == 2000
    assert not old.exists() and not mid.exists() and new.is_dir()


def test_prune_removes_what_a_process_killed_mid_write_left_once_it_is_an_hour_old(tmp_path):
    entry = _entry(tmp_path, "k", 10, 0)
    old, fresh = entry / ".k.cubin.123.ab.tmp", entry / ".k.ptx.124.cd.tmp"
    for path, age_s in ((old, 7200), (fresh, 60)):
        path.write_bytes(b"half")
        os.utime(path, (time.time() - age_s, time.time() - age_s))
    prune(tmp_path)
    assert not old.exists() and fresh.exists() and (entry / "k.cubin").exists()


def test_a_gate_hands_the_store_to_its_processes_and_gives_the_environment_back(monkeypatch, tmp_path):
    monkeypatch.delenv(STORE_ENV, raising=False)
    with kept_binaries(tmp_path / "store"):
        assert os.environ[MANAGER_ENV] == MANAGER and store_in_use() == tmp_path / "store"
        assert binaries_kind() == KEPT_BINARIES and (tmp_path / "store").is_dir()
    assert MANAGER_ENV not in os.environ and STORE_ENV not in os.environ and binaries_kind() is None
    with kept_binaries(None):
        assert MANAGER_ENV not in os.environ


def test_a_user_s_own_triton_cache_manager_is_left_alone(monkeypatch, tmp_path):
    monkeypatch.setenv(MANAGER_ENV, "their.module:Manager")
    with kept_binaries(tmp_path / "store"):
        assert os.environ[MANAGER_ENV] == "their.module:Manager" and binaries_kind() is None
    assert not (tmp_path / "store").exists()


def test_a_store_that_cannot_be_made_is_one_line(monkeypatch, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="cannot be made or written.*--fresh-binaries"):
        with kept_binaries(tmp_path / "file" / "store"):
            pass
    assert MANAGER_ENV not in os.environ


def test_the_store_s_folder(monkeypatch, tmp_path):
    assert default_store({STORE_ENV: str(tmp_path)}) == tmp_path
    assert default_store({}) == Path.home() / ".cache" / "aisp-prof" / "triton-binaries"


@pytest.mark.parametrize("flags", [[], ["--fresh-binaries"]])
def test_bench_run_hands_the_store_to_the_server_and_the_pairs(monkeypatch, tmp_path, flags):
    from aisp_prof.collect.process.steps import child_env
    from stub_gate import stubbed_bench_run

    monkeypatch.setenv(STORE_ENV, str(tmp_path / "store"))
    res, seen = stubbed_bench_run(monkeypatch, tmp_path, ["--targets", "ch09.fused_l2norm", *flags],
                                  lambda: {"pair_env": child_env(), "kind": binaries_kind()})
    assert res.exit_code == 0, res.output
    kept = not flags
    for env in (seen["pair_env"], seen["server_env"]):
        assert (env.get(MANAGER_ENV) == MANAGER) is kept
    assert (seen["kind"] == KEPT_BINARIES) is kept and (tmp_path / "store").is_dir() is kept
    assert MANAGER_ENV not in os.environ


def test_a_torn_or_foreign_group_file_reads_as_a_miss_and_never_raises(monkeypatch, tmp_path):
    store = tmp_path / "store"
    for text in ("{not json", '{"child_paths": ["k.cubin"]}', '{"sha256": ["k.cubin"]}', '{"sha256": {}}', '[]',
                 '{"sha256": {"../k.cubin": "00"}}', '{"sha256": {"k\\u0000.cubin": "00"}}',
                 '{"sha256": {"k.cubin": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4880"}}'):
        (store / "KEY").mkdir(parents=True, exist_ok=True)
        (store / "KEY" / "__grp__k.json").write_text(text)
        (store / "KEY" / "k.cubin").write_bytes(b"x")
        assert _manager(monkeypatch, tmp_path / "c", store).get_group("k.json") is None, text
    whole = '{"sha256": {"k.cubin": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}}'
    (store / "KEY" / "__grp__k.json").write_text(whole)                       # sha256(b"x"): found
    assert list(_manager(monkeypatch, tmp_path / "c", store).get_group("k.json")) == ["k.cubin"]
    assert _manager(monkeypatch, tmp_path / "c", store).get_file("a\0b.so") is None


def test_a_hit_marks_the_entry_used_and_a_bad_file_there_is_replaced(monkeypatch, tmp_path):
    from aisp_prof.collect.code.binary_store_manager import MODULE_SUFFIX

    store, name = tmp_path / "store", "cuda_utils" + MODULE_SUFFIX
    (store / "KEY").mkdir(parents=True)
    (store / "KEY" / name).write_bytes(b"truncated")
    _manager(monkeypatch, tmp_path / "c1", store).put(b"\x7fELF whole", name)
    assert (store / "KEY" / name).read_bytes() == b"\x7fELF whole"         # a rebuild mends the store
    os.utime(store / "KEY", (1000, 1000))
    assert _manager(monkeypatch, tmp_path / "c2", store).get_file(name) is not None
    assert (store / "KEY").stat().st_mtime > time.time() - 60                # used now: pruned last


def test_a_failed_copy_into_the_store_fails_no_compile_and_leaves_no_partial_file(monkeypatch, tmp_path):
    import shutil

    manager = _manager(monkeypatch, tmp_path / "c", tmp_path / "store")
    local = manager.put(b"cubin", "k.cubin")

    def broken(src, dst):
        Path(dst).write_bytes(b"half")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(shutil, "copyfile", broken)
    manager.put_group("k.json", {"k.cubin": local})
    assert manager.get_group("k.json") == {"k.cubin": local}                 # the run's own cache has it
    assert list((tmp_path / "store" / "KEY").iterdir()) == []                 # nothing half-written there


@pytest.mark.parametrize("setting", ["TRITON_KERNEL_OVERRIDE", "TRITON_STORE_BINARY_ONLY", "TRITON_KERNEL_DUMP",
                                     "TRITON_ALWAYS_COMPILE"])
def test_a_setting_triton_leaves_out_of_its_key_keeps_the_process_off_the_store(monkeypatch, tmp_path, setting):
    monkeypatch.setenv(setting, "1")
    monkeypatch.setenv("TRITON_DUMP_DIR", str(tmp_path / "dump"))
    monkeypatch.setenv("TRITON_OVERRIDE_DIR", str(tmp_path / "override"))
    assert _manager(monkeypatch, tmp_path / "c", tmp_path / "store").store is None
    monkeypatch.delenv(setting)
    assert _manager(monkeypatch, tmp_path / "c", tmp_path / "store").store is not None


def test_a_gate_prunes_the_store_before_it_starts(monkeypatch, tmp_path):
    from aisp_prof.collect.code import binary_store

    old, new = _entry(tmp_path / "s", "old", 1000, 300), _entry(tmp_path / "s", "new", 1000, 100)
    monkeypatch.setattr(binary_store, "MAX_STORE_BYTES", 1500)
    with kept_binaries(tmp_path / "s"):
        assert not old.exists() and new.is_dir()


def test_a_process_that_cannot_find_the_manager_refuses_to_compile(monkeypatch):
    from aisp_prof.collect.code import binary_store
    from aisp_prof.errors import InstallError

    env = {MANAGER_ENV: MANAGER, STORE_ENV: "/s"}
    binary_store.require_manager(env)                                        # found: nothing said
    monkeypatch.setattr(binary_store, "MANAGER", "aisp_prof.no_such_module:StoreCacheManager")
    with pytest.raises(InstallError, match="--fresh-binaries"):
        binary_store.require_manager({MANAGER_ENV: binary_store.MANAGER, STORE_ENV: "/s"})
    binary_store.require_manager({})                                         # no store: nothing to find


def test_runs_and_recorded_sessions_say_the_binaries_were_kept():
    from types import SimpleNamespace

    from aisp_prof.analyze.code.compiled import compile_warnings
    from aisp_prof.bench.runner import provenance
    from aisp_prof.collect.code.compile_cache import compile_info

    assert compile_info(False, True, {MANAGER_ENV: MANAGER, STORE_ENV: "/s"}) == {
        "compile_cache": "fresh after the first", "triton_binaries": KEPT_BINARIES}
    assert compile_info(False, True, {}) == {"compile_cache": "fresh after the first"}
    data = SimpleNamespace(run={"run_id": "r"}, info={"triton_binaries": KEPT_BINARIES})
    assert provenance(data)["triton_binaries"] == KEPT_BINARIES
    compiled = [{"variant": "regional", "compiled": True}]
    (said,) = compile_warnings(compiled, {"triton_binaries": KEPT_BINARIES})
    assert said["code"] == "binaries_kept" and "first call leaves out Triton's compile" in said["message"]
    assert compile_warnings(compiled, {}) == [] and compile_warnings([{"variant": "cuda"}], data.info) == []


def test_a_run_counts_the_kernels_it_found_in_the_store_and_those_it_compiled(tmp_path):
    """`triton_binaries` says "kept between runs" whatever the store held; the generated-code index counts
    them by the mark the manager leaves where it filled the run's cache from the store (not by file times, which a
    coarse or skewed clock would misread): a first process compiles (MISS), a second finds it (HIT), a third kept
    off the store by a setting Triton leaves out of its key compiles though the store has it. Real sm_90 compiles."""
    from aisp_prof.analyze.code.compiled import compile_warnings
    from aisp_prof.collect.code.generated import index_generated

    store = tmp_path / "store"
    assert _compile(tmp_path / "c1" / "triton", store)[0] == "MISS"
    assert _compile(tmp_path / "c2" / "triton", store)[0] == "HIT"
    assert _compile(tmp_path / "c3" / "triton", store, TRITON_ALWAYS_COMPILE="1")[0] == "MISS"
    counts = [index_generated(tmp_path / f"c{i}", tmp_path / f"g{i}", None, store) for i in (1, 2, 3)]
    assert [(c["from_store"], c["compiled_here"]) for c in counts] == [(0, 1), (1, 0), (0, 1)]
    (entry,) = [p for p in store.iterdir() if p.is_dir()]
    for group in entry.glob("__grp__*"):
        os.utime(group, ns=(0, 10**18))                                # the store's clock far ahead: same counts
    assert index_generated(tmp_path / "c2", tmp_path / "g4", None, store)["from_store"] == 1
    assert "from_store" not in index_generated(tmp_path / "c2", tmp_path / "g5", None, None)   # no store: no count
    compiled = [{"variant": "regional", "compiled": True}]
    info = {"triton_binaries": KEPT_BINARIES, "generated": {"from_store": 0, "compiled_here": 7}}
    (said,) = compile_warnings(compiled, info)
    assert "(0 of 7 Triton kernels found there)" in said["message"] and "as on a fresh machine" in said["message"]
    info["generated"] = {"from_store": 5, "compiled_here": 2}
    (said,) = compile_warnings(compiled, info)
    assert "(5 of 7 Triton kernels found there)" in said["message"] and "leaves out Triton's compile" in said["message"]
    info["generated"] = {"from_store": 0, "compiled_here": 0}                        # nothing counted: no count said
    (said,) = compile_warnings(compiled, info)
    assert "found there" not in said["message"]
