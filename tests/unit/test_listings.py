"""cuobjdump's listings made once per cubin (collect.code.listings): a gate lists the harness's hold kernel in
every run and, after a gate, the cubins its binary store gave back. Real sm_90 cubins compiled on the CPU
(tests/fixtures/triton_store/compile_one.py) and Triton's bundled cuobjdump; the lister is counted."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aisp_prof.collect.code import generated, listings
from aisp_prof.collect.code.binary_store import MANAGER, MANAGER_ENV, STORE_ENV
from repo_paths import FIXTURES, ROOT

COMPILE_ONE = FIXTURES / "triton_store" / "compile_one.py"


@pytest.fixture(autouse=True)
def empty_memo(monkeypatch):
    monkeypatch.setattr(listings, "_MEMO", type(listings._MEMO)())


def _compiled(cache: Path, store: Path) -> Path:
    """The kernel's folder in `cache` after compile_one.py compiled (or found) it through `store`."""
    pytest.importorskip("triton")
    env = {k: v for k, v in os.environ.items() if k not in (MANAGER_ENV, STORE_ENV, "TRITON_INTERPRET")}
    env.update({"TRITON_CACHE_DIR": str(cache), MANAGER_ENV: MANAGER, STORE_ENV: str(store),
                "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])})
    proc = subprocess.run([sys.executable, str(COMPILE_ONE)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (folder,) = [p for p in cache.iterdir() if p.is_dir()]
    return folder


def _counted(monkeypatch) -> list[tuple[str, Path]]:
    calls: list[tuple[str, Path]] = []
    real = generated._cuobjdump

    def counting(tool, flag, cubin):
        calls.append((flag, cubin))
        return real(tool, flag, cubin)

    monkeypatch.setattr(generated, "_cuobjdump", counting)
    return calls


def _tool() -> Path:
    tool = generated.find_cuobjdump()
    if tool is None:
        pytest.skip("no cuobjdump here")
    return tool


def test_a_cubin_listed_in_one_run_is_not_listed_again_in_the_next_and_says_the_same(tmp_path, monkeypatch):
    tool, store = _tool(), tmp_path / "store"
    first = _compiled(tmp_path / "c1" / "triton", store)
    second = _compiled(tmp_path / "c2" / "triton", store)            # found in the store: the same cubin
    calls = _counted(monkeypatch)
    one = generated.index_generated(tmp_path / "c1", tmp_path / "g1", tool, store)
    assert sorted(f for f, _ in calls) == ["-res-usage", "-sass"]
    two = generated.index_generated(tmp_path / "c2", tmp_path / "g2", tool, store)
    assert len(calls) == 2                                            # the second run listed nothing
    (k1,), (k2,) = one["kernels"], two["kernels"]
    sass = subprocess.run([str(tool), "-sass", str(second / "double.cubin")], capture_output=True, text=True).stdout
    assert "double" in sass and (tmp_path / "g2" / k2["files"]["sass"]).read_text() == sass
    assert (tmp_path / "g1" / k1["files"]["sass"]).read_text() == sass
    assert {k: v for k, v in k1.items() if k != "dir"} == {k: v for k, v in k2.items() if k != "dir"}
    assert first.name == second.name


def test_the_store_keeps_them_for_the_next_process_beside_the_kernel_and_never_in_a_run_s_cache(tmp_path, monkeypatch):
    tool, store = _tool(), tmp_path / "store"
    _compiled(tmp_path / "c1" / "triton", store)
    generated.index_generated(tmp_path / "c1", tmp_path / "g1", tool, store)
    (entry,) = [p for p in store.iterdir() if p.is_dir()]
    kept = sorted(p.name for p in entry.glob(f"{listings.LISTING_PREFIX}*"))
    assert len(kept) == 2                                             # -sass and -res-usage
    monkeypatch.setattr(listings, "_MEMO", type(listings._MEMO)())   # a new gate's process
    calls = _counted(monkeypatch)
    cache = _compiled(tmp_path / "c2" / "triton", store)
    assert not list(cache.glob(f"{listings.LISTING_PREFIX}*"))         # the group's files only
    generated.index_generated(tmp_path / "c2", tmp_path / "g2", tool, store)
    assert calls == []
    (entry / kept[0]).write_bytes(b"\xff\xfe not text")                # unreadable: listed again, mended
    monkeypatch.setattr(listings, "_MEMO", type(listings._MEMO)())
    generated.index_generated(tmp_path / "c2", tmp_path / "g3", tool, store)
    assert len(calls) == 1 and (entry / kept[0]).read_text().strip()


def test_other_bytes_another_tool_or_a_failed_listing_are_listed_anew(tmp_path):
    made: list[str] = []

    def make(tool, flag, cubin):
        made.append(cubin.read_text() if cubin.is_file() else "bad: missing")
        return None if "bad" in made[-1] else f"listing of {made[-1]}"

    tool, cubin = tmp_path / "cuobjdump", tmp_path / "k.cubin"
    tool.write_text("v1")
    cubin.write_text("A")
    assert listings.listing(tool, "-sass", cubin, make) == "listing of A"
    assert listings.listing(tool, "-sass", cubin, make) == "listing of A" and len(made) == 1
    assert listings.listing(tool, "-res-usage", cubin, make) and len(made) == 2     # another flag
    cubin.write_text("B")
    assert listings.listing(tool, "-sass", cubin, make) == "listing of B" and len(made) == 3
    tool.write_text("v2, upgraded in place")
    os.utime(tool, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert listings.listing(tool, "-sass", cubin, make) == "listing of B" and len(made) == 4
    cubin.write_text("bad")
    assert listings.listing(tool, "-sass", cubin, make) is None
    assert listings.listing(tool, "-sass", cubin, make) is None and len(made) == 6   # a failure is not kept
    assert listings.listing(tool, "-sass", tmp_path / "gone.cubin", make) is None and made[-1] == "bad: missing"


def test_a_store_that_cannot_be_written_still_gives_the_listing(tmp_path, monkeypatch):
    def refused(target, write):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(listings, "replaced", refused)
    folder, cubin, tool = tmp_path / "store" / "key", tmp_path / "k.cubin", tmp_path / "tool"
    folder.mkdir(parents=True)
    cubin.write_text("A")
    tool.write_text("")
    made = []
    assert listings.listing(tool, "-sass", cubin, lambda *a: made.append(1) or "text", folder) == "text"
    assert not list(folder.iterdir()) and listings.listing(tool, "-sass", cubin, lambda *a: "other", folder) == "text"
    assert made == [1]                                                 # remembered in the process all the same


def test_the_memory_holds_at_most_its_characters_and_no_long_listing(tmp_path, monkeypatch):
    monkeypatch.setattr(listings, "MEMO_CHARS", 10)
    monkeypatch.setattr(listings, "MEMO_LONGEST", 6)
    tool = tmp_path / "tool"
    tool.write_text("")
    made: list[str] = []
    texts = {"a": "aaaa", "b": "bbbb", "c": "cccccc", "long": "x" * 7}
    for name, text in texts.items():
        (tmp_path / name).write_text(name)
    make = lambda t, f, c: made.append(c.name) or texts[c.name]     # noqa: E731
    for name in ("a", "b", "c", "long", "long"):
        listings.listing(tool, "-sass", tmp_path / name, make)
    assert made == ["a", "b", "c", "long", "long"]                     # the long one was not remembered
    assert list(listings._MEMO.values()) == ["bbbb", "cccccc"]          # "a" went: 14 characters > 10
    listings.listing(tool, "-sass", tmp_path / "c", make)
    assert made[-1] == "long"


def test_another_thread_cannot_evict_an_entry_between_its_lookup_and_its_read(tmp_path, monkeypatch):
    """index_generated lists a run's kernels from a pool of threads: a thread that evicts the memory's oldest
    entry must wait while another reads it (a KeyError there would fail the run's collection). The other
    thread is started inside the lookup, where the read has not happened yet."""
    import threading

    tool, a, b = tmp_path / "tool", tmp_path / "a.cubin", tmp_path / "b.cubin"
    for path, text in ((tool, ""), (a, "A"), (b, "B")):
        path.write_text(text)
    make = lambda t, f, c: f"listing of {c.read_text()}"     # noqa: E731
    others: list = []

    class Racing(type(listings._MEMO)):
        armed = False

        def __contains__(self, key):
            found = super().__contains__(key)
            if found and self.armed:
                self.armed = False
                others.append(threading.Thread(target=lambda: others.append(listings.listing(tool, "-sass", b, make))))
                others[0].start()
                others[0].join(0.5)          # it evicts now, unless it must wait for this lookup to end
            return found

    monkeypatch.setattr(listings, "_MEMO", Racing())
    monkeypatch.setattr(listings, "MEMO_CHARS", len("listing of A"))       # room for one
    assert listings.listing(tool, "-sass", a, make) == "listing of A"
    listings._MEMO.armed = True
    assert listings.listing(tool, "-sass", a, make) == "listing of A"
    others[0].join(5)
    assert others[1:] == ["listing of B"] and list(listings._MEMO.values()) == ["listing of B"]
